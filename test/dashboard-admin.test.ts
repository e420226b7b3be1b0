// The dashboard as an admin console, driven in Debian's Chromium: every write the
// pages offer (rules, state, instances, webhooks, templates, contracts,
// compliance, backup), instance names, audit paging, the command palette and the
// token shared across tabs. Each page is checked at 1400×1000 and 390×844 with a
// screenshot of each, and no table may leave its panel.
//
// One server (with an access token) and one browser for the file; each test
// opens its own tab and closes it.
import { describe, expect, setDefaultTimeout, test } from 'bun:test'
import type { Page } from 'playwright-core'
import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { eventually, register, tempDir } from './helpers'
import { NARROW, WIDE, browserSuite, openPage, overflowing, settled } from './browser'

const TOKEN = 'admin-test-token'
const AUTH = { authorization: `Bearer ${TOKEN}` }

setDefaultTimeout(30_000)

const { s, api, browser, shot } = await browserSuite('admin', TOKEN)

/** A new tab; `null` opens it without a token of its own. */
const open = (path: string, token: string | null = TOKEN) => openPage(browser(), s.dashboard + path, { token: token ?? undefined })

/** Screenshots at both sizes with nothing overflowing, ending back at the wide size. */
async function bothSizes(page: Page, name: string) {
  await settled(page)
  expect(await overflowing(page)).toEqual([])
  await shot(page, `${name}-1400`)
  await page.setViewportSize(NARROW)
  await settled(page)
  expect(await overflowing(page)).toEqual([])
  await shot(page, `${name}-390`)
  await page.setViewportSize(WIDE)
}

const rulesOf = async (project: string) =>
  Object.fromEntries((await api('GET', `/api/rules?project=${project}`)).body.map((r: any) => [r.rule_id, `${r.source}/${r.status}`]))

describe('token', () => {
  test('entered in one tab, a new tab of the same origin uses it without asking; forgetting it forgets it in every tab', async () => {
    await api('PUT', '/api/state/tabs/check', { ok: true })
    const first = await open('/', null)
    const dialog = first.page.locator('dialog#token-dialog[open]')
    await dialog.locator('input').fill(TOKEN)
    await dialog.locator('button[type=submit]').click()
    await first.page.locator('#key-list button', { hasText: 'tabs/check' }).waitFor()

    const second = await open('/admin#instances', null)
    await second.page.locator('#admin-instances .state-box.empty, #instances-table').first().waitFor()
    expect(await second.page.locator('dialog#token-dialog').count()).toBe(0)
    expect(await second.page.evaluate(() => sessionStorage.getItem('muster.token'))).toBe(TOKEN)
    // Not in the URL, not on disk past the session.
    expect(second.page.url()).not.toContain(TOKEN)
    expect(await second.page.evaluate(() => Object.keys(localStorage))).toEqual([])

    await second.page.getByRole('button', { name: 'Forget token' }).click()
    await eventually(async () => (await first.page.evaluate(() => sessionStorage.getItem('muster.token'))) === null)
    // Both tabs now meet 401s: each asks, and no tab has a token to hand over.
    await first.page.locator('dialog#token-dialog[open]').waitFor()
    await shot(first.page, 'token-forgotten-everywhere', false)
    expect([...first.problems, ...second.problems]).toEqual([])
    await second.page.close()
    await first.page.close()
  })
})

