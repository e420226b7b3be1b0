import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { call, eventually, register, startServer, type Agent, type TestServer } from './helpers'

let s: TestServer
let AGENT: Agent

beforeAll(async () => {
  s = await startServer()
  AGENT = await register(s, 'validator')
})
afterAll(() => s.cleanup())

const putRules = (project: string, rules: unknown) => call(s.api, 'PUT', `/api/validate/${project}/rules`, rules)
const getRules = (project: string, query = '') => call(s.api, 'GET', `/api/validate/${project}/rules${query}`)
const validate = (project: string, body: unknown, headers: Record<string, string> = {}) =>
  call(s.api, 'POST', `/api/validate/${project}`, body, headers)
const ids = (r: { body: { violations: { rule_id: string }[] } }) => r.body.violations.map((v) => v.rule_id)

describe('rules of a project', () => {
  test('none: an empty list', async () => {
    const r = await getRules('empty')
    expect(r.status).toBe(200)
    expect(r.body).toEqual({ project: 'empty', rules: [] })
  })

  test('PUT stores them with defaults as local and accepted; a second PUT replaces them all', async () => {
    const w = await putRules('web', [
      { rule_id: 'no-todo', pattern: 'TODO' },
      { rule_id: 'react-only', pattern: 'class ', severity: 'warning', stack: 'react', applies_to: ['*.tsx'], message: 'use hooks' },
    ])
    expect(w.status).toBe(200)
    expect(w.body).toEqual({ project: 'web', count: 2 })
    const r = await getRules('web')
    expect(r.body.project).toBe('web')
    expect(r.body.rules).toHaveLength(2)
    expect(r.body.rules[0]).toMatchObject({
      project: 'web',
      rule_id: 'no-todo',
      severity: 'error',
      match_type: 'regex',
      pattern: 'TODO',
      message: '',
      applies_to: ['*'],
      stack: '',
      source: 'local',
      status: 'accepted',
    })
    expect(r.body.rules[1]).toMatchObject({ rule_id: 'react-only', severity: 'warning', stack: 'react', applies_to: ['*.tsx'], message: 'use hooks' })
    // the stack filter keeps that stack's rules and the universal ones
    expect((await getRules('web', '?stack=react')).body.rules.map((x: any) => x.rule_id)).toEqual(['no-todo', 'react-only'])
    expect((await getRules('web', '?stack=goth')).body.rules.map((x: any) => x.rule_id)).toEqual(['no-todo'])

    expect((await putRules('web', [{ rule_id: 'only', pattern: 'x' }])).body).toEqual({ project: 'web', count: 1 })
    expect((await getRules('web')).body.rules.map((x: any) => x.rule_id)).toEqual(['only'])
    expect((await putRules('web', [])).body).toEqual({ project: 'web', count: 0 })
    expect((await getRules('web')).body.rules).toEqual([])
  })

  const bad: [string, unknown, string][] = [
    ['missing rule_id', [{ rule_id: 'a', pattern: 'x' }, { pattern: 'y' }], 'rule 1: rule_id is required'],
    ['empty rule_id', [{ rule_id: '', pattern: 'y' }], 'rule 0: rule_id is required'],
    ['missing pattern', [{ rule_id: 'a' }], 'rule 0: pattern is required'],
    ['empty pattern', [{ rule_id: 'a', pattern: '' }], 'rule 0: pattern is required'],
    ['duplicate rule_id', [{ rule_id: 'a', pattern: 'x' }, { rule_id: 'a', pattern: 'y' }], 'rule 1: duplicate rule_id "a" (also rule 0)'],
    ['invalid regex', [{ rule_id: 'a', pattern: 'x' }, { rule_id: 'b', pattern: '([a-z' }], 'rule 1: invalid pattern "([a-z": missing closing ]: `[a-z`'],
    ['lookbehind (not RE2)', [{ rule_id: 'a', pattern: '(?<!x)y' }], 'rule 0: invalid pattern "(?<!x)y"'],
    ['bad severity', [{ rule_id: 'a', pattern: 'x', severity: 'fatal' }], 'rule 0: invalid severity: expected error, warning'],
    ['bad match_type', [{ rule_id: 'a', pattern: 'x', match_type: 'exact' }], 'rule 0: invalid match_type: expected regex, missing, custom'],
    ['not an array', { rule_id: 'a', pattern: 'x' }, 'expected an array of rules'],
  ]
  for (const [name, body, message] of bad)
    test(`PUT 400 ${name}, nothing changed`, async () => {
      await putRules('keep', [{ rule_id: 'kept', pattern: 'k' }])
      const r = await putRules('keep', body)
      expect(r.status).toBe(400)
      expect(r.body.code).toBe(400)
      expect(r.body.error.startsWith(message)).toBe(true)
      expect((await getRules('keep')).body.rules.map((x: any) => x.rule_id)).toEqual(['kept'])
    })

  test('PUT is audited as rules.put, errors included', async () => {
    await putRules('audited', [{ rule_id: 'a', pattern: 'x' }])
    await putRules('audited', [{ rule_id: 'a' }])
    const entries = await eventually(async () => {
      const r = await call(s.api, 'GET', '/api/audit?action=rules.put&limit=200')
      const mine = r.body.filter((e: any) => e.resource === 'validate/audited/rules')
      return mine.length === 2 && mine
    })
    expect(entries.map((e: any) => e.outcome).sort()).toEqual(['error', 'success'])
    expect(entries.find((e: any) => e.outcome === 'success').detail).toBe('1 rules')
  })
})

