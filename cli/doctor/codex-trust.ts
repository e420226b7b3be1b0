// Doctor: whether Codex will run the hooks `muster init codex` wrote. Codex runs a
// project's hooks only once the project and each hook are trusted, and skips them
// without a word otherwise (cli/codex-trust.ts reads that trust as Codex does).
import { codexHooksTrust } from '../codex-trust'
import type { Check } from './check'

export const codexTrustCheck: Check = (ctx) => {
  if (!ctx.exists('.codex/hooks.json')) return []
  const t = codexHooksTrust(ctx.root, ctx.env)
  if (!t.hooks.length) return [] // no hooks of ours there: the hooks check says so
  if (t.ok) return [{ status: 'ok', check: 'codex trust', message: `the project and its ${t.hooks.length} Muster hooks are trusted in ${t.configFile}` }]
  return [{ status: 'fail', check: 'codex trust', message: t.problem!, fix: t.fix! }]
}