describe('rules keep their provenance', () => {
  test('adding, editing and deleting a rule in the UI leaves the other rules\u2019 source alone; rejected rules can be reopened', async () => {
    const proposer = await register(s, { name: 'rule-scout', intent: 'rule-scout at work' }, AUTH)
    await api('POST', '/api/rules/import', [{ project: 'prov', rule_id: 'ext-one', pattern: 'EXT' }])
    await api('POST', '/api/rules/propose', { project: 'prov', rule_id: 'learned-one', pattern: 'LEARNED', proposed_by: proposer.id })
    await api('POST', '/api/rules/prov/learned-one/accept')
    await api('POST', '/api/rules/propose', { project: 'prov', rule_id: 'dropped', pattern: 'DROP', proposed_by: proposer.id, context: 'too noisy?' })
    await api('POST', '/api/rules/prov/dropped/reject')
    const learnedBefore = (await api('GET', '/api/rules/export?source=learned')).body

    const { page, problems } = await open('/rules#project=prov')
    await page.locator('#rules-table tr[data-rule="ext-one"]').waitFor()
    await page.getByRole('button', { name: 'Add rule' }).click()
    const form = page.locator('#rule-dialog form')
    await form.locator('[name=rule_id]').fill('mine')
    await form.locator('[name=pattern]').fill('MINE')
    await form.getByRole('button', { name: 'Save' }).click()
    await page.locator('#rules-table tr[data-rule="mine"]').waitFor()
    expect(await rulesOf('prov')).toEqual({ 'ext-one': 'external/accepted', 'learned-one': 'learned/accepted', mine: 'local/accepted', dropped: 'learned/rejected' })
    expect((await api('GET', '/api/rules/export?source=learned')).body).toEqual(learnedBefore)

    // An edit of a learned rule keeps it learned.
    await page.locator('#rules-table tr[data-rule="learned-one"]').getByRole('button', { name: 'Edit' }).click()
    await form.getByText('This rule stays learned').waitFor()
    await form.locator('[name=severity]').selectOption('warning')
    await form.getByRole('button', { name: 'Save' }).click()
    await page.locator('#rules-table tr[data-rule="learned-one"] .badge', { hasText: 'warning' }).waitFor()
    expect((await api('GET', '/api/rules?project=prov')).body.find((r: any) => r.rule_id === 'learned-one')).toMatchObject({ source: 'learned', severity: 'warning', proposed_by: proposer.id })

    // A bad pattern is the API's 400, shown in the dialog; nothing changes.
    await page.getByRole('button', { name: 'Add rule' }).click()
    await form.locator('[name=rule_id]').fill('bad')
    await form.locator('[name=pattern]').fill('(?=x)')
    await form.getByRole('button', { name: 'Save' }).click()
    await form.locator('.inline-error', { hasText: 'invalid pattern' }).waitFor()
    await form.getByRole('button', { name: 'Cancel' }).click()

    // The rejected rule is listed with its proposer's name (id on hover), and reopens.
    const rejected = page.locator('#rejected-table tr[data-rule="dropped"]')
    const by = rejected.locator('.who')
    expect(await by.textContent()).toBe('rule-scout')
    expect(await by.getAttribute('title')).toContain(proposer.id)
    await bothSizes(page, 'rules-provenance')
    await rejected.getByRole('button', { name: 'Reopen' }).click()
    const card = page.locator('.proposal[data-project="prov"][data-rule="dropped"]')
    await card.waitFor()
    expect(await card.innerText()).toContain('by rule-scout')
    expect((await rulesOf('prov')).dropped).toBe('learned/proposed')
    await page.locator('#rejected .state-box.empty').waitFor()

    await page.locator('#rules-table tr[data-rule="mine"]').getByRole('button', { name: 'Delete' }).click()
    await page.locator('#rules-table tr[data-rule="mine"]').getByRole('button', { name: 'Confirm delete' }).click()
    await page.locator('#rules-table tr[data-rule="mine"]').waitFor({ state: 'detached' })
    expect(await rulesOf('prov')).toEqual({ 'ext-one': 'external/accepted', 'learned-one': 'learned/accepted', dropped: 'learned/proposed' })

    // Renaming writes the new id with the old source, then deletes the old id.
    await page.locator('#rules-table tr[data-rule="ext-one"]').getByRole('button', { name: 'Edit' }).click()
    await form.locator('[name=rule_id]').fill('ext-renamed')
    await form.getByRole('button', { name: 'Save' }).click()
    await page.locator('#rules-table tr[data-rule="ext-renamed"][data-source="external"]').waitFor()
    expect(await rulesOf('prov')).toEqual({ 'ext-renamed': 'external/accepted', 'learned-one': 'learned/accepted', dropped: 'learned/proposed' })
    expect(problems).toEqual([])
    await page.close()
  })
})

