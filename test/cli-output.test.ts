// CLI output for people: -o json|table|yaml and --fields in every mode, a
// table by default under a pseudo-terminal (`script -qc`), colour only there and
// never with NO_COLOR or --no-color, and completion of lock, queue, instance and
// project names from a real server in bash, zsh and fish.
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { chmodSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { toYaml } from '../cli/yaml'
import { call, startServer, tempDir, type TestServer } from './helpers'
import { removeWorkdirs, runCli, workdir } from './cli-run'

/** A second YAML reader, with YAML 1.1's dates, as PyYAML has them; the OpenAPI dev dependencies bring it (it ships no types). */
const yaml = (await import('js-yaml' as string)).default as { load(text: string): unknown }

const TOKEN = 'output-token'
const CLI = join(import.meta.dir, '..', 'cli.ts')
const ESC = '\x1b['
let s: TestServer
let dir: string
const scratch = tempDir('muster-output-')

const muster = (...args: string[]) => runCli(args, { cwd: dir })

beforeAll(async () => {
  s = await startServer({ args: ['--auth-token', TOKEN] })
  dir = workdir({ server: s.api, token: TOKEN })
  const ok = async (...args: string[]) => {
    const r = await muster(...args)
    if (r.code !== 0) throw new Error(`muster ${args.join(' ')}: ${r.stderr}`)
  }
  await ok('register', 'ada', '--workspace', 'shop')
  await ok('lock', 'acquire', 'deploy', '--ttl', '10m', '--reason', 'release 1.4')
  await ok('lock', 'acquire', 'ci', '--limit', '3')
  await ok('task', 'add', 'auth', '--title', 'rotate tokens', '--project', 'shop', '--path', 'src/auth/**')
  await ok('task', 'add', 'build', '--title', 'compile')
  await ok('reserve', 'web', 'docs/**', '--ttl', '30m')
  await ok('rules', 'propose', 'api', 'no-todo', '--pattern', 'TODO')
  await ok('specs', 'set', 'shop/openapi', '--data', '{"openapi":"3.1.0"}')
  await ok('contract', 'set', 'shop/orders', '--data', '{"kind":"contract","version":"1","endpoints":{"GET /orders":{}}}')
}, 30_000)
afterAll(async () => {
  await s.cleanup()
  removeWorkdirs()
})

/** The environment a person's shell would give: no SERVICE_*, no colour switches of the test runner's own. */
function baseEnv(extra: Record<string, string> = {}): Record<string, string> {
  const env: Record<string, string> = {}
  for (const [k, v] of Object.entries(process.env))
    if (v !== undefined && !/^(SERVICE_|MUSTER_SERVER$|MUSTER_TOKEN$|NO_COLOR$|FORCE_COLOR$|COLUMNS$)/.test(k)) env[k] = v
  return { ...env, ...extra }
}

const sh = (words: string[]) => words.map((w) => `'${w.replace(/'/g, `'\\''`)}'`).join(' ')

/** The CLI on a pseudo-terminal (util-linux `script`): stdout is a TTY, as for a person. Output with \r\n made \n. */
async function onTerminal(args: string[], env: Record<string, string> = {}) {
  const p = Bun.spawn(['script', '-qec', sh([process.execPath, CLI, ...args]), '/dev/null'], {
    cwd: dir,
    env: baseEnv({ COLUMNS: '200', ...env }),
    stdin: 'ignore',
    stdout: 'pipe',
    stderr: 'pipe',
  })
  const [out, code] = await Promise.all([new Response(p.stdout).text(), p.exited])
  return { code, out: out.replace(/\r\n/g, '\n') }
}

const plain = (text: string) => text.replace(/\x1b\[[0-9;]*m/g, '')

describe('-o json (the default on a pipe)', () => {
  test('a list and one object print as compact JSON, without colour, exactly as without -o', async () => {
    for (const args of [['lock', 'list'], ['lock', 'get', 'deploy']]) {
      const bare = await muster(...args)
      const json = await muster(...args, '-o', 'json')
      expect(bare.code).toBe(0)
      expect(bare.stdout).toBe(JSON.stringify(bare.json) + '\n')
      expect(json.stdout).toBe(bare.stdout)
      expect(bare.stdout).not.toContain(ESC)
    }
    const pretty = await muster('lock', 'get', 'deploy', '-o', 'json', '--pretty')
    expect(pretty.stdout).toBe(JSON.stringify(pretty.json, null, 2) + '\n')
  })

  test('-o takes json, table or yaml, anywhere and as -oyaml or -o=yaml; anything else is a usage error', async () => {
    const ref = (await muster('lock', 'list', '-o', 'yaml')).stdout
    expect((await muster('-o', 'yaml', 'lock', 'list')).stdout).toBe(ref)
    expect((await muster('lock', '-oyaml', 'list')).stdout).toBe(ref)
    expect((await muster('lock', 'list', '-o=yaml')).stdout).toBe(ref)
    const bad = await muster('lock', 'list', '-o', 'xml')
    expect(bad.code).toBe(2)
    expect(bad.stdout).toBe('')
    expect(bad.stderr).toContain("option '-o <format>' argument 'xml' is invalid. Allowed choices are json, table, yaml.")
    expect((await muster('lock', 'list', '-o')).code).toBe(2)
  })
})

describe('-o table', () => {
  test('a list: a header of the rows\' keys and aligned columns; a list inside a cell shows its names', async () => {
    const r = await muster('lock', 'list', '-o', 'table')
    expect(r.code).toBe(0)
    expect(r.stdout).toBe(['name    limit  holders', 'ci          3  ada', 'deploy      1  ada', ''].join('\n'))
    expect(r.stderr).toBe('')
  })

  test('a small nested object becomes dotted columns; columns empty in every row are left out', async () => {
    const queues = (await muster('task', 'list', '-o', 'table')).stdout.split('\n')
    expect(queues[0]!.split(/\s+/)).toEqual(['queue', 'counts.blocked', 'counts.ready', 'counts.claimed', 'counts.done', 'counts.failed', 'counts.cancelled'])
    expect(queues[1]!.split(/\s+/)).toEqual(['auth', '0', '1', '0', '0', '0', '0'])
    const tasks = (await muster('task', 'list', 'auth', '-o', 'table')).stdout.split('\n')
    expect(tasks[0]).toContain('title')
    expect(tasks[0]).not.toContain('claim_id') // null in every row
    expect(tasks[1]).toContain('rotate tokens')
    // A timestamp to the second, in UTC, and never cut.
    expect(tasks[1]).toMatch(/ 2\d{3}-\d\d-\d\d \d\d:\d\d:\d\dZ /)
  })

  test('one object: key/value lines, nested objects as dotted keys, a list of objects as a table under its key', async () => {
    const r = await muster('lock', 'get', 'deploy', '-o', 'table')
    const lines = r.stdout.split('\n')
    expect(lines.slice(0, 3)).toEqual(['name     deploy', 'limit    1', 'holders'])
    expect(lines[3]).toMatch(/^ {2}instance_id +instance_name +instance_status +fence +reason +acquired_at +expires_at$/)
    expect(lines[4]).toMatch(/^ {2}[0-9a-f-]{36} +ada +active +1 +release 1\.4 /)
  })

  test('an empty list prints nothing on stdout and says so on stderr', async () => {
    const r = await muster('webhooks', 'list', '-o', 'table')
    expect([r.code, r.stdout, r.stderr]).toEqual([0, '', 'muster: no rows\n'])
  })
})

describe('-o yaml', () => {
  test('a list and one object read back (js-yaml and Bun.YAML) as the JSON they came from', async () => {
    for (const args of [['lock', 'list'], ['lock', 'get', 'deploy'], ['task', 'list', 'auth'], ['instances', 'list']]) {
      const json = (await muster(...args)).json
      const r = await muster(...args, '-o', 'yaml')
      expect(r.code).toBe(0)
      expect(yaml.load(r.stdout)).toEqual(json)
      expect(Bun.YAML.parse(r.stdout)).toEqual(json)
    }
    expect((await muster('lock', 'get', 'deploy', '-o', 'yaml')).stdout).toStartWith('name: deploy\nlimit: 1\nholders:\n- instance_id: ')
  })

  test('strings a YAML 1.1 reader would take for a date, a number, a boolean or null stay strings', async () => {
    const value = {
      day: '2026-11-25',
      at: '2026-11-25T23:41:23.123Z',
      clock: '12:30',
      answers: ['yes', 'No', 'on', 'y', 'null', '~', '1e3', '0x1f', '.inf', '-', ''],
      text: 'line one\nline two: "quoted" # not a comment',
      'key: odd': [{ '- dash': '*star', '&amp': '!bang' }, [], {}],
      n: [0, -1.5, 1e300, true, false, null],
      url: 'http://example.com:8080/a?b=c',
      unicode: 'é ü 😀 \u2028 \u0085',
    }
    await call(s.api, 'PUT', '/api/state/yaml/tricky', value, { authorization: `Bearer ${TOKEN}` })
    const r = await muster('state', 'get', 'yaml/tricky', '-o', 'yaml')
    expect(r.code).toBe(0)
    expect(yaml.load(r.stdout)).toEqual(value)
    expect(Bun.YAML.parse(r.stdout)).toEqual(value)
    expect(r.stdout).toContain('url: http://example.com:8080/a?b=c\n')
    // What PyYAML would read as 750 and True, written so no reader can.
    expect(r.stdout).toContain('clock: "12:30"\n')
    expect(r.stdout).toContain('- "yes"\n- "No"\n- "on"\n- "y"\n')
    // Without -o or --fields a stored value prints as stored.
    expect((await muster('state', 'get', 'yaml/tricky')).stdout).toBe(JSON.stringify(value))
  })

  test('random strings and keys read back as written (10,000 values, both readers)', () => {
    const alphabet = [...'aZ_/09 .:-#?&*!%@`|>\'"[]{},=~\\\t\n', 'é', '😀', '\u2028', '\u0085', '\u0000']
    let seed = 37
    const rand = (n: number) => ((seed = (seed * 1103515245 + 12345) % 2 ** 31), seed % n)
    const word = () => Array.from({ length: rand(8) }, () => alphabet[rand(alphabet.length)]).join('')
    for (let i = 0; i < 10_000; i++) {
      const value = { [word()]: word(), list: [word(), { [word()]: [word()] }] }
      const text = toYaml(value)
      expect(yaml.load(text)).toEqual(value)
      expect(Bun.YAML.parse(text)).toEqual(value)
    }
  })
})

