// GET /api/backup and POST /api/restore: the whole database as one SQLite file.
import { t } from 'elysia'
import { open, unlink } from 'node:fs/promises'
import { invalid } from '../lib/errors'
import type { Ctx } from '../services/context'
import { removeTemp } from '../store/backup'
import { StreamTooLarge, chunksUpTo } from '../lib/stream'
import { bodyLimits, rawBodyDoc, tooLarge } from '../http/body'
import { noteAudit, audited } from '../http/audit'
import { restoreBackup, takeBackup } from '../services/backup'

const CHUNK = 1024 * 1024
/** Backups are streamed to disk, never held in memory: far larger than other bodies. */
const RESTORE_MAX = 1024 * 1024 * 1024

/** Streams the request body into `file`, refusing (413) once it passes `limit`; returns the size. */
async function receiveToFile(request: Request, file: string, limit: number): Promise<number> {
  if (Number(request.headers.get('content-length') ?? 0) > limit) throw tooLarge(limit)
  const sink = Bun.file(file).writer({ highWaterMark: CHUNK })
  let size = 0
  try {
    if (request.body)
      for await (const chunk of chunksUpTo(request.body, limit)) {
        size += chunk.byteLength
        sink.write(chunk)
        await sink.flush()
      }
  } catch (err) {
    throw err instanceof StreamTooLarge ? tooLarge(limit) : err
  } finally {
    await sink.end()
  }
  return size
}

/** A file as a response body that is unlinked once opened, so nothing is left behind even if the client goes away. */
async function streamAndRemove(file: string): Promise<{ body: ReadableStream<Uint8Array>; size: number }> {
  const handle = await open(file, 'r')
  await unlink(file)
  const { size } = await handle.stat()
  let closed = false
  const close = () => {
    if (!closed) (closed = true), void handle.close()
  }
  const body = new ReadableStream<Uint8Array>({
    async pull(controller) {
      try {
        const buffer = new Uint8Array(CHUNK)
        const { bytesRead } = await handle.read(buffer, 0, CHUNK, null)
        if (bytesRead === 0) close(), controller.close()
        else controller.enqueue(buffer.subarray(0, bytesRead))
      } catch (err) {
        close()
        controller.error(err)
      }
    },
    cancel: close,
  })
  return { body, size }
}

export function backupRoutes(ctx: Ctx) {
  return audited(ctx)
    .use(bodyLimits)
    .get(
      '/api/backup',
      async ({ request }) => {
        const { body, size } = await streamAndRemove(await takeBackup(ctx))
        noteAudit(request, `${size} bytes`)
        const stamp = new Date().toISOString().replace(/[-:]/g, '').replace(/\..*$/, 'Z')
        return new Response(body, {
          headers: {
            'content-type': 'application/vnd.sqlite3',
            // Bun sends a stream chunked; the size header lets clients show progress.
            'x-service-backup-size': String(size),
            'content-disposition': `attachment; filename="muster-backup-${stamp}.db"`,
            'x-service-schema-version': String(ctx.store.schemaVersion),
          },
        })
      },
      {
        audit: 'backup.create',
        detail: {
          summary: 'Download a consistent snapshot of the whole database (SQLite file)',
          description: 'Taken with VACUUM INTO while the server keeps serving and writing; includes history and secrets.',
          tags: ['backup'],
          responses: { 200: { description: 'The SQLite database file', content: { 'application/octet-stream': { schema: { type: 'string', format: 'binary' } } } } },
        },
      },
    )
    .post(
      '/api/restore',
      async ({ request, audit }) => {
        const file = ctx.store.tempFile('restore')
        try {
          const bytes = await receiveToFile(request, file, RESTORE_MAX)
          if (bytes === 0) throw invalid('request body is empty: send a file made by GET /api/backup')
          await restoreBackup(ctx, audit, file, bytes)
          return { restored: true as const, bytes, schema_version: ctx.store.schemaVersion }
        } finally {
          removeTemp(file)
        }
      },
      {
        parse: 'none',
        maxBody: RESTORE_MAX,
        response: t.Object({ restored: t.Literal(true), bytes: t.Integer(), schema_version: t.Integer() }),
        audit: 'backup.restore',
        detail: {
          summary: 'Replace the whole database with a backup file (raw body, at most 1 GB)',
          description:
            'The file is checked first (SQLite integrity, schema version, tables); a bad file is 400 and nothing changes. The previous database is kept as muster.db.pre-restore.',
          tags: ['backup'],
          requestBody: rawBodyDoc('application/octet-stream', 'A database file made by GET /api/backup'),
        },
      },
    )
}
