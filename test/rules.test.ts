import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { call, eventually, startApp, type InProcessServer } from './helpers'

let s: InProcessServer
beforeAll(async () => (s = await startApp()))
afterAll(() => s.cleanup())

const propose = (body: unknown) => call(s.api, 'POST', '/api/rules/propose', body)
const decide = (project: string, id: string, verdict: 'accept' | 'reject') =>
  call(s.api, 'POST', `/api/rules/${encodeURIComponent(project)}/${encodeURIComponent(id)}/${verdict}`)
const validate = (project: string, content: string) => call(s.api, 'POST', `/api/validate/${project}`, { content })
const firing = async (project: string, content: string) =>
  (await validate(project, content)).body.violations.map((v: { rule_id: string }) => v.rule_id)
const listed = async (query = '') => (await call(s.api, 'GET', `/api/rules${query}`)).body
const auditOf = (action: string, n: number) =>
  eventually(async () => {
    const r = await call(s.api, 'GET', `/api/audit?action=${action}&limit=500`)
    return r.body.length >= n && r.body
  })

describe('proposals', () => {
  test('a proposal is stored learned and proposed, and does not fire', async () => {
    const r = await propose({ project: 'life', rule_id: 'no-eval', pattern: 'eval\\(', message: 'no eval', proposed_by: 'agent-1', context: 'saw eval in PR 12' })
    expect(r.status).toBe(200)
    expect(r.body).toEqual({ project: 'life', rule_id: 'no-eval', status: 'proposed' })
    expect(await firing('life', 'eval(x)')).toEqual([])
    const [rule] = await listed('?status=proposed&project=life')
    expect(rule).toMatchObject({
      project: 'life',
      rule_id: 'no-eval',
      pattern: 'eval\\(',
      severity: 'error',
      match_type: 'regex',
      message: 'no eval',
      applies_to: ['*'],
      stack: '',
      source: 'learned',
      status: 'proposed',
      proposed_by: 'agent-1',
      context: 'saw eval in PR 12',
    })
    // not part of the project's rules (accepted only) until accepted
    expect((await call(s.api, 'GET', '/api/validate/life/rules')).body.rules).toEqual([])
  })

  test('accept: the rule fires; a second accept or a reject is 404', async () => {
    const r = await decide('life', 'no-eval', 'accept')
    expect(r.status).toBe(200)
    expect(r.body).toEqual({ project: 'life', rule_id: 'no-eval', status: 'accepted' })
    expect(await firing('life', 'ok\neval(x)')).toEqual(['no-eval'])
    expect((await validate('life', 'ok\neval(x)')).body.violations[0]).toEqual({ rule_id: 'no-eval', severity: 'error', message: 'no eval', line: 2, match: 'eval(' })
    for (const verdict of ['accept', 'reject'] as const) {
      const again = await decide('life', 'no-eval', verdict)
      expect(again.status).toBe(404)
      expect(again.body).toEqual({ error: 'rule no-eval not found in project life or not proposed', code: 404 })
    }
    expect((await listed('?project=life'))[0].status).toBe('accepted')
  })

  test('reject: stored as rejected, never fires, cannot be accepted afterwards', async () => {
    await propose({ project: 'life', rule_id: 'no-var', pattern: '\\bvar\\b' })
    const r = await decide('life', 'no-var', 'reject')
    expect(r.body).toEqual({ project: 'life', rule_id: 'no-var', status: 'rejected' })
    expect(await firing('life', 'var x')).toEqual([])
    expect((await decide('life', 'no-var', 'accept')).status).toBe(404)
    expect(await firing('life', 'var x')).toEqual([])
    expect((await listed('?status=rejected')).map((x: any) => x.rule_id)).toEqual(['no-var'])
  })

  test('404 for an unknown rule or project', async () => {
    for (const [p, id] of [['life', 'nope'], ['nope', 'no-eval']]) {
      const r = await decide(p, id, 'accept')
      expect(r.status).toBe(404)
      expect(r.body.code).toBe(404)
    }
  })

  test('409 when the rule exists and is not rejected; the stored rule is unchanged', async () => {
    for (const id of ['no-eval']) {
      const r = await propose({ project: 'life', rule_id: id, pattern: 'other' })
      expect(r.status).toBe(409)
      expect(r.body).toEqual({ error: `rule ${id} already exists in project life`, code: 409 })
    }
    await call(s.api, 'PUT', '/api/validate/life2/rules', [{ rule_id: 'local-one', pattern: 'x' }])
    expect((await propose({ project: 'life2', rule_id: 'local-one', pattern: 'y' })).status).toBe(409)
    const rules = await listed('?project=life')
    expect(rules.find((x: any) => x.rule_id === 'no-eval').pattern).toBe('eval\\(')
  })

  test('400 on a bad proposal; nothing stored', async () => {
    const before = await listed()
    const bad: [unknown, string][] = [
      [{ rule_id: 'a', pattern: 'x' }, 'project is required'],
      [{ project: 'p', pattern: 'x' }, 'rule_id is required'],
      [{ project: 'p', rule_id: 'a' }, 'pattern is required'],
      [{ project: 'p', rule_id: 'a', pattern: '(?=x)' }, 'invalid pattern "(?=x)"'],
      [{ project: 'p', rule_id: 'a', pattern: 'x', severity: 'high' }, 'invalid severity: expected error, warning'],
    ]
    for (const [body, message] of bad) {
      const r = await propose(body)
      expect(r.status).toBe(400)
      expect(r.body.code).toBe(400)
      expect(r.body.error.startsWith(message)).toBe(true)
    }
    expect(await listed()).toEqual(before)
  })

  test('GET /api/rules filters; a bad status is 400', async () => {
    await propose({ project: 'other', rule_id: 'waiting', pattern: 'w' })
    expect((await listed('?status=proposed')).map((r: any) => `${r.project}/${r.rule_id}`)).toEqual(['other/waiting'])
    expect((await listed('?project=life')).map((r: any) => r.rule_id)).toEqual(['no-eval', 'no-var'])
    const r = await call(s.api, 'GET', '/api/rules?status=pending')
    expect(r.status).toBe(400)
    expect(r.body).toEqual({ error: 'invalid status: expected accepted, proposed, rejected', code: 400 })
  })

  test('the proposer defaults to nobody without an instance token', async () => {
    await propose({ project: 'other', rule_id: 'anon', pattern: 'a' })
    expect((await listed('?project=other')).find((r: any) => r.rule_id === 'anon').proposed_by).toBe('')
  })

  test('audited: rule.propose, rule.accept, rule.reject with outcomes', async () => {
    const proposals = await auditOf('rule.propose', 8)
    expect(proposals.filter((e: any) => e.outcome === 'success')).toHaveLength(4)
    expect(proposals.find((e: any) => e.outcome === 'success').resource).toBe('rules/propose')
    const accepts = await auditOf('rule.accept', 5)
    expect(accepts.map((e: any) => e.outcome).filter((o: string) => o === 'success')).toHaveLength(1)
    expect(accepts.some((e: any) => e.resource === 'rules/life/no-eval/accept')).toBe(true)
    const rejects = await auditOf('rule.reject', 2)
    expect(rejects.map((e: any) => e.outcome).sort()).toEqual(['error', 'success'])
  })
})

