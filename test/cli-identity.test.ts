// Where the CLI keeps who it is: server and token from flags, SERVICE_*, MUSTER_*
// or the nearest settings.json (in that order); the instance it registered as in
// .muster/ at the git root (ignored by git), found from any subdirectory, or in the
// config directory outside a repository; `register` of the same name resumes; a
// settings.json of another tool is one line naming file and key; `token` commands.
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { existsSync, mkdirSync, readdirSync, readFileSync, realpathSync, statSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { call, register, startServer, type TestServer } from './helpers'
import { identityOf, removeWorkdirs, runCli, workdir } from './cli-run'

const TOKEN = 'cli-identity-token'
const auth = { authorization: `Bearer ${TOKEN}` }
let s: TestServer
/** Reaches the server without any file: what an agent's environment gives it. */
let viaEnv: Record<string, string>
beforeAll(async () => {
  s = await startServer({ args: ['--auth-token', TOKEN] })
  viaEnv = { MUSTER_SERVER: s.api, MUSTER_TOKEN: TOKEN }
})
afterAll(async () => {
  await s.cleanup()
  removeWorkdirs()
})

const gitEnv = { GIT_AUTHOR_NAME: 't', GIT_AUTHOR_EMAIL: 't@x', GIT_COMMITTER_NAME: 't', GIT_COMMITTER_EMAIL: 't@x' }
function git(cwd: string, ...args: string[]): string {
  const r = Bun.spawnSync(['git', ...args], { cwd, env: { ...process.env, ...gitEnv }, stdout: 'pipe', stderr: 'pipe' })
  if (r.exitCode !== 0) throw new Error(`git ${args.join(' ')}: ${r.stderr.toString()}`)
  return r.stdout.toString()
}
/** A fresh repository (realpath, as the CLI reports paths). */
function repo(settings?: Record<string, unknown>): string {
  const dir = realpathSync(workdir(settings))
  git(dir, 'init', '-q')
  return dir
}
const json = (path: string) => JSON.parse(readFileSync(path, 'utf8'))

describe('identity in a repository', () => {
  test('register at the root; commands from sub/dir act as that instance', async () => {
    const root = repo({ server: s.api, token: TOKEN })
    const reg = await runCli(['register', 'ada'], { cwd: root })
    expect(reg.code).toBe(0)
    const file = join(root, '.muster', 'agents', 'ada.json')
    expect(json(file)).toEqual({ name: 'ada', server: s.api, instance_id: reg.json.id, instance_token: reg.json.token })
    expect(statSync(file).mode & 0o777).toBe(0o600)
    expect(readFileSync(join(root, '.muster', '.gitignore'), 'utf8').split('\n')).toContain('*')
    // settings.json keeps only what people wrote in it.
    expect(json(join(root, 'settings.json'))).toEqual({ server: s.api, token: TOKEN })

    const sub = join(root, 'sub', 'dir')
    mkdirSync(sub, { recursive: true })
    const lock = await runCli(['lock', 'acquire', 'id/sub-lock', '--ttl', '1m'], { cwd: sub })
    expect(lock.code).toBe(0)
    const held = (await call(s.api, 'GET', '/api/locks/id/sub-lock', undefined, auth)).body
    expect(held.holders.map((h: any) => h.instance_id)).toEqual([reg.json.id])
    const inbox = await runCli(['inbox'], { cwd: sub })
    expect([inbox.code, inbox.json.messages]).toEqual([0, []])
    expect((await runCli(['lock', 'release', 'id/sub-lock'], { cwd: sub })).code).toBe(0)

    const show = await runCli(['config', 'show'], { cwd: sub })
    expect(show.json).toMatchObject({
      server: s.api,
      server_source: 'file',
      server_from: join(root, 'settings.json'),
      token: 'set',
      instance_id: reg.json.id,
      instance_name: 'ada',
      file: join(root, 'settings.json'),
      identity_file: file,
    })
    expect(show.json.precedence).toContain('SERVICE_SERVER/SERVICE_TOKEN > MUSTER_SERVER/MUSTER_TOKEN > settings.json')
    expect(show.stdout).not.toContain(TOKEN)
  })

  test('.muster/ is ignored by git: after register in a fresh repository `git status --porcelain` is empty', async () => {
    const root = repo()
    const reg = await runCli(['register', 'x'], { cwd: root, env: viaEnv })
    expect(reg.code).toBe(0)
    expect(existsSync(join(root, '.muster', 'agents', 'x.json'))).toBe(true)
    expect(git(root, 'status', '--porcelain', '--untracked-files=all')).toBe('')
    // Also when someone runs `git add -A`.
    git(root, 'add', '-A')
    expect(git(root, 'status', '--porcelain')).toBe('')
  })

  test('register of the same name resumes the saved instance (same id, lock kept); another name gets a file of its own', async () => {
    const root = repo()
    const first = await runCli(['register', 'bo'], { cwd: root, env: viaEnv })
    expect(first.code).toBe(0)
    expect((await runCli(['lock', 'acquire', 'id/resume', '--ttl', '1m'], { cwd: root, env: viaEnv })).code).toBe(0)
    const again = await runCli(['register', 'bo'], { cwd: root, env: viaEnv })
    expect(again.code).toBe(0)
    expect(again.json).toMatchObject({ id: first.json.id, name: 'bo', resumed: true })
    expect(again.stderr).toBe('')
    expect(identityOf(root)!.instance_id).toBe(first.json.id)
    const held = (await call(s.api, 'GET', '/api/locks/id/resume', undefined, auth)).body
    expect(held.holders.map((h: any) => h.instance_id)).toEqual([first.json.id])
    const live = (await call(s.api, 'GET', '/api/instances?name=bo', undefined, auth)).body
    expect(live.map((i: any) => i.id)).toEqual([first.json.id])

    const other = await runCli(['register', 'cy'], { cwd: root, env: viaEnv })
    expect(other.json.id).not.toBe(first.json.id)
    expect(identityOf(root, undefined, { MUSTER_AGENT: 'cy' })).toMatchObject({ name: 'cy', instance_id: other.json.id })
    expect(identityOf(root, undefined, { MUSTER_AGENT: 'bo' })).toMatchObject({ name: 'bo', instance_id: first.json.id })
  })

  test('register --new makes a fresh instance; the answer and stderr carry the warning', async () => {
    const root = repo()
    const first = await runCli(['register', 'dee'], { cwd: root, env: viaEnv })
    const fresh = await runCli(['register', 'dee', '--new'], { cwd: root, env: viaEnv })
    expect(fresh.code).toBe(0)
    expect(fresh.json.id).not.toBe(first.json.id)
    expect(fresh.json.resumed).toBeUndefined()
    expect(typeof fresh.json.warning).toBe('string')
    expect(fresh.stderr).toContain(fresh.json.warning)
    expect(identityOf(root)).toMatchObject({ name: 'dee', instance_id: fresh.json.id, instance_token: fresh.json.token })
  })

  test('register of the saved name after the server dropped that instance makes a new one', async () => {
    const root = repo()
    const first = await runCli(['register', 'eve'], { cwd: root, env: viaEnv })
    expect((await call(s.api, 'DELETE', `/api/instances/${first.json.id}`, undefined, auth)).status).toBe(200)
    const again = await runCli(['register', 'eve'], { cwd: root, env: viaEnv })
    expect(again.code).toBe(0)
    expect(again.json.id).not.toBe(first.json.id)
    expect(again.json.resumed).toBeUndefined()
    expect(identityOf(root)).toMatchObject({ name: 'eve', instance_id: again.json.id })
  })

  test('instances delete of its own instance forgets the identity', async () => {
    const root = repo()
    const reg = await runCli(['register', 'gone'], { cwd: root, env: viaEnv })
    expect((await runCli(['instances', 'delete', reg.json.id], { cwd: root, env: viaEnv })).code).toBe(0)
    expect(identityOf(root)).toBeNull()
    const show = await runCli(['config', 'show'], { cwd: root, env: viaEnv })
    expect(show.json.instance_id).toBeNull()
  })
})

describe('outside a repository', () => {
  test('the identity goes to $XDG_CONFIG_HOME/muster, one file per directory, none in the directory', async () => {
    const home = workdir()
    const a = realpathSync(workdir({ server: s.api, token: TOKEN }))
    const b = realpathSync(workdir({ server: s.api, token: TOKEN }))
    const env = { XDG_CONFIG_HOME: home }
    const ra = await runCli(['register', 'out-a'], { cwd: a, env })
    const rb = await runCli(['register', 'out-b'], { cwd: b, env })
    expect([ra.code, rb.code]).toEqual([0, 0])
    const files = readdirSync(join(home, 'muster', 'identities'))
    expect(files).toHaveLength(2)
    expect(identityOf(a, home)).toMatchObject({ name: 'out-a', instance_id: ra.json.id, dir: a })
    expect(identityOf(b, home)).toMatchObject({ name: 'out-b', instance_id: rb.json.id, dir: b })
    expect(statSync(join(home, 'muster', 'identities', files[0]!)).mode & 0o777).toBe(0o600)
    expect(readdirSync(a).sort()).toEqual(['settings.json'])
    expect(json(join(a, 'settings.json'))).toEqual({ server: s.api, token: TOKEN })
    const show = await runCli(['config', 'show'], { cwd: a, env })
    expect(show.json.identity_file.startsWith(join(home, 'muster', 'identities'))).toBe(true)
    // Each directory acts as its own instance.
    expect((await runCli(['lock', 'acquire', 'id/out', '--ttl', '1m'], { cwd: a, env })).code).toBe(0)
    const taken = await runCli(['lock', 'acquire', 'id/out', '--ttl', '1m'], { cwd: b, env })
    expect(taken.code).toBe(1)
  })

  test('identity keys of an old ./settings.json keep working and move out on the next write', async () => {
    const agent = await register(s, 'legacy', auth)
    const d = workdir({ server: s.api, token: TOKEN, instance_id: agent.id, instance_token: agent.token })
    expect((await runCli(['lock', 'acquire', 'id/legacy', '--ttl', '1m'], { cwd: d })).code).toBe(0)
    const held = (await call(s.api, 'GET', '/api/locks/id/legacy', undefined, auth)).body
    expect(held.holders.map((h: any) => h.instance_id)).toEqual([agent.id])
    // `task claim` writes the identity (its claim): the old keys move with it.
    expect((await runCli(['task', 'add', 'legacy-q', '--title', 't'], { cwd: d })).code).toBe(0)
    const claim = await runCli(['task', 'claim', 'legacy-q'], { cwd: d })
    expect(claim.code).toBe(0)
    expect(json(join(d, 'settings.json'))).toEqual({ server: s.api, token: TOKEN })
    expect(identityOf(d)).toMatchObject({ instance_id: agent.id, instance_token: agent.token, claims: { [claim.json.id]: claim.json.claim_id } })
    expect((await runCli(['task', 'ack', String(claim.json.id)], { cwd: d })).code).toBe(0)
    // The old layout saved no name: register of the instance's name still resumes it.
    const again = await runCli(['register', 'legacy'], { cwd: d })
    expect(again.json).toMatchObject({ id: agent.id, resumed: true })
    expect(identityOf(d)).toMatchObject({ name: 'legacy', instance_id: agent.id })
  })
})

describe('a settings.json of another tool', () => {
  const oneLine = (stderr: string) => stderr.trim().split('\n')

  test('a key of another shape is one line naming the file and the key, exit 2', async () => {
    const d = realpathSync(workdir({ server: { port: 1 } }))
    const r = await runCli(['state', 'list'], { cwd: d })
    expect(r.code).toBe(2)
    expect(oneLine(r.stderr)).toEqual([
      `muster: ${join(d, 'settings.json')}: "server" must be a URL string (this file may belong to another tool; pass --server or set MUSTER_SERVER)`,
    ])
    expect(r.stderr).not.toContain('[object Object]')
    const tok = await runCli(['state', 'list'], { cwd: realpathSync(workdir({ server: s.api, token: 7 })) })
    expect([tok.code, oneLine(tok.stderr).length]).toEqual([2, 1])
    expect(tok.stderr).toContain('settings.json: "token" must be a string')
    // The way around it works: the file's keys are not needed then.
    expect((await runCli(['state', 'list'], { cwd: d, env: viaEnv })).code).toBe(0)
    expect((await runCli(['state', 'list', '--server', s.api, '--token', TOKEN], { cwd: d })).code).toBe(0)
    // And `config set` does not overwrite another tool's key.
    const set = await runCli(['config', 'set', 'server', s.api], { cwd: d })
    expect(set.code).toBe(2)
    expect(oneLine(set.stderr)).toHaveLength(1)
    expect(json(join(d, 'settings.json'))).toEqual({ server: { port: 1 } })
  })

  test('not an object, or not JSON: one line naming the file; found from a subdirectory up to the git root', async () => {
    const root = repo()
    writeFileSync(join(root, 'settings.json'), '[1, 2]')
    const sub = join(root, 'pkg')
    mkdirSync(sub)
    const r = await runCli(['state', 'list'], { cwd: sub })
    expect(r.code).toBe(2)
    expect(oneLine(r.stderr)).toEqual([
      `muster: ${join(root, 'settings.json')} must hold a JSON object such as {"server": "http://localhost:9800"} (this file may belong to another tool; pass --server or set MUSTER_SERVER)`,
    ])
    writeFileSync(join(root, 'settings.json'), '{nope')
    const bad = await runCli(['state', 'list'], { cwd: sub })
    expect([bad.code, oneLine(bad.stderr).length]).toEqual([2, 1])
    expect(bad.stderr).toContain(`${join(root, 'settings.json')} is not valid JSON`)
    // A nearer settings.json wins over the root's.
    writeFileSync(join(sub, 'settings.json'), JSON.stringify({ server: s.api, token: TOKEN }))
    expect((await runCli(['state', 'list'], { cwd: sub })).code).toBe(0)
  })

  test('a settings.json above the git root is not read', async () => {
    const outer = realpathSync(workdir({ server: { port: 1 } }))
    const inner = join(outer, 'project')
    mkdirSync(inner)
    git(inner, 'init', '-q')
    const show = await runCli(['config', 'show'], { cwd: inner })
    expect(show.json).toMatchObject({ server: 'http://localhost:9800', server_source: 'default', file: join(inner, 'settings.json') })
  })
})

describe('precedence: flag > SERVICE_* > MUSTER_* > settings.json > default', () => {
  test('MUSTER_SERVER / MUSTER_TOKEN beat settings.json and lose to SERVICE_*', async () => {
    const d = workdir({ server: 'http://127.0.0.1:9', token: 'wrong-file-token' })
    const ok = await runCli(['state', 'list'], { cwd: d, env: viaEnv })
    expect(ok.code).toBe(0)
    const show = await runCli(['config', 'show'], { cwd: d, env: viaEnv })
    expect(show.json).toMatchObject({ server: s.api, server_source: 'env', server_from: 'MUSTER_SERVER', token_source: 'env', token_from: 'MUSTER_TOKEN' })

    const serviceToken = await runCli(['state', 'list'], { cwd: d, env: { ...viaEnv, SERVICE_TOKEN: 'wrong-env-token' } })
    expect([serviceToken.code, serviceToken.error]).toEqual([1, { error: 'invalid or missing bearer token', code: 401 }])
    const serviceServer = await runCli(['state', 'list'], { cwd: d, env: { MUSTER_SERVER: 'http://127.0.0.1:9', SERVICE_SERVER: s.api, MUSTER_TOKEN: TOKEN } })
    expect(serviceServer.code).toBe(0)
    const flag = await runCli(['state', 'list', '--token', TOKEN], { cwd: d, env: { SERVICE_SERVER: s.api, SERVICE_TOKEN: 'wrong-env-token' } })
    expect(flag.code).toBe(0)
    const both = await runCli(['config', 'show', '--server', s.api], { cwd: d, env: { SERVICE_SERVER: 'http://127.0.0.1:9', MUSTER_TOKEN: TOKEN } })
    expect(both.json).toMatchObject({ server_source: 'flag', server_from: '--server', token_from: 'MUSTER_TOKEN' })
    const dflt = await runCli(['config', 'show'], { cwd: workdir() })
    expect(dflt.json).toMatchObject({ server: 'http://localhost:9800', server_source: 'default', server_from: 'default', token: null, token_from: null })
  })

  test('a bad MUSTER_SERVER is one line naming the variable', async () => {
    const r = await runCli(['state', 'list'], { cwd: workdir(), env: { MUSTER_SERVER: 'ftp://x' } })
    expect(r.code).toBe(2)
    expect(r.stderr.trim()).toBe("muster: MUSTER_SERVER: invalid server URL 'ftp://x': use http:// or https://")
  })

  test('the help says where settings and identity live and who wins', async () => {
    const r = await runCli(['config', '--help'], { cwd: workdir() })
    expect(r.stdout).toContain('MUSTER_SERVER')
    expect(r.stdout).toContain('.muster/')
  })
})

describe('tokens', () => {
  test('create (secret shown once), list (never the secret), revoke; an agent token registers and acts', async () => {
    const d = workdir({ server: s.api, token: TOKEN })
    const made = await runCli(['token', 'create', 'agent-one', '--role', 'agent', '--ttl', '1h'], { cwd: d })
    expect(made.code).toBe(0)
    expect(made.json).toMatchObject({ name: 'agent-one', role: 'agent' })
    expect(typeof made.json.token).toBe('string')
    const list = await runCli(['token', 'list'], { cwd: d })
    expect(list.json.map((t: any) => t.id)).toContain(made.json.id)
    expect(list.stdout).not.toContain(made.json.token)

    const agentDir = realpathSync(workdir())
    const asAgent = { MUSTER_SERVER: s.api, MUSTER_TOKEN: made.json.token }
    expect((await runCli(['register', 'tok-agent'], { cwd: agentDir, env: asAgent })).code).toBe(0)
    const me = await runCli(['whoami'], { cwd: agentDir, env: asAgent })
    expect(me.json).toMatchObject({ role: 'agent', token: { id: made.json.id, name: 'agent-one' }, instance: { name: 'tok-agent' } })
    const st = await runCli(['status'], { cwd: agentDir, env: asAgent })
    expect(st.json.role).toBe('agent')

    expect((await runCli(['token', 'revoke', made.json.id], { cwd: d })).json).toEqual({ id: made.json.id, revoked: true })
    const refused = await runCli(['state', 'list'], { cwd: agentDir, env: asAgent })
    expect([refused.code, refused.error.code]).toEqual([1, 401])
    const again = await runCli(['token', 'revoke', made.json.id], { cwd: d })
    expect([again.code, again.error.code]).toEqual([1, 404])
  })

  test("a directory whose saved instance belongs to another agent token registers a new one, and says so", async () => {
    const d = workdir({ server: s.api, token: TOKEN })
    const tokenOf = async (name: string) => (await runCli(['token', 'create', name, '--role', 'agent'], { cwd: d })).json.token as string
    const [first, second] = [await tokenOf('agent-first'), await tokenOf('agent-second')]
    const root = repo()
    const a = await runCli(['register', 'shared'], { cwd: root, env: { MUSTER_SERVER: s.api, MUSTER_TOKEN: first } })
    expect(a.code).toBe(0)
    const b = await runCli(['register', 'shared'], { cwd: root, env: { MUSTER_SERVER: s.api, MUSTER_TOKEN: second } })
    expect(b.code).toBe(0)
    expect(b.json.id).not.toBe(a.json.id)
    expect(b.stderr).toContain(`the saved instance ${a.json.id} cannot be resumed (403); registering a new one`)
    expect(identityOf(root)).toMatchObject({ name: 'shared', instance_id: b.json.id })
  })

  test('bad input is exit 2 and makes nothing', async () => {
    const d = workdir({ server: s.api, token: TOKEN })
    for (const args of [
      ['token', 'create', 'x'],
      ['token', 'create', 'x', '--role', 'admin'],
      ['token', 'create', 'x', '--role', 'agent', '--ttl', 'soon'],
      ['token', 'revoke'],
    ])
      expect((await runCli(args, { cwd: d })).code).toBe(2)
  })
})
