// CLI conventions, run through the compiled binary (compiled once here):
// --version, global --server/--token/--debug, shell completion, `-` for stdout
// and stdin, heartbeat loops, and no stack traces.
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import pkg from '../package.json' with { type: 'json' }
import { call, eventually, startServer, tempDir, type TestServer } from './helpers'
import { removeWorkdirs, runCli, spawnCli, workdir } from './cli-run'

const TOKEN = 'conventions-token'
const auth = { authorization: `Bearer ${TOKEN}` }
let s: TestServer
let bin: string
let dir: string
const out = tempDir('muster-conv-bin-')

beforeAll(async () => {
  bin = join(out, 'muster')
  const build = Bun.spawn([process.execPath, 'build', '--compile', 'cli.ts', '--outfile', bin], {
    cwd: join(import.meta.dir, '..'),
    stdout: 'pipe',
    stderr: 'pipe',
  })
  s = await startServer({ args: ['--auth-token', TOKEN] })
  if ((await build.exited) !== 0) throw new Error(`compile failed: ${await new Response(build.stderr).text()}`)
  dir = workdir({ server: s.api, token: TOKEN })
}, 60_000)
afterAll(async () => {
  await s.cleanup()
  removeWorkdirs()
})

const muster = (args: string[], opts: { cwd?: string; env?: Record<string, string>; stdin?: string | Uint8Array } = {}) =>
  runCli(args, { cwd: opts.cwd ?? dir, env: opts.env, stdin: opts.stdin, bin })

describe('version and global flags', () => {
  test('--version and -V print the package version, exit 0', async () => {
    for (const flag of ['--version', '-V']) {
      const r = await muster([flag], { cwd: workdir() })
      expect([r.code, r.stdout]).toEqual([0, `${pkg.version}\n`])
    }
  })

  test('--server and --token beat SERVICE_SERVER / SERVICE_TOKEN and settings.json, anywhere in the command', async () => {
    const d = workdir({ server: 'http://127.0.0.1:9', token: 'wrong-file-token' })
    const env = { SERVICE_SERVER: 'http://127.0.0.1:9', SERVICE_TOKEN: 'wrong-env-token' }
    expect((await muster(['state', 'list'], { cwd: d, env })).code).toBe(1)
    const r = await muster(['state', 'list', '--server', s.api, `--token=${TOKEN}`], { cwd: d, env })
    expect(r.code).toBe(0)
    expect(Array.isArray(r.json)).toBe(true)
    const before = await muster(['--server', s.api, '--token', TOKEN, 'metrics'], { cwd: d, env })
    expect([before.code, before.json.version]).toEqual([0, pkg.version])
    const show = await muster(['config', 'show', '--server', s.api, '--token', TOKEN], { cwd: d, env })
    expect(show.json).toMatchObject({ server: s.api, server_source: 'flag', token: 'set', token_source: 'flag' })
    // The flag's token is really the one sent: a wrong one is the server's 401.
    const wrong = await muster(['state', 'list', '--server', s.api, '--token', 'nope'], { cwd: d })
    expect([wrong.code, wrong.error]).toEqual([1, { error: 'invalid or missing bearer token', code: 401 }])
    const missing = await muster(['state', 'list', '--server'], { cwd: d })
    expect(missing.code).toBe(2)
    expect(missing.stderr).toContain("'--server <value>' argument missing")
  })

  test('no stack trace: an unexpected failure is one line; --debug adds requests and the stack', async () => {
    // Not a Muster server: it answers 200 with a body that is not JSON.
    const other = Bun.serve({ port: 0, hostname: '127.0.0.1', fetch: () => new Response('<html>hello</html>') })
    try {
      const args = ['specs', 'set', 'p/n', '--data', '{}', '--server', `http://127.0.0.1:${other.port}`]
      const plain = await muster(args)
      expect(plain.code).toBe(1)
      expect(plain.stderr.trim().split('\n')).toHaveLength(1)
      expect(plain.error.error).toMatch(/^unexpected failure: .*\(--debug shows details\)$/)
      expect(plain.stderr).not.toContain('    at ')
      const debug = await muster([...args, '--debug'])
      expect(debug.code).toBe(1)
      expect(debug.stderr).toContain(`muster: PUT http://127.0.0.1:${other.port}/api/specs/p/n -> 200`)
      expect(debug.stderr).toContain('    at ')
    } finally {
      other.stop(true)
    }
  })

  test('every --help ends with examples and the global options', async () => {
    for (const args of [['--help'], ['state', 'set', '--help'], ['rules', 'propose', '--help'], ['completion', '--help']]) {
      const r = await muster(args)
      expect(r.code).toBe(0)
      expect(r.stdout).toMatch(/\nExamples:\n {2}\$ \S/)
    }
    expect((await muster(['heartbeat', '--help'])).stdout).toContain('Global options (anywhere in the command): --server <url>')
    expect((await muster(['lock', 'list', '--help'])).stdout).toContain('-o json|table|yaml, --fields <a,b.c>, --pretty, --no-color')
  })
})

