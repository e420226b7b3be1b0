// Doctor: whether `muster` run by Codex's model can reach the server. Codex's default
// `workspace-write` sandbox has no network (the CLI fails with EPERM); its
// `[sandbox_workspace_write] network_access = true`, or a sandbox mode with network,
// in the project's .codex/config.toml or the user's $CODEX_HOME/config.toml, lets it.
import { existsSync, readFileSync } from 'node:fs'
import { homedir } from 'node:os'
import { join } from 'node:path'
import type { Check } from './check'

function toml(file: string): Record<string, any> | null {
  if (!existsSync(file)) return null
  try {
    return Bun.TOML.parse(readFileSync(file, 'utf8')) as Record<string, any>
  } catch {
    return null
  }
}

export const codexSandboxCheck: Check = (ctx) => {
  if (!ctx.exists('.codex/hooks.json')) return []
  const files = [join(ctx.root, '.codex/config.toml'), join(ctx.env.CODEX_HOME || join(ctx.env.HOME || homedir(), '.codex'), 'config.toml')]
  for (const file of files) {
    const config = toml(file)
    if (!config) continue
    if (config.sandbox_mode === 'danger-full-access') return [{ status: 'ok', check: 'codex sandbox', message: `sandbox_mode = "danger-full-access" in ${file}: the CLI reaches the network` }]
    if (config.sandbox_workspace_write?.network_access === true)
      return [{ status: 'ok', check: 'codex sandbox', message: `network_access = true under [sandbox_workspace_write] in ${file}: the CLI reaches the server` }]
  }
  return [
    {
      status: 'fail',
      check: 'codex sandbox',
      message: "Codex's default workspace-write sandbox has no network: `muster` run by the model cannot reach the server (EPERM)",
      fix: 'add `[sandbox_workspace_write]` with `network_access = true` to .codex/config.toml (`muster init codex --allow-network` writes it), or run codex with a sandbox that has network',
    },
  ]
}