describe('export and import', () => {
  test('export: accepted rules of local and learned by default; source picks', async () => {
    await call(s.api, 'PUT', '/api/validate/exp/rules', [{ rule_id: 'l1', pattern: 'x' }])
    const r = await call(s.api, 'GET', '/api/rules/export')
    expect(r.status).toBe(200)
    const keys = (list: any[]) => list.map((x) => `${x.project}/${x.rule_id}:${x.source}:${x.status}`)
    expect(keys(r.body)).toEqual(['exp/l1:local:accepted', 'life/no-eval:learned:accepted', 'life2/local-one:local:accepted'])
    expect(keys((await call(s.api, 'GET', '/api/rules/export?source=learned')).body)).toEqual(['life/no-eval:learned:accepted'])
    expect((await call(s.api, 'GET', '/api/rules/export?source=external')).body).toEqual([])
    const bad = await call(s.api, 'GET', '/api/rules/export?source=local,mine')
    expect(bad.status).toBe(400)
    expect(bad.body).toEqual({ error: 'invalid source: "mine" (expected local, learned, external)', code: 400 })
  })

  test('import: upsert as external and accepted, fires, round-trips an export', async () => {
    const exported = (await call(s.api, 'GET', '/api/rules/export')).body
    const r = await call(s.api, 'POST', '/api/rules/import', [
      { project: 'imp', rule_id: 'i1', pattern: 'secret', severity: 'warning' },
      { project: 'life', rule_id: 'no-var', pattern: 'var ' },
    ])
    expect(r.status).toBe(200)
    expect(r.body).toEqual({ imported: 2 })
    expect(await firing('imp', 'a secret')).toEqual(['i1'])
    // the rejected proposal is overwritten: now external and accepted
    expect(await firing('life', 'var x')).toEqual(['no-var'])
    expect((await listed('?project=life')).find((x: any) => x.rule_id === 'no-var')).toMatchObject({ source: 'external', status: 'accepted', pattern: 'var ' })
    // upsert: importing the same id again updates it
    await call(s.api, 'POST', '/api/rules/import', [{ project: 'imp', rule_id: 'i1', pattern: 'token' }])
    expect(await firing('imp', 'a secret')).toEqual([])
    expect(await firing('imp', 'a token')).toEqual(['i1'])
    // an export imports back unchanged in substance (source becomes external)
    expect((await call(s.api, 'POST', '/api/rules/import', exported)).body).toEqual({ imported: exported.length })
    const all = (await call(s.api, 'GET', '/api/rules/export?source=external')).body
    expect(all.map((x: any) => `${x.project}/${x.rule_id}`)).toEqual(['exp/l1', 'imp/i1', 'life/no-eval', 'life/no-var', 'life2/local-one'])
  })

  test('import 400: empty array, missing project, bad rule; nothing stored', async () => {
    const before = await listed()
    const bad: [unknown, string][] = [
      [[], 'rules array is empty'],
      [[{ rule_id: 'a', pattern: 'x' }], 'rule 0: project is required'],
      [[{ project: 'n', rule_id: 'a', pattern: 'x' }, { project: 'n', rule_id: 'b', pattern: '(' }], 'rule 1: invalid pattern "("'],
      [[{ project: 'n', rule_id: 'a', pattern: 'x' }, { project: 'n', rule_id: 'a', pattern: 'y' }], 'rule 1: duplicate rule_id "a"'],
      [{ project: 'n' }, 'expected an array of rules'],
    ]
    for (const [body, message] of bad) {
      const r = await call(s.api, 'POST', '/api/rules/import', body)
      expect(r.status).toBe(400)
      expect(r.body.code).toBe(400)
      expect(r.body.error.startsWith(message)).toBe(true)
    }
    expect(await listed()).toEqual(before)
    const audit = await auditOf('rules.import', 8)
    expect(audit.filter((e: any) => e.outcome === 'error')).toHaveLength(5)
  })
})