describe('POST /api/validate/{project}', () => {
  beforeAll(async () => {
    await putRules('_global', [
      { rule_id: 'g-secret', pattern: 'AKIA[0-9A-Z]{16}', message: 'AWS key' },
      { rule_id: 'g-license', pattern: 'SPDX-License-Identifier', match_type: 'missing', severity: 'warning' },
    ])
    await putRules('app', [
      { rule_id: 'no-log', pattern: 'no-console-log', match_type: 'custom' },
      { rule_id: 'no-any', pattern: ':\\s*any\\b', applies_to: ['*.ts', 'src/**/*.tsx'] },
      { rule_id: 'goth-only', pattern: 'templ', stack: 'goth' },
    ])
  })

  test('project rules plus _global, line and match for line rules, count', async () => {
    const r = await validate('app', { content: 'let a: any = 1\r\nconsole.log(a)\nAKIAABCDEFGHIJKLMNOP\ntempl x' })
    expect(r.status).toBe(200)
    expect(r.body.project).toBe('app')
    expect(r.body.count).toBe(r.body.violations.length)
    expect(r.body.violations).toEqual([
      { rule_id: 'goth-only', severity: 'error', message: 'forbidden pattern "templ" found', line: 4, match: 'templ' },
      { rule_id: 'no-any', severity: 'error', message: 'forbidden pattern ":\\s*any\\b" found', line: 1, match: ': any' },
      { rule_id: 'no-log', severity: 'error', message: 'console.log( call found', line: 2, match: 'console.log(' },
      { rule_id: 'g-license', severity: 'warning', message: 'required pattern "SPDX-License-Identifier" not found' },
      { rule_id: 'g-secret', severity: 'error', message: 'AWS key', line: 3, match: 'AKIAABCDEFGHIJKLMNOP' },
    ])
  })

  test('stack and filename filters', async () => {
    const content = 'x: any\ntempl\n// SPDX-License-Identifier: MIT'
    expect(ids(await validate('app', { content, stack: 'react' }))).toEqual(['no-any'])
    expect(ids(await validate('app', { content, stack: 'goth' }))).toEqual(['goth-only', 'no-any'])
    expect(ids(await validate('app', { content, filename: 'lib/x.go' }))).toEqual(['goth-only'])
    expect(ids(await validate('app', { content, filename: 'src/ui/App.tsx', stack: 'react' }))).toEqual(['no-any'])
  })

  test('a passing content: violations [] and count 0', async () => {
    const r = await validate('app', { content: '// SPDX-License-Identifier: MIT\nconst a = 1\n' })
    expect(r.body).toEqual({ project: 'app', violations: [], count: 0 })
    const none = await validate('no-rules-here', { content: 'SPDX-License-Identifier' })
    expect(none.body).toEqual({ project: 'no-rules-here', violations: [], count: 0 })
  })

  test('validating _global runs its rules once', async () => {
    const r = await validate('_global', { content: 'AKIAABCDEFGHIJKLMNOP' })
    expect(ids(r)).toEqual(['g-license', 'g-secret'])
    expect(r.body.count).toBe(2)
  })

  test('the answer is JSON with the usual header, whatever the project name', async () => {
    const project = 'we"ird\\ prøject'
    expect((await putRules(encodeURIComponent(project), [{ rule_id: 'q', pattern: '"\\w+"', message: 'quoted "word"' }])).status).toBe(200)
    const r = await validate(encodeURIComponent(project), { content: 'a "b" c\n"d\u2028"' })
    expect(r.headers.get('content-type')).toBe('application/json;charset=utf-8')
    const violations = [
      { rule_id: 'q', severity: 'error', message: 'quoted "word"', line: 1, match: '"b"' },
      { rule_id: 'g-license', severity: 'warning', message: 'required pattern "SPDX-License-Identifier" not found' },
    ]
    expect(r.text).toBe(JSON.stringify({ project, violations, count: 2 }))
  })

  test('400 without content; nothing counted', async () => {
    for (const body of [{}, { content: 5 }, { filename: 'a.ts' }]) {
      const r = await validate('app', body)
      expect(r.status).toBe(400)
      expect(r.body.code).toBe(400)
      expect(r.body.error).toMatch(/content/)
    }
  })

  test('violations found are counted as the agent metric violations', async () => {
    const as = { 'x-instance-token': AGENT.token }
    expect((await validate('app', { content: 'console.log(1)\nconsole.log(2)' }, as)).body.count).toBe(3)
    expect((await validate('app', { content: 'x: any' }, as)).body.count).toBe(2)
    expect((await validate('app', { content: 'SPDX-License-Identifier' }, as)).body.count).toBe(0)
    const metric = await call(s.api, 'GET', `/api/metrics/agents/${AGENT.id}`)
    expect(metric.body.find((m: any) => m.metric_name === 'violations')?.metric_value).toBe(5)
  })
})

