// Doctor: the token variable Claude Code's http hooks read. They put `$VAR` into their
// Authorization header only for the variables in allowedEnvVars, and send an empty
// bearer when it is unset: the server answers 401, Claude Code treats that as a
// non-blocking error, and no edit is ever denied, without a word. So a token the CLI
// finds elsewhere (MUSTER_TOKEN, settings.json) is no token for those hooks.
import { isOurs } from '../init'
import type { Check, Finding } from './check'

/** `$NAME` and `${NAME}` / `${NAME:-…}` in a header value. */
const vars = (value: string) => [...value.matchAll(/\$\{?([A-Za-z_]\w*)/g)].map((m) => m[1])

export const tokenEnvCheck: Check = async (ctx) => {
  const settings = ctx.json('.claude/settings.json')
  if (!settings?.hooks || typeof settings.hooks !== 'object') return []
  const http = Object.values(settings.hooks as Record<string, any[]>)
    .filter(Array.isArray)
    .flatMap((groups) => groups.flatMap((g) => (Array.isArray(g?.hooks) ? g.hooks : [])))
    .filter((h) => h?.type === 'http' && isOurs(h))
  if (!http.length) return []
  const out: Finding[] = []
  const needed = new Set<string>()
  const unlisted = new Set<string>()
  for (const h of http) {
    const auth = Object.entries(h.headers ?? {}).find(([k]) => k.toLowerCase() === 'authorization')?.[1]
    if (typeof auth !== 'string') continue
    for (const v of vars(auth)) {
      needed.add(v)
      if (!Array.isArray(h.allowedEnvVars) || !h.allowedEnvVars.includes(v)) unlisted.add(v)
    }
  }
  if (unlisted.size)
    out.push({
      status: 'fail',
      check: 'hook token',
      message: `the http hooks' Authorization names ${[...unlisted].map((v) => `$${v}`).join(', ')} but allowedEnvVars does not list it: Claude Code sends it empty`,
      fix: '`muster init claude-code` again',
    })
  const names = [...needed]
  if (!names.length) return out
  const set = names.filter((v) => ctx.env[v])
  if (set.length) {
    out.push({ status: 'ok', check: 'hook token', message: `the http hooks send $${set[0]}, which is set` })
    return out
  }
  const who = (await ctx.server()).reached ? ((await ctx.server()) as { whoami: { auth: boolean } | null }).whoami : null
  if (who && !who.auth) return [...out, { status: 'ok', check: 'hook token', message: `$${names[0]} is unset, and the server checks no tokens` }]
  const elsewhere = ctx.config?.token ? ` while the CLI has one from ${ctx.config.from.token}` : ''
  const copy = ctx.env.MUSTER_TOKEN ? `export ${names[0]}="$MUSTER_TOKEN"` : `export ${names[0]}=<an agent token>`
  out.push({
    status: 'fail',
    check: 'hook token',
    message: `the Claude Code http hooks read $${names.join(' or $')}, which is not set${elsewhere}: they send an empty bearer, the server answers 401, and Claude Code goes on without a word (no edit is ever denied)`,
    fix: `${copy} in the environment Claude Code starts from`,
  })
  return out
}