async function ruleEvents(): Promise<{ topic: string; data: any; source: string }[]> {
  return (await call(s.api, 'GET', '/api/events/history?topic=rule.*&source=rules&last=100')).body.reverse()
}

describe('events', () => {
  test('rule.proposed, rule.accepted, rule.rejected with source rules', async () => {
    await propose({ project: 'ev', rule_id: 'a', pattern: 'a' })
    await propose({ project: 'ev', rule_id: 'b', pattern: 'b' })
    await decide('ev', 'a', 'accept')
    await decide('ev', 'b', 'reject')
    await decide('ev', 'b', 'reject') // 404: no event
    const mine = (await eventually(async () => {
      const list = (await ruleEvents()).filter((e) => e.data.project === 'ev')
      return list.length >= 4 ? list : null
    }))!
    expect(mine.map((e) => `${e.topic} ${e.data.rule_id} ${e.data.status}`)).toEqual([
      'rule.proposed a proposed',
      'rule.proposed b proposed',
      'rule.accepted a accepted',
      'rule.rejected b rejected',
    ])
    expect(mine.every((e) => e.source === 'rules')).toBe(true)
    expect(mine[0].data).toMatchObject({ project: 'ev', rule_id: 'a', pattern: 'a', source: 'learned' })
  })
})

