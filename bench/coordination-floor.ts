// The floor of a coordination round trip on SQLite (bench/coordination-ab.ts): a bare
// Bun.serve whose lock and task routes run, in one transaction per request on Muster's
// own schema and pragmas (store/sqlite/db.ts), the rows Muster's writes of them make —
// the holder's heartbeat, the grant or task row, the fence, the event, the audit entry —
// one bun:sqlite call per statement. No group commit, no HTTP framework, no validation,
// no checkpointer thread, no caches: what Bun and SQLite give these rows with nothing on top.
// Run: bun bench/coordination-floor.ts <data dir> (prints `coordination-floor on <url>,` when ready).
import { randomUUID } from 'node:crypto'
import { openDatabase } from '../store/sqlite/db'

const db = openDatabase(process.argv[2])
const q = (sql: string) => db.prepare(sql)
const begin = q('BEGIN IMMEDIATE')
const commit = q('COMMIT')
const rollback = q('ROLLBACK')
const beat = q("UPDATE instances SET last_seen = ?, status = 'active' WHERE id = ?")
const register = q("INSERT INTO instances (id, name, status, registered_at, last_seen, token_hash) VALUES (?, ?, 'active', ?, ?, ?)")
const fence = q('UPDATE fence_counter SET value = value + 1 WHERE id = 1 RETURNING value')
const holders = q('SELECT name, instance_id, fence FROM lock_holders WHERE name = ?')
const grant = q('INSERT INTO lock_holders (name, instance_id, lock_limit, fence, reason, acquired_at, expires_at) VALUES (?, ?, 1, ?, NULL, ?, NULL)')
const release = q('DELETE FROM lock_holders WHERE name = ? AND instance_id = ? RETURNING fence')
const event = q("INSERT INTO events (topic, data, source, created_at) VALUES (?, ?, 'coordination', ?)")
const audit = q("INSERT INTO audit (timestamp, actor, action, resource, detail, outcome) VALUES (?, ?, ?, ?, ?, 'success')")
const enqueue = q("INSERT INTO tasks (queue, title, payload, priority, status, max_attempts, created_at, updated_at) VALUES (?, ?, ?, 0, 'ready', 3, ?, ?) RETURNING id")
const next = q("SELECT id FROM tasks WHERE queue = ? AND status = 'ready' AND requires = '[]' ORDER BY priority DESC, id LIMIT 1")
const claim = q("UPDATE tasks SET status = 'claimed', attempts = attempts + 1, claimed_by = ?, claim_id = ?, fence = ?, updated_at = ? WHERE id = ? RETURNING id, title, payload")
const complete = q("UPDATE tasks SET status = 'done', result = ?, claim_id = NULL, updated_at = ? WHERE id = ? AND claim_id = ? RETURNING id")

const tokens = new Map<string, string>()

/** One transaction: the holder's heartbeat (when there is a holder), `work`, its event and audit entry. */
function unit<T>(holder: string | null, topic: string, resource: string, work: (now: string) => { data: object; answer: T; detail: string }): T {
  const now = new Date().toISOString()
  begin.run()
  try {
    if (holder) beat.run(now, holder)
    const { data, answer, detail } = work(now)
    event.run(topic, JSON.stringify(data), now)
    audit.run(now, holder ?? 'anonymous', topic, resource, detail)
    commit.run()
    return answer
  } catch (err) {
    rollback.run()
    throw err
  }
}

const json = (body: unknown, status = 200) => Response.json(body, { status })

const server = Bun.serve({
  hostname: '127.0.0.1',
  port: 0,
  async fetch(req) {
    const path = decodeURIComponent(new URL(req.url).pathname)
    const holder = tokens.get(req.headers.get('x-instance-token') ?? '') ?? null
    const body = req.method === 'GET' || req.method === 'DELETE' ? {} : ((await req.json().catch(() => ({}))) as Record<string, any>)
    if (path === '/api/instances/register') {
      const [id, token, now] = [randomUUID(), `mst_${randomUUID()}`, new Date().toISOString()]
      register.run(id, body.name ?? 'floor', now, now, token)
      tokens.set(token, id)
      return json({ id, token })
    }
    if (path.startsWith('/api/locks/') && holder) {
      const name = path.slice('/api/locks/'.length)
      if (req.method === 'PUT') {
        const answer = unit(holder, 'lock.acquired', `locks/${name}`, (now) => {
          if ((holders.all(name) as unknown[]).length) throw new Error('held')
          const f = (fence.get() as { value: number }).value
          grant.run(name, holder, f, now)
          return { data: { name, instance_id: holder, fence: f }, answer: { name, instance_id: holder, fence: f, limit: 1, acquired_at: now }, detail: `fence ${f}` }
        })
        return json(answer)
      }
      const answer = unit(holder, 'lock.released', `locks/${name}`, () => {
        const gone = release.get(name, holder) as { fence: number } | null
        return { data: { name, instance_id: holder, fence: gone?.fence, reason: 'released' }, answer: { name, released: true }, detail: `fence ${gone?.fence}` }
      })
      return json(answer)
    }
    const enq = /^\/api\/queues\/([^/]+)\/tasks$/.exec(path)
    if (enq) {
      const answer = unit(null, 'task.created', `queues/${enq[1]}/tasks`, (now) => {
        const { id } = enqueue.get(enq[1], body.title ?? 'task', JSON.stringify(body.payload ?? null), now, now) as { id: number }
        return { data: { id, queue: enq[1] }, answer: { id, queue: enq[1], status: 'ready' }, detail: `task ${id}` }
      })
      return json(answer, 201)
    }
    const cl = /^\/api\/queues\/([^/]+)\/claim$/.exec(path)
    if (cl && holder) {
      const answer = unit(holder, 'task.claimed', `queues/${cl[1]}/claim`, (now) => {
        const ready = next.get(cl[1]) as { id: number } | null
        if (!ready) return { data: { queue: cl[1] }, answer: null, detail: 'empty' }
        const [f, claimId] = [(fence.get() as { value: number }).value, randomUUID()]
        const task = claim.get(holder, claimId, f, now, ready.id) as { id: number; title: string; payload: string }
        return { data: { id: task.id, instance_id: holder, fence: f }, answer: { ...task, claim_id: claimId, fence: f }, detail: `fence ${f}` }
      })
      return answer ? json(answer) : new Response(null, { status: 204 })
    }
    const ack = /^\/api\/tasks\/(\d+)\/ack$/.exec(path)
    if (ack && holder) {
      const answer = unit(holder, 'task.done', `tasks/${ack[1]}`, (now) => {
        const done = complete.get(JSON.stringify(body.result ?? null), now, Number(ack[1]), body.claim_id ?? '') as { id: number } | null
        return { data: { id: Number(ack[1]) }, answer: { id: Number(ack[1]), status: done ? 'done' : 'unknown' }, detail: 'done' }
      })
      return json(answer)
    }
    return json({ error: 'not found', code: 404 }, 404)
  },
})
console.log(`coordination-floor on http://127.0.0.1:${server.port},`)