describe('no rule can stall the server', () => {
  test('(a+)+$ against 30 a and ! while other requests are timed', async () => {
    await putRules('_global', [])
    expect((await putRules('redos', [{ rule_id: 'evil', pattern: '(a+)+$' }, { rule_id: 'evil2', pattern: '^(\\w+\\s?)*$' }])).status).toBe(200)
    let validating = true
    const started = performance.now()
    const validation = (async () => {
      const results = []
      for (const content of ['a'.repeat(30) + '!', 'a'.repeat(100_000) + '!', ('word '.repeat(20) + '!\n').repeat(2000)])
        results.push(await validate('redos', { content }))
      validating = false
      return results
    })()
    const latencies: number[] = []
    while (validating || latencies.length < 20) {
      const t0 = performance.now()
      const [h, st] = await Promise.all([fetch(`${s.api}/health`), fetch(`${s.api}/api/state`)])
      expect(h.status).toBe(200)
      expect(st.status).toBe(200)
      await h.arrayBuffer(), await st.arrayBuffer()
      latencies.push(performance.now() - t0)
    }
    const results = await validation
    expect(performance.now() - started).toBeLessThan(1000 * results.length)
    expect(results[0].status).toBe(200)
    // (a+)+$ cannot match "aaa…!" (the line ends in !): a clear answer, no violation
    expect(results[0].body).toEqual({ project: 'redos', violations: [], count: 0 })
    expect(results[1].body.count).toBe(0)
    expect(results[2].body.count).toBe(0)
    expect(Math.max(...latencies)).toBeLessThan(100)
  })

  test('a single evil validation answers within 1 s', async () => {
    const t0 = performance.now()
    const r = await validate('redos', { content: 'a'.repeat(30) + '!' })
    expect(r.status).toBe(200)
    expect(performance.now() - t0).toBeLessThan(1000)
    const m = await validate('redos', { content: 'aaaa' })
    expect(m.body.violations).toEqual([{ rule_id: 'evil', severity: 'error', message: 'forbidden pattern "(a+)+$" found', line: 1, match: 'aaaa' }, { rule_id: 'evil2', severity: 'error', message: 'forbidden pattern "^(\\w+\\s?)*$" found', line: 1, match: 'aaaa' }])
  })

  test('a multi-megabyte file is matched off the request thread: others keep answering, results are the same', async () => {
    await putRules('big', [
      { rule_id: 'todo', pattern: 'TODO' },
      { rule_id: 'license', match_type: 'missing', pattern: 'SPDX-License' },
      { rule_id: 'word', pattern: '\\bword\\d+\\b' },
    ])
    const line = (i: number) => (i % 1000 === 999 ? `// TODO ${i}` : `const word${i % 10} = compute(${i}) + other(${i})`)
    const content = Array.from({ length: 120_000 }, (_, i) => line(i)).join('\n') // ~4 MB
    const small = Array.from({ length: 1000 }, (_, i) => line(i)).join('\n') // ~40 KB, under the inline limit: matched on the request thread
    const pending = validate('big', { content, filename: 'big.ts' })
    const latencies: number[] = []
    let done = false
    void pending.then(() => (done = true))
    while (!done) {
      const t0 = performance.now()
      expect((await fetch(`${s.api}/health`)).status).toBe(200)
      latencies.push(performance.now() - t0)
    }
    const r = await pending
    expect(r.status).toBe(200)
    // 120,001 violations in all; the answer lists the first 10,000 (rule order, then line order).
    expect(r.body.count).toBe(120_001)
    expect(r.body.truncated).toBe(true)
    expect(r.body.violations.length).toBe(10_000)
    const byRule = (v: any[]) => Object.groupBy(v, (x: any) => x.rule_id)
    const found = byRule(r.body.violations)
    expect(found.todo?.length).toBe(120)
    expect(found.todo?.[0]).toEqual({ rule_id: 'todo', severity: 'error', message: 'forbidden pattern "TODO" found', line: 1000, match: 'TODO' })
    expect(found.license).toEqual([{ rule_id: 'license', severity: 'error', message: 'required pattern "SPDX-License" not found' }])
    expect(found.word?.length).toBe(10_000 - 121)
    const inline = await validate('big', { content: small, filename: 'big.ts' })
    expect(inline.body.violations).toEqual(r.body.violations.filter((v: any) => v.line === undefined || v.line <= 1000))
    expect(latencies.length).toBeGreaterThan(1)
    expect(Math.max(...latencies)).toBeLessThan(100)
  })
})