describe('a rejected rule proposed again', () => {
  test('returns to proposed (learned) with the new proposal; accepted or local ids still 409', async () => {
    await propose({ project: 'again', rule_id: 'no-var', pattern: 'var', proposed_by: 'agent-1', context: 'first try' })
    await decide('again', 'no-var', 'reject')
    const [rejected] = await listed('?project=again')
    expect(rejected.status).toBe('rejected')
    const r = await propose({ project: 'again', rule_id: 'no-var', pattern: '\\bvar\\b', proposed_by: 'agent-2', context: 'second try' })
    expect(r.status).toBe(200)
    expect(r.body).toEqual({ project: 'again', rule_id: 'no-var', status: 'proposed' })
    const [rule] = await listed('?project=again')
    expect(rule).toMatchObject({ pattern: '\\bvar\\b', status: 'proposed', source: 'learned', proposed_by: 'agent-2', context: 'second try', created_at: rejected.created_at })
    expect((await propose({ project: 'again', rule_id: 'no-var', pattern: 'x' })).status).toBe(409)
    expect((await decide('again', 'no-var', 'accept')).status).toBe(200)
    expect(await firing('again', 'var x')).toEqual(['no-var'])
    expect((await propose({ project: 'again', rule_id: 'no-var', pattern: 'x' })).status).toBe(409)
  })
})

