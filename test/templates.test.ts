import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { call, eventually, startApp, type InProcessServer } from './helpers'

let s: InProcessServer
beforeAll(async () => (s = await startApp()))
afterAll(() => s.cleanup())

const contract = {
  kind: 'contract',
  version: '1.0.0',
  endpoints: { 'GET /users/{id}': { response: { type: 'object', required: ['name'], properties: { name: { type: 'string' } } } } },
}
const rulesData = [
  { rule_id: 'no-todo', pattern: 'TODO', severity: 'warning' },
  { rule_id: 'no-log', pattern: 'no-console-log', match_type: 'custom' },
]
const create = (body: unknown) => call(s.api, 'POST', '/api/templates', body)
const apply = (id: string, project: string) => call(s.api, 'POST', `/api/templates/${id}/apply`, { project })
const get = (id: string) => call(s.api, 'GET', `/api/templates/${id}`)
const list = async (query = '') => (await call(s.api, 'GET', `/api/templates${query}`)).body
const fired = async (project: string, content: string) =>
  (await call(s.api, 'POST', `/api/validate/${project}`, { content })).body.violations.map((v: { rule_id: string }) => v.rule_id)

describe('templates CRUD', () => {
  test('list is [] when none; 404 for an unknown id', async () => {
    expect(await list()).toEqual([])
    const r = await get('nope')
    expect(r.status).toBe(404)
    expect(r.body).toEqual({ error: 'template not found', code: 404 })
  })

  test('create returns the full template at version 1; get returns data; list leaves it out', async () => {
    const r = await create({ id: 'ts-rules', name: 'TypeScript rules', description: 'basics', kind: 'rules', data: rulesData, tags: ['ts', 'lint'] })
    expect(r.status).toBe(200)
    expect(r.body).toMatchObject({ id: 'ts-rules', name: 'TypeScript rules', description: 'basics', kind: 'rules', data: rulesData, tags: ['ts', 'lint'], version: 1 })
    expect(r.body.created_at).toBe(r.body.updated_at)
    expect((await get('ts-rules')).body).toEqual(r.body)
    const [summary] = await list()
    const { data, ...rest } = r.body
    expect(summary).toEqual(rest)
  })

  test('defaults: kind rules, empty data, description and tags', async () => {
    const r = await create({ id: 'bare', name: 'Bare' })
    expect(r.body).toMatchObject({ id: 'bare', name: 'Bare', description: '', kind: 'rules', data: [], tags: [], version: 1 })
  })

  test('409 on a duplicate id; the first stays', async () => {
    const r = await create({ id: 'ts-rules', name: 'Other', kind: 'bundle', data: {} })
    expect(r.status).toBe(409)
    expect(r.body).toEqual({ error: 'template ts-rules already exists', code: 409 })
    expect((await get('ts-rules')).body.name).toBe('TypeScript rules')
  })

  test('400 on bad input; nothing stored', async () => {
    const bad: [unknown, string][] = [
      [{ name: 'x' }, 'id is required'],
      [{ id: 'x' }, 'name is required'],
      [{ id: ' ', name: 'x' }, 'id is required'],
      [{ id: 'x', name: 'x', kind: 'scripts' }, 'invalid kind: expected rules, contracts, bundle'],
      [{ id: 'x', name: 'x', kind: 'rules', data: [{ rule_id: 'a' }] }, 'rule 0: pattern is required'],
      [{ id: 'x', name: 'x', kind: 'rules', data: [{ rule_id: 'a', pattern: '(a)\\1' }] }, 'rule 0: invalid pattern'],
      [{ id: 'x', name: 'x', kind: 'rules', data: { rule_id: 'a' } }, 'expected an array of rules'],
      [{ id: 'x', name: 'x', kind: 'contracts' }, 'data is required for a contracts template'],
      [{ id: 'x', name: 'x', kind: 'contracts', data: { kind: 'contract', endpoints: { 'GET /a': { response: { type: 'nope' } } } } }, 'data: invalid contract'],
      [{ id: 'x', name: 'x', kind: 'bundle', data: [] }, 'data of a bundle must be an object'],
      [{ id: 'x', name: 'x', kind: 'bundle', data: { scripts: {} } }, 'data of a bundle has unknown part "scripts"'],
      [{ id: 'x', name: 'x', kind: 'bundle', data: { rules: [{ pattern: 'x' }] } }, 'data.rules: rule 0: rule_id is required'],
      [{ id: 'x', name: 'x', kind: 'bundle', data: { contracts: { api: { kind: 'spec' } } } }, 'data.contracts.api: invalid contract'],
      [{ id: 'x', name: 'x', kind: 'bundle', data: { specs: { cfg: null } } }, 'data.specs: cfg: the spec is empty'],
      [{ id: 'x', name: 'x', tags: ['a', ''] }, 'invalid tags: a tag is empty'],
    ]
    for (const [body, message] of bad) {
      const r = await create(body)
      expect(r.status).toBe(400)
      expect(r.body.code).toBe(400)
      if (!r.body.error.startsWith(message)) throw new Error(`${JSON.stringify(body)}: ${r.body.error}`)
    }
    expect((await get('x')).status).toBe(404)
  })

  test('filters: kind and tag', async () => {
    await create({ id: 'api-contract', name: 'API', kind: 'contracts', data: contract, tags: ['api', 'ts'] })
    expect((await list('?kind=contracts')).map((t: any) => t.id)).toEqual(['api-contract'])
    expect((await list('?tag=ts')).map((t: any) => t.id)).toEqual(['api-contract', 'ts-rules'])
    expect((await list('?tag=ts&kind=rules')).map((t: any) => t.id)).toEqual(['ts-rules'])
    expect(await list('?tag=none')).toEqual([])
    const bad = await call(s.api, 'GET', '/api/templates?kind=scripts')
    expect(bad.status).toBe(400)
    expect(bad.body.code).toBe(400)
  })

  test('PUT updates the given fields and adds 1 to version; 404 and 400 change nothing', async () => {
    const before = (await get('ts-rules')).body
    const r = await call(s.api, 'PUT', '/api/templates/ts-rules', { description: 'v2', tags: ['ts'] })
    expect(r.status).toBe(200)
    expect(r.body).toMatchObject({ id: 'ts-rules', name: 'TypeScript rules', description: 'v2', kind: 'rules', data: rulesData, tags: ['ts'], version: 2 })
    expect(r.body.created_at).toBe(before.created_at)
    expect(r.body.updated_at >= before.updated_at).toBe(true)
    const again = await call(s.api, 'PUT', '/api/templates/ts-rules', { data: [rulesData[0]] })
    expect(again.body.version).toBe(3)
    expect(again.body.data).toEqual([rulesData[0]])

    const missing = await call(s.api, 'PUT', '/api/templates/nope', { name: 'x' })
    expect(missing.status).toBe(404)
    expect(missing.body).toEqual({ error: 'template not found', code: 404 })
    const bad = await call(s.api, 'PUT', '/api/templates/ts-rules', { data: [{ rule_id: 'x', pattern: '[' }] })
    expect(bad.status).toBe(400)
    expect(bad.body.error).toStartWith('rule 0: invalid pattern "["')
    const changedKind = await call(s.api, 'PUT', '/api/templates/ts-rules', { kind: 'contracts' })
    expect(changedKind.status).toBe(400)
    expect(changedKind.body.error).toBe('data is required for a contracts template')
    expect((await get('ts-rules')).body).toEqual(again.body)
  })

  test('DELETE: {deleted: id}, then 404', async () => {
    await create({ id: 'gone', name: 'Gone' })
    const r = await call(s.api, 'DELETE', '/api/templates/gone')
    expect(r.status).toBe(200)
    expect(r.body).toEqual({ deleted: 'gone' })
    expect((await get('gone')).status).toBe(404)
    const again = await call(s.api, 'DELETE', '/api/templates/gone')
    expect(again.status).toBe(404)
    expect(again.body).toEqual({ error: 'template not found', code: 404 })
  })
})

