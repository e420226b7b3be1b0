// Path comparison that matches the agents' filesystem (docs/api/projects.md): Unicode NFC
// for every project, case-insensitive matching for a project set so (by a person, or by
// `muster init` from the repository's core.ignorecase), over real HTTP on both backends.
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { realpathSync } from 'node:fs'
import { basename, join } from 'node:path'
import { call, register, startServer, type TestServer } from './helpers'
import { removeWorkdirs, runCli, workdir } from './cli-run'

const ADMIN_TOKEN = 'case-admin'
const admin = { authorization: `Bearer ${ADMIN_TOKEN}` }

let s: TestServer
let agentToken: Record<string, string>
beforeAll(async () => {
  s = await startServer({ args: ['--auth-token', ADMIN_TOKEN] })
  const made = await call(s.api, 'POST', '/api/tokens', { name: 'case-agent', role: 'agent' }, admin)
  agentToken = { authorization: `Bearer ${made.body.token}` }
})
afterAll(async () => {
  await s.cleanup()
  removeWorkdirs()
})

let n = 0
/** A project with one file held exclusively by another instance, and a hook session editing in it. */
async function setup(held: string) {
  const project = `case${++n}${Math.random().toString(36).slice(2, 6)}`
  const root = `/tmp/case-${n}/${project}`
  const holder = await register(s, `holder-${project}`, agentToken)
  const r = await call(s.api, 'POST', '/api/reservations', { project, paths: [held] }, { ...agentToken, ...holder.h })
  expect(r.status).toBe(201)
  const session = crypto.randomUUID()
  const edit = async (file: string) => {
    const e = { session_id: session, hook_event_name: 'PreToolUse', cwd: root, tool_name: 'Edit', tool_input: { file_path: `${root}/${file}`, old_string: 'a', new_string: 'b' } }
    const answer = await call(s.api, 'POST', '/api/hooks/claude-code', e, { ...agentToken, 'x-muster-project': project })
    expect(answer.status).toBe(200)
    return answer.body.hookSpecificOutput?.permissionDecision === 'deny'
  }
  const check = async (path: string) => (await call(s.api, 'POST', '/api/reservations/check', { project, paths: [path] }, agentToken)).status
  const reserve = async (path: string) => {
    const other = await register(s, `other-${project}-${crypto.randomUUID().slice(0, 4)}`, agentToken)
    return (await call(s.api, 'POST', '/api/reservations', { project, paths: [path] }, { ...agentToken, ...other.h })).status
  }
  const set = (case_insensitive: boolean, headers = agentToken) => call(s.api, 'PUT', `/api/projects/${project}`, { case_insensitive }, headers)
  return { project, edit, check, reserve, set }
}

const NFC = 'caf\u00e9.ts'
const NFD = 'cafe\u0301.ts'

describe('Unicode normalization, every project', () => {
  test('é as one code point or two is one file: denied, checked and refused either way', async () => {
    expect(NFC).not.toBe(NFD)
    const p = await setup(`docs/${NFC}`)
    expect(await p.edit(`docs/${NFD}`)).toBe(true)
    expect(await p.check(`docs/${NFD}`)).toBe(409)
    expect(await p.reserve(`docs/*${NFD.slice(-6)}`)).toBe(409)
    const q = await setup(`src/${NFD}`)
    expect(await q.edit(`src/${NFC}`)).toBe(true)
    expect(await q.edit('src/cafe.ts')).toBe(false)
  })
})