describe('one rule: PUT and DELETE /api/rules/{project}/{rule_id}', () => {
  const put = (project: string, id: string, body: unknown) => call(s.api, 'PUT', `/api/rules/${project}/${encodeURIComponent(id)}`, body)
  const sources = async (project: string) =>
    Object.fromEntries((await listed(`?project=${project}`)).map((r: any) => [r.rule_id, `${r.source}/${r.status}`]))

  test('a new rule is local and accepted and fires; the other rules keep their source', async () => {
    await call(s.api, 'POST', '/api/rules/import', [{ project: 'one', rule_id: 'ext', pattern: 'EXT' }])
    await propose({ project: 'one', rule_id: 'learned', pattern: 'LEARNED', proposed_by: 'agent-9', context: 'why' })
    await decide('one', 'learned', 'accept')
    await propose({ project: 'one', rule_id: 'waiting', pattern: 'WAIT' })
    const r = await put('one', 'mine', { pattern: 'MINE', severity: 'warning', applies_to: ['*.ts'] })
    expect(r.status).toBe(200)
    expect(r.body).toMatchObject({ project: 'one', rule_id: 'mine', pattern: 'MINE', severity: 'warning', match_type: 'regex', applies_to: ['*.ts'], source: 'local', status: 'accepted' })
    expect(await sources('one')).toEqual({ ext: 'external/accepted', learned: 'learned/accepted', mine: 'local/accepted', waiting: 'learned/proposed' })
    expect((await call(s.api, 'GET', '/api/rules/export?source=learned')).body.map((x: any) => `${x.project}/${x.rule_id}`)).toContain('one/learned')
    expect((await call(s.api, 'POST', '/api/validate/one', { content: 'MINE', filename: 'a.ts' })).body.violations.map((v: any) => v.rule_id)).toEqual(['mine'])
  })

  test('PUT on an existing rule keeps its source, status, proposer and context unless the body names them', async () => {
    const before = (await listed('?project=one')).find((x: any) => x.rule_id === 'learned')
    const r = await put('one', 'learned', { rule_id: 'learned', pattern: 'LEARNED2', message: 'edited' })
    expect(r.status).toBe(200)
    expect(r.body).toMatchObject({ pattern: 'LEARNED2', message: 'edited', source: 'learned', status: 'accepted', proposed_by: 'agent-9', context: 'why', created_at: before.created_at })
    const waiting = await put('one', 'waiting', { pattern: 'WAIT2' })
    expect(waiting.body).toMatchObject({ source: 'learned', status: 'proposed', pattern: 'WAIT2' })
    const moved = await put('one', 'ext', { pattern: 'EXT', source: 'local' })
    expect(moved.body).toMatchObject({ source: 'local', status: 'accepted' })
    const rejected = await put('one', 'waiting', { pattern: 'WAIT2', status: 'rejected' })
    expect(rejected.body.status).toBe('rejected')
    expect(await sources('one')).toEqual({ ext: 'local/accepted', learned: 'learned/accepted', mine: 'local/accepted', waiting: 'learned/rejected' })
  })

  test('400 on a bad rule, a mismatched rule_id or a bad source/status; nothing changes', async () => {
    const before = await listed('?project=one')
    const bad: [unknown, string][] = [
      [{ pattern: '(?=x)' }, 'invalid pattern "(?=x)"'],
      [{ pattern: '' }, 'pattern is required'],
      [{}, 'pattern is required'],
      [{ pattern: 'x', severity: 'high' }, 'invalid severity'],
      [{ pattern: 'x', rule_id: 'other' }, 'rule_id "other" does not match the path (mine)'],
      [{ pattern: 'x', source: 'remote' }, 'invalid source: expected local, learned, external'],
      [{ pattern: 'x', status: 'maybe' }, 'invalid status: expected accepted, proposed, rejected'],
    ]
    for (const [body, message] of bad) {
      const r = await put('one', 'mine', body)
      expect(r.status).toBe(400)
      expect(r.body.code).toBe(400)
      expect(r.body.error).toStartWith(message)
    }
    expect(await listed('?project=one')).toEqual(before)
  })

  test('DELETE removes one rule of any status, leaving the others; 404 when missing', async () => {
    const r = await call(s.api, 'DELETE', '/api/rules/one/waiting')
    expect(r.status).toBe(200)
    expect(r.body).toEqual({ deleted: 'one/waiting' })
    expect(await sources('one')).toEqual({ ext: 'local/accepted', learned: 'learned/accepted', mine: 'local/accepted' })
    const again = await call(s.api, 'DELETE', '/api/rules/one/waiting')
    expect(again.status).toBe(404)
    expect(again.body).toEqual({ error: 'rule waiting not found in project one', code: 404 })
  })

  test('events rule.created, rule.updated, rule.deleted and audit rule.put, rule.delete', async () => {
    await put('ev1', 'a', { pattern: 'a' })
    await put('ev1', 'a', { pattern: 'b' })
    await call(s.api, 'DELETE', '/api/rules/ev1/a')
    const mine = (await eventually(async () => {
      const list = (await ruleEvents()).filter((e) => e.data.project === 'ev1')
      return list.length >= 3 ? list : null
    }))!
    expect(mine.map((e) => `${e.topic} ${e.data.pattern}`)).toEqual(['rule.created a', 'rule.updated b', 'rule.deleted b'])
    expect(mine.every((e) => e.source === 'rules')).toBe(true)
    const puts = await auditOf('rule.put', 1)
    expect(puts.find((e: any) => e.resource === 'rules/ev1/a')).toMatchObject({ outcome: 'success' })
    const deletes = await auditOf('rule.delete', 1)
    expect(deletes.find((e: any) => e.resource === 'rules/ev1/a')).toMatchObject({ outcome: 'success', detail: 'local, accepted' })
  })

  test('the list PUT still replaces every accepted rule of the project as local', async () => {
    await call(s.api, 'PUT', '/api/validate/one/rules', [{ rule_id: 'only', pattern: 'O' }])
    expect(await sources('one')).toEqual({ only: 'local/accepted' })
  })
})
