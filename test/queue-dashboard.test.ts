// The task board (/tasks) in Debian's Chromium: columns by status with claimer
// liveness, attempts and last error; live from the event stream; cancel.
// Screenshots go to a temp folder printed at the end.
import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from 'bun:test'
import type { BrowserContext, Page } from 'playwright-core'
import { join } from 'node:path'
import { launch, openPage } from './browser'
import { call, register, startServer, tempDir } from './helpers'

const TOKEN = 'board-token'
const AUTH = { authorization: `Bearer ${TOKEN}` }
const SHOTS = tempDir('muster-task-board-')
setDefaultTimeout(30_000)

const s = await startServer({ args: ['--auth-token', TOKEN] })
const api = (method: string, path: string, body?: unknown, token?: string) =>
  call(s.api, method, path, body, { ...AUTH, ...(token ? { 'x-instance-token': token } : {}) })
const add = async (queue: string, body: Record<string, unknown>) => (await api('POST', `/api/queues/${queue}/tasks`, body)).body
const claim = async (queue: string, token: string) => (await api('POST', `/api/queues/${queue}/claim`, {}, token)).body

let browser: BrowserContext
beforeAll(async () => {
  browser = await launch()
})
afterAll(async () => {
  await browser?.close()
  await s.cleanup()
  console.log(`task board screenshots: ${SHOTS}`)
})

const open = (path: string, width = 1400) => openPage(browser, s.dashboard + path, { token: TOKEN, size: { width, height: 900 } })

const columnTitles = (page: Page, status: string) =>
  page.locator(`.column[data-status="${status}"] .task-card .title`).allTextContents()

describe('task board', () => {
  test('shows each queue with counts and a column per status, claimer name and liveness, attempts, last error', async () => {
    const alice = await register(s, 'alice', AUTH)
    const bob = await register(s, 'bob', AUTH)
    const lint = await add('web', { title: 'Lint the API', priority: 5, requires: [] })
    await add('web', { title: 'Write docs' })
    await add('web', { title: 'Deploy', depends_on: [lint.id] })
    const flaky = await add('web', { title: 'Flaky e2e', max_attempts: 1 })
    const c1 = await claim('web', alice.token) // Lint the API (priority 5)
    expect(c1.id).toBe(lint.id)
    const c2 = await claim('web', bob.token) // Write docs
    await api('POST', `/api/tasks/${c2.id}/ack`, { claim_id: c2.claim_id, result: { pages: 3 } }, bob.token)
    const c3 = await claim('web', bob.token) // Flaky e2e
    expect(c3.id).toBe(flaky.id)
    await api('POST', `/api/tasks/${c3.id}/nack`, { claim_id: c3.claim_id, error: 'timeout waiting for selector #login' }, bob.token)
    await add('ops', { title: 'Rotate keys' })

    const { page, problems } = await open('/tasks?queue=web')
    await page.locator('.column[data-status="claimed"] .task-card').first().waitFor()
    // Queues by name, with the counts that need attention.
    expect(await page.locator('.queue-list [data-queue]').allTextContents()).toEqual(['ops1 ready', 'web1 claimed1 blocked1 failed'])
    expect(await page.locator('.queue-list [aria-current="true"]').getAttribute('data-queue')).toBe('web')
    expect(await columnTitles(page, 'claimed')).toEqual(['Lint the API'])
    expect(await columnTitles(page, 'blocked')).toEqual(['Deploy'])
    expect(await columnTitles(page, 'done')).toEqual(['Write docs'])
    expect(await columnTitles(page, 'failed')).toEqual(['Flaky e2e'])
    const claimed = page.locator('.column[data-status="claimed"] .task-card')
    expect(await claimed.locator('.claimer').textContent()).toBe('claimed byaliceactive')
    expect(await claimed.locator('.attempts').textContent()).toBe('attempts 1/3')
    const failed = page.locator('.column[data-status="failed"] .task-card')
    expect(await failed.locator('.error').textContent()).toBe('failed: timeout waiting for selector #login')
    // A failed task offers retry, not cancel.
    expect(await failed.locator('button').allTextContents()).toEqual(['Retry'])
    expect(await page.locator('.column[data-status="failed"] h3 .count').textContent()).toBe('1')
    await page.screenshot({ path: join(SHOTS, 'board.png'), fullPage: true })
    expect(problems).toEqual([])
    await page.close()
  })

  test('live: a new task and its claim show up without a reload; cancel from the board', async () => {
    const { page, problems } = await open('/tasks?queue=live')
    await page.locator('#stream-status.live').waitFor()
    await page.locator('.column[data-status="ready"] .none').waitFor() // nothing in this queue yet
    const t = await add('live', { title: 'Arrives live' })
    // Well before the 15 s safety-net poll: the event stream redraws the board.
    const LIVE = { timeout: 5000 }
    await page.locator('.column[data-status="ready"] .task-card', { hasText: 'Arrives live' }).waitFor(LIVE)
    const carol = await register(s, 'carol', AUTH)
    await claim('live', carol.token)
    await page.locator('.column[data-status="claimed"] .task-card', { hasText: 'carol' }).waitFor(LIVE)

    page.once('dialog', (d) => void d.accept())
    await page.locator('.column[data-status="claimed"] .task-card button', { hasText: 'Cancel' }).click()
    await page.locator('.column[data-status="cancelled"] .task-card', { hasText: 'Arrives live' }).waitFor(LIVE)
    expect((await api('GET', `/api/tasks/${t.id}`)).body.status).toBe('cancelled')
    expect(await page.locator('.column[data-status="cancelled"] .task-card button').allTextContents()).toEqual(['Retry'])
    await page.screenshot({ path: join(SHOTS, 'live-cancelled.png'), fullPage: true })

    // Narrow window: one column of cards.
    await page.setViewportSize({ width: 420, height: 900 })
    await page.screenshot({ path: join(SHOTS, 'narrow.png'), fullPage: true })
    expect(problems).toEqual([])
    await page.close()
  })

  test('without queues the board says how tasks get there', async () => {
    const empty = await startServer()
    try {
      const page = await browser.newPage()
      await page.goto(empty.dashboard + '/tasks')
      await page.locator('#queues .state-box.empty').waitFor()
      expect(await page.locator('#queues .state-box .title').textContent()).toBe('No queues yet')
      expect(await page.locator('#board .state-box .title').textContent()).toBe('No queue selected')
      await page.close()
    } finally {
      await empty.cleanup()
    }
  })
})