describe('state', () => {
  test('edit, refuse bad JSON, roll back, create and delete a key from the viewer', async () => {
    await api('PUT', '/api/state/adm/conf', { a: 1 })
    await api('PUT', '/api/state/adm/conf', { a: 2 })
    const { page, problems } = await open('/#key=adm/conf')
    const viewer = page.locator('#viewer')
    await viewer.locator('pre.value').getByText('"a": 2').waitFor()

    await viewer.getByRole('button', { name: 'Edit value' }).click()
    const editor = viewer.locator('textarea.value-editor')
    await editor.fill('{"a": 3, "note": "from the UI"}')
    await shot(page, 'state-edit-1400')
    await viewer.getByRole('button', { name: 'Save as v3' }).click()
    await viewer.locator('pre.value').getByText('"note": "from the UI"').waitFor()
    expect((await api('GET', '/api/state/adm/conf')).body).toEqual({ a: 3, note: 'from the UI' })

    await viewer.getByRole('button', { name: 'Edit value' }).click()
    await editor.fill('{oops')
    await viewer.getByRole('button', { name: 'Save as v4' }).click()
    await viewer.locator('.inline-error', { hasText: 'not valid JSON' }).waitFor()
    await viewer.getByRole('button', { name: 'Cancel' }).click()
    expect((await api('GET', '/api/state/adm/conf')).headers.get('x-service-version')).toBe('3')

    await viewer.getByRole('tab', { name: 'History' }).click()
    await viewer.getByRole('button', { name: 'Roll back to v1' }).click()
    await viewer.locator('.facts b', { hasText: /^4$/ }).waitFor()
    expect((await api('GET', '/api/state/adm/conf')).body).toEqual({ a: 1 })
    await bothSizes(page, 'state-history')

    await page.getByRole('button', { name: 'New key' }).click()
    await viewer.locator('input[name=key]').fill('adm/new one')
    await editor.fill('{"n": 1}')
    await viewer.getByRole('button', { name: 'Create' }).click()
    await page.locator('#key-list button[aria-current=true]', { hasText: 'adm/new one' }).waitFor()
    expect((await api('GET', '/api/state/adm/new%20one')).body).toEqual({ n: 1 })

    await viewer.getByRole('button', { name: 'Delete key' }).click()
    await viewer.getByRole('button', { name: 'Confirm delete' }).click()
    await page.locator('#key-list button', { hasText: 'adm/new one' }).waitFor({ state: 'detached' })
    expect((await api('GET', '/api/state/adm/new%20one')).status).toBe(404)
    expect(problems).toEqual([])
    await page.close()
  })
})

describe('audit on the overview', () => {
  test('actors by instance name (id on hover), pages of 50 with Older / Newer, no column out of view at 1400 px', async () => {
    const agent = await register(s, { name: 'audit-bot-with-a-rather-long-name', intent: 'audit-bot-with-a-rather-long-name at work' }, AUTH)
    await api('PUT', `/api/instances/${agent.id}/intent`, { intent: 'auditing' }) // resource instances/{id}/intent
    for (let i = 0; i < 55; i++) await api('PUT', `/api/state/audit/k${i % 3}`, { i }, { 'x-instance-token': agent.token })
    const { page, problems } = await open('/')
    const first = page.locator('#audit tbody tr').first()
    await first.locator('.who', { hasText: 'audit-bot-with-a-rather-long-name' }).waitFor()
    expect(await first.locator('.who').getAttribute('title')).toContain(agent.id)
    const outcome = page.locator('#audit th', { hasText: 'Outcome' })
    const box = (await page.locator('#audit').boundingBox())!
    const th = (await outcome.boundingBox())!
    expect(th.x + th.width).toBeLessThanOrEqual(box.x + box.width + 0.5)
    await bothSizes(page, 'overview-audit')

    const newest = await first.getAttribute('data-id')
    await page.getByRole('button', { name: 'Older →' }).click()
    await page.locator('#audit .meta', { hasText: 'entries 51–' }).waitFor()
    const older = await page.locator('#audit tbody tr').first().getAttribute('data-id')
    expect(Number(older)).toBe(Number(newest) - 50)
    // An instance id inside a resource path reads as the name too.
    const intent = page.locator('#audit tbody tr', { hasText: 'instance.intent' })
    expect(await intent.locator('.sub .who').textContent()).toBe('audit-bot-with-a-rather-long-name')
    expect(await intent.locator('.sub').first().innerText()).toBe('instances/audit-bot-with-a-rather-long-name/intent')
    await shot(page, 'overview-audit-older-1400')
    await page.getByRole('button', { name: '← Newer' }).click()
    await page.locator('#audit .meta', { hasText: 'latest 50' }).waitFor()
    expect(problems).toEqual([])
    await page.close()
  })
})

