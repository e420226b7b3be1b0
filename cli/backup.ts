// `backup --output` / `restore --file`: the whole database as one file (`-`: stdout / stdin).
import { renameSync, rmSync } from 'node:fs'
import type { Command } from 'commander'
import { request } from './client'
import { checkFile, readFileArg } from './input'
import { act, ClientError, note, ServerError, UsageError } from './output'

const mb = (n: number) => `${(n / 1024 / 1024).toFixed(1)} MB`

export function backupCommands(program: Command): void {
  program
    .command('backup')
    .description('download a consistent snapshot of the whole database')
    .requiredOption('--output <path>', "file to write ('-' for stdout)")
    .action(
      act(async (o: { output: string }) => {
        const res = await request('GET', '/api/backup')
        const total = Number(res.headers.get('content-length') ?? 0)
        // Progress only for people watching a terminal; scripts get just the JSON result.
        const showProgress = process.stderr.isTTY === true
        const toStdout = o.output === '-'
        const tmp = `${o.output}.${process.pid}.part`
        const sink = toStdout ? Bun.stdout.writer() : Bun.file(tmp).writer()
        let bytes = 0
        let lastShown = 0
        try {
          for await (const chunk of res.body!) {
            sink.write(chunk)
            bytes += chunk.byteLength
            if (showProgress && Date.now() - lastShown > 250) {
              lastShown = Date.now()
              process.stderr.write(`\rbackup: ${mb(bytes)}${total ? ` / ${mb(total)}` : ''}`)
            }
          }
          await sink.end()
          if (!toStdout) renameSync(tmp, o.output)
        } catch (err) {
          if (!toStdout) rmSync(tmp, { force: true })
          if (err instanceof ServerError || err instanceof ClientError) throw err
          throw new UsageError(`cannot write ${o.output}: ${(err as Error).message}`)
        }
        if (showProgress) process.stderr.write(`\rbackup: ${mb(bytes)} done\n`)
        // On stdout the database is the output; a JSON line after it would corrupt it.
        return toStdout ? undefined : { output: o.output, bytes }
      }),
    )

  program
    .command('restore')
    .description('replace the whole database with a backup file (the server checks it first)')
    .requiredOption('--file <path>', "backup file ('-' for stdin)")
    .action(
      act(async (o: { file: string }) => {
        // A file is streamed from disk (it can be large); stdin has to be read first.
        const body = o.file === '-' ? await readFileArg('-') : Bun.file(checkFile(o.file))
        if (process.stderr.isTTY) note(`restore: uploading ${mb(body instanceof Uint8Array ? body.byteLength : body.size)}`)
        const res = await request('POST', '/api/restore', { body, headers: { 'content-type': 'application/octet-stream' } })
        return res.json()
      }),
    )
}
