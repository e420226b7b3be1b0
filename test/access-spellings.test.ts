// Access is decided on the route that serves a call, however its path is spelled (access.md):
// every operation of /openapi.json, under every spelling derived from its path (trailing and
// doubled slashes, another case, percent-encoded letters and slashes, dot segments, backslashes, a query,
// the absolute form of the request target), sent byte for byte on a raw socket (fetch would
// tidy the path up) to the API port and to the dashboard's, with an agent and a viewer token. Where the operation's role (its `x-access`)
// is above the caller's, the answer is a refusal: 403, or the router's own 404/405 (no route
// serves that spelling; no handler ran). 0 successes.
import { afterAll, beforeAll, expect, test } from 'bun:test'
import { connect } from 'node:net'
import { call, startServer, type TestServer } from './helpers'

const ADMIN_TOKEN = 'spellings-admin'
const admin = { authorization: `Bearer ${ADMIN_TOKEN}` }
const RANK = { viewer: 0, agent: 1, admin: 2 } as const
type Role = keyof typeof RANK

let s: TestServer
beforeAll(async () => (s = await startServer({ args: ['--auth-token', ADMIN_TOKEN] })))
afterAll(() => s.cleanup())

/** Sends one request exactly as written (request target included) and reads the status line and body. */
function raw(base: string, method: string, target: string, token: string, body?: string): Promise<{ status: number; body: string }> {
  const { hostname, port, host } = new URL(base)
  return new Promise((resolve, reject) => {
    const socket = connect(Number(port), hostname)
    const chunks: Buffer[] = []
    socket.on("data", (d) => chunks.push(Buffer.from(d)))
    socket.on('error', reject)
    socket.on('close', () => {
      const text = Buffer.concat(chunks).toString()
      resolve({ status: Number(/^HTTP\/1\.1 (\d{3})/.exec(text)?.[1] ?? 0), body: text.slice(text.indexOf('\r\n\r\n') + 4) })
    })
    // The absolute form of a request target (RFC 9112 3.2.2), which a proxy sends.
    if (target.startsWith(ABSOLUTE)) target = `http://${host}${target.slice(ABSOLUTE.length)}`
    const payload = body ?? ''
    const length = body === undefined ? '' : `Content-Type: application/json\r\nContent-Length: ${Buffer.byteLength(payload)}\r\n`
    socket.write(`${method} ${target} HTTP/1.1\r\nHost: ${host}\r\nAuthorization: Bearer ${token}\r\n${length}Connection: close\r\n\r\n${payload}`)
  })
}

/** Marks a spelling sent in the absolute form, `http://host/path`. */
const ABSOLUTE = '@absolute'

const percent = (c: string) => `%${c.charCodeAt(0).toString(16).toUpperCase().padStart(2, '0')}`

