// apply_patch headers read as Codex's own parser reads them: it trims each line before it
// looks for a header, so an indented `*** Update File:` is applied by Codex and must be
// checked by Muster. Pure functions: no server.
import { describe, expect, test } from 'bun:test'
import { isAbsolute, relative, resolve } from 'node:path'
import { editedFiles, namedFiles as named, underRoot } from '../services/hooks/paths'
import { claudeToolCall } from '../services/hooks/agents/claude-shape'

/** The files a call of Codex's `tool` names, read as its adapter reads the call. */
const namedFiles = (tool: string, input: unknown) => named(claudeToolCall(tool, input))

const patch = (body: string) => ({ command: `*** Begin Patch\n${body}\n*** End Patch\n` })

describe('apply_patch file headers', () => {
  test('each header kind, flush left', () => {
    const input = patch('*** Add File: a.ts\n+x\n*** Update File: b.ts\n@@\n-a\n+b\n*** Delete File: c.ts\n*** Update File: d.ts\n*** Move to: e.ts\n@@\n-a\n+b')
    expect(namedFiles('apply_patch', input)).toEqual(['a.ts', 'b.ts', 'c.ts', 'd.ts', 'e.ts'])
  })

  test('indented headers (spaces or tabs) and trailing blanks: read as Codex reads them', () => {
    const input = patch('  *** Update File: src/auth/login.ts\n@@\n-a\n+b\n\t*** Add File: docs/x.md  \n+y\n    *** Update File: src/a.ts\n   *** Move to: src/b.ts\n@@\n-a\n+b')
    expect(namedFiles('apply_patch', input)).toEqual(['src/auth/login.ts', 'docs/x.md', 'src/a.ts', 'src/b.ts'])
  })

  test('a header-looking line inside added content is content, not a header', () => {
    const input = patch('*** Add File: notes.md\n+*** Update File: not-a-file.ts\n+  *** Delete File: nor-this.ts')
    expect(namedFiles('apply_patch', input)).toEqual(['notes.md'])
  })

  test('the patch in whichever string field Codex sends it (custom tool: input; function tool: command)', () => {
    expect(namedFiles('apply_patch', { input: '*** Begin Patch\n *** Update File: a.ts\n*** End Patch' })).toEqual(['a.ts'])
    expect(namedFiles('apply_patch', { command: ['apply_patch', '*** Begin Patch\n*** Add File: b.ts\n+x\n*** End Patch'] })).toEqual(['b.ts'])
  })

  test('indented headers made relative to the root; outside the root not checked', () => {
    const input = patch('  *** Update File: /repo/src/a.ts\n  *** Update File: ../../other/b.ts\n *** Add File: c.ts')
    expect(editedFiles(claudeToolCall('apply_patch', input), '/repo', '/repo/pkg').files).toEqual(['src/a.ts', 'pkg/c.ts'])
  })
})

describe('a file under the root', () => {
  // The definition: resolve both, then relative (the quick path for normal absolute names must agree).
  const reference = (root: string, cwd: string, file: string) => {
    const abs = isAbsolute(file) ? resolve(file) : resolve(cwd || root, file)
    const rel = relative(resolve(root), abs)
    if (rel === '' || rel === '..' || rel.startsWith('../') || isAbsolute(rel)) return null
    return rel.split('\\').join('/')
  }

  test('as resolve and relative answer, for names normal or not, inside, outside and beside the root', () => {
    let x = 11
    const rand = (n: number) => ((x ^= x << 13), (x ^= x >>> 17), (x ^= x << 5), Math.floor(((x >>> 0) / 2 ** 32) * n))
    const parts = ['repo', 'repo2', 'rep', 'src', 'a.ts', '.', '..', '', 'x\\y', '.env']
    const name = (abs: boolean) => (abs ? '/' : '') + Array.from({ length: rand(5) }, () => parts[rand(parts.length)]).join('/') + (rand(8) ? '' : '/')
    let inside = 0
    for (let i = 0; i < 20_000; i++) {
      const root = rand(4) ? '/repo' : name(true)
      const file = rand(6) ? `${root}/${name(false)}` : name(rand(4) > 0)
      const expected = reference(root, '/repo/src', file)
      expect([root, file, underRoot(root, '/repo/src', file)]).toEqual([root, file, expected])
      if (expected !== null) inside++
    }
    expect(inside).toBeGreaterThan(5000)
    expect(underRoot('/repo', '', '/repo/src/a.ts')).toBe('src/a.ts')
    expect(underRoot('/repo', '', '/repo2/a.ts')).toBeNull()
    expect(underRoot('/repo', '', '/repo')).toBeNull()
    expect(underRoot('/', '', '/etc/x')).toBe('etc/x')
  })
})
