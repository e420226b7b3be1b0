// Doctor: whether `muster` run by Codex's model can reach the server. Codex's default
// `workspace-write` sandbox has no network (the CLI fails with EPERM); its
// `[sandbox_workspace_write] network_access = true`, or `sandbox_mode =
// "danger-full-access"`, lets it. The project's .codex/config.toml is read over the
// user's $CODEX_HOME/config.toml; a `codex --sandbox` on a command line is not seen.
import { existsSync, readFileSync } from 'node:fs'
import { homedir } from 'node:os'
import { join } from 'node:path'
import type { Check } from './check'

function toml(file: string): Record<string, any> {
  if (!existsSync(file)) return {}
  try {
    return Bun.TOML.parse(readFileSync(file, 'utf8')) as Record<string, any>
  } catch {
    return {}
  }
}

export const codexSandboxCheck: Check = (ctx) => {
  if (!ctx.exists('.codex/hooks.json')) return []
  const project = toml(join(ctx.root, '.codex/config.toml'))
  const user = toml(join(ctx.env.CODEX_HOME || join(ctx.env.HOME || homedir(), '.codex'), 'config.toml'))
  const mode = project.sandbox_mode ?? user.sandbox_mode ?? 'workspace-write'
  const network = project.sandbox_workspace_write?.network_access ?? user.sandbox_workspace_write?.network_access
  if (mode === 'danger-full-access') return [{ status: 'ok', check: 'codex sandbox', message: 'sandbox_mode = "danger-full-access": the CLI reaches the server' }]
  if (mode === 'workspace-write' && network === true) return [{ status: 'ok', check: 'codex sandbox', message: 'workspace-write with network_access = true: the CLI reaches the server' }]
  return [
    {
      status: 'fail',
      check: 'codex sandbox',
      message: `Codex's ${mode} sandbox has no network: \`muster\` run by the model cannot reach the server (EPERM)`,
      fix:
        mode === 'workspace-write'
          ? 'add `[sandbox_workspace_write]` with `network_access = true` to .codex/config.toml (`muster init codex --allow-network` writes it)'
          : 'set sandbox_mode = "workspace-write" with `[sandbox_workspace_write] network_access = true` in .codex/config.toml',
    },
  ]
}
