// Doctor: whether Gemini CLI will run the hooks `muster init gemini-cli` wrote. In a folder
// it does not trust, Gemini CLI ignores the project's settings (hooks and all), and its
// headless mode refuses to start (cli/init/gemini-cli.ts reads that trust as it does).
import { isOurs } from '../init'
import { geminiTrustFile, geminiTrusts } from '../init/gemini-cli'
import type { Check } from './check'

export const geminiTrustCheck: Check = (ctx) => {
  const settings = ctx.json('.gemini/settings.json')
  const hooks = Object.values(settings?.hooks ?? {}).flatMap((groups: any) => (Array.isArray(groups) ? groups.flatMap((g) => (Array.isArray(g?.hooks) ? g.hooks : [])) : []))
  if (!hooks.some(isOurs)) return [] // no hooks of ours there: the hooks check says so
  const file = geminiTrustFile(ctx.env)
  if (geminiTrusts(ctx.root, ctx.env)) return [{ status: 'ok', check: 'gemini trust', message: `Gemini CLI trusts ${ctx.root} (${ctx.env.GEMINI_CLI_TRUST_WORKSPACE === 'true' ? 'GEMINI_CLI_TRUST_WORKSPACE' : file})` }]
  return [
    {
      status: 'fail',
      check: 'gemini trust',
      message: `Gemini CLI does not trust ${ctx.root}: it runs none of the project's hooks there, and \`gemini -p\` does not start`,
      fix: `run \`muster init gemini-cli --trust\` in ${ctx.root} (adds it to ${file}), or trust the folder when Gemini CLI asks`,
    },
  ]
}
