// The real OpenCode (pinned, installed from npm) driven through its own loop against a real
// Muster server and the fake Anthropic API (fake-anthropic.ts): `muster init opencode` in
// a scratch git repository writes the plugin, then plain `opencode run` sessions. Each
// scenario asserts what reached the model (the fake logs every request) and what Muster
// and the files show afterwards. One line per scenario.
import { afterAll, beforeAll, expect, test } from 'bun:test'
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { call, register } from '../helpers'
import { startFakeAnthropic, type FakeAnthropic } from './fake-anthropic'
import { ensureAgent } from './lib/install'
import { bash, ensurePluginDeps, opencodeRun, read, write, type OpencodeRun } from './lib/opencode'
import { startWorld, type World } from './lib/world'

let world: World
let fake: FakeAnthropic

beforeAll(async () => {
  // Installing the pinned CLI and its plugin package on a fresh machine takes a while.
  await Promise.all([ensureAgent('opencode'), ensurePluginDeps()])
  ;[world, fake] = await Promise.all([startWorld(), startFakeAnthropic()])
}, 240_000)

afterAll(async () => {
  if (fake?.log.unknown.size) console.log(`fake Anthropic API: unknown paths asked: ${[...fake.log.unknown].map(([p, n]) => `${p} ×${n}`).join(', ')}`)
  await Promise.all([world?.cleanup(), fake?.stop()])
})

const scenario = (name: string, fn: () => Promise<void>, timeoutMs = 120_000) => test(name, fn, timeoutMs)

/** A scratch repository wired by the real `muster init opencode` (edit-reserve mode with `reserve`). */
async function wiredRepo(name: string, reserve?: string): Promise<string> {
  const repo = world.repo(name)
  const r = await world.muster(['init', 'opencode', ...(reserve ? ['--reserve', reserve] : [])], { cwd: repo })
  if (r.code !== 0) throw new Error(`muster init opencode: ${r.code} ${r.stderr}`)
  return repo
}

async function run(cwd: string, name: string, prompt: string, env: Record<string, string> = {}): Promise<OpencodeRun> {
  const r = await opencodeRun({ world, model: fake.url, cwd, prompt, name, env })
  if (r.code !== 0) throw new Error(`opencode run exited ${r.code}:\n${r.stderr.slice(-4000)}`)
  return r
}

const sessionsOf = async (root: string) => ((await world.api('GET', '/api/sessions')).body as any[]).filter((x) => x.root === root)
const projectOf = (repo: string) => repo.split('/').pop()!

/** Another agent (registered over REST) holding `paths` of the repository's project exclusively. */
async function hold(repo: string, name: string, paths: string[], reason: string) {
  const auth = { authorization: `Bearer ${world.token}` }
  const holder = await register(world.server, name, auth)
  const r = await call(world.server.api, 'POST', '/api/reservations', { project: projectOf(repo), paths, reason, ttl_ms: 600_000 }, { ...auth, ...holder.h })
  if (r.status !== 201) throw new Error(`reserving ${paths} for ${name}: ${r.status} ${r.text}`)
  return holder
}

function seed(repo: string, path: string, text: string) {
  mkdirSync(join(repo, path, '..'), { recursive: true })
  writeFileSync(join(repo, path), text)
}

scenario('muster init opencode writes the plugin, the MCP entry and AGENTS.md; a second run changes nothing', async () => {
  const repo = world.repo('init')
  const first = await world.muster(['init', 'opencode', '--reserve', '10m'], { cwd: repo })
  expect(first.code, first.stderr).toBe(0)
  expect(JSON.parse(first.stdout).files.map((f: any) => [f.path, f.action])).toEqual([
    ['.opencode/plugin/muster.ts', 'created'],
    ['opencode.json', 'created'],
    ['AGENTS.md', 'created'],
  ])
  const plugin = readFileSync(join(repo, '.opencode/plugin/muster.ts'), 'utf8')
  expect(plugin).toContain(`const SERVER = ${JSON.stringify(world.server.api)}`)
  expect(plugin).toContain('const RESERVE = "10m"')
  expect(plugin).not.toContain(world.token) // the token comes from the environment at run time
  const config = JSON.parse(readFileSync(join(repo, 'opencode.json'), 'utf8'))
  expect(config.mcp.muster).toEqual({ type: 'remote', url: `${world.server.api}/mcp`, headers: { Authorization: 'Bearer {env:SERVICE_TOKEN}' }, oauth: false })
  // Codex reads the same AGENTS.md: its init keeps one section.
  expect((await world.muster(['init', 'codex'], { cwd: repo })).code).toBe(0)
  const second = await world.muster(['init', 'opencode', '--reserve', '10m'], { cwd: repo })
  expect(second.code, second.stderr).toBe(0)
  expect(JSON.parse(second.stdout).files.map((f: any) => f.action)).toEqual(['unchanged', 'unchanged', 'updated'])
  expect(readFileSync(join(repo, 'AGENTS.md'), 'utf8').split('<!-- muster:begin -->').length).toBe(2)
  const third = await world.muster(['init', 'opencode', '--reserve', '10m'], { cwd: repo })
  expect(JSON.parse(third.stdout).files.map((f: any) => f.action)).toEqual(['unchanged', 'unchanged', 'unchanged'])
})

scenario('a session registers and its briefing reaches the model', async () => {
  const repo = await wiredRepo('brief')
  await hold(repo, 'bri-holder', ['src/billing/**'], 'billing rewrite')
  const prompt = fake.scripts.add({ name: 'brief', steps: [], finally: 'Briefed.' })
  await run(repo, 'bri', `${prompt} hello`)
  const [first] = fake.log.of('brief')
  expect(first.text).toContain('you are "bri"')
  expect(first.text).toContain('src/billing/**')
  expect(first.text).toContain('bri-holder')
  expect(await sessionsOf(repo)).toMatchObject([{ agent: 'opencode', name: 'bri', root: repo, project: projectOf(repo) }])
})
