// Doctor: the git guards of `muster init git` (a commit or push touching files another
// agent holds refused). Optional, so their absence is a warning.
import { existsSync, readFileSync } from 'node:fs'
import { join } from 'node:path'
import { GIT_HOOKS, hooksDir, isGuarded } from '../git-guard'
import type { Check } from './check'

export const gitGuardCheck: Check = (ctx) => {
  const dir = hooksDir(ctx.root)
  if (!dir) return []
  const missing = GIT_HOOKS.filter((h) => !(existsSync(join(dir, h)) && isGuarded(readFileSync(join(dir, h), 'utf8'))))
  if (!missing.length) return [{ status: 'ok', check: 'git guards', message: `${GIT_HOOKS.join(' and ')} in ${dir}` }]
  return [{ status: 'warn', check: 'git guards', message: `no Muster ${missing.join(' or ')} hook in ${dir}: a commit or push of a held file goes through`, fix: '`muster init git` (kept beside your hooks)' }]
}