describe('admin: instances', () => {
  test('names with their metrics, one agent\u2019s hourly metrics, deregister', async () => {
    const busy = await register(s, { name: 'metrics-bot', workspace: '/home/ana/shop', intent: 'metrics-bot at work' }, AUTH)
    const idle = await register(s, { name: 'leaving-bot', intent: 'leaving-bot at work' }, AUTH)
    for (let i = 0; i < 3; i++) await api('GET', '/api/state', undefined, { 'x-instance-token': busy.token })
    const { page, problems } = await open('/admin#instances')
    const row = page.locator(`#instances-table tr[data-id="${busy.id}"]`)
    await row.waitFor()
    await eventually(async () => /\b[3-9] REST/.test(await row.innerText()))
    await row.getByRole('button', { name: 'Metrics' }).click()
    await page.locator('#agent-metrics-table tbody tr').first().waitFor()
    expect(await page.locator('#agent-metrics-table').innerText()).toMatch(/rest calls/i)
    await bothSizes(page, 'admin-instances')

    const leaving = page.locator(`#instances-table tr[data-id="${idle.id}"]`)
    await leaving.getByRole('button', { name: 'Deregister' }).click()
    await leaving.getByRole('button', { name: 'Confirm deregister' }).click()
    await leaving.waitFor({ state: 'detached' })
    expect((await api('GET', `/api/instances/${idle.id}`)).status).toBe(404)
    await page.getByText('Deregistered leaving-bot.').waitFor()
    expect(problems).toEqual([])
    await page.close()
  })
})

describe('admin: webhooks', () => {
  test('create, test (a real delivery), disable, enable and delete', async () => {
    const got: { topic: string; data: unknown }[] = []
    const receiver = Bun.serve({ port: 0, hostname: '127.0.0.1', fetch: async (req) => (got.push(await req.json()), new Response('ok')) })
    try {
      const { page, problems } = await open('/admin#webhooks')
      await page.locator('#admin-webhooks .state-box.empty').waitFor()
      const form = page.locator('#webhook-form')
      await form.locator('[name=id]').fill('ui-hook')
      await form.locator('[name=url]').fill(`http://127.0.0.1:${receiver.port}/hook`)
      await form.locator('[name=patterns]').fill('state.*, rule.*')
      await form.getByRole('button', { name: 'Create webhook' }).click()
      const row = page.locator('#webhooks-table tr[data-id="ui-hook"]')
      await row.waitFor()
      expect((await api('GET', '/api/webhooks/ui-hook')).body).toMatchObject({ patterns: ['state.*', 'rule.*'], active: true })

      await row.getByRole('button', { name: 'Test' }).click()
      await row.getByText('Test delivery answered 2xx.').waitFor()
      expect(got.map((e) => e.topic)).toEqual(['webhook.test'])
      // A matching event is delivered and listed under Deliveries with the test.
      const event = (await api('POST', '/api/events/publish', { topic: 'rule.tested', data: { n: 1 } })).body
      await eventually(() => got.length === 2)
      await row.getByRole('button', { name: 'Deliveries' }).click()
      const deliveries = page.locator('#deliveries-table tbody tr')
      await eventually(async () => (await deliveries.count()) === 2)
      expect(await deliveries.nth(0).innerText()).toMatch(new RegExp(`rule\\.tested\\s+#${event.id}[\\s\\S]*200`))
      expect(await deliveries.nth(1).innerText()).toMatch(/webhook\.test\s+test[\s\S]*200/)
      await bothSizes(page, 'admin-webhooks')

      await row.getByRole('button', { name: 'Disable' }).click()
      await row.locator('.badge', { hasText: 'disabled' }).waitFor()
      expect((await api('GET', '/api/webhooks/ui-hook')).body.active).toBe(false)
      await row.getByRole('button', { name: 'Enable' }).click()
      await row.locator('.badge', { hasText: 'active' }).waitFor()

      await row.getByRole('button', { name: 'Delete' }).click()
      await row.getByRole('button', { name: 'Confirm delete' }).click()
      await page.locator('#admin-webhooks .state-box.empty').waitFor()
      expect((await api('GET', '/api/webhooks/ui-hook')).status).toBe(404)
      expect(problems).toEqual([])
      await page.close()
    } finally {
      receiver.stop(true)
    }
  })
})