describe('completion', () => {
  const script = async (shell: string) => {
    const r = await muster(['completion', shell])
    expect(r.code).toBe(0)
    const file = join(out, `muster.${shell}`)
    await Bun.write(file, r.stdout)
    return file
  }
  const run = async (cmd: string[]) => {
    const p = Bun.spawn(cmd, { stdout: 'pipe', stderr: 'pipe', env: { PATH: process.env.PATH ?? '/usr/bin:/bin', HOME: out } })
    const [stdout, stderr, code] = await Promise.all([new Response(p.stdout).text(), new Response(p.stderr).text(), p.exited])
    return { stdout, stderr, code }
  }

  test('bash: subcommands, options and choices at the cursor', async () => {
    const file = await script('bash')
    // Completes `line` as if <TAB> were pressed at its end; prints the candidates.
    const complete = async (line: string) => {
      const words = line.split(' ')
      const program = `source ${file}; COMP_WORDS=(${words.map((w) => `'${w}'`).join(' ')}); COMP_CWORD=${words.length - 1}; _muster; printf '%s\\n' "\${COMPREPLY[@]}"`
      const r = await run(['bash', '-c', program])
      expect(r.stderr).toBe('')
      return r.stdout.split('\n').filter(Boolean).sort()
    }
    expect(await complete('muster sta')).toEqual(['state', 'status'])
    expect(await complete('muster rules ')).toEqual(expect.arrayContaining(['accept', 'get', 'list', 'propose', 'reject', 'set', 'export', 'import']))
    expect(await complete('muster state set --')).toEqual(expect.arrayContaining(['--data', '--file', '--content-type', '--if-version', '--server', '--token']))
    expect(await complete('muster templates create x --kind ')).toEqual(['bundle', 'contracts', 'rules'])
    expect(await complete('muster config set ')).toEqual(expect.arrayContaining(['server', 'token']))
    expect(await complete('muster --pretty contract ')).toEqual(expect.arrayContaining(['delete', 'diff', 'history', 'list', 'test']))
    expect(await complete('muster completion ')).toEqual(expect.arrayContaining(['bash', 'fish', 'zsh']))
    // A value of a free option: no words, so bash falls back to file names.
    expect(await complete('muster state set k --file ')).toEqual([])
  })

  test.skipIf(!Bun.which('fish'))('fish: subcommands, options and choices at the cursor', async () => {
    const file = await script('fish')
    const complete = async (line: string) => {
      const r = await run(['fish', '--no-config', '-c', `source ${file}; complete -C '${line}'`])
      expect(r.stderr).toBe('')
      return r.stdout.split('\n').filter(Boolean).map((l) => l.split('\t')[0]!).sort()
    }
    expect(await complete('muster sta')).toEqual(['state', 'status'])
    expect(await complete('muster rules ')).toEqual(expect.arrayContaining(['accept', 'propose', 'reject']))
    expect(await complete('muster state set --')).toEqual(expect.arrayContaining(['--data', '--file', '--server']))
    expect(await complete('muster templates create x --kind ')).toEqual(['bundle', 'contracts', 'rules'])
  })

  test.skipIf(!Bun.which('zsh'))('zsh: the script loads under compinit and registers _muster', async () => {
    const file = await script('zsh')
    const r = await run([
      'zsh',
      '-f',
      '-c',
      `autoload -U compinit && compinit -u -d ${out}/zcompdump && source ${file} && print -r -- $_comps[muster] && _muster_is_command 'rules propose' && ! _muster_is_command 'rules nope' && print ok`,
    ])
    expect(r.stderr).toBe('')
    expect(r.stdout).toBe('_muster\nok\n')
    // The candidates _muster hands to zsh, with the completion builtins replaced by printers.
    const complete = async (line: string) => {
      const words = line.split(' ')
      const stubs = `_describe() { print -rl -- "\${(@P)\${@[-1]}}" }; compadd() { shift; print -rl -- "$@" }; _files() { print FILES }`
      const c = await run(['zsh', '-f', '-c', `compdef() {}; source ${file}; ${stubs}; words=(${words.map((w) => `'${w}'`).join(' ')}); CURRENT=${words.length}; _muster`])
      expect(c.stderr).toBe('')
      return c.stdout.split('\n').filter(Boolean)
    }
    expect(await complete('muster rules ')).toEqual(expect.arrayContaining(['propose:propose a rule for review (it fires only once accepted)']))
    expect(await complete('muster state set --')).toEqual(expect.arrayContaining(['--data:the value inline', '--server:server URL']))
    expect(await complete('muster templates create x --kind ')).toEqual(['rules', 'contracts', 'bundle'])
    expect(await complete('muster state set k --file ')).toEqual(['FILES'])
  })

  test('an unknown shell is a usage error', async () => {
    const r = await muster(['completion', 'tcsh'])
    expect(r.code).toBe(2)
    expect(r.stderr).toContain('Allowed choices are bash, zsh, fish')
  })
})

