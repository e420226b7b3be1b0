// The console by role and its safety for people's work, driven in Debian's Chromium:
// the Tokens section (create, shown once, list, revoke), a viewer token's read-only
// console on every page and an agent token's console without admin actions, the state
// editor that keeps a person's text through a 412, the task drawer (payload, result,
// attempts, history, retry), the overview's cards, named live events, and panels that
// grow with the page. Screenshots go to a temp folder printed at the end.
import { describe, expect, setDefaultTimeout, test } from 'bun:test'
import type { Page } from 'playwright-core'
import { browserSuite, NARROW, openPage, overflowing, settled, WIDE } from './browser'
import { call, eventually, register } from './helpers'

const TOKEN = 'console-admin-token'
const AUTH = { authorization: `Bearer ${TOKEN}` }
setDefaultTimeout(60_000)

const { s, api, browser, shot } = await browserSuite('console', TOKEN)

const open = (path: string, token = TOKEN) => openPage(browser(), s.dashboard + path, { token })

/** Makes a token through the API (as the admin) and returns its secret. */
async function makeToken(name: string, role: 'agent' | 'viewer') {
  const r = await api('POST', '/api/tokens', { name, role })
  expect(r.status).toBe(201)
  return r.body.token as string
}

/** The texts of every visible button, link-button and submit, and the ids of visible forms. */
const visibleControls = (page: Page) =>
  page.evaluate(() => {
    const shown = (el: Element) => (el as HTMLElement).offsetParent !== null || getComputedStyle(el).position === 'fixed'
    return {
      buttons: [...document.querySelectorAll('button, input[type=submit]')].filter(shown).map((b) => (b.textContent || (b as HTMLInputElement).value || '').trim()),
      forms: [...document.querySelectorAll('form')].filter(shown).map((f) => f.id || f.className),
      marked: [...document.querySelectorAll('[data-needs]')].filter(shown).map((e) => e.outerHTML.slice(0, 80)),
    }
  })

/** Actions that change something: none may show on a viewer's console. */
const WRITES = /^(New key|Edit value|Delete key|Roll back|Save|Create|Cancel|Retry|Confirm|Release|Force|Send|Reply|Accept|Reject|Reopen|Add rule|Edit|Delete|Import|Deregister|Run now|Restore|Download backup|New template|Apply|Test|Disable|Enable|Revoke|Run live test)/
/** Forms that only read (search, filters, pickers, validation that computes an answer). */
const READ_FORMS = new Set(['topic-form', 'open-project', 'export-form', 'search-form', 'contracts-project', 'contract-validate'])

describe('tokens', () => {
  test('create shows the secret once with a copy button; the list has role, created, expires, last used; revoke with confirmation', async () => {
    const { page, problems } = await open('/admin#tokens')
    await page.locator('#token-form').waitFor()
    await page.locator('#token-form input[name=name]').fill('ada')
    await page.locator('#token-form input[name=ttl]').fill('2h')
    await page.getByRole('button', { name: 'Create token' }).click()
    const once = page.locator('#token-once')
    await once.waitFor()
    const secret = await page.locator('#token-secret').inputValue()
    expect(secret.length).toBeGreaterThan(20)
    expect(await once.innerText()).toMatch(/not shown again/)
    await page.locator('#token-copy').waitFor()
    // The secret works, as an agent token.
    expect((await call(s.api, 'GET', '/api/whoami', undefined, { authorization: `Bearer ${secret}` })).body.role).toBe('agent')
    const row = page.locator('#tokens-table tr[data-name="ada"]')
    await row.waitFor()
    expect(await row.innerText()).toMatch(/ada[\s\S]*agent[\s\S]*just now[\s\S]*in 2 h[\s\S]*(never|just now)/)
    expect(await row.locator('time').nth(1).getAttribute('title')).toMatch(/^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d$/)
    await shot(page, 'tokens-created')

    // Shown once: closing the box forgets it; the list never has it.
    await page.getByRole('button', { name: 'I have copied it' }).click()
    await once.waitFor({ state: 'detached' })
    expect(await page.content()).not.toContain(secret)
    await page.reload()
    await row.waitFor()
    expect(await page.content()).not.toContain(secret)
    // Used once, its last use shows within a refresh.
    await eventually(async () => /just now|s ago/.test(await row.locator('td[data-label="Last used"]').innerText()), 15_000, 500)

    // A name in use: the API's 409 is shown and nothing is made.
    await page.locator('#token-form input[name=name]').fill('ada')
    await page.getByRole('button', { name: 'Create token' }).click()
    await page.locator('#token-form .inline-error').waitFor()
    expect((await api('GET', '/api/tokens')).body.filter((t: any) => t.name === 'ada')).toHaveLength(1)

    // A viewer token, then revoke ada with the two-click confirmation.
    await page.locator('#token-form input[name=name]').fill('wall screen')
    await page.locator('#token-form select[name=role]').selectOption('viewer')
    await page.getByRole('button', { name: 'Create token' }).click()
    await page.locator('#tokens-table tr[data-name="wall screen"]', { hasText: 'viewer' }).waitFor()
    await page.getByRole('button', { name: 'I have copied it' }).click()
    await row.getByRole('button', { name: 'Revoke' }).click()
    await row.getByRole('button', { name: 'Confirm revoke' }).click()
    await row.waitFor({ state: 'detached' })
    expect((await call(s.api, 'GET', '/api/whoami', undefined, { authorization: `Bearer ${secret}` })).status).toBe(401)
    expect((await api('GET', '/api/tokens')).body.map((t: any) => t.name)).toEqual(['wall screen'])
    await shot(page, 'tokens-list')
    await page.setViewportSize(NARROW)
    await settled(page)
    expect(await overflowing(page)).toEqual([])
    await shot(page, 'tokens-390')
    await page.setViewportSize(WIDE)
    expect(problems).toEqual([])
    await page.close()
  })
})