describe('admin: templates', () => {
  test('create, view, edit and apply a template to a project', async () => {
    const { page, problems } = await open('/admin#templates')
    await page.locator('#admin-templates .state-box.empty').waitFor()
    await page.getByRole('button', { name: 'New template' }).click()
    const form = page.locator('#template-form')
    await form.locator('[name=id]').fill('lint-basics')
    await form.locator('[name=name]').fill('Lint basics')
    await form.locator('[name=tags]').fill('lint, starter')
    await form.locator('[name=data]').fill('[{"rule_id": "no-todo", "pattern": "TODO", "severity": "warning"}]')
    await form.getByRole('button', { name: 'Create template' }).click()
    const detail = page.locator('#template-detail')
    await detail.locator('pre.value').getByText('"rule_id": "no-todo"').waitFor()

    await detail.getByRole('button', { name: 'Edit' }).click()
    await form.locator('[name=name]').fill('Lint basics, edited')
    await form.locator('[name=data]').fill('not json')
    await form.getByRole('button', { name: 'Save as v2' }).click()
    await form.locator('.inline-error', { hasText: 'not valid JSON' }).waitFor()
    await form.locator('[name=data]').fill('[{"rule_id": "no-todo", "pattern": "TODO"}, {"rule_id": "no-fixme", "pattern": "FIXME"}]')
    await form.getByRole('button', { name: 'Save as v2' }).click()
    await detail.locator('h3', { hasText: 'Lint basics, edited' }).waitFor()
    expect((await api('GET', '/api/templates/lint-basics')).body).toMatchObject({ version: 2, tags: ['lint', 'starter'] })

    await detail.locator('input[name=project]').fill('tplproj')
    await detail.getByRole('button', { name: 'Apply' }).click()
    await detail.getByText('Applied lint-basics to tplproj: 2 rules.').waitFor()
    expect(await rulesOf('tplproj')).toEqual({ 'no-fixme': 'external/accepted', 'no-todo': 'external/accepted' })
    await bothSizes(page, 'admin-templates')
    await page.emulateMedia({ colorScheme: 'dark' })
    await shot(page, 'admin-templates-dark-1400')
    await page.emulateMedia({ colorScheme: 'light' })
    expect(problems).toEqual([])
    await page.close()
  })
})

describe('admin: contracts and compliance', () => {
  test('view a contract, validate a payload, run a live test; run compliance and read its history by instance name', async () => {
    const service = Bun.serve({ port: 0, hostname: '127.0.0.1', fetch: () => Response.json([{ id: 1, name: 'Ada' }]) })
    try {
      const contract = {
        kind: 'contract',
        version: '1.0.0',
        base_url: `http://127.0.0.1:${service.port}`,
        endpoints: {
          'GET /users': { response: { type: 'array', items: { type: 'object', required: ['id', 'name'], properties: { id: { type: 'integer' }, name: { type: 'string' } } } } },
          'POST /users': { request: { type: 'object', required: ['name'], properties: { name: { type: 'string' } } }, response_status: 201 },
        },
      }
      expect((await api('PUT', '/api/contracts/shop/users', contract)).status).toBe(200)
      const { page, problems } = await open('/admin#contracts/shop/users')
      const detail = page.locator('#contract-detail')
      const validate = detail.locator('#contract-validate')
      await validate.waitFor()
      await validate.locator('[name=endpoint]').selectOption('POST /users')
      await validate.locator('[name=payload]').fill('{"name": 5}')
      await validate.getByRole('button', { name: 'Validate' }).click()
      await validate.getByText('1 violation').waitFor()
      expect(await validate.locator('.violations').innerText()).toContain('/name')

      const live = detail.locator('#contract-test')
      await live.getByRole('button', { name: 'Run live test' }).click()
      await live.locator('.inline-ok', { hasText: /^Pass · 200/ }).waitFor()
      await bothSizes(page, 'admin-contracts')

      // Compliance: the instance's workspace names the project.
      const checker = await register(s, { name: 'compliance-bot', workspace: '/srv/shop', intent: 'compliance-bot at work' }, AUTH)
      await page.locator('.section-nav button', { hasText: 'Compliance' }).click()
      await page.locator('#admin-compliance .state-box.empty').waitFor()
      await page.getByRole('button', { name: 'Run now' }).click()
      const run = page.locator('#compliance-table tbody tr').first()
      await run.waitFor()
      expect(await run.locator('.who').textContent()).toBe('compliance-bot')
      expect(await run.locator('.who').getAttribute('title')).toContain(checker.id)
      expect(await run.innerText()).toMatch(/users[\s\S]*shop[\s\S]*pass/)
      await page.getByText(/Checked \d+ contracts? of active instances: 0 failing\./).waitFor()
      await bothSizes(page, 'admin-compliance')
      expect(problems).toEqual([])
      await page.close()
    } finally {
      service.stop(true)
    }
  })
})

