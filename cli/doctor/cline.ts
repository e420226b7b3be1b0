// Doctor: Cline's wiring, when the repository has it: the hook files `muster init cline`
// writes (there and executable), its plugin, the server they point at, and `muster` on PATH
// for them to run.
import { statSync } from 'node:fs'
import { join } from 'node:path'
import { CLINE_HOOK_EVENTS, CLINE_PLUGIN, ourHookFile } from '../init/cline'
import type { Check, DoctorContext, Finding } from './check'

/** Whether any of Cline's Muster wiring is in the repository. */
export const clineWired = (ctx: DoctorContext) => ctx.exists(CLINE_PLUGIN) || CLINE_HOOK_EVENTS.some((e) => ourHookFile(ctx.root, e) !== null)

const executable = (path: string) => (statSync(path).mode & 0o111) !== 0

export const clineCheck: Check = (ctx) => {
  if (!clineWired(ctx)) return []
  const check = 'hooks cline'
  const fix = '`muster init cline` (keeps your own hook files)'
  const files = CLINE_HOOK_EVENTS.map((event) => ({ event, path: ourHookFile(ctx.root, event) }))
  const lacking = files.filter((f) => f.path === null).map((f) => f.event)
  const idle = files.filter((f) => f.path !== null && !executable(join(ctx.root, f.path))).map((f) => f.path!)
  const out: Finding[] = []
  if (!ctx.exists(CLINE_PLUGIN)) out.push({ status: 'fail', check, message: `lacks ${CLINE_PLUGIN}: no write is denied, and the model is never briefed`, fix })
  if (lacking.length) out.push({ status: 'fail', check, message: `lacks the ${lacking.join(', ')} hook${lacking.length > 1 ? 's' : ''} in .clinerules/hooks/ (PostToolUse: messages; the others: a task's end releasing what it held)`, fix })
  if (idle.length) out.push({ status: 'fail', check, message: `${idle.join(', ')} not executable: Cline does not run it`, fix: `chmod +x, or ${fix}` })
  if (!out.length) out.push({ status: 'ok', check, message: `${files.map((f) => f.path).join(', ')}, ${CLINE_PLUGIN}` })
  const server = ctx.config?.server ?? null
  const texts = [...files.filter((f) => f.path).map((f) => ctx.text(f.path!)), ctx.text(CLINE_PLUGIN)]
  const elsewhere = [...new Set(texts.map((t) => /--server['",\s]+([^'"\s,\]]+)/.exec(t)?.[1]).filter((s): s is string => !!s && s !== server))]
  if (server && elsewhere.length) out.push({ status: 'warn', check, message: `its hooks point at ${elsewhere.join(', ')} but the CLI at ${server}`, fix: '`muster init cline` with the server you mean (--server URL)' })
  if (!Bun.which('muster', { PATH: ctx.env.PATH ?? '' }))
    out.push({ status: 'fail', check: 'PATH', message: "Cline's hooks and plugin run `muster hook cline` but muster is not on PATH: Cline goes on uncoordinated", fix: 'put the muster binary on PATH, in the environment Cline starts from' })
  return out
}
