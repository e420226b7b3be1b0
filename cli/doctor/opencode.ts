// Doctor: OpenCode's wiring, the plugin `muster init opencode` writes
// (.opencode/plugin/muster.ts): present, and pointing at the CLI's server.
import { OPENCODE_PLUGIN } from '../init/opencode'
import type { DoctorContext, Finding } from './check'

/** The server the plugin was written with. */
const serverOf = (source: string) => /^const SERVER = "([^"]*)"/m.exec(source)?.[1] ?? null

/** Findings on the OpenCode plugin, or null when OpenCode is not wired here (nor configured). */
export function opencodeFindings(ctx: DoctorContext): Finding[] | null {
  const check = 'hooks opencode'
  const source = ctx.text(OPENCODE_PLUGIN)
  if (!source) return ctx.exists('.opencode') ? [{ status: 'warn', check, message: `${OPENCODE_PLUGIN} is missing: OpenCode runs here without Muster`, fix: '`muster init opencode`' }] : null
  const written = serverOf(source)
  const server = ctx.config?.server ?? null
  if (!written) return [{ status: 'fail', check, message: `${OPENCODE_PLUGIN} is not the plugin muster init writes`, fix: '`muster init opencode` (it writes the file again)' }]
  const out: Finding[] = [{ status: 'ok', check, message: `${OPENCODE_PLUGIN}: every session, tool call, prompt and stop goes through \`muster hook opencode\`` }]
  if (server && written !== server)
    out.push({ status: 'warn', check, message: `its plugin points at ${written} but the CLI at ${server}`, fix: '`muster init opencode` with the server you mean (--server URL)' })
  return out
}
