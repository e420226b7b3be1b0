import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { Database } from 'bun:sqlite'
import { mkdirSync, readFileSync, readdirSync, rmSync, statSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { MIGRATIONS } from '../store/sqlite/db'
import { openStore } from '../store'
import { call, eventually, startServer, tempDir, type TestServer } from './helpers'
import { onPostgres } from './pg'

let s: TestServer
beforeAll(async () => (s = await startServer()))
afterAll(() => s.cleanup())

const put = (key: string, body: string | Uint8Array) => call(s.api, 'PUT', `/api/state/${key}`, body, { 'content-type': 'text/plain' })
const restore = (body: Uint8Array | string) => call(s.api, 'POST', '/api/restore', body, { 'content-type': 'application/octet-stream' })
const stateList = async () => (await call(s.api, 'GET', '/api/state')).body
const lastAudit = async (action: string) => (await call(s.api, 'GET', `/api/audit?action=${action}&limit=1`)).body[0]
const tempFiles = () => readdirSync(s.dataDir).filter((f) => f.startsWith('.muster-tmp-'))

/** An SQLite file built by hand, returned as bytes. */
function sqliteFile(build: (db: Database) => void): Uint8Array {
  const dir = tempDir('muster-foreign-')
  const db = new Database(join(dir, 'x.db'), { create: true })
  build(db)
  db.close()
  const bytes = new Uint8Array(readFileSync(join(dir, 'x.db')))
  rmSync(dir, { recursive: true, force: true })
  return bytes
}

let backup: Uint8Array

describe('backup and restore', () => {
  test('a backup taken under concurrent writes restores every write acknowledged before it', async () => {
    // ~30 MB of data: the snapshot takes real time and the file is over the 10 MB body limit of other routes.
    for (let i = 0; i < 3; i++) expect((await put(`bulk/${i}`, new Uint8Array(10 * 1024 * 1024).fill(65 + i))).status).toBe(200)
    for (const v of ['one', 'two', 'three']) await put('hist/k', v)

    const acked = new Map<string, string>()
    let stop = false
    const writer = async (w: number) => {
      for (let i = 0; !stop; i++) {
        const key = `w${w}/${i}`
        const value = `value of ${key}`
        if ((await put(key, value)).status === 200) acked.set(key, value)
      }
    }
    const writers = [writer(1), writer(2)]
    await eventually(() => acked.size >= 20)
    const before = new Map(acked) // every write acknowledged before the backup request
    const res = await fetch(`${s.api}/api/backup`)
    backup = new Uint8Array(await res.arrayBuffer())
    const duringBackup = acked.size - before.size
    stop = true
    await Promise.all(writers)
    expect((await put('after/backup', 'later')).status).toBe(200)

    expect(res.status).toBe(200)
    expect(res.headers.get('content-type')).toBe('application/vnd.sqlite3')
    expect(res.headers.get('content-disposition')).toMatch(/^attachment; filename="muster-backup-\d{8}T\d{6}Z\.db"$/)
    expect(Number(res.headers.get('x-service-backup-size'))).toBe(backup.byteLength)
    expect(backup.byteLength).toBeGreaterThan(30 * 1024 * 1024)
    expect(new TextDecoder().decode(backup.subarray(0, 15))).toBe('SQLite format 3')
    expect(duringBackup).toBeGreaterThan(0) // the server kept taking writes while the backup ran
    expect(await lastAudit('backup.create')).toMatchObject({ outcome: 'success', resource: 'backup', detail: `${backup.byteLength} bytes` })
    expect(tempFiles()).toEqual([])

    const r = await restore(backup)
    expect(r.status).toBe(200)
    expect(r.body).toEqual({ restored: true, bytes: backup.byteLength, schema_version: MIGRATIONS.length })

    for (const [key, value] of before) {
      const g = await fetch(`${s.api}/api/state/${key}`)
      expect(g.status).toBe(200)
      expect(await g.text()).toBe(value)
    }
    // Nothing that did not exist: every restored key was written and acknowledged, with its value.
    const keys = (await stateList()).map((k: any) => k.key)
    for (const key of keys.filter((k: string) => k.startsWith('w'))) {
      expect(acked.has(key)).toBe(true)
      expect(await (await fetch(`${s.api}/api/state/${key}`)).text()).toBe(acked.get(key)!)
    }
    expect(keys).not.toContain('after/backup')
    expect(keys.filter((k: string) => k.startsWith('bulk/'))).toEqual(['bulk/0', 'bulk/1', 'bulk/2'])
    const bulk = new Uint8Array(await (await fetch(`${s.api}/api/state/bulk/2`)).arrayBuffer())
    expect(bulk.byteLength).toBe(10 * 1024 * 1024)
    expect(bulk.every((b) => b === 67)).toBe(true)
    const hist = await call(s.api, 'GET', '/api/state/hist/k?history=1')
    expect(hist.body.versions.map((v: any) => v.version)).toEqual([3, 2, 1])

    // The restore's audit entry is in the restored database; the backup's own entry came after the snapshot.
    expect(await lastAudit('backup.restore')).toMatchObject({ outcome: 'success', detail: `${backup.byteLength} bytes` })
    expect(await lastAudit('backup.create')).toBeUndefined()
    // SQLite keeps the replaced file beside the new one (a one-step undo); PostgreSQL has no file to keep.
    if (!onPostgres) expect(readdirSync(s.dataDir)).toContain('muster.db.pre-restore')
    expect(tempFiles()).toEqual([])

    // The restored database is live: writes continue its history, and it survives a restart.
    expect((await put('hist/k', 'four')).body.version).toBe(4)
    const listed = await stateList()
    await s.stop()
    s = await startServer({ dataDir: s.dataDir })
    expect(await stateList()).toEqual(listed)
  })

  describe('a bad file is 400 and nothing changes', () => {
    let listed: unknown
    let preRestoreIno: number
    beforeAll(async () => {
      listed = await stateList()
      if (!onPostgres) preRestoreIno = statSync(join(s.dataDir, 'muster.db.pre-restore')).ino
    })

    const refused = async (body: Uint8Array | string, error: string | RegExp) => {
      const r = await restore(body)
      expect(r.status).toBe(400)
      expect(r.body.code).toBe(400)
      if (typeof error === 'string') expect(r.body.error).toBe(error)
      else expect(r.body.error).toMatch(error)
      expect(Object.keys(r.body).sort()).toEqual(['code', 'error'])
      expect(await stateList()).toEqual(listed)
      expect(await lastAudit('backup.restore')).toMatchObject({ outcome: 'error', detail: 'status 400' })
      expect(tempFiles()).toEqual([])
      if (!onPostgres) expect(statSync(join(s.dataDir, 'muster.db.pre-restore')).ino).toBe(preRestoreIno)
    }

    test('a truncated backup', async () => {
      await refused(backup.subarray(0, Math.floor(backup.byteLength / 2)), /^(not a Muster backup|backup is damaged)/)
      await refused(backup.subarray(0, 4096), /^(not a Muster backup|backup is damaged)/)
    })

    test('a backup with damaged pages', async () => {
      const damaged = backup.slice()
      for (let page = 2; page < 6; page++) damaged.fill(0xa5, page * 4096, page * 4096 + 4096)
      await refused(damaged, /^(not a Muster backup|backup is damaged)/)
    })

    test('a foreign SQLite file', async () => {
      await refused(
        sqliteFile((db) => db.exec('CREATE TABLE notes (id INTEGER PRIMARY KEY, text TEXT)')),
        `not a Muster backup of this version: schema version 0, this server uses ${MIGRATIONS.length}`,
      )
      await refused(
        sqliteFile((db) => db.exec(`CREATE TABLE notes (text TEXT); PRAGMA user_version = ${MIGRATIONS.length}`)),
        'not a Muster backup: table audit is missing',
      )
      await refused(
        sqliteFile((db) => {
          db.exec(MIGRATIONS.join(';').replace('tokens_in INTEGER NOT NULL DEFAULT 0,', ''))
          db.exec(`PRAGMA user_version = ${MIGRATIONS.length}`)
        }),
        "not a Muster backup: table llm_usage differs from this build's schema",
      )
      await refused(
        sqliteFile((db) => db.exec(`PRAGMA user_version = ${MIGRATIONS.length + 1}`)),
        `not a Muster backup of this version: schema version ${MIGRATIONS.length + 1}, this server uses ${MIGRATIONS.length}`,
      )
    })

    test('not SQLite at all, or empty', async () => {
      await refused('just some text that is long enough to look like a file header....................................', 'not a Muster backup: file is not a database')
      await refused(new Uint8Array(0), 'request body is empty: send a file made by GET /api/backup')
    })
  })
})

describe('through the dashboard port', () => {
  test('a backup far over the 10 MB body limit restores through the proxy (streamed, not capped)', async () => {
    expect(backup.byteLength).toBeGreaterThan(30 * 1024 * 1024)
    const r = await call(s.dashboard, 'POST', '/api/restore', backup, { 'content-type': 'application/octet-stream' })
    expect(r.status).toBe(200)
    expect(r.body).toEqual({ restored: true, bytes: backup.byteLength, schema_version: MIGRATIONS.length })
    expect(await lastAudit('backup.restore')).toMatchObject({ outcome: 'success', detail: `${backup.byteLength} bytes` })
    // A download through the proxy is the same kind of file.
    const res = await fetch(`${s.dashboard}/api/backup`)
    expect(res.status).toBe(200)
    expect(new TextDecoder().decode(new Uint8Array(await res.arrayBuffer()).subarray(0, 15))).toBe('SQLite format 3')
  })

  test('the proxy streams the upload: the API is writing it to disk before the client has finished sending', async () => {
    let release!: () => void
    const gate = new Promise<void>((resolve) => (release = resolve))
    let step = 0
    const body = new ReadableStream<Uint8Array>({
      async pull(c) {
        if (step++ === 0) return c.enqueue(backup.subarray(0, 1024 * 1024))
        await gate // the rest only once the API has shown it is receiving
        c.enqueue(backup.subarray(1024 * 1024))
        c.close()
      },
    })
    const pending = fetch(`${s.dashboard}/api/restore`, { method: 'POST', body, duplex: 'half', headers: { 'content-type': 'application/octet-stream' } } as RequestInit)
    await eventually(() => tempFiles().some((f) => statSync(join(s.dataDir, f)).size > 0))
    release()
    const res = await pending
    expect(res.status).toBe(200)
    expect(await res.json()).toEqual({ restored: true, bytes: backup.byteLength, schema_version: MIGRATIONS.length })
  })

  test("other routes keep the API's 10 MB limit behind the proxy, with or without Content-Length", async () => {
    const big = new Uint8Array(11 * 1024 * 1024)
    const r = await call(s.dashboard, 'PUT', '/api/state/too/big', big, { 'content-type': 'application/octet-stream' })
    expect(r.status).toBe(413)
    expect(r.body).toEqual({ error: 'request body exceeds the 10 MB limit', code: 413 })
    const chunked = new ReadableStream({
      start(c) {
        for (let i = 0; i < 11; i++) c.enqueue(new Uint8Array(1024 * 1024))
        c.close()
      },
    })
    const res = await fetch(`${s.dashboard}/api/state/too/big`, { method: 'PUT', body: chunked, duplex: 'half' } as RequestInit)
    expect(res.status).toBe(413)
    expect((await call(s.api, 'GET', '/api/state/too/big')).status).toBe(404)
  })
})

describe('backup file', () => {
  test("a backup is the embedded store's file on either backend: every version of a long history reads from it", async () => {
    // 70 versions: past the first 64-version anchor, which PostgreSQL's backup derives (it keeps an index instead).
    for (let v = 1; v <= 70; v++) await put('chain/k', `v${v}`)
    const file = new Uint8Array(await (await fetch(`${s.api}/api/backup`)).arrayBuffer())
    const dir = tempDir('muster-backup-open-')
    mkdirSync(dir, { recursive: true })
    writeFileSync(join(dir, 'muster.db'), file)
    const store = openStore(dir)
    try {
      const text = async (v: number) => new TextDecoder().decode((await store.state.getVersion('chain/k', v))!.value)
      for (const v of [1, 63, 64, 65, 70]) expect(await text(v)).toBe(`v${v}`)
      expect((await store.state.history('chain/k', 100))!.map((h) => h.version)).toEqual(Array.from({ length: 70 }, (_, i) => 70 - i))
      expect((await store.write((tx) => tx.state.put('chain/k', new TextEncoder().encode('v71'), 'text/plain'))).version).toBe(71)
    } finally {
      store.close()
      rmSync(dir, { recursive: true, force: true })
    }
  })
})
