// `metrics` and `metrics agents`: service counters and per-agent hourly metrics.
import type { Command } from 'commander'
import { api } from './client'
import { act } from './output'

export function metricsCommands(program: Command): void {
  const metrics = program
    .command('metrics')
    .description('service metrics (`metrics agents` for per-agent counters)')
    .action(act(() => api.get('/api/metrics')))

  metrics
    .command('agents')
    .description('per-agent counters (rest_calls, mcp_calls, violations, rollbacks) by hourly bucket')
    .option('--instance-id <id>', 'one instance: rows of {instance_id, metric_name, metric_value, period}')
    .option('--period <prefix>', 'time prefix, e.g. 2026-05-01 or 2026-05-01T14')
    .action(act((o: { instanceId?: string; period?: string }) => api.get('/api/metrics/agents', { instance_id: o.instanceId, period: o.period })))
}