describe('a viewer token reads everything and changes nothing', () => {
  test('no edit, create, delete, force, retry, cancel or send control on any page, and a read-only badge', async () => {
    // Something to show on every page.
    const ada = await register(s, 'ada-viewer-fixture', AUTH)
    await api('PUT', '/api/state/vw/conf', { a: 1 })
    await api('PUT', '/api/locks/vw-deploy', { ttl_ms: 600_000 }, ada.h)
    await api('POST', '/api/reservations', { project: 'vw', paths: ['src/**'], ttl_ms: 600_000 }, ada.h)
    const t = (await api('POST', '/api/queues/vw/tasks', { title: 'Flaky', max_attempts: 1 })).body
    const c = (await api('POST', '/api/queues/vw/claim', {}, ada.h)).body
    await api('POST', `/api/tasks/${c.id}/nack`, { claim_id: c.claim_id, error: 'boom' }, ada.h)
    await api('POST', '/api/queues/vw/tasks', { title: 'Waiting' })
    await api('POST', '/api/messages', { to: [ada.name], subject: 'hello', body: 'hi' })
    await api('POST', '/api/rules/propose', { project: 'vw', rule_id: 'no-todo', pattern: 'TODO' })
    await api('POST', '/api/templates', { id: 'tpl-vw', name: 'VW', kind: 'rules', data: [{ rule_id: 'x', pattern: 'X' }] })
    await api('POST', '/api/webhooks', { id: 'vw-hook', url: 'http://127.0.0.1:9/x', patterns: ['*'] })
    const viewer = await makeToken('viewer-console', 'viewer')

    const pages: [string, string, string][] = [
      ['/#key=vw/conf', '#viewer pre.value', 'overview'],
      [`/tasks?queue=vw&task=${t.id}`, '#task-detail .status-line', 'tasks'],
      ['/coordination', '#locks tr', 'coordination'],
      ['/messages', '.thread-list button', 'messages'],
      ['/rules?project=vw', '#proposed .proposal', 'rules'],
      ['/admin#instances', '#instances-table', 'admin-instances'],
      ['/admin#webhooks', '#webhooks-table', 'admin-webhooks'],
      ['/admin#templates/tpl-vw', '#admin-templates table', 'admin-templates'],
      ['/admin#compliance', '#admin-compliance', 'admin-compliance'],
    ]
    for (const [path, ready, name] of pages) {
      const { page, problems } = await open(path, viewer)
      await page.locator('#role-badge', { hasText: 'read-only' }).waitFor()
      await page.locator(ready).first().waitFor()
      await settled(page)
      const seen = await visibleControls(page)
      expect({ name, writes: seen.buttons.filter((b) => WRITES.test(b)) }).toEqual({ name, writes: [] })
      expect({ name, forms: seen.forms.filter((f) => !READ_FORMS.has(f)) }).toEqual({ name, forms: [] })
      expect({ name, marked: seen.marked }).toEqual({ name, marked: [] })
      await shot(page, `viewer-${name}`, name !== 'tasks')
      expect(problems).toEqual([])
      await page.close()
    }
    // Admin sections a viewer may not open are not offered, and their URL opens the first one.
    const { page } = await open('/admin#backup', viewer)
    await page.locator('#instances-table').waitFor()
    expect(await page.locator('#section-list button:visible').allTextContents()).not.toContainEqual(expect.stringMatching(/Tokens|Backup/))
    expect(await page.locator('#section-backup').count()).toBe(0)
    await page.close()
    // Nothing changed on the server.
    expect((await api('GET', `/api/tasks/${t.id}`)).body.status).toBe('failed')
    expect((await api('GET', '/api/locks')).body.map((l: any) => l.name)).toEqual(['vw-deploy'])
  })

  test('an agent token keeps its writes but not the admin-only actions', async () => {
    const agent = await makeToken('agent-console', 'agent')
    const { page, problems } = await open('/admin#compliance', agent)
    await page.locator('#role-badge', { hasText: 'agent' }).waitFor()
    await page.locator('#admin-compliance').waitFor()
    await settled(page)
    const names = await page.locator('#section-list button:visible').allTextContents()
    expect(names.join(' ')).not.toMatch(/Tokens|Backup/)
    expect(await page.locator('#compliance-run').isVisible()).toBe(false)
    await page.goto(s.dashboard + '/admin#webhooks')
    await page.locator('#webhooks-table').waitFor()
    expect(await page.locator('#webhook-create').isVisible()).toBe(false)
    expect((await visibleControls(page)).buttons.filter((b) => /^(Delete|Test|Disable|Enable)/.test(b))).toEqual([])
    await page.goto(s.dashboard + '/#key=vw/conf')
    await page.getByRole('button', { name: 'Edit value' }).waitFor()
    await page.goto(s.dashboard + '/rules?project=vw')
    await page.locator('#proposed .proposal').first().waitFor()
    expect(await page.locator('#proposed button', { hasText: /Accept|Reject/ }).count()).toBeGreaterThan(0)
    expect(await page.locator('#proposed button:visible', { hasText: /Accept|Reject/ }).count()).toBe(0)
    await shot(page, 'agent-rules')
    expect(problems).toEqual([])
    await page.close()
  })
})