describe('task board: hand-off', () => {
  test("a task's detail shows its project, paths, reservation (linked to the coordination page) and notes, live", async () => {
    const dana = await register(s, 'dana', AUTH)
    const t = await add('handoff', { title: 'Split the checkout module', project: 'shop', paths: ['src/checkout/**', 'src/cart.ts'] })
    const c = await claim('handoff', dana.token)
    expect(c.id).toBe(t.id)
    await api('POST', `/api/tasks/${t.id}/notes`, { text: 'Cart totals moved to src/cart.ts; tests still red.' }, dana.token)

    const { page, problems } = await open('/tasks?queue=handoff')
    const card = page.locator(`.task-card[data-id="${t.id}"]`)
    await card.waitFor()
    expect(await card.locator('.files').innerText()).toMatch(/shop[\s\S]*src\/checkout\/\*\*[\s\S]*src\/cart\.ts/)
    await page.screenshot({ path: join(SHOTS, 'handoff-board.png'), fullPage: true })
    await card.locator('a.title').click()
    const detail = page.locator('dialog#task-detail[open]')
    await detail.locator('.notes li').first().waitFor()
    expect(new URL(page.url()).searchParams.get('task')).toBe(String(t.id))
    expect(await detail.locator('.detail-section', { hasText: 'Files' }).innerText()).toMatch(/project shop[\s\S]*src\/checkout\/\*\*[\s\S]*src\/cart\.ts/)
    const link = detail.locator('.reservation a')
    expect(await link.textContent()).toBe(c.reservation_id)
    expect(await link.getAttribute('href')).toBe(`/coordination#reservation=${c.reservation_id}`)
    expect(await detail.locator('.reservation').innerText()).toMatch(/exclusive[\s\S]*held by dana[\s\S]*no TTL[\s\S]*reason: task \d+/)
    expect(await detail.locator('.notes li').innerText()).toMatch(/attempt 1[\s\S]*dana[\s\S]*Cart totals moved to src\/cart\.ts; tests still red\./)

    // A second attempt's note arrives while the detail is open (the board polls every 15 s: this is the event stream).
    // The read the nack's event starts is answered 1.5 s late, after the note's own read: its older
    // answer must not draw over the note.
    let late: Promise<void> | null = null
    await page.route(`**/api/tasks/${t.id}`, async (route) => {
      if (late) return route.continue()
      const answer = await route.fetch()
      late = Bun.sleep(1500).then(() => route.fulfill({ response: answer }))
      await late
    })
    await api('POST', `/api/tasks/${t.id}/nack`, { claim_id: c.claim_id, error: 'gave up' }, dana.token)
    while (!late) await Bun.sleep(10)
    const again = await claim('handoff', dana.token)
    await api('POST', `/api/tasks/${t.id}/notes`, { text: 'Second try: start from the cart tests.' }, dana.token)
    await detail.locator('.notes li[data-attempt="2"]').waitFor({ timeout: 5000 })
    await late
    await page.unroute(`**/api/tasks/${t.id}`)
    await Bun.sleep(100)
    expect(await detail.locator('.notes li .badge').allTextContents()).toEqual(['attempt 1', 'attempt 2'])
    expect(await detail.locator('.reservation a').textContent()).toBe(again.reservation_id)
    await page.screenshot({ path: join(SHOTS, 'task-detail.png') })

    // The link marks that reservation on the coordination page.
    await link.click()
    await page.waitForURL(/\/coordination#reservation=/)
    await page.locator(`#reservations tr.selected[data-id="${again.reservation_id}"]`).waitFor()
    expect(problems).toEqual([])
    await page.close()
  })
})
