// npm run build: the compiled server and CLI in dist/. The server is built the way it
// starts fastest (bench/startup.ts): bytecode instead of source to parse, the JIT held
// back until it listens (app.ts sets the normal policy then), and its bytecode laid out
// in the order a first start runs it, learnt from one start of a first build, so a start
// reads fewer pages of the binary. bench/startup.ts and test/binary.test.ts build with
// these same functions.
//
// Most of each binary is the Bun runtime itself; minifying shrinks what is ours. Names
// are kept, so stacks in the log and pino's `err.type` still name the function and class.
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'

const ROOT = import.meta.dir
/** The server and its worker threads' entry files (lib/workers.ts finds them in the binary). */
const SERVER_ENTRIES = ['app.ts', 'store/sqlite/checkpointer.ts', 'validation/rules-worker.ts', 'lib/json-worker.ts']
/** Tier-up thresholds scaled this much until the server listens: run-once startup code stays interpreted. */
const START_JIT_POLICY = 16

async function compile(args: string[]): Promise<void> {
  const proc = Bun.spawn([process.execPath, 'build', '--compile', '--minify', '--keep-names', ...args], { cwd: ROOT, stdout: 'pipe', stderr: 'pipe' })
  if ((await proc.exited) !== 0) throw new Error(`bun build ${args.join(' ')} failed: ${await new Response(proc.stderr).text()}`)
}

/** Starts `binary` once until it answers /health, recording the order its bytecode runs in to `order`. */
async function recordStartOrder(binary: string, order: string): Promise<void> {
  const data = mkdtempSync(join(tmpdir(), 'muster-build-'))
  const proc = Bun.spawn([binary, '--bind', '127.0.0.1:0', '--dashboard-bind', '', '--data-dir', data], {
    stdout: 'pipe',
    stderr: 'ignore',
    env: { ...process.env, BUN_BYTECODE_ORDER_OUT: order },
  })
  try {
    let text = ''
    const reader = proc.stdout.getReader()
    let m: RegExpExecArray | null
    while (!(m = /Muster API on (\S+),/.exec(text))) {
      const { value, done } = await reader.read()
      if (done) throw new Error(`the first build exited before listening: ${text}`)
      text += new TextDecoder().decode(value)
    }
    if (!(await fetch(`${m[1]}/health`)).ok) throw new Error('the first build is not healthy')
  } finally {
    proc.kill('SIGTERM') // the order file is written on exit
    await proc.exited
    rmSync(data, { recursive: true, force: true })
  }
}

export async function buildServer(outfile: string): Promise<void> {
  const flags = ['--bytecode', '--format=esm', `--compile-jit-policy=${START_JIT_POLICY}`, ...SERVER_ENTRIES, '--outfile', outfile]
  await compile(flags)
  const dir = mkdtempSync(join(tmpdir(), 'muster-order-'))
  try {
    const order = join(dir, 'order')
    await recordStartOrder(outfile, order)
    await compile([`--bytecode-order=${order}`, ...flags])
  } finally {
    rmSync(dir, { recursive: true, force: true })
  }
}

export async function buildCli(outfile: string): Promise<void> {
  await compile(['cli.ts', '--outfile', outfile])
}

if (import.meta.main) {
  const out = join(ROOT, 'dist')
  await buildServer(join(out, 'muster-server'))
  await buildCli(join(out, 'muster'))
}