describe('state editor keeps a person\u2019s edit', () => {
  test('a live write never closes it; a 412 keeps the typed text beside theirs: overwrite with mine, or take theirs', async () => {
    await api('PUT', '/api/state/ed/plan', { step: 1 })
    const { page, problems } = await open('/#key=ed/plan')
    const viewer = page.locator('#viewer')
    await viewer.locator('pre.value').getByText('"step": 1').waitFor()
    await viewer.getByRole('button', { name: 'Edit value' }).click()
    const editor = viewer.locator('textarea.value-editor')
    const mine = '{"step": 2, "by": "a person"}'
    await editor.fill(mine)

    // An agent writes the key while the person types: the stream redraws, the editor stays.
    await api('PUT', '/api/state/ed/plan', { step: 10, by: 'agent' })
    await viewer.locator('.inline-warn', { hasText: 'v2 was written while you are editing' }).waitFor()
    expect(await editor.inputValue()).toBe(mine)
    await viewer.getByRole('button', { name: 'Save as v2' }).click()
    const conflict = viewer.locator('.conflict')
    await conflict.waitFor()
    expect(await conflict.locator('pre.theirs').innerText()).toContain('"by": "agent"')
    expect(await editor.inputValue()).toBe(mine)
    await viewer.locator('.inline-error', { hasText: 'Your text is kept' }).waitFor()
    await shot(page, 'state-412')
    // Another live write while the choice is open changes nothing on the page.
    await api('PUT', '/api/state/ed/plan', { step: 11, by: 'agent' })
    await Bun.sleep(700)
    expect(await editor.inputValue()).toBe(mine)
    // Overwrite: v3 is what the person saw beside their text, so this save meets a 412 again and shows v3.
    await viewer.locator('#conflict-mine').click()
    await conflict.locator('pre.theirs', { hasText: '"step": 11' }).waitFor()
    expect(await editor.inputValue()).toBe(mine)
    await viewer.locator('#conflict-mine').click()
    await viewer.locator('pre.value').getByText('"by": "a person"').waitFor()
    expect((await api('GET', '/api/state/ed/plan')).body).toEqual({ step: 2, by: 'a person' })

    // Take theirs: the editor closes on the current value, nothing written.
    await viewer.getByRole('button', { name: 'Edit value' }).click()
    await editor.fill('{"step": 3}')
    await api('PUT', '/api/state/ed/plan', { step: 20, by: 'agent' })
    await viewer.locator('.inline-warn').waitFor()
    await viewer.getByRole('button', { name: /^Save as/ }).click()
    await viewer.locator('#conflict-theirs').click()
    await viewer.locator('textarea.value-editor').waitFor({ state: 'detached' })
    await viewer.locator('pre.value:not(.theirs)').getByText('"step": 20').waitFor()
    expect((await api('GET', '/api/state/ed/plan')).body).toEqual({ step: 20, by: 'agent' })
    expect(problems).toEqual([])
    await page.close()
  })
})

