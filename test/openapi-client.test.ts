// A TypeScript client generated from the live document (openapi-typescript) types
// what the reads answer: a program reading state keys, audit entries, rules, a
// queue's tasks and the inbox through those types compiles under --strict, a wrong
// field or type does not, and the program run against the server reads real values.
import { afterAll, describe, expect, test } from 'bun:test'
import { mkdirSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { call, register, startServer, tempDir } from './helpers'

const ROOT = join(import.meta.dir, '..')
const TOKEN = 'client-token'
const admin = { authorization: `Bearer ${TOKEN}` }
const s = await startServer({ args: ['--auth-token', TOKEN] })
afterAll(() => s.cleanup())

const dir = tempDir('muster-openapi-client-')
const client = join(dir, 'client')
mkdirSync(client)
writeFileSync(join(dir, 'openapi.json'), (await call(s.api, 'GET', '/openapi.json', undefined, admin)).text)

async function run(cmd: string[], cwd = client) {
  const proc = Bun.spawn(cmd, { cwd, stdout: 'pipe', stderr: 'pipe' })
  const [stdout, stderr, code] = await Promise.all([new Response(proc.stdout).text(), new Response(proc.stderr).text(), proc.exited])
  return { stdout, stderr, code }
}

/** The program: each read through the generated types, its fields used as what they are. */
const program = (extra = '') => `import type { paths } from './api'
type Ok<P extends keyof paths, M extends keyof paths[P]> = paths[P][M] extends { responses: { 200: { content: { 'application/json': infer T } } } } ? T : never

export async function read(base: string, headers: Record<string, string>) {
  const get = async <P extends keyof paths>(path: string): Promise<Ok<P, 'get' & keyof paths[P]>> => (await fetch(base + path, { headers })).json()
  const state = await get<'/api/state'>('/api/state')
  const audit = await get<'/api/audit'>('/api/audit')
  const rules = await get<'/api/rules'>('/api/rules')
  const tasks = await get<'/api/queues/{queue}/tasks'>('/api/queues/builds/tasks')
  const inbox = await get<'/api/inbox'>('/api/inbox')
  const key: string = state[0].key
  const version: number = state[0].version
  const id: number = audit[0].id
  const outcome: 'success' | 'error' = audit[0].outcome
  const severity: 'error' | 'warning' = rules[0].severity
  const appliesTo: string[] = rules[0].applies_to
  const status: 'blocked' | 'ready' | 'claimed' | 'done' | 'failed' | 'cancelled' = tasks[0].status
  const attempts: number = tasks[0].attempts
  const claimedBy: string | null = tasks[0].claimed_by
  const subject: string = inbox.messages[0].subject
  const from: string = inbox.messages[0].from
  const cursor: number = inbox.cursor
  ${extra}
  return { key, version, id, outcome, severity, appliesTo, status, attempts, claimedBy, subject, from, cursor }
}
`

async function compile(extra = '') {
  writeFileSync(join(client, 'usage.ts'), program(extra))
  const r = await run(['node', join(ROOT, 'node_modules/.bin/tsc'), '--noEmit', '--strict', '--target', 'es2022', '--module', 'esnext', '--moduleResolution', 'bundler', '--lib', 'es2022,dom', 'usage.ts'])
  return r.stdout + r.stderr
}

describe('the generated TypeScript client', () => {
  test('generates from the live document', async () => {
    const gen = await run(['node', join(ROOT, 'node_modules/.bin/openapi-typescript'), join(dir, 'openapi.json'), '-o', join(client, 'api.d.ts')])
    expect(gen.code).toBe(0)
  }, 60_000)

  test('types the reads: a program using their fields compiles under --strict', async () => {
    expect(await compile()).toBe('')
  }, 60_000)

  test('and refuses a field that does not exist, or a field used as what it is not', async () => {
    expect(await compile('const v: string = audit[0].id')).toContain("Type 'number' is not assignable to type 'string'")
    expect(await compile('const v = inbox.messages[0].sender')).toContain("Property 'sender' does not exist")
    expect(await compile('const v: number = state[0].value')).toContain("Property 'value' does not exist")
    expect(await compile("const v: 'info' = rules[0].severity")).toContain('is not assignable to type \'"info"\'')
  }, 60_000)

  test('the program reads real values from a server', async () => {
    const ada = await register(s.api, 'ada', admin)
    await call(s.api, 'PUT', '/api/state/shop/plan', { step: 1 }, admin)
    await call(s.api, 'PUT', '/api/rules/shop/no-todo', { pattern: 'TODO' }, admin)
    await call(s.api, 'POST', '/api/queues/builds/tasks', { title: 'invoice PDFs' }, admin)
    await call(s.api, 'POST', '/api/messages', { to: ['ada'], subject: 'hello' }, admin)
    writeFileSync(join(client, 'main.ts'), `import { read } from './usage'\nconsole.log(JSON.stringify(await read(process.argv[2], JSON.parse(process.argv[3]))))\n`)
    await compile()
    const r = await run([process.execPath, 'main.ts', s.api, JSON.stringify({ ...admin, ...ada.h })])
    expect(r.stderr).toBe('')
    expect(JSON.parse(r.stdout)).toEqual({
      key: 'shop/plan',
      version: 1,
      id: expect.any(Number),
      outcome: 'success',
      severity: 'error',
      appliesTo: ['*'],
      status: 'ready',
      attempts: 0,
      claimedBy: null,
      subject: 'hello',
      from: 'human',
      cursor: expect.any(Number),
    })
  }, 60_000)
})
