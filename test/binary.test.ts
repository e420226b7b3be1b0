import { afterAll, describe, expect, test } from 'bun:test'
import { readFileSync, rmSync } from 'node:fs'
import { join } from 'node:path'
import pkg from '../package.json' with { type: 'json' }
import { call, tempDir } from './helpers'
import { buildCli, buildServer } from '../build'

const out = tempDir('muster-bin-')
afterAll(() => rmSync(out, { recursive: true, force: true }))

describe('compiled binary', () => {
  test('the build (build.ts, as npm run build) gives muster-server and muster binaries that run without Bun on PATH', async () => {
    await buildServer(join(out, 'muster-server'))
    await buildCli(join(out, 'muster'))
    // The version is built in: no package.json next to the binaries.
    for (const name of ['muster-server', 'muster']) {
      const v = Bun.spawn([join(out, name), '--version'], { cwd: out, env: { PATH: '/usr/bin:/bin' }, stdout: 'pipe' })
      expect(await new Response(v.stdout).text()).toBe(`${pkg.version}\n`)
      expect(await v.exited).toBe(0)
    }
    const proc = Bun.spawn(
      [join(out, 'muster-server'), '--bind', '127.0.0.1:0', '--dashboard-bind', '127.0.0.1:0', '--data-dir', join(out, 'data')],
      { cwd: out, env: { PATH: '/usr/bin:/bin', HOME: out }, stdout: 'pipe', stderr: 'pipe' },
    )
    const reader = proc.stdout.getReader()
    let text = ''
    try {
      let m: RegExpExecArray | null = null
      while (!(m = /Muster API on (\S+), dashboard on (\S+),/.exec(text))) {
        const { value, done } = await reader.read()
        if (done) throw new Error(`binary exited: ${text}${await new Response(proc.stderr).text()}`)
        text += new TextDecoder().decode(value)
      }
      expect((await call(m[1], 'GET', '/health')).body.status).toBe('ok')
      expect((await call(m[1], 'PUT', '/api/state/bin', '{"ok":true}')).body.version).toBe(1)
      expect((await call(m[2], 'GET', '/api/state/bin')).body).toEqual({ ok: true })
      expect((await fetch(m[2] + '/')).status).toBe(200)
      // The docs viewer is embedded (no node_modules here), and the Prometheus endpoint answers.
      const viewer = await fetch(m[1] + '/docs/swagger-ui-bundle.js')
      expect([viewer.status, (await viewer.arrayBuffer()).byteLength > 1_000_000]).toEqual([200, true])
      expect(await (await fetch(m[1] + '/metrics')).text()).toContain('muster_http_requests_total{method="PUT",route="/api/state/*",status="200"} 1')
      // A large validation runs on the rules worker, which must be in the binary too.
      expect((await call(m[1], 'PUT', '/api/validate/bin/rules', [{ rule_id: 'todo', pattern: 'TODO' }])).status).toBe(200)
      const big = await call(m[1], 'POST', '/api/validate/bin', { content: 'x\n'.repeat(50_000) + 'TODO' })
      expect(big.body).toMatchObject({ count: 1, violations: [{ rule_id: 'todo', line: 50_001 }] })
      // OTLP protobuf decodes in the binary too (its 64-bit times need the Long class bundled).
      const pb = readFileSync(join(import.meta.dir, 'fixtures', 'otlp', 'claude-code-2.1.332-logs.pb'))
      expect((await call(m[1], 'POST', '/v1/logs', new Uint8Array(pb), { 'content-type': 'application/x-protobuf' })).status).toBe(200)
      expect((await call(m[1], 'GET', '/api/llm/usage')).body).toMatchObject([{ provider: 'anthropic', tokens_in: 160, created_at: expect.stringMatching(/^2026-11-28T04:17:/) }])
      const cli = Bun.spawn([join(out, 'muster'), 'state', 'get', 'bin'], {
        cwd: out,
        env: { PATH: '/usr/bin:/bin', HOME: out, SERVICE_SERVER: m[1] },
        stdout: 'pipe',
        stderr: 'pipe',
      })
      expect(await new Response(cli.stdout).text()).toBe('{"ok":true}')
      expect(await cli.exited).toBe(0)
    } finally {
      proc.kill('SIGTERM')
      expect(await proc.exited).toBe(0)
    }
    for (let chunk = await reader.read(); !chunk.done; chunk = await reader.read()) text += new TextDecoder().decode(chunk.value)
    // The log (pretty by default) is one line per entry with time and level, also from the binary.
    for (const line of text.trimEnd().split('\n')) expect(line).toMatch(/^\d{4}-\d\d-\d\dT[\d:.]+Z (DEBUG|INFO |WARN |ERROR) \S/)
    expect(text).toContain('PUT /api/state/bin 200')
    // Workers (WAL checkpointer, rules) load from inside the binary: nothing failed on the way.
    expect(text + (await new Response(proc.stderr).text())).not.toContain('failed')
  }, 60_000)
})
