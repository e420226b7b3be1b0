// The world a scenario runs in: a real Muster server on free ports with a temp data dir
// (test/helpers.ts) and the admin token on, an agent token for the agents, a scratch git
// repository, a scratch HOME, and a `muster` shim on PATH that runs this checkout's CLI
// (`bun cli.ts`). Agents get no inherited environment: only what `agentEnv` builds.
import { chmodSync, mkdirSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { call, startServer, tempDir, type TestServer } from '../../helpers'

const ROOT = join(import.meta.dir, '..', '..', '..')
const ADMIN = 'agents-suite-admin-token'

export interface World {
  server: TestServer
  /** The agent-role token the agents and their CLI use (SERVICE_TOKEN). */
  token: string
  /** A directory with the `muster` shim, first on every agent's PATH. */
  bin: string
  /** The admin's headers, for the test's own checks. */
  admin: Record<string, string>
  /** A fresh scratch git repository with one commit (src/app.ts, README.md). */
  repo(name: string): string
  /** The environment of an agent process or a CLI run in it: nothing inherited but a plain PATH. */
  env(extra?: Record<string, string>): Record<string, string>
  /** Runs the real CLI (through the shim) in `cwd`. */
  muster(args: string[], opts: { cwd: string; env?: Record<string, string> }): Promise<{ code: number; stdout: string; stderr: string }>
  /** An admin request to the server. */
  api(method: string, path: string, body?: unknown): ReturnType<typeof call>
  cleanup(): Promise<void>
}

function git(cwd: string, ...args: string[]) {
  const r = Bun.spawnSync(['git', ...args], { cwd, stdout: 'pipe', stderr: 'pipe', env: { PATH: process.env.PATH ?? '/usr/bin:/bin', HOME: cwd, GIT_CONFIG_NOSYSTEM: '1' } })
  if (r.exitCode !== 0) throw new Error(`git ${args.join(' ')}: ${r.stderr}`)
}

export async function startWorld(): Promise<World> {
  const server = await startServer({ args: ['--auth-token', ADMIN] })
  const admin = { authorization: `Bearer ${ADMIN}` }
  const api = (method: string, path: string, body?: unknown) => call(server.api, method, path, body, admin)
  const created = await api('POST', '/api/tokens', { name: 'agents-suite', role: 'agent' })
  if (created.status !== 201) throw new Error(`creating the agent token: ${created.status} ${created.text}`)
  const token: string = created.body.token
  const scratch = tempDir('muster-agents-')
  const bin = join(scratch, 'bin')
  mkdirSync(bin)
  writeFileSync(join(bin, 'muster'), `#!/bin/sh\nexec "${process.execPath}" "${join(ROOT, 'cli.ts')}" "$@"\n`)
  chmodSync(join(bin, 'muster'), 0o755)
  let repos = 0
  const env = (extra: Record<string, string> = {}) => {
    const home = join(scratch, 'home')
    mkdirSync(home, { recursive: true })
    return {
      PATH: `${bin}:/usr/local/bin:/usr/bin:/bin`,
      HOME: home,
      LANG: 'C.UTF-8',
      TERM: 'dumb',
      GIT_CONFIG_NOSYSTEM: '1',
      // The user's shell as Muster's docs set it up: server and token for the CLI and the hooks.
      MUSTER_SERVER: server.api,
      SERVICE_TOKEN: token,
      ...extra,
    }
  }
  return {
    server,
    token,
    bin,
    admin,
    api,
    env,
    repo(name) {
      const dir = join(scratch, `${++repos}`, name)
      mkdirSync(join(dir, 'src'), { recursive: true })
      writeFileSync(join(dir, 'src', 'app.ts'), 'export const answer = 41\n')
      writeFileSync(join(dir, 'README.md'), `# ${name}\n`)
      git(dir, 'init', '-q', '-b', 'main')
      git(dir, 'add', '.')
      git(dir, '-c', 'user.name=test', '-c', 'user.email=test@example.com', 'commit', '-q', '-m', 'start')
      return dir
    },
    async muster(args, opts) {
      const proc = Bun.spawn([join(bin, 'muster'), ...args], { cwd: opts.cwd, env: env(opts.env), stdout: 'pipe', stderr: 'pipe' })
      const [code, stdout, stderr] = await Promise.all([proc.exited, new Response(proc.stdout).text(), new Response(proc.stderr).text()])
      return { code, stdout, stderr }
    },
    async cleanup() {
      await server.cleanup()
      Bun.spawnSync(['rm', '-rf', scratch])
    },
  }
}
