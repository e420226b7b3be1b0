// The CLI as users run it: `bun cli.ts ...` in a directory of its own against a
// live server (started with an auth token, so every call must carry it).
// The command groups of the other resources are in cli-services.test.ts.
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { readFileSync, rmSync, statSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import type { Command } from 'commander'
import { buildProgram } from '../cli'
import { startServer, tempDir, type TestServer } from './helpers'
import { removeWorkdirs, runCli, workdir } from './cli-run'

const TOKEN = 'cli-test-token'
let s: TestServer
/** A working directory whose settings.json points at the server with the right token. */
let dir: string
const auth = { authorization: `Bearer ${TOKEN}` }

beforeAll(async () => {
  s = await startServer({ args: ['--auth-token', TOKEN] })
  dir = workdir({ server: s.api, token: TOKEN })
})
afterAll(async () => {
  await s.cleanup()
  removeWorkdirs()
})

const cli = (...args: string[]) => runCli(args, { cwd: dir })
const settingsOf = (d: string) => JSON.parse(readFileSync(join(d, 'settings.json'), 'utf8'))

describe('config and status', () => {
  test('config set server|token writes ./settings.json (owner-only), status uses it', async () => {
    const d = workdir()
    const a = await runCli(['config', 'set', 'server', s.api + '/'], { cwd: d })
    expect(a.code).toBe(0)
    expect(a.json).toEqual({ server: s.api, file: join(d, 'settings.json') })
    const b = await runCli(['config', 'set', 'token', TOKEN], { cwd: d })
    expect(b.code).toBe(0)
    expect(b.stdout).not.toContain(TOKEN)
    expect(settingsOf(d)).toEqual({ server: s.api, token: TOKEN })
    expect(statSync(join(d, 'settings.json')).mode & 0o777).toBe(0o600)

    const st = await runCli(['status'], { cwd: d })
    expect(st.code).toBe(0)
    expect(st.json).toMatchObject({ server: s.api, status: 'ok' })
    expect(typeof st.json.uptime).toBe('string')

    const cleared = await runCli(['config', 'set', 'token', ''], { cwd: d })
    expect(cleared.json.token).toBe('removed')
    expect(settingsOf(d)).toEqual({ server: s.api })
  })

  test('status without the token is the server 401, exit 1', async () => {
    const d = workdir({ server: s.api })
    const r = await runCli(['status'], { cwd: d })
    expect(r.code).toBe(1)
    expect(r.error).toEqual({ error: 'invalid or missing bearer token', code: 401 })
    expect(r.stdout).toBe('')
  })

  test('bad config values are usage errors and change nothing', async () => {
    const d = workdir({ server: s.api })
    const key = await runCli(['config', 'set', 'colour', 'red'], { cwd: d })
    expect(key.code).toBe(2)
    expect(key.stderr).toContain('Allowed choices are server, token')
    const url = await runCli(['config', 'set', 'server', 'ftp://x'], { cwd: d })
    expect(url.code).toBe(2)
    expect(url.stderr).toContain('invalid server URL')
    expect(settingsOf(d)).toEqual({ server: s.api })
  })

  test('a malformed settings.json is a usage error naming the file', async () => {
    const d = workdir()
    writeFileSync(join(d, 'settings.json'), '{nope')
    const r = await runCli(['state', 'list'], { cwd: d })
    expect(r.code).toBe(2)
    expect(r.stderr).toContain('settings.json is not valid JSON')
  })

  test('an unreachable server is exit 1 with an error naming it', async () => {
    const r = await runCli(['state', 'list'], { cwd: workdir({ server: 'http://127.0.0.1:9' }) })
    expect(r.code).toBe(1)
    expect(r.error.error).toContain('cannot reach http://127.0.0.1:9')
  })
})

describe('env over file', () => {
  test('SERVICE_SERVER beats the server in settings.json', async () => {
    const d = workdir({ server: 'http://127.0.0.1:9', token: TOKEN })
    const r = await runCli(['state', 'list'], { cwd: d, env: { SERVICE_SERVER: s.api } })
    expect(r.code).toBe(0)
    expect(Array.isArray(r.json)).toBe(true)
  })

  test('SERVICE_TOKEN beats the token in settings.json, both ways', async () => {
    const wrongInFile = workdir({ server: s.api, token: 'wrong' })
    const ok = await runCli(['state', 'list'], { cwd: wrongInFile, env: { SERVICE_TOKEN: TOKEN } })
    expect(ok.code).toBe(0)
    const rightInFile = workdir({ server: s.api, token: TOKEN })
    const denied = await runCli(['state', 'list'], { cwd: rightInFile, env: { SERVICE_TOKEN: 'wrong' } })
    expect(denied.code).toBe(1)
    expect(denied.error).toEqual({ error: 'invalid or missing bearer token', code: 401 })
  })

  test('config show reports each value and where it came from, token masked', async () => {
    const d = workdir({ server: 'http://127.0.0.1:9', token: TOKEN })
    const r = await runCli(['config', 'show'], { cwd: d, env: { SERVICE_SERVER: s.api } })
    expect(r.json).toMatchObject({ server: s.api, server_source: 'env', token: 'set', token_source: 'file' })
    expect(r.stdout).not.toContain(TOKEN)
    const dflt = await runCli(['config', 'show'], { cwd: workdir() })
    expect(dflt.json).toMatchObject({ server: 'http://localhost:9800', server_source: 'default', token: null })
  })
})

describe('state', () => {
  test('set --data, get raw, list', async () => {
    const w = await cli('state', 'set', 'proj/cfg', '--data', '{"a":1}')
    expect(w.code).toBe(0)
    expect(w.json).toMatchObject({ key: 'proj/cfg', version: 1, content_type: 'application/json' })
    expect(w.stdout).toBe(JSON.stringify(w.json) + '\n')
    const g = await cli('state', 'get', 'proj/cfg')
    expect(g.code).toBe(0)
    expect(g.stdout).toBe('{"a":1}')
    const list = await cli('state', 'list')
    expect(list.json).toContainEqual({ key: 'proj/cfg', version: 1, content_type: 'application/json', updated_at: w.json.updated_at })
  })

  test('binary --file round-trips byte for byte through get on stdout', async () => {
    const bytes = new Uint8Array(70_000).map((_, i) => (i * 131 + (i >> 8)) % 256)
    const file = join(dir, 'blob.bin')
    writeFileSync(file, bytes)
    const w = await cli('state', 'set', 'bin/blob', '--file', file, '--content-type', 'application/octet-stream')
    expect(w.code).toBe(0)
    expect(w.json.hash).toBe(new Bun.CryptoHasher('sha256').update(bytes).digest('hex'))
    const g = await cli('state', 'get', 'bin/blob')
    expect(g.code).toBe(0)
    expect(g.bytes).toEqual(bytes)
    const raw = await fetch(`${s.api}/api/state/bin/blob`, { headers: auth })
    expect(raw.headers.get('content-type')).toBe('application/octet-stream')
  })

  test('set --file - reads stdin; keys with spaces, ? and % survive the URL', async () => {
    const key = 'odd/a b?c%d#e'
    const w = await runCli(['state', 'set', key, '--file', '-', '--content-type', 'text/plain'], { cwd: dir, stdin: 'from stdin' })
    expect(w.code).toBe(0)
    expect(w.json.key).toBe(key)
    expect((await cli('state', 'get', key)).stdout).toBe('from stdin')
  })

  test('history --limit, get --version, diff --v1 --v2, rollback --version', async () => {
    for (const v of [{ n: 1 }, { n: 2 }, { n: 3, extra: true }]) expect((await cli('state', 'set', 'h/doc', '--data', JSON.stringify(v))).code).toBe(0)
    const h = await cli('state', 'history', 'h/doc', '--limit', '2')
    expect(h.json.key).toBe('h/doc')
    expect(h.json.versions.map((v: any) => v.version)).toEqual([3, 2])
    expect((await cli('state', 'get', 'h/doc', '--version', '1')).stdout).toBe('{"n":1}')
    const d = await cli('state', 'diff', 'h/doc', '--v1', '1', '--v2', '2')
    expect(d.json).toEqual({ key: 'h/doc', v1: 1, v2: 2, diffs: [{ operation: 'replace', path: '/n', old_value: 1, new_value: 2 }] })
    const r = await cli('state', 'rollback', 'h/doc', '--version', '1')
    expect(r.json).toMatchObject({ key: 'h/doc', version: 4, rolled_back: 1 })
    expect((await cli('state', 'get', 'h/doc')).stdout).toBe('{"n":1}')
  })

  test('delete, then get is exit 1 with the server 404 on stderr', async () => {
    await cli('state', 'set', 'gone/soon', '--data', '1')
    const del = await cli('state', 'delete', 'gone/soon')
    expect(del.json).toEqual({ deleted: 'gone/soon' })
    const g = await cli('state', 'get', 'gone/soon')
    expect(g.code).toBe(1)
    expect(g.stdout).toBe('')
    expect(g.error).toEqual({ error: 'key not found', code: 404 })
    const again = await cli('state', 'delete', 'gone/soon')
    expect(again.code).toBe(1)
    expect(again.error).toEqual({ error: 'key not found', code: 404 })
  })

  test('server errors: missing version on rollback, stale --if-version; nothing changes', async () => {
    await cli('state', 'set', 'cas/k', '--data', '"one"')
    const rb = await cli('state', 'rollback', 'cas/k', '--version', '9')
    expect(rb.code).toBe(1)
    expect(rb.error).toEqual({ error: 'version 9 not found', code: 404 })
    const stale = await cli('state', 'set', 'cas/k', '--data', '"two"', '--if-version', '5')
    expect(stale.code).toBe(1)
    expect(stale.error).toMatchObject({ code: 412, current_version: 1 })
    expect((await cli('state', 'get', 'cas/k')).stdout).toBe('"one"')
    const ok = await cli('state', 'set', 'cas/k', '--data', '"two"', '--if-version', '1')
    expect(ok.json.version).toBe(2)
  })

  test('usage errors are exit 2 and store nothing', async () => {
    const cases: [string[], string][] = [
      [['state', 'set', 'u/k'], 'give the value with --data'],
      [['state', 'set', 'u/k', '--data', '1', '--file', 'x'], 'cannot be used with option'],
      [['state', 'set', 'u/k', '--data', '{oops'], '--data is not valid JSON'],
      [['state', 'set', 'u/k', '--file', join(dir, 'missing.bin')], 'file not found'],
      [['state', 'rollback', 'u/k'], "required option '--version <n>' not specified"],
      [['state', 'history', 'u/k', '--limit', 'abc'], 'expected an integer >= 1'],
      [['state', 'diff', 'u/k', '--v1', '1'], "required option '--v2 <n>' not specified"],
      [['state', 'get'], "missing required argument 'key'"],
      [['state', 'get', 'a', 'b'], 'too many arguments'],
    ]
    for (const [args, message] of cases) {
      const r = await cli(...args)
      expect({ args, code: r.code }).toEqual({ args, code: 2 })
      expect(r.stderr).toContain(message)
      expect(r.stdout).toBe('')
    }
    expect((await cli('state', 'get', 'u/k')).code).toBe(1)
  })

  test('non-JSON values need --content-type, then store fine', async () => {
    const r = await cli('state', 'set', 'txt/k', '--data', 'plain words', '--content-type', 'text/plain')
    expect(r.json.content_type).toBe('text/plain')
    expect((await cli('state', 'get', 'txt/k')).stdout).toBe('plain words')
  })
})

describe('specs', () => {
  test('set --data / --file, get, list, delete', async () => {
    const a = await cli('specs', 'set', 'shop/api', '--data', '{"paths":{}}')
    expect(a.json).toMatchObject({ project: 'shop', name: 'api', version: 1 })
    const file = join(dir, 'spec.json')
    writeFileSync(file, '{"paths":{"/x":{}}}')
    const b = await cli('specs', 'set', 'shop/api', '--file', file)
    expect(b.json.version).toBe(2)
    expect((await cli('specs', 'get', 'shop/api')).stdout).toBe('{"paths":{"/x":{}}}')
    const list = await cli('specs', 'list', 'shop')
    expect(list.json).toEqual({ project: 'shop', specs: [{ name: 'api', version: 2, updated_at: b.json.updated_at }] })
    expect((await cli('specs', 'delete', 'shop/api')).json).toEqual({ deleted: 'shop/api' })
    const g = await cli('specs', 'get', 'shop/api')
    expect(g.code).toBe(1)
    expect(g.error).toEqual({ error: 'spec not found', code: 404 })
    expect((await cli('specs', 'list', 'shop')).json).toEqual({ project: 'shop', specs: [] })
  })

  test('a file that is not JSON is the server 400; nothing stored', async () => {
    const file = join(dir, 'bad.json')
    writeFileSync(file, 'not json')
    const r = await cli('specs', 'set', 'shop/bad', '--file', file)
    expect(r.code).toBe(1)
    expect(r.error).toEqual({ error: 'request body must be JSON: not valid JSON', code: 400 })
    expect((await cli('specs', 'get', 'shop/bad')).code).toBe(1)
  })

  test('a path without <project>/<name> is a usage error', async () => {
    for (const path of ['shop', 'shop/', '/api']) {
      const r = await cli('specs', 'get', path)
      expect(r.code).toBe(2)
      expect(r.stderr).toContain('expected <project>/<name>')
    }
  })
})

describe('audit', () => {
  test('audit with filters and audit summary', async () => {
    await cli('state', 'set', 'audit/k', '--data', '1')
    const r = await cli('audit', '--action', 'state.put', '--limit', '1')
    expect(r.code).toBe(0)
    expect(r.json).toHaveLength(1)
    expect(r.json[0]).toMatchObject({ action: 'state.put', resource: 'state/audit/k', actor: 'admin', outcome: 'success' })
    const sum = await cli('audit', 'summary', '--from', '2000-01-01T00:00:00Z')
    expect(sum.json.action_counts['state.put']).toBeGreaterThanOrEqual(1)
    expect(sum.json.total_entries).toBeGreaterThanOrEqual(1)
    const none = await cli('audit', 'summary', '--to', '2000-01-01T00:00:00Z')
    expect(none.json.total_entries).toBe(0)
  })

  test('a bad time is the server 400, exit 1', async () => {
    const r = await cli('audit', '--from', 'yesterday')
    expect(r.code).toBe(1)
    expect(r.error).toEqual({ error: 'invalid from: expected an RFC 3339 timestamp', code: 400 })
  })
})

describe('--pretty', () => {
  test('compact by default; --pretty before, inside and after the command', async () => {
    await cli('state', 'set', 'pretty/k', '--data', '{"a":[1,2]}')
    const compact = await cli('state', 'list')
    expect(compact.stdout).toBe(JSON.stringify(compact.json) + '\n')
    for (const args of [
      ['--pretty', 'state', 'list'],
      ['state', '--pretty', 'list'],
      ['state', 'list', '--pretty'],
    ]) {
      const r = await cli(...args)
      expect(r.code).toBe(0)
      expect(r.stdout).toBe(JSON.stringify(compact.json, null, 2) + '\n')
    }
  })

  test('state get --pretty reformats JSON values, leaves others raw', async () => {
    expect((await cli('state', 'get', '--pretty', 'pretty/k')).stdout).toBe('{\n  "a": [\n    1,\n    2\n  ]\n}\n')
    await cli('state', 'set', 'pretty/t', '--data', '{"a":1}', '--content-type', 'text/plain')
    expect((await cli('--pretty', 'state', 'get', 'pretty/t')).stdout).toBe('{"a":1}')
  })
})

describe('usage', () => {
  test('unknown command, unknown flag, no command: exit 2 saying what was expected', async () => {
    const unknown = await cli('webhook', 'list')
    expect(unknown.code).toBe(2)
    expect(unknown.stderr).toContain("unknown command 'webhook'")
    expect(unknown.stderr).toContain('Did you mean webhooks?')
    const sub = await cli('state', 'fetch', 'k')
    expect(sub.code).toBe(2)
    expect(sub.stderr).toContain("unknown command 'fetch'")
    const flag = await cli('state', 'list', '--bogus')
    expect(flag.code).toBe(2)
    expect(flag.stderr).toContain("unknown option '--bogus'")
    const none = await cli()
    expect(none.code).toBe(2)
    expect(none.stderr).toContain('Usage: muster')
    const group = await cli('specs')
    expect(group.code).toBe(2)
    expect(group.stderr).toContain('Usage: muster specs')
  })

  test('--help works on commands at every level, exit 0', async () => {
    for (const args of [['--help'], ['state', '--help'], ['state', 'set', '--help'], ['events', 'subscribe', '--help'], ['help', 'audit']]) {
      const r = await cli(...args)
      expect(r.code).toBe(0)
      expect(r.stdout).toContain('Usage: muster')
    }
  })

  test('every command of the spec exists and has its own help', () => {
    const program = buildProgram()
    const paths: string[] = []
    const walk = (cmd: Command, prefix: string[]) => {
      for (const c of cmd.commands) {
        const path = [...prefix, c.name()]
        paths.push(path.join(' '))
        expect(c.description()).not.toBe('')
        expect(c.helpInformation()).toContain(`Usage: muster ${path.join(' ')}`)
        walk(c, path)
      }
    }
    walk(program, [])
    const spec = [
      'config set', 'status', 'state list', 'state get', 'state set', 'state delete', 'state history', 'state rollback', 'state diff',
      'specs list', 'specs get', 'specs set', 'specs delete', 'events publish', 'events history', 'events subscribe',
      'register', 'activate', 'instances list', 'instances get', 'instances stale', 'webhooks list', 'webhooks add',
      'webhooks delete', 'webhooks test', 'compliance history', 'compliance run', 'templates list', 'templates get',
      'templates create', 'templates delete', 'templates apply', 'audit', 'audit summary', 'metrics agents', 'llm usage',
      'llm summary', 'rules import', 'rules export', 'contract set', 'contract get', 'contract validate', 'contract test',
      'backup', 'restore', 'completion', 'heartbeat', 'intent', 'capabilities', 'instances check', 'instances delete',
      'webhooks get', 'webhooks enable', 'webhooks disable', 'templates update', 'rules list', 'rules get', 'rules set',
      'rules propose', 'rules accept', 'rules reject', 'contract list', 'contract delete', 'contract history', 'contract diff',
      'specs history', 'specs diff', 'events subscriptions', 'validate',
    ]
    for (const p of spec) expect(paths).toContain(p)
  })
})

describe('compiled binary', () => {
  test('bun build --compile cli.ts gives a muster that runs without Bun on PATH', async () => {
    const out = tempDir('muster-cli-bin-')
    const bin = join(out, 'muster')
    try {
      const build = Bun.spawn([process.execPath, 'build', '--compile', 'cli.ts', '--outfile', bin], {
        cwd: join(import.meta.dir, '..'),
        stdout: 'pipe',
        stderr: 'pipe',
      })
      expect(await build.exited).toBe(0)
      const run = async (...args: string[]) => {
        const proc = Bun.spawn([bin, ...args], { cwd: dir, env: { PATH: '/usr/bin:/bin', HOME: out }, stdout: 'pipe', stderr: 'pipe' })
        const [stdout, stderr, code] = await Promise.all([new Response(proc.stdout).bytes(), new Response(proc.stderr).text(), proc.exited])
        return { stdout, stderr, code }
      }
      const bytes = new Uint8Array(1000).map((_, i) => (i * 7) % 256)
      writeFileSync(join(out, 'b.bin'), bytes)
      expect((await run('state', 'set', 'compiled/k', '--file', join(out, 'b.bin'), '--pretty')).code).toBe(0)
      expect((await run('state', 'get', 'compiled/k')).stdout).toEqual(bytes)
      const missing = await run('specs', 'get', 'no/such')
      expect(missing.code).toBe(1)
      expect(JSON.parse(missing.stderr)).toEqual({ error: 'spec not found', code: 404 })
      expect((await run('nope')).code).toBe(2)
    } finally {
      rmSync(out, { recursive: true, force: true })
    }
  }, 60_000)
})