describe('case-insensitive projects', () => {
  test('by default another case is another file; once set, SRC/held.ts is denied, checked and refused', async () => {
    const p = await setup('src/held.ts')
    expect(await p.edit('SRC/held.ts')).toBe(false)
    expect(await p.check('src/HELD.ts')).toBe(200)
    expect((await call(s.api, 'GET', `/api/projects/${p.project}`, undefined, agentToken)).body).toEqual({ project: p.project, case_insensitive: false, updated_at: null })

    const set = await p.set(true)
    expect(set.status).toBe(200)
    expect(set.body).toEqual({ project: p.project, case_insensitive: true, updated_at: expect.any(String) })
    expect(await p.edit('SRC/held.ts')).toBe(true)
    expect(await p.edit('Src/Held.TS')).toBe(true)
    expect(await p.edit('src/other.ts')).toBe(false)
    expect(await p.check('src/HELD.ts')).toBe(409)
    expect(await p.reserve('SRC/*.TS')).toBe(409)
    expect(await p.reserve('[S]rc/held.ts')).toBe(409)
    expect(await p.reserve('SRC/held.tsx')).toBe(201)

    // event and audit entry with the change; setting it again changes nothing
    const events = (await call(s.api, 'GET', '/api/events/history?topic=project.updated&after_id=0&last=100', undefined, admin)).body as any[]
    expect(events.filter((e) => e.data.project === p.project).map((e) => e.data)).toEqual([{ project: p.project, case_insensitive: true }])
    const audit = (await call(s.api, 'GET', `/api/audit?action=project.update`, undefined, admin)).body as any[]
    expect(audit.filter((a) => a.resource === `projects/${p.project}`).length).toBe(1)
    expect((await p.set(true)).body.updated_at).toBe(set.body.updated_at)
    expect((await call(s.api, 'GET', '/api/projects', undefined, agentToken)).body).toContainEqual(set.body)
  })

  test('turning it off needs the admin token (it narrows every reservation); bad input is a 400', async () => {
    const p = await setup('lib/a.ts')
    expect((await p.set(true)).status).toBe(200)
    const refused = await p.set(false)
    expect(refused.status).toBe(403)
    expect(refused.body).toMatchObject({ code: 403, error: expect.stringContaining('needs the admin token') })
    expect(await p.edit('LIB/a.ts')).toBe(true)
    expect((await p.set(false, admin)).body.case_insensitive).toBe(false)
    expect(await p.edit('LIB/a.ts')).toBe(false)
    for (const body of [{}, { case_insensitive: 'yes' }]) {
      const r = await call(s.api, 'PUT', `/api/projects/${p.project}`, body, agentToken)
      expect(r.status).toBe(400)
      expect(r.body).toMatchObject({ error: expect.any(String), code: 400 })
    }
    const long = await call(s.api, 'PUT', `/api/projects/${'x'.repeat(1025)}`, { case_insensitive: true }, agentToken)
    expect(long.status).toBe(400)
  })
})

describe('muster init and the doctor check', () => {
  /** A scratch git repository with core.ignorecase as given. */
  function repo(ignorecase: boolean | null): string {
    const dir = realpathSync(workdir())
    expect(Bun.spawnSync(['git', 'init', '-q', dir]).exitCode).toBe(0)
    if (ignorecase !== null) Bun.spawnSync(['git', 'config', 'core.ignorecase', String(ignorecase)], { cwd: dir })
    return dir
  }
  // CODEX_HOME in the repository: init writes Codex's telemetry settings there, never in the real ~/.codex
  const env = (dir: string) => ({ SERVICE_SERVER: s.api, SERVICE_TOKEN: ADMIN_TOKEN, MUSTER_PROJECT: basename(dir), CODEX_HOME: join(dir, '.user-codex') })
  const settings = async (project: string) => (await call(s.api, 'GET', `/api/projects/${project}`, undefined, admin)).body

  test('core.ignorecase true: init sets the project case-insensitive (--dry-run only says so); false or unset: left as it is', async () => {
    const dir = repo(true)
    const project = basename(dir)
    const dry = await runCli(['init', 'codex', '--dry-run'], { cwd: dir, env: env(dir) })
    expect(dry.json.project).toEqual({ project, git_ignorecase: true, case_insensitive: true, action: 'would set' })
    expect((await settings(project)).case_insensitive).toBe(false)
    const r = await runCli(['init', 'codex'], { cwd: dir, env: env(dir) })
    expect(r.code).toBe(0)
    expect(r.json.project).toEqual({ project, git_ignorecase: true, case_insensitive: true, action: 'set' })
    expect((await settings(project)).case_insensitive).toBe(true)

    for (const ignorecase of [false, null]) {
      const other = repo(ignorecase)
      const o = await runCli(['init', 'codex'], { cwd: other, env: env(other) })
      expect(o.json.project).toEqual({ project: basename(other), git_ignorecase: ignorecase, case_insensitive: null, action: 'unchanged' })
      expect((await settings(basename(other))).updated_at).toBeNull()
    }
  })

  test('projectCaseCheck (for muster doctor): a repository that ignores case with a case-sensitive project is reported', async () => {
    const dir = repo(true)
    const script = `import { projectCaseCheck } from ${JSON.stringify(`${import.meta.dir}/../cli/project-case.ts`)}
console.log(JSON.stringify(await projectCaseCheck(${JSON.stringify(dir)})))`
    const run = () => {
      const p = Bun.spawnSync([process.execPath, '-e', script], { cwd: dir, env: { ...process.env, ...env(dir) } })
      return JSON.parse(p.stdout.toString())
    }
    const before = run()
    expect(before).toMatchObject({ project: basename(dir), root: dir, git_ignorecase: true, case_insensitive: false, ok: false })
    expect(before.message).toContain('muster init')
    await call(s.api, 'PUT', `/api/projects/${basename(dir)}`, { case_insensitive: true }, admin)
    expect(run()).toMatchObject({ git_ignorecase: true, case_insensitive: true, ok: true })
  })
})