describe('task drawer', () => {
  test('payload, result, attempts and history from the events; retry puts a failed task back', async () => {
    const bo = await register(s, 'bo-drawer', AUTH)
    const done = (await api('POST', '/api/queues/dr/tasks', { title: 'Build docs', payload: { target: 'site' } })).body
    const c1 = (await api('POST', '/api/queues/dr/claim', {}, bo.h)).body
    await api('POST', `/api/tasks/${c1.id}/ack`, { claim_id: c1.claim_id, result: { pages: 12 } }, bo.h)
    const flaky = (await api('POST', '/api/queues/dr/tasks', { title: 'Flaky e2e', max_attempts: 1, payload: { suite: 'login' } })).body
    const c2 = (await api('POST', '/api/queues/dr/claim', {}, bo.h)).body
    await api('POST', `/api/tasks/${c2.id}/nack`, { claim_id: c2.claim_id, error: 'selector #login not found' }, bo.h)

    const { page, problems } = await open(`/tasks?queue=dr&task=${done.id}`)
    const drawer = page.locator('dialog#task-detail[open]')
    await drawer.locator('#task-payload').waitFor()
    expect(await drawer.locator('#task-payload').innerText()).toContain('"target": "site"')
    expect(await drawer.locator('#task-result').innerText()).toContain('"pages": 12')
    await drawer.locator('#task-history li[data-topic="task.done"]').waitFor()
    expect(await drawer.locator('#task-history').innerText()).toMatch(/done by bo-drawer[\s\S]*claimed by bo-drawer[\s\S]*created/)
    expect(await drawer.locator('table.attempts tbody tr').innerText()).toMatch(/1\s+bo-drawer[\s\S]*done/)
    expect(await drawer.locator('#task-retry').count()).toBe(0)
    await shot(page, 'drawer-done', false)
    await drawer.getByRole('button', { name: 'Close' }).click()

    // The failed one: one status with its reason, and Retry.
    const card = page.locator(`.task-card[data-id="${flaky.id}"]`)
    expect(await card.locator('.error').innerText()).toBe('failed: selector #login not found')
    await card.locator('a.title').click()
    await drawer.locator('.status-line', { hasText: 'failed' }).waitFor()
    expect(await drawer.locator('.status-line').innerText()).toMatch(/^failed\s+no attempts left \(1 of 1 used\); retry starts it over\s+last claimed by\s+bo-drawer\s+failed: selector #login not found$/)
    await drawer.locator('#task-history li[data-topic="task.failed"]').waitFor()
    await shot(page, 'drawer-failed', false)
    await drawer.locator('#task-retry').click()
    await drawer.locator('.status-line .badge', { hasText: 'ready' }).waitFor()
    const after = (await api('GET', `/api/tasks/${flaky.id}`)).body
    expect([after.status, after.attempts]).toEqual(['ready', 0])
    await drawer.locator('#task-history li[data-topic="task.retried"]').waitFor()
    expect(await drawer.locator('.status-line').innerText()).toMatch(/an earlier attempt ended: selector #login not found/)
    await shot(page, 'drawer-retried', false)
    await drawer.getByRole('button', { name: 'Close' }).click()
    await page.locator(`.column[data-status="ready"] .task-card[data-id="${flaky.id}"]`).waitFor()

    // Retry from the board's card too.
    const c3 = (await api('POST', '/api/queues/dr/claim', {}, bo.h)).body
    await api('POST', `/api/tasks/${c3.id}/nack`, { claim_id: c3.claim_id, error: 'again' }, bo.h)
    const failedCard = page.locator(`.column[data-status="failed"] .task-card[data-id="${flaky.id}"]`)
    await failedCard.getByRole('button', { name: 'Retry' }).click()
    await page.locator(`.column[data-status="ready"] .task-card[data-id="${flaky.id}"]`).waitFor()
    await shot(page, 'board-after-retry')

    // Claimed again after an earlier attempt ended: one status (who has it, live), the old error as history.
    const moved = (await api('POST', '/api/queues/dr2/tasks', { title: 'Resumable' })).body
    const c4 = (await api('POST', '/api/queues/dr2/claim', {}, bo.h)).body
    await api('POST', `/api/tasks/${c4.id}/nack`, { claim_id: c4.claim_id, error: 'lost the network' }, bo.h)
    const al = await register(s, 'al-drawer', AUTH)
    await api('POST', '/api/queues/dr2/claim', {}, al.h)
    await page.goto(`${s.dashboard}/tasks?queue=dr2`)
    const claimed = page.locator(`.column[data-status="claimed"] .task-card[data-id="${moved.id}"]`)
    await claimed.waitFor()
    expect(await claimed.locator('.claimer').innerText()).toMatch(/^claimed by\s+al-drawer\s+active$/)
    expect(await claimed.locator('.earlier').innerText()).toBe('an earlier attempt ended: lost the network')
    expect(await claimed.locator('.error').count()).toBe(0)
    await shot(page, 'board-claimed-after-nack')
    expect(problems).toEqual([])
    await page.close()
  })
})

describe('overview', () => {
  test('cards for held locks, failed tasks and overdue acks; live events by name; relative expiry; panels grow', async () => {
    const cy = await register(s, 'cy-overview', AUTH)
    await api('PUT', '/api/locks/ov-release', { ttl_ms: 480_000 }, cy.h)
    await api('POST', '/api/messages', { to: [cy.name], subject: 'ack me', body: 'please', ack_required: true, ack_within_ms: 1000 })
    await Bun.sleep(1200)

    const { page, problems } = await open('/')
    const card = (id: string) => page.locator(`.metric[data-card="${id}"]`)
    await card('locks').locator('.value', { hasText: /^\d+$/ }).waitFor()
    const locks = (await api('GET', '/api/locks')).body.length
    const failed = (await api('GET', '/api/queues')).body.reduce((n: number, q: any) => n + (q.counts.failed ?? 0), 0)
    await eventually(async () => (await card('locks').locator('.value').innerText()) === String(locks), 10_000, 200)
    await eventually(async () => (await card('failed').locator('.value').innerText()) === String(failed), 10_000, 200)
    await eventually(async () => Number(await card('overdue').locator('.value').innerText()) >= 1, 10_000, 200)
    expect(await card('overdue').innerText()).toContain('cy-overview')
    expect(await card('locks').getAttribute('href')).toBe('/coordination')
    expect(await page.locator('.metric', { hasText: 'API' }).count()).toBe(0)
    expect(await page.locator('#binds').innerText()).toMatch(/API 127\.0\.0\.1:\d+ · dashboard 127\.0\.0\.1:\d+/)

    // A lock taken now reads as a sentence with the instance's name; its JSON is one click away.
    await page.locator('#stream-status', { hasText: 'Live' }).waitFor()
    const grant = await api('PUT', '/api/locks/ov-live', { ttl_ms: 60_000 }, cy.h)
    expect(grant.status).toBe(200)
    const item = page.locator('ol.events li[data-topic="lock.acquired"]', { hasText: 'ov-live' })
    await item.waitFor()
    expect(await item.locator('.ev-summary').innerText()).toBe('cy-overview took lock ov-live')
    expect(await item.innerText()).not.toContain(cy.id)
    await item.click()
    expect(await item.locator('pre.ev-data').innerText()).toContain(`"instance_id": "${cy.id}"`)

    // The panels beside each other grow to the page: no fixed inner heights.
    const heights = await page.evaluate(() => ['.instances-body', '.audit-body'].map((sel) => getComputedStyle(document.querySelector(sel)!).maxHeight))
    expect(heights).toEqual(['none', 'none'])
    await settled(page)
    await shot(page, 'overview')
    expect(problems).toEqual([])

    // Expiry reads "in 8 min" with the exact time on hover, not a clock time.
    await page.goto(s.dashboard + '/coordination')
    const row = page.locator('#locks tr', { hasText: 'ov-release' })
    await row.waitFor()
    expect(await row.innerText()).toMatch(/expires in [78] min/)
    expect(await row.locator('time').last().getAttribute('title')).toMatch(/^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d$/)
    expect(await row.innerText()).not.toMatch(/\b(AM|PM)\b/)
    await shot(page, 'coordination')
    await page.close()
  })
})