describe("'-' for stdout and stdin", () => {
  test('backup --output - streams the database to stdout; restore --file - reads it from stdin', async () => {
    await call(s.api, 'PUT', '/api/state/dash/k', '"before"', auth)
    const b = await muster(['backup', '--output', '-'])
    expect(b.code).toBe(0)
    expect(new TextDecoder().decode(b.bytes.subarray(0, 15))).toBe('SQLite format 3')
    expect(b.stderr).toBe('')
    await call(s.api, 'PUT', '/api/state/dash/k', '"after"', auth)
    const r = await muster(['restore', '--file', '-'], { stdin: b.bytes })
    expect(r.code).toBe(0)
    expect(r.json).toMatchObject({ restored: true, bytes: b.bytes.byteLength })
    expect((await call(s.api, 'GET', '/api/state/dash/k', undefined, auth)).body).toBe('before')
  })

  test('rules export --output - prints indented JSON; rules import --file - and rules set --file - read stdin', async () => {
    const rules = [{ project: 'dash', rule_id: 'no-todo', pattern: 'TODO' }]
    const imp = await muster(['rules', 'import', '--file', '-'], { stdin: JSON.stringify(rules) })
    expect(imp.json).toEqual({ imported: 1 })
    const exp = await muster(['rules', 'export', '--source', 'external', '--output', '-'])
    expect(exp.code).toBe(0)
    expect(exp.stdout).toBe(JSON.stringify(exp.json, null, 2) + '\n')
    expect(exp.json.find((r: any) => r.project === 'dash')).toMatchObject({ rule_id: 'no-todo', source: 'external' })
    const set = await muster(['rules', 'set', 'dash', '--file', '-'], { stdin: '[{"rule_id":"no-fixme","pattern":"FIXME"}]' })
    expect(set.json).toEqual({ project: 'dash', count: 1 })
    const file = join(out, 'export.json')
    const toFile = await muster(['rules', 'export', '--output', file])
    expect(toFile.json).toMatchObject({ output: file })
    expect(JSON.parse(readFileSync(file, 'utf8'))).toHaveLength(toFile.json.count)
  })
})

describe('heartbeat', () => {
  test('once without --every; --every D beats until SIGTERM, then exit 0', async () => {
    const d = workdir({ server: s.api, token: TOKEN })
    const reg = await muster(['register', 'looper'], { cwd: d })
    expect(reg.code).toBe(0)
    const once = await muster(['heartbeat'], { cwd: d })
    expect([once.code, once.json]).toEqual([0, { id: reg.json.id, status: 'ok' }])
    const loop = spawnCli(['heartbeat', '--every', '150ms'], { cwd: d, bin })
    try {
      const deadline = Date.now() + 10_000
      while (loop.lines().length < 3 && Date.now() < deadline) await Bun.sleep(20)
      expect(loop.lines().slice(0, 3).map((l) => JSON.parse(l))).toEqual(Array(3).fill({ id: reg.json.id, status: 'ok' }))
    } finally {
      loop.proc.kill('SIGTERM')
    }
    expect(await loop.proc.exited).toBe(0)
    expect((await muster(['heartbeat', '--every', 'soon'], { cwd: d })).code).toBe(2)
  })

  test('any command of a registered agent is a heartbeat: a stale instance is active again after `state list`', async () => {
    const quick = await startServer({ args: ['--stale-timeout', '1s', '--liveness-interval', '1h'] })
    try {
      const d = workdir({ server: quick.api })
      const reg = (await muster(['register', 'sleeper'], { cwd: d })).json
      await Bun.sleep(1100)
      expect((await muster(['instances', 'check'], { cwd: workdir({ server: quick.api }) })).json.newly_stale).toEqual([
        expect.objectContaining({ id: reg.id }),
      ])
      expect((await muster(['state', 'list'], { cwd: d })).code).toBe(0)
      await eventually(async () => (await call(quick.api, 'GET', `/api/instances/${reg.id}`)).body.status === 'active')
    } finally {
      await quick.cleanup()
    }
  })
})