describe('--fields', () => {
  test('narrows a list row by row and one object, dotted names reach into nested lists, in the order given', async () => {
    const list = await muster('lock', 'list', '--fields', 'holders.instance_name,name')
    expect(list.stdout).toBe(JSON.stringify([
      { holders: [{ instance_name: 'ada' }], name: 'ci' },
      { holders: [{ instance_name: 'ada' }], name: 'deploy' },
    ]) + '\n')
    const one = await muster('--fields=status,id,title', 'task', 'get', '1')
    expect(one.json).toEqual({ status: 'ready', id: 1, title: 'rotate tokens' })
    expect(Object.keys(one.json)).toEqual(['status', 'id', 'title'])
    expect((await muster('task', 'list', '--fields', 'queue,counts.ready')).json).toEqual([
      { queue: 'auth', counts: { ready: 1 } },
      { queue: 'build', counts: { ready: 1 } },
    ])
  })

  test('in table and yaml mode too; chosen columns are shown even when empty', async () => {
    const table = await muster('task', 'list', 'auth', '-o', 'table', '--fields', 'id,title,claimed_by')
    expect(table.stdout).toBe('id  title          claimed_by\n 1  rotate tokens\n')
    const kv = await muster('lock', 'get', 'ci', '-o', 'table', '--fields', 'name,limit')
    expect(kv.stdout).toBe('name   ci\nlimit  3\n')
    const y = await muster('lock', 'list', '-o', 'yaml', '--fields', 'name')
    expect(y.stdout).toBe('- name: ci\n- name: deploy\n')
  })

  test('a name no row has is said on stderr with the names there are; a malformed list is a usage error', async () => {
    const r = await muster('lock', 'list', '--fields', 'name,owner')
    expect(r.code).toBe(0)
    expect(r.json).toEqual([{ name: 'ci' }, { name: 'deploy' }])
    expect(r.stderr).toBe("muster: --fields: no field 'owner' here; the fields are name, limit, holders\n")
    const bad = await muster('lock', 'list', '--fields', 'name,,a..b')
    expect(bad.code).toBe(2)
    expect(bad.stderr).toContain("option '--fields <list>'")
  })
})