describe('command palette', () => {
  test('Ctrl+K jumps to an instance, a key, a rule and a template', async () => {
    const agent = await register(s, { name: 'palette-target', intent: 'palette-target at work' }, AUTH)
    await api('PUT', '/api/state/palette/key-one', { x: 1 })
    const { page, problems } = await open('/')
    await page.locator('#key-list button').first().waitFor()
    const jump = async (query: string, kind: string) => {
      await page.keyboard.press('Control+k')
      const palette = page.locator('dialog#palette[open]')
      await palette.locator('input').fill(query)
      await palette.locator(`li[data-kind="${kind}"][aria-selected=true]`).waitFor()
      return palette
    }
    const palette = await jump('palette-t', 'instance')
    await shot(page, 'palette-1400', false)
    await page.setViewportSize(NARROW)
    await shot(page, 'palette-390', false)
    await page.setViewportSize(WIDE)
    await palette.locator('input').press('Enter')
    await page.waitForURL(`**/admin#instances/${agent.id}`)
    await page.locator('#agent-metrics .meta', { hasText: 'palette-target' }).waitFor()

    await jump('palette/key', 'key').then((p) => p.locator('input').press('Enter'))
    await page.waitForURL('**/#key=palette%2Fkey-one')
    await page.locator('#viewer h3', { hasText: 'palette/key-one' }).waitFor()

    await jump('learned-one', 'rule').then((p) => p.locator('input').press('Enter'))
    await page.waitForURL('**/rules#project=prov')
    await page.locator('#rules-table tr[data-rule="learned-one"]').waitFor()

    await jump('lint basics', 'template').then((p) => p.locator('input').press('Enter'))
    await page.waitForURL('**/admin#templates/lint-basics')
    await page.locator('#template-detail h3', { hasText: 'Lint basics, edited' }).waitFor()
    expect(problems).toEqual([])
    await page.close()
  })
})

describe('admin: backup', () => {
  test('download a backup, then restore it by upload through the dashboard', async () => {
    const { page, problems } = await open('/admin#backup')
    const downloading = page.waitForEvent('download')
    await page.getByRole('button', { name: 'Download backup' }).click()
    const file = await downloading
    const saved = join(tempDir('muster-backup-dl-'), file.suggestedFilename())
    await file.saveAs(saved)
    expect(file.suggestedFilename()).toMatch(/^muster-backup-\d{8}T\d{6}Z\.db$/)
    expect(new TextDecoder().decode(readFileSync(saved).subarray(0, 15))).toBe('SQLite format 3')
    await page.getByText(/Downloaded muster-backup-.*\.db/).waitFor()

    await api('PUT', '/api/state/after/backup', { later: true })
    await page.locator('#restore-file').setInputFiles(saved)
    await page.getByRole('button', { name: 'Restore', exact: true }).click()
    await page.getByText('Tick the box to confirm').waitFor()
    await page.locator('#restore-confirm').check()
    await page.getByRole('button', { name: 'Restore', exact: true }).click()
    await page.getByText(/^Restored .* \(schema version \d+\)\.$/).waitFor()
    expect((await api('GET', '/api/state/after/backup')).status).toBe(404)
    expect((await api('GET', '/api/state/adm/conf')).body).toEqual({ a: 1 })
    await bothSizes(page, 'admin-backup')
    expect(problems).toEqual([])
    await page.close()
  })
})
