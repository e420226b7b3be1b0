// `muster init git` in scratch repositories against a real server: the pre-commit and
// pre-push guards refuse what another instance holds, naming holder and reason, let the
// rest through and `--no-verify` past; they go beside the hooks already there (a shell
// hook keeps running after our block, another kind is chained with its stdin) and where
// core.hooksPath says.
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { chmodSync, existsSync, mkdirSync, readFileSync, realpathSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { register, startServer, call, type TestServer } from './helpers'
import { removeWorkdirs, runCli, workdir } from './cli-run'

let s: TestServer
/** A `muster` on PATH for the hooks, running this checkout's CLI. */
let bin: string
beforeAll(async () => {
  s = await startServer()
  bin = workdir()
  writeFileSync(join(bin, 'muster'), `#!/bin/sh\nexec '${process.execPath}' '${join(import.meta.dir, '..', 'cli.ts')}' "$@"\n`)
  chmodSync(join(bin, 'muster'), 0o755)
})
afterAll(async () => {
  await s.cleanup()
  removeWorkdirs()
})

const who = { GIT_AUTHOR_NAME: 't', GIT_AUTHOR_EMAIL: 't@x', GIT_COMMITTER_NAME: 't', GIT_COMMITTER_EMAIL: 't@x' }
const env = () => ({ ...process.env, ...who, PATH: `${bin}:${process.env.PATH}`, XDG_CONFIG_HOME: workdir() }) as Record<string, string>

function sh(cwd: string, args: string[], extra: Record<string, string> = {}) {
  const r = Bun.spawnSync(args, { cwd, env: { ...env(), ...extra }, stdout: 'pipe', stderr: 'pipe' })
  return { code: r.exitCode, out: r.stdout.toString(), err: r.stderr.toString() }
}

/** A scratch repository named `name` (the project), with one commit. */
function repo(name: string): string {
  const dir = join(realpathSync(workdir()), name)
  mkdirSync(join(dir, 'src/auth'), { recursive: true })
  expect(sh(dir, ['git', 'init', '-q', '-b', 'main']).code).toBe(0)
  writeFileSync(join(dir, 'README.md'), 'hi\n')
  expect(sh(dir, ['git', 'add', '.']).code).toBe(0)
  expect(sh(dir, ['git', 'commit', '-qm', 'start']).code).toBe(0)
  return dir
}

const commit = (dir: string, file: string, extra: string[] = []) => {
  writeFileSync(join(dir, file), `${Math.random()}\n`)
  sh(dir, ['git', 'add', file])
  return sh(dir, ['git', 'commit', '-qm', `touch ${file}`, ...extra])
}

describe('muster init git', () => {
  test('pre-commit: refused naming holder and reason; a free file and --no-verify go through; an existing shell hook still runs after ours', async () => {
    const dir = repo(`shop${Date.now()}`)
    const hooks = join(dir, '.git/hooks')
    writeFileSync(join(hooks, 'pre-commit'), '#!/bin/sh\necho ran >> "$(git rev-parse --git-dir)/own-hook-ran"\n')
    chmodSync(join(hooks, 'pre-commit'), 0o755)

    const dry = await runCli(['init', 'git', '--dry-run'], { cwd: dir, env: { SERVICE_SERVER: s.api } })
    expect(dry.json.files.map((f: any) => [f.path, f.action])).toEqual([
      [join(hooks, 'pre-commit'), 'update'],
      [join(hooks, 'pre-push'), 'create'],
    ])
    expect(existsSync(join(hooks, 'pre-push'))).toBe(false)
    expect(readFileSync(join(hooks, 'pre-commit'), 'utf8')).not.toContain('muster')
    const first = await runCli(['init', 'git'], { cwd: dir, env: { SERVICE_SERVER: s.api } })
    expect(first.code).toBe(0)
    expect(first.json).toEqual({
      hooks_dir: hooks,
      files: [
        { path: join(hooks, 'pre-commit'), action: 'updated' },
        { path: join(hooks, 'pre-push'), action: 'created' },
      ],
    })
    const again = await runCli(['init', 'git'], { cwd: dir, env: { SERVICE_SERVER: s.api } })
    expect(again.json.files.map((f: any) => f.action)).toEqual(['unchanged', 'unchanged'])
    const text = readFileSync(join(hooks, 'pre-commit'), 'utf8')
    expect(text.startsWith('#!/bin/sh\n# muster:begin')).toBe(true)
    expect(text.match(/muster:begin/g)!.length).toBe(1)
    expect(text).toContain('own-hook-ran')

    const olive = await register(s, `olive${Date.now()}`)
    const project = dir.split('/').pop()!
    expect((await call(s.api, 'POST', '/api/reservations', { project, paths: ['src/auth/**'], reason: 'token rotation' }, olive.h)).status).toBe(201)

    const refused = commit(dir, 'src/auth/login.ts')
    expect(refused.code).not.toBe(0)
    expect(refused.err).toContain(`muster: this commit touches a file another agent holds in ${project}:`)
    expect(refused.err).toContain(`src/auth/login.ts: held as "src/auth/**" by ${olive.name} (active), reason "token rotation", with no expiry`)
    expect(refused.err).toContain('git commit --no-verify')
    expect(sh(dir, ['git', 'log', '--oneline']).out.trim().split('\n').length).toBe(1)

    sh(dir, ['git', 'reset', '-q'])
    expect(commit(dir, 'README.md').code).toBe(0)
    expect(readFileSync(join(dir, '.git/own-hook-ran'), 'utf8')).toBe('ran\n')
    expect(commit(dir, 'src/auth/login.ts', ['--no-verify']).code).toBe(0)

    // the committer's own reservation never counts against it
    const reg = await runCli(['register', `me${Date.now()}`], { cwd: dir, env: { SERVICE_SERVER: s.api } })
    expect(reg.code).toBe(0)
    expect((await runCli(['reserve', project, 'docs/**'], { cwd: dir, env: { SERVICE_SERVER: s.api } })).code).toBe(0)
    mkdirSync(join(dir, 'docs'))
    expect(commit(dir, 'docs/a.md').code).toBe(0)
  }, 60_000)

  test('pre-push: the pushed commits\' files checked; a hook of another kind chained, with its stdin; core.hooksPath respected', async () => {
    const dir = repo(`pushy${Date.now()}`)
    const remote = join(realpathSync(workdir()), 'remote.git')
    expect(sh(dir, ['git', 'init', '-q', '--bare', remote]).code).toBe(0)
    sh(dir, ['git', 'remote', 'add', 'origin', remote])
    expect(sh(dir, ['git', 'push', '-q', 'origin', 'main']).code).toBe(0)
    sh(dir, ['git', 'config', 'core.hooksPath', '.githooks'])
    const hooks = join(dir, '.githooks')
    mkdirSync(hooks)
    // not a shell script: kept aside and run after ours, reading the same stdin
    writeFileSync(join(hooks, 'pre-push'), `#!${process.execPath}\nawait Bun.write(process.argv[1] + '.stdin', await Bun.stdin.text())\n`)
    chmodSync(join(hooks, 'pre-push'), 0o755)

    const init = await runCli(['init', 'git'], { cwd: dir, env: { SERVICE_SERVER: s.api } })
    expect(init.json.files).toEqual([
      { path: join(hooks, 'pre-commit'), action: 'created' },
      { path: join(hooks, 'pre-push'), action: 'updated', chained: join(hooks, 'pre-push.pre-muster') },
    ])
    expect(existsSync(join(dir, '.git/hooks/pre-push'))).toBe(false)

    const ken = await register(s, `ken${Date.now()}`)
    const project = dir.split('/').pop()!
    expect(commit(dir, 'src/auth/login.ts').code).toBe(0)
    expect(commit(dir, 'README.md').code).toBe(0)
    expect((await call(s.api, 'POST', '/api/reservations', { project, paths: ['src/auth/login.ts'], reason: 'hotfix', ttl_ms: 600_000 }, ken.h)).status).toBe(201)

    const refused = sh(dir, ['git', 'push', '-q', 'origin', 'main'])
    expect(refused.code).not.toBe(0)
    expect(refused.err).toContain(`src/auth/login.ts: held as "src/auth/login.ts" by ${ken.name} (active), reason "hotfix", until 20`)
    expect(refused.err).toContain('git push --no-verify')
    expect(existsSync(join(hooks, 'pre-push.pre-muster.stdin'))).toBe(false)

    expect((await call(s.api, 'DELETE', `/api/reservations/${(await call(s.api, 'GET', `/api/reservations?instance_id=${ken.id}`)).body[0].id}`, undefined, ken.h)).status).toBe(200)
    const pushed = sh(dir, ['git', 'push', '-q', 'origin', 'main'])
    expect(pushed.code).toBe(0)
    const head = sh(dir, ['git', 'rev-parse', 'HEAD']).out.trim()
    expect(readFileSync(join(hooks, 'pre-push.pre-muster.stdin'), 'utf8')).toContain(`refs/heads/main ${head} refs/heads/main`)

    // a new branch: the commits the remote does not have yet, not the whole history
    sh(dir, ['git', 'checkout', '-q', '-b', 'feature'])
    expect(commit(dir, 'src/other.ts').code).toBe(0)
    expect((await call(s.api, 'POST', '/api/reservations', { project, paths: ['README.md'], reason: 'docs pass' }, ken.h)).status).toBe(201)
    expect(sh(dir, ['git', 'push', '-q', 'origin', 'feature']).code).toBe(0)
    expect(commit(dir, 'README.md').code).not.toBe(0) // the pre-commit guard in .githooks too
    expect(commit(dir, 'README.md', ['--no-verify']).code).toBe(0)
    sh(dir, ['git', 'checkout', '-q', '-b', 'feature2'])
    const branch = sh(dir, ['git', 'push', '-q', 'origin', 'feature2'])
    expect(branch.code).not.toBe(0)
    expect(branch.err).toContain(`README.md: held as "README.md" by ${ken.name} (active), reason "docs pass"`)
    expect(branch.err).not.toContain('src/other.ts')
  }, 60_000)

  test('the server away: the guard says so in one line and the commit goes on', async () => {
    const dir = repo(`away${Date.now()}`)
    expect((await runCli(['init', 'git'], { cwd: dir, env: { SERVICE_SERVER: 'http://127.0.0.1:9' } })).code).toBe(0)
    const r = commit(dir, 'src/auth/login.ts')
    expect(r.code).toBe(0)
    expect(r.err).toContain('muster guard pre-commit: cannot reach http://127.0.0.1:9')
  })
})
