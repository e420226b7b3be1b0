// GET /livez and GET /readyz: open probes on the API port. /readyz asks the database
// itself, so a schema another build left behind (or no database, test/outage.test.ts)
// turns it to 503 {error, code} naming what is not ready, while /livez and /health stay 200.
import { afterAll, describe, expect, test } from 'bun:test'
import { call, startServer } from './helpers'
import { onPostgres, rawQuery } from './pg'

const TOKEN = 'health-token'
const s = await startServer({ args: ['--auth-token', TOKEN] })
afterAll(() => s.cleanup())

/** Moves the stored schema version by `by`, behind the server's back. */
const shiftSchema = (by: number) =>
  onPostgres
    ? rawQuery(s.dataDir, 'UPDATE muster_schema SET version = version + ?', by)
    : rawQuery<{ user_version: number }>(s.dataDir, 'PRAGMA user_version').then(([r]) => rawQuery(s.dataDir, `PRAGMA user_version = ${r.user_version + by}`))

describe('probes', () => {
  test('/livez and /readyz answer 200 {status: "ok"} without the token', async () => {
    for (const path of ['/livez', '/readyz']) {
      const r = await call(s.api, 'GET', path)
      expect([path, r.status, r.body]).toEqual([path, 200, { status: 'ok' }])
    }
    expect((await call(s.api, 'POST', '/readyz')).status).toBe(401)
  })

  test('/readyz is 503 naming the schema while the database is at another version; /livez and /health stay 200', async () => {
    await shiftSchema(1)
    try {
      const r = await call(s.api, 'GET', '/readyz')
      expect(r.status).toBe(503)
      expect(r.body.code).toBe(503)
      expect(r.body.error).toMatch(/^not ready: database schema is at version \d+, this build needs \d+$/)
      expect((await call(s.api, 'GET', '/livez')).status).toBe(200)
      expect((await call(s.api, 'GET', '/health')).body.status).toBe('ok')
    } finally {
      await shiftSchema(-1)
    }
    expect((await call(s.api, 'GET', '/readyz')).status).toBe(200)
  })

  test('both are in the OpenAPI document, open (security: [])', async () => {
    const doc = (await call(s.api, 'GET', '/openapi.json', undefined, { authorization: `Bearer ${TOKEN}` })).body
    for (const path of ['/livez', '/readyz']) expect(doc.paths[path].get.security).toEqual([])
    expect(doc.paths['/readyz'].get.responses['503'].content['application/json'].schema).toEqual({ $ref: '#/components/schemas/Error' })
  })
})