describe('apply', () => {
  test('rules: imported into the project as external, accepted rules that fire', async () => {
    await create({ id: 'lint', name: 'Lint', kind: 'rules', data: rulesData })
    const r = await apply('lint', 'svc')
    expect(r.status).toBe(200)
    expect(r.body).toMatchObject({ applied: 'lint', project: 'svc', kind: 'rules', rules: 2 })
    const rules = (await call(s.api, 'GET', '/api/validate/svc/rules')).body.rules
    expect(rules.map((x: any) => `${x.rule_id}:${x.source}:${x.status}:${x.severity}`)).toEqual(['no-log:external:accepted:error', 'no-todo:external:accepted:warning'])
    expect(await fired('svc', 'TODO\nconsole.log(1)')).toEqual(['no-log', 'no-todo'])
    // applying again upserts, no duplicates
    await apply('lint', 'svc')
    expect((await call(s.api, 'GET', '/api/validate/svc/rules')).body.rules).toHaveLength(2)
  })

  test('contracts: stored as the spec named after the template, checked as a contract', async () => {
    const r = await apply('api-contract', 'svc')
    expect(r.status).toBe(200)
    expect(r.body).toMatchObject({ applied: 'api-contract', project: 'svc', kind: 'contracts', contracts: ['api-contract'] })
    const spec = await call(s.api, 'GET', '/api/specs/svc/api-contract')
    expect(spec.status).toBe(200)
    expect(spec.body).toEqual(contract)
    const check = await call(s.api, 'POST', '/api/contracts/svc/api-contract/validate', { endpoint: 'GET /users/{id}', direction: 'response', payload: {} })
    expect(check.body.valid).toBe(false)
    // a second apply is a new version of the same spec
    await apply('api-contract', 'svc')
    expect((await call(s.api, 'GET', '/api/specs/svc')).body.specs).toEqual([expect.objectContaining({ name: 'api-contract', version: 2 })])
  })

  test('contracts with plain JSON data: stored as a plain spec', async () => {
    await create({ id: 'style', name: 'Style guide', kind: 'contracts', data: { indent: 2, quotes: 'single' } })
    expect((await apply('style', 'svc')).body).toMatchObject({ kind: 'contracts', specs: ['style'], contracts: [] })
    expect((await call(s.api, 'GET', '/api/specs/svc/style')).body).toEqual({ indent: 2, quotes: 'single' })
  })

  test('bundle: rules, contracts and specs each written into the project', async () => {
    await create({
      id: 'starter',
      name: 'Starter',
      kind: 'bundle',
      data: { rules: [{ rule_id: 'no-fixme', pattern: 'FIXME' }], contracts: { users: contract }, specs: { config: { retries: 3 } } },
      tags: ['starter'],
    })
    const r = await apply('starter', 'newapp')
    expect(r.status).toBe(200)
    expect(r.body).toEqual({ applied: 'starter', project: 'newapp', kind: 'bundle', rules: 1, contracts: ['users'], specs: ['config'] })
    expect(await fired('newapp', 'FIXME')).toEqual(['no-fixme'])
    expect((await call(s.api, 'GET', '/api/contracts/newapp/users')).body).toEqual(contract)
    expect((await call(s.api, 'GET', '/api/specs/newapp/config')).body).toEqual({ retries: 3 })
  })

  test('404 for an unknown template, 400 without a project; nothing written', async () => {
    const r = await apply('nope', 'p404')
    expect(r.status).toBe(404)
    expect(r.body).toEqual({ error: 'template not found', code: 404 })
    for (const body of [{}, { project: '' }]) {
      const bad = await call(s.api, 'POST', '/api/templates/lint/apply', body)
      expect(bad.status).toBe(400)
      expect(bad.body.code).toBe(400)
      expect(bad.body.error).toMatch(/project/)
    }
    expect((await call(s.api, 'GET', '/api/validate/p404/rules')).body.rules).toEqual([])
  })

  test('a write the API refuses is reported with its status: 409 when a plain spec holds the contract name', async () => {
    await call(s.api, 'PUT', '/api/specs/clash/api-contract', { plain: true })
    const r = await apply('api-contract', 'clash')
    expect(r.status).toBe(409)
    expect(r.body.code).toBe(409)
    expect(r.body.error).toStartWith('contract api-contract: spec clash/api-contract exists and is not a contract')
    expect((await call(s.api, 'GET', '/api/specs/clash/api-contract')).body).toEqual({ plain: true })
  })

  test('all or nothing: a part that fails leaves every other part of the template unwritten, with no events', async () => {
    await call(s.api, 'PUT', '/api/specs/half/users', { plain: true }) // the bundle's contract name is taken by a plain spec
    const before = (await call(s.api, 'GET', '/api/events/history?last=1')).body[0]?.id ?? 0
    const r = await apply('starter', 'half') // rules, contract users (refused), spec config
    expect(r.status).toBe(409)
    expect(r.body.error).toStartWith('contract users:')
    expect((await call(s.api, 'GET', '/api/specs/half/config')).status).toBe(404)
    expect((await call(s.api, 'GET', '/api/validate/half/rules')).body.rules).toEqual([])
    const after = (await call(s.api, 'GET', `/api/events/history?after_id=${before}`)).body
    expect(after).toEqual([])
  })

  test('audited: template.create, template.update, template.delete, template.apply', async () => {
    const audit = async (action: string) => (await call(s.api, 'GET', `/api/audit?action=${action}&limit=200`)).body
    await eventually(async () => (await audit('template.apply')).length >= 10)
    const creates = await audit('template.create')
    expect(creates.filter((e: any) => e.outcome === 'success')).toHaveLength(7)
    expect(creates.filter((e: any) => e.outcome === 'error').length).toBeGreaterThanOrEqual(16)
    expect((await audit('template.update')).map((e: any) => e.outcome).sort()).toEqual(['error', 'error', 'error', 'success', 'success'])
    expect((await audit('template.delete')).map((e: any) => e.outcome).sort()).toEqual(['error', 'success'])
    const applies = await audit('template.apply')
    const bundle = applies.find((e: any) => e.resource === 'templates/starter/apply' && e.outcome === 'success')
    expect(bundle.outcome).toBe('success')
    expect(bundle.detail).toBe('starter v1 → newapp: 1 rules, 1 contracts, 1 specs')
    // the contract and spec writes of an apply are audited as themselves too
    expect((await audit('contract.put')).some((e: any) => e.resource === 'contracts/newapp/users')).toBe(true)
  })
})