describe.skipIf(!Bun.which('script'))('on a terminal', () => {
  test('a list is a table by default, with a bold header and coloured status; one object is coloured JSON', async () => {
    const list = await onTerminal(['task', 'list', 'auth'])
    expect(list.code).toBe(0)
    expect(list.out).toContain(`${ESC}1mtitle${ESC}0m`)
    expect(list.out).toContain(`${ESC}32mready${ESC}0m`)
    expect(plain(list.out).split('\n')[1]).toMatch(/^ 1 {2}auth {3}rotate tokens +0 {2}ready /)
    const one = await onTerminal(['lock', 'get', 'deploy'])
    expect(one.out).toContain(`${ESC}34;1m"name"${ESC}0m:${ESC}32m"deploy"${ESC}0m`)
    const json = JSON.parse(plain(one.out))
    expect(plain(one.out)).toBe(JSON.stringify(json) + '\n')
    const pretty = await onTerminal(['lock', 'get', 'deploy', '--pretty'])
    expect(plain(pretty.out)).toBe(JSON.stringify(json, null, 2) + '\n')
  })

  test('NO_COLOR (any value, even empty) and --no-color turn colour off; -o json stays compact JSON', async () => {
    for (const [args, env] of [
      [['lock', 'list'], { NO_COLOR: '1' }],
      [['lock', 'list'], { NO_COLOR: '' }],
      [['lock', 'list', '--no-color'], {}],
      [['--no-color', 'lock', 'get', 'deploy', '-o', 'yaml'], {}],
    ] as const) {
      const r = await onTerminal([...args], env)
      expect(r.code).toBe(0)
      expect(r.out).not.toContain(ESC)
    }
    expect((await onTerminal(['lock', 'list'], { NO_COLOR: '1' })).out).toStartWith('name    limit  holders\nci          3  ada\n')
    const json = await onTerminal(['lock', 'list', '-o', 'json'])
    expect(json.out).toContain(ESC)
    expect(plain(json.out)).toBe(JSON.stringify(JSON.parse(plain(json.out))) + '\n')
  })

  test("a table wider than the terminal: cut cells, then columns left out and named on stderr", async () => {
    const r = await onTerminal(['instances', 'list', '--no-color'], { COLUMNS: '60' })
    const lines = r.out.split('\n').filter(Boolean)
    expect(lines[0]).toMatch(/^muster: 1 column\(s\) not shown for the terminal's width: last_seen; choose columns with --fields or see everything with -o yaml$/)
    expect(lines[1]).toMatch(/^id +name +workspace +status +registered_at$/)
    expect(lines[2]).toMatch(/^[0-9a-f]{8}-[0-9a-f-]*… +ada +shop +active +2\d{3}-/)
    for (const l of lines.slice(1)) expect(Bun.stringWidth(l)).toBeLessThanOrEqual(60)
    // Wide enough, nothing is cut or left out.
    const wide = await onTerminal(['instances', 'list', '--no-color'], { COLUMNS: '200' })
    expect(wide.out).not.toContain('…')
    expect(wide.out.split('\n')[0]).toMatch(/^id +name +workspace +status +registered_at +last_seen$/)
  })
})

describe('completion of names from the server', () => {
  let bin: string
  beforeAll(() => {
    // `muster` on PATH, as a person's shell finds it: the scripts call it back for names.
    bin = tempDir('muster-output-bin-')
    writeFileSync(join(bin, 'muster'), `#!/bin/sh\nexec ${sh([process.execPath, CLI])} "$@"\n`)
    chmodSync(join(bin, 'muster'), 0o755)
  })
  const shellEnv = () => baseEnv({ PATH: `${bin}:${process.env.PATH ?? '/usr/bin:/bin'}`, HOME: scratch })
  const run = async (cmd: string[]) => {
    const p = Bun.spawn(cmd, { cwd: dir, stdout: 'pipe', stderr: 'pipe', env: shellEnv() })
    const [stdout, stderr, code] = await Promise.all([new Response(p.stdout).text(), new Response(p.stderr).text(), p.exited])
    return { stdout, stderr, code }
  }
  const script = async (shell: string) => {
    const file = join(scratch, `muster.${shell}`)
    await Bun.write(file, (await muster('completion', shell)).stdout)
    return file
  }
  const lines = (text: string) => text.split('\n').filter(Boolean)

  test('muster __complete <kind> prints the names one a line', async () => {
    expect(lines((await muster('__complete', 'lock')).stdout)).toEqual(['ci', 'deploy'])
    expect(lines((await muster('__complete', 'queue')).stdout)).toEqual(['auth', 'build'])
    expect(lines((await muster('__complete', 'instance')).stdout)).toEqual(['ada'])
    // Projects from rules, reservations, instances' workspaces and state keys.
    expect(lines((await muster('__complete', 'project')).stdout)).toEqual(expect.arrayContaining(['api', 'shop', 'web']))
    const ids = lines((await muster('__complete', 'instance-id')).stdout)
    expect(ids).toHaveLength(1)
    expect(ids[0]).toMatch(/^[0-9a-f-]{36}\tada$/)
  })

  test('__complete line works out the slot: an argument, an option value, a project/name', async () => {
    const at = async (...words: string[]) => lines((await muster('__complete', 'line', '--', ...words)).stdout)
    expect(await at('lock', 'release', '')).toEqual(['ci', 'deploy'])
    expect(await at('lock', 'acquire', '--ttl', '5m', '')).toEqual(['ci', 'deploy'])
    expect(await at('--pretty', 'task', 'claim', 'a')).toEqual(['auth', 'build'])
    expect(await at('task', 'add', 'auth', '--project', '')).toEqual(expect.arrayContaining(['shop', 'web']))
    expect(await at('send', 'ada', '')).toEqual(['ada'])
    expect(await at('specs', 'get', '')).toEqual(expect.arrayContaining(['shop/', 'web/']))
    expect(await at('specs', 'get', 'shop/o')).toEqual(['shop/openapi', 'shop/orders'])
    expect(await at('contract', 'test', 'shop/')).toEqual(['shop/orders'])
    // Slots that take no names: the title, a rule id, the value of --server.
    expect(await at('task', 'add', 'auth', '--title', '')).toEqual([])
    expect(await at('rules', 'propose', 'api', '')).toEqual([])
    expect(await at('lock', 'acquire', '--server', '')).toEqual([])
  })

  test('silent and quick on any failure: no server, a server that never answers, a wrong token', async () => {
    const refused = await muster('__complete', 'lock', '--server', 'http://127.0.0.1:9')
    expect([refused.code, refused.stdout, refused.stderr]).toEqual([0, '', ''])
    const wrong = await muster('__complete', 'lock', '--token', 'nope')
    expect([wrong.code, wrong.stdout, wrong.stderr]).toEqual([0, '', ''])
    const silent = Bun.listen({ hostname: '127.0.0.1', port: 0, socket: { data() {} } })
    try {
      const started = Date.now()
      const hung = await muster('__complete', 'line', '--', 'lock', 'get', '', '--server', `http://127.0.0.1:${silent.port}`)
      expect([hung.code, hung.stdout, hung.stderr]).toEqual([0, '', ''])
      expect(Date.now() - started).toBeLessThan(5000)
    } finally {
      silent.stop(true)
    }
  })

  test('bash', async () => {
    const file = await script('bash')
    const complete = async (line: string) => {
      const words = line.split(' ')
      const program = `source ${file}; COMP_WORDS=(${sh(words)}); COMP_CWORD=${words.length - 1}; _muster; printf '%s\\n' "\${COMPREPLY[@]}"`
      const r = await run(['bash', '-c', program])
      expect(r.stderr).toBe('')
      return lines(r.stdout).sort()
    }
    expect(await complete('muster lock acquire d')).toEqual(['deploy'])
    expect(await complete('muster lock get ')).toEqual(expect.arrayContaining(['ci', 'deploy', '--help']))
    expect(await complete('muster task list ')).toEqual(expect.arrayContaining(['auth', 'build']))
    expect(await complete('muster send a')).toEqual(['ada'])
    expect(await complete('muster reservations --project ')).toEqual(expect.arrayContaining(['shop', 'web']))
    expect(await complete('muster specs get shop/')).toEqual(['shop/openapi', 'shop/orders'])
    expect(await complete('muster -o ')).toEqual(['json', 'table', 'yaml'])
    // No names where none go: files, as before.
    expect(await complete('muster state set k --file ')).toEqual([])
  })

  test.skipIf(!Bun.which('zsh'))('zsh', async () => {
    const file = await script('zsh')
    // The candidates _muster hands to zsh, with the completion builtins replaced by printers (compadd -S '' marks "no space").
    const stubs = [
      `_describe() { print -rl -- "\${(@P)\${@[-1]}}" }`,
      `compadd() { local s=; while [[ $1 == -* && $1 != -- ]]; do [[ $1 == -S ]] && { s=$2; shift; }; shift; done; [[ $1 == -- ]] && shift; (( $# )) && print -rl -- "\${@/%/$s}" }`,
      `_files() { print FILES }`,
    ].join('; ')
    const complete = async (line: string) => {
      const words = line.split(' ')
      const r = await run(['zsh', '-f', '-c', `compdef() {}; source ${file}; ${stubs}; words=(${sh(words)}); CURRENT=${words.length}; _muster`])
      expect(r.stderr).toBe('')
      return lines(r.stdout).filter((l) => !l.startsWith('-'))
    }
    expect(await complete('muster lock acquire ')).toEqual(['ci', 'deploy'])
    expect(await complete('muster task claim ')).toEqual(['auth', 'build'])
    expect(await complete('muster instances list --name ')).toEqual(['ada'])
    expect(await complete('muster rules get ')).toEqual(expect.arrayContaining(['api', 'shop', 'web']))
    expect(await complete('muster -o ')).toEqual(['json', 'table', 'yaml'])
    expect(await complete('muster state set k --file ')).toEqual(['FILES'])
  })

  test.skipIf(!Bun.which('fish'))('fish', async () => {
    const file = await script('fish')
    const complete = async (line: string) => {
      const r = await run(['fish', '--no-config', '-c', `source ${file}; complete -C '${line}'`])
      expect(r.stderr).toBe('')
      return lines(r.stdout)
    }
    const words = async (line: string) => (await complete(line)).map((l) => l.split('\t')[0]!).sort()
    expect(await words('muster lock release ')).toEqual(['ci', 'deploy'])
    expect(await words('muster task add b')).toEqual(['build'])
    expect(await words('muster send ')).toEqual(['ada'])
    expect(await words('muster reserve ')).toEqual(expect.arrayContaining(['api', 'shop', 'web']))
    expect(await words('muster task add x --project ')).toEqual(expect.arrayContaining(['shop', 'web']))
    expect(await words('muster contract get shop/')).toEqual(['shop/orders'])
    // An instance id comes with its name as the description.
    expect((await complete('muster instances get '))[0]).toMatch(/^[0-9a-f-]{36}\tada$/)
    expect(await words('muster -o ')).toEqual(['json', 'table', 'yaml'])
  })
})