/** Every other spelling of `path` (a route's path with its parameters filled in): each a way a router or a policy could read it differently. */
function spellingsOf(path: string): string[] {
  const segments = path.split('/').slice(1)
  const out = new Set<string>([
    path,
    `${path}/`,
    `${path}//`,
    `/${path}`,
    `${path}/.`,
    `${path}/%2e`,
    `${path}/%2E/`,
    `${path}?`,
    `${path}/?x=1`,
    `${path};x`,
    `${path}%2F`,
    `${path}%20`,
    path.toUpperCase(),
    path.replace(/\//g, '//'),
    path.replace(/\//g, '/./'),
    `/x/..${path}`,
    `${ABSOLUTE}${path}`,
    `${ABSOLUTE}${path}/`,
    // Backslashes (a URL parser may read them as slashes), dot segments that climb, a fragment, a NUL.
    '/' + path.slice(1).replace(/\//g, '\\'),
    `${path}\\`,
    `${path}%5C`,
    `${path}%3F`,
    `${path}#x`,
    `${path}%00`,
    `${path}/x/..`,
    `${path}/x/%2e%2e`,
    `${path}%2f..`,
    `//${path}`,
    `${ABSOLUTE}/${path}`,
  ])
  segments.forEach((segment, i) => {
    const at = (replacement: string) => '/' + [...segments.slice(0, i), replacement, ...segments.slice(i + 1)].join('/')
    out.add(at(segment[0].toUpperCase() + segment.slice(1)))
    out.add(at(percent(segment[0]) + segment.slice(1)))
    out.add(at(percent(segment[0]).toLowerCase() + segment.slice(1)))
    out.add(at(segment.slice(0, -1) + percent(segment.at(-1)!)))
    out.add(at(`${segment}/`))
    out.add(at(`/${segment}`))
    // A slash spelled %2F, here and there.
    if (i > 0) out.add('/' + segments.slice(0, i).join('/') + '%2F' + segments.slice(i).join('/'))
    if (i > 0) out.add('/' + segments.slice(0, i).join('/') + '%2f' + segments.slice(i).join('/'))
  })
  return [...out]
}

/** An answer that refuses: 403, or the routers' own 404/405 (the spelling names no route; nothing ran). */
const refused = (status: number, body: string) => {
  if (status === 403) return true
  let error = ''
  try {
    error = JSON.parse(body).error
  } catch {}
  if (status === 404) return error === 'not found' || error.startsWith('not found: no route is spelled')
  return status === 405 && /^method \w+ not allowed$/.test(error)
}

/** Runs `work` over `items`, `width` at a time. */
async function pool<T>(items: T[], width: number, work: (item: T) => Promise<void>) {
  let next = 0
  await Promise.all(Array.from({ length: width }, async () => {
    while (next < items.length) await work(items[next++])
  }))
}

test('every route, under every spelling of its path, refuses a role below its own, on both ports', { timeout: 120_000 }, async () => {
  const tokens: Record<'agent' | 'viewer', string> = {
    agent: (await call(s.api, 'POST', '/api/tokens', { name: 'sp-agent', role: 'agent' }, admin)).body.token,
    viewer: (await call(s.api, 'POST', '/api/tokens', { name: 'sp-viewer', role: 'viewer' }, admin)).body.token,
  }
  // Real ids where a route takes one: a call that slipped through would do what it says.
  const victim = (await call(s.api, 'POST', '/api/tokens', { name: 'sp-victim', role: 'agent' }, admin)).body
  const webhook = (await call(s.api, 'POST', '/api/webhooks', { id: 'sp-hook', url: 'http://127.0.0.1:9/h', patterns: ['nothing.*'] }, admin)).body
  const template = (await call(s.api, 'POST', '/api/templates', { id: 'sp-t', name: 'T' }, admin)).body
  expect([victim.id, webhook.id, template.id].every(Boolean)).toBe(true)
  const value = (template_: string, param: string) =>
    template_.startsWith('/api/tokens/') ? victim.id
    : template_.startsWith('/api/webhooks/') ? (param === 'delivery' ? '1' : webhook.id)
    : template_.startsWith('/api/templates/') ? template.id
    : { project: 'p', name: 'n', ruleID: 'r', queue: 'q', key: 'k', agent: 'claude-code', thread: '1' }[param] ?? 'x'

  const spec = (await call(s.api, 'GET', '/openapi.json', undefined, admin)).body
  const cases: { method: string; template: string; spelling: string; role: 'agent' | 'viewer'; port: string }[] = []
  const needs: Record<string, Role> = {}
  for (const [template_, ops] of Object.entries<Record<string, { 'x-access': Role }>>(spec.paths)) {
    const path = template_.replace(/\{([^}]+)\}/g, (_, p: string) => value(template_, p))
    for (const [method, op] of Object.entries(ops)) {
      const need = op['x-access']
      needs[`${method.toUpperCase()} ${template_}`] = need
      for (const role of ['agent', 'viewer'] as const) {
        if (RANK[need] <= RANK[role]) continue
        const methods = method === 'get' ? ['GET', 'HEAD'] : [method.toUpperCase()]
        for (const m of methods)
          for (const spelling of spellingsOf(path)) {
            cases.push({ method: m, template: template_, spelling, role, port: s.api })
            if (spelling.startsWith('/api/') || spelling.startsWith(`${ABSOLUTE}/api/`)) cases.push({ method: m, template: template_, spelling, role, port: s.dashboard })
          }
      }
    }
  }
  // The finds, among the operations the document lists with the role they need.
  for (const op of ['POST /api/tokens', 'GET /api/tokens', 'DELETE /api/tokens/{id}', 'POST /api/webhooks', 'PATCH /api/webhooks/{id}', 'GET /api/backup', 'POST /api/restore'])
    expect([op, needs[op]]).toEqual([op, 'admin'])
  expect(cases.length).toBeGreaterThan(5000)

  const successes: string[] = []
  const statuses: Record<number, number> = {}
  await pool(cases, 8, async (c) => {
    const r = await raw(c.port, c.method, c.spelling, tokens[c.role], c.method === 'GET' || c.method === 'HEAD' || c.method === 'DELETE' ? undefined : '{}')
    statuses[r.status] = (statuses[r.status] ?? 0) + 1
    if (!refused(r.status, r.body) && !(c.method === 'HEAD' && (r.status === 403 || r.status === 404 || r.status === 405)))
      successes.push(`${c.role} ${c.method} ${c.spelling} (${c.template}) on ${c.port === s.api ? 'API' : 'dashboard'}: ${r.status} ${r.body.slice(0, 80)}`)
  })
  expect(successes).toEqual([])
  // The exact spelling of each is a 403, not merely unserved.
  expect(statuses[403]).toBeGreaterThan(200)
  // Nothing the calls could have done was done: the victim token still works, the webhook and template are unchanged.
  const list = (await call(s.api, 'GET', '/api/tokens', undefined, admin)).body.map((t: { name: string }) => t.name).sort()
  expect(list).toEqual(['sp-agent', 'sp-victim', 'sp-viewer'])
  expect((await call(s.api, 'GET', `/api/webhooks/${webhook.id}`, undefined, admin)).body.url).toBe('http://127.0.0.1:9/h')
})
