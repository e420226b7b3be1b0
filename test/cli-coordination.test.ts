// The coordination commands as users run them: `lock`, `reserve`, `release`,
// `reservations`, `check` (also as the README's git pre-commit hook, in a real
// repository), `state watch` and `events wait`.
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { chmodSync, existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { call, startServer, type TestServer } from './helpers'
import { removeWorkdirs, runCli, spawnCli, workdir } from './cli-run'

let s: TestServer
let me: string
let other: string
beforeAll(async () => {
  s = await startServer()
  me = workdir({ server: s.api })
  other = workdir({ server: s.api })
  expect((await runCli(['register', 'me'], { cwd: me })).code).toBe(0)
  expect((await runCli(['register', 'other'], { cwd: other })).code).toBe(0)
})
afterAll(async () => {
  await s.cleanup()
  removeWorkdirs()
})

const cli = (...args: string[]) => runCli(args, { cwd: me })
const otherCli = (...args: string[]) => runCli(args, { cwd: other })

describe('lock', () => {
  test('acquire, list, conflict (exit 1 with the holders), release', async () => {
    const a = await cli('lock', 'acquire', 'ci/deploy', '--ttl', '30s', '--reason', 'release 1.2')
    expect(a.code).toBe(0)
    expect(a.json).toMatchObject({ name: 'ci/deploy', limit: 1, reason: 'release 1.2', fence: expect.any(Number) })
    const held = await otherCli('lock', 'acquire', 'ci/deploy', '--wait', '200ms')
    expect(held.code).toBe(1)
    expect(held.error).toMatchObject({ error: 'lock is held', code: 409, holders: [{ instance_name: 'me', instance_status: 'active' }] })
    expect((await cli('lock', 'get', 'ci/deploy')).json).toMatchObject({ name: 'ci/deploy', holders: [{ reason: 'release 1.2' }] })
    const list = await cli('lock', 'list', '--prefix', 'ci/')
    expect(list.json.map((l: any) => l.name)).toEqual(['ci/deploy'])
    expect((await otherCli('lock', 'release', 'ci/deploy')).code).toBe(1)
    expect((await cli('lock', 'release', 'ci/deploy')).json).toEqual({ name: 'ci/deploy', released: true })
    expect((await cli('lock', 'acquire', 'x', '--ttl', 'soon')).code).toBe(2)
  })

  test('--force releases another instance\'s lock', async () => {
    await cli('lock', 'acquire', 'stuck')
    expect((await otherCli('lock', 'release', 'stuck', '--force')).json).toEqual({ name: 'stuck', released: true })
  })
})

describe('reservations and check', () => {
  test('reserve, reservations, check (exit 1 with a readable list on stderr), release', async () => {
    const r = await cli('reserve', 'shop', 'src/api/**', 'README.md', '--reason', 'auth rework', '--ttl', '10m')
    expect(r.code).toBe(0)
    expect(r.json).toMatchObject({ project: 'shop', paths: ['src/api/**', 'README.md'], exclusive: true })
    expect((await cli('reservations', '--project', 'shop')).json.map((x: any) => x.id)).toEqual([r.json.id])

    const ok = await otherCli('check', 'shop', 'src/ui/a.ts')
    expect(ok.code).toBe(0)
    expect(ok.json).toEqual({ ok: true, conflicts: [] })
    const bad = await otherCli('check', 'shop', 'src/api/users.ts', 'src/ui/a.ts')
    expect(bad.code).toBe(1)
    expect(bad.stdout).toBe('')
    expect(bad.stderr).toContain('1 conflict in shop')
    expect(bad.stderr).toContain(`src/api/users.ts  reserved as src/api/** by me (active), until ${r.json.expires_at}: auth rework  [${r.json.id}]`)
    // The holder's own reservations do not count against it.
    expect((await cli('check', 'shop', 'src/api/users.ts')).code).toBe(0)

    const clash = await otherCli('reserve', 'shop', 'src/**', '--shared')
    expect(clash.code).toBe(1)
    expect(clash.error.conflicts[0]).toMatchObject({ held_path: 'src/api/**', instance_name: 'me' })
    expect((await otherCli('release', r.json.id)).code).toBe(1)
    expect((await cli('reservation', r.json.id)).json).toMatchObject({ id: r.json.id, project: 'shop' })
    expect((await cli('renew', r.json.id, '--ttl', '1h')).json.id).toBe(r.json.id)
    expect((await cli('release', r.json.id)).json).toEqual({ id: r.json.id, released: true })
    expect((await otherCli('check', 'shop', 'src/api/users.ts')).code).toBe(0)
    expect((await cli('check', 'shop')).code).toBe(2)
  })

  test('check --stdin takes file names literally, and an empty list passes', async () => {
    const r = await cli('reserve', 'next', 'app/[id]/**')
    const hit = await runCli(['check', 'next', '--stdin'], { cwd: other, stdin: 'app/[id]/page.tsx\n' })
    expect(hit.code).toBe(1)
    // As a file name, app/[id]/… is not the class [id]: app/i/page.tsx is someone else's business.
    await cli('release', r.json.id)
    await cli('reserve', 'next', 'app/i/page.tsx')
    expect((await runCli(['check', 'next', '--stdin'], { cwd: other, stdin: 'app/[id]/page.tsx\n' })).code).toBe(0)
    expect((await runCli(['check', 'next', '--stdin'], { cwd: other, stdin: '' })).json).toEqual({ ok: true, conflicts: [] })
  })

  test('the documented pre-commit hook refuses a commit touching reserved files', async () => {
    // Documented in the README, or in docs/cli.md once the README points there.
    const docs = ['README.md', 'docs/cli.md'].map((f) => join(import.meta.dir, '..', f)).filter((f) => existsSync(f))
    const text = docs.map((f) => readFileSync(f, 'utf8')).join('\n')
    const hook = /```sh\n(#!\/bin\/sh\n# \.git\/hooks\/pre-commit[\s\S]*?)```/.exec(text)![1]
    const repo = workdir()
    const bin = workdir()
    writeFileSync(join(bin, 'muster'), `#!/bin/sh\nexec "${process.execPath}" "${join(import.meta.dir, '..', 'cli.ts')}" "$@"\n`)
    chmodSync(join(bin, 'muster'), 0o755)
    const env = { ...process.env, PATH: `${bin}:${process.env.PATH}`, MUSTER_PROJECT: 'hooked', GIT_AUTHOR_NAME: 't', GIT_AUTHOR_EMAIL: 't@x', GIT_COMMITTER_NAME: 't', GIT_COMMITTER_EMAIL: 't@x' }
    const git = (...args: string[]) => Bun.spawnSync(['git', ...args], { cwd: repo, env, stderr: 'pipe', stdout: 'pipe' })
    git('init', '-q')
    writeFileSync(join(repo, '.git', 'hooks', 'pre-commit'), hook)
    chmodSync(join(repo, '.git', 'hooks', 'pre-commit'), 0o755)
    // The committer's own settings and instance (its identity goes to .muster/, which ignores itself).
    writeFileSync(join(repo, 'settings.json'), JSON.stringify({ server: s.api }))
    expect((await runCli(['register', 'committer'], { cwd: repo })).code).toBe(0)
    writeFileSync(join(repo, '.gitignore'), 'settings.json\n')
    mkdirSync(join(repo, 'src'))
    writeFileSync(join(repo, 'src', 'free.ts'), '1')
    writeFileSync(join(repo, 'src', 'taken.ts'), '2')

    await otherCli('reserve', 'hooked', 'src/taken.ts', '--reason', 'mine now')
    git('add', '.gitignore', 'src/free.ts')
    expect(git('commit', '-qm', 'free').exitCode).toBe(0)
    git('add', 'src/taken.ts')
    const refused = git('commit', '-qm', 'taken')
    expect(refused.exitCode).not.toBe(0)
    expect(refused.stderr.toString()).toContain('src/taken.ts  reserved as src/taken.ts by other (active): mine now')
    expect(git('log', '--format=%s').stdout.toString().trim()).toBe('free')
  })
})

describe('watches', () => {
  test('state watch prints the new value raw when it changes; nothing when --timeout passes', async () => {
    await call(s.api, 'PUT', '/api/state/cli/flag', { go: false })
    const w = spawnCli(['state', 'watch', 'cli/flag', '--timeout', '20s'], { cwd: me })
    await Bun.sleep(700)
    await call(s.api, 'PUT', '/api/state/cli/flag', { go: true })
    expect(await w.proc.exited).toBe(0)
    expect(w.lines()).toEqual(['{"go":true}'])
    const idle = await cli('state', 'watch', 'cli/flag', '--timeout', '300ms')
    expect(idle.code).toBe(0)
    expect(idle.stdout).toBe('')
    expect(idle.stderr).toContain('no change within 300 ms')
    const born = spawnCli(['state', 'watch', 'cli/new'], { cwd: me })
    await Bun.sleep(700)
    await call(s.api, 'PUT', '/api/state/cli/new', '"hello"')
    expect(await born.proc.exited).toBe(0)
    expect(born.lines()).toEqual(['"hello"'])
  })

  test('events wait prints the next matching events as a JSON array; [] on timeout', async () => {
    const w = spawnCli(['events', 'wait', '--topic', 'build.*', '--timeout', '20s'], { cwd: me })
    await Bun.sleep(700)
    await call(s.api, 'POST', '/api/events/publish', { topic: 'other.x' })
    await call(s.api, 'POST', '/api/events/publish', { topic: 'build.done', data: { ok: 1 } })
    expect(await w.proc.exited).toBe(0)
    const printed = JSON.parse(w.lines()[0])
    expect(printed.map((e: any) => [e.topic, e.data])).toEqual([['build.done', { ok: 1 }]])
    const none = await cli('events', 'wait', '--topic', 'never', '--timeout', '300ms')
    expect(none.json).toEqual([])
    const after = await cli('events', 'wait', '--after', '0', '--topic', 'build.done')
    expect(after.json[0].topic).toBe('build.done')
  })
})
