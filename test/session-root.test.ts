// A hook session's root is its repository's git root (services/hooks/session.ts): the git
// root `muster hook` reports corrects any other X-Muster-Root, and a root that does not
// contain the event's cwd is refused; `muster hook` reports the git root of the event's cwd.
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { mkdirSync, realpathSync } from 'node:fs'
import { join } from 'node:path'
import { call, register, startServer, type TestServer } from './helpers'
import { removeWorkdirs, runCli, workdir } from './cli-run'

let s: TestServer
beforeAll(async () => (s = await startServer()))
afterAll(async () => {
  await s.cleanup()
  removeWorkdirs()
})

let n = 0
const sessionRow = async (id: string) => ((await call(s.api, 'GET', '/api/sessions')).body as any[]).find((x) => x.session_id === id)
const corrections = async (id: string) =>
  ((await call(s.api, 'GET', '/api/events/history?topic=session.root_corrected&after_id=0&last=500')).body as any[]).filter((e) => e.data.session_id === id)

async function held(project: string, path: string) {
  const holder = await register(s, `root-holder-${++n}`)
  expect((await call(s.api, 'POST', '/api/reservations', { project, paths: [path], reason: 'mine' }, holder.h)).status).toBe(201)
}

describe('the server', () => {
  const repo = () => `/tmp/root-${++n}/shop`
  const edit = (session: string, cwd: string, file: string) => ({ session_id: session, hook_event_name: 'PreToolUse', cwd, tool_name: 'Write', tool_input: { file_path: file, content: '' } })

  test('an X-Muster-Root above the repository is corrected to the git root muster hook reports: the held file is denied', async () => {
    const root = repo()
    const project = `p${n}`
    await held(project, 'src/held.ts')
    const session = crypto.randomUUID()
    const headers = { 'x-muster-project': project, 'x-muster-root': join(root, '..'), 'x-muster-git-root': root }
    const r = await call(s.api, 'POST', '/api/hooks/codex', edit(session, root, `${root}/src/held.ts`), headers)
    expect(r.status).toBe(200)
    expect(r.body.hookSpecificOutput.permissionDecision).toBe('deny')
    const row = await sessionRow(session)
    expect(row.root).toBe(root)
    const [e] = await corrections(session)
    expect(e.data).toEqual({ session_id: session, instance_id: row.instance_id, root, given: join(root, '..') })
    const audit = (await call(s.api, 'GET', `/api/audit?action=hook.session&actor=${row.instance_id}`)).body as any[]
    expect(audit[0].detail).toContain(`root ${root}, the git root, not ${join(root, '..')}`)
    expect(s.stdout()).toContain('hook session root corrected to the git root')
  })

  test('a root that does not contain the event\'s cwd (below the repository) is 400 naming the header; nothing registered', async () => {
    const root = repo()
    const session = crypto.randomUUID()
    const cases: Record<string, string>[] = [{ 'x-muster-root': `${root}/src` }, { 'x-muster-git-root': `${root}/src` }, { 'x-muster-root': root, 'x-muster-git-root': `${root}/src` }]
    for (const headers of cases) {
      const r = await call(s.api, 'POST', '/api/hooks/claude-code', edit(session, root, `${root}/src/held.ts`), headers)
      expect(r.status).toBe(400)
      const named = 'x-muster-git-root' in headers ? 'X-Muster-Git-Root' : 'X-Muster-Root'
      expect(r.body).toEqual({ code: 400, error: expect.stringContaining(`${named} "${root}/src" does not contain the event's cwd "${root}"`) })
    }
    expect(await sessionRow(session)).toBeUndefined()
    // the same root with the cwd below it is fine, as is no root header at all (the cwd is the root then)
    const ok = await call(s.api, 'POST', '/api/hooks/claude-code', edit(session, `${root}/src/lib`, `${root}/src/lib/a.ts`), { 'x-muster-root': root })
    expect([ok.status, (await sessionRow(session)).root]).toEqual([200, root])
    expect(await corrections(session)).toEqual([])
  })

  test('the root is decided once, at registration: later events keep it', async () => {
    const root = repo()
    const session = crypto.randomUUID()
    expect((await call(s.api, 'POST', '/api/hooks/codex', { session_id: session, hook_event_name: 'SessionStart', cwd: root }, { 'x-muster-git-root': root })).status).toBe(200)
    expect((await call(s.api, 'POST', '/api/hooks/codex', edit(session, `${root}/x`, `${root}/x/a.ts`), { 'x-muster-git-root': `${root}/x` })).status).toBe(200)
    expect((await sessionRow(session)).root).toBe(root)
  })
})

describe('muster hook', () => {
  test('reports the git root of the event\'s cwd, wherever it runs: a session started in a subdirectory is held to the repository', async () => {
    const root = realpathSync(workdir())
    expect(Bun.spawnSync(['git', 'init', '-q', root]).exitCode).toBe(0)
    const sub = join(root, 'pkg')
    mkdirSync(sub)
    const elsewhere = realpathSync(workdir())
    const project = `hookroot${++n}`
    await held(project, 'pkg/held.ts')
    const session = crypto.randomUUID()
    const env = { SERVICE_SERVER: s.api, MUSTER_PROJECT: project }
    const start = await runCli(['hook', 'codex'], { cwd: elsewhere, env, stdin: JSON.stringify({ session_id: session, hook_event_name: 'SessionStart', cwd: sub }) })
    expect(start.code).toBe(0)
    expect((await sessionRow(session)).root).toBe(root)
    const denied = await runCli(['hook', 'codex'], {
      cwd: elsewhere,
      env,
      stdin: JSON.stringify({ session_id: session, hook_event_name: 'PreToolUse', cwd: sub, tool_name: 'Write', tool_input: { file_path: 'held.ts', content: '' } }),
    })
    expect(denied.json.hookSpecificOutput.permissionDecision).toBe('deny')
  })
})
