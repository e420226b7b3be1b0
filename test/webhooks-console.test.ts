// The /admin console's webhooks section in Debian's Chromium: a webhook's deliveries from
// the durable queue (a pending one with its next retry), edit (PATCH) that keeps typed
// text across polls, redeliver one and since, disable and enable with the backlog.
// Screenshots at 1400×1000 and 390×844; no table may leave its panel.
import { afterAll, beforeAll, expect, setDefaultTimeout, test } from 'bun:test'
import type { BrowserContext } from 'playwright-core'
import { call, eventually, startServer, tempDir } from './helpers'
import { NARROW, WIDE, launch, openPage, overflowing, settled, shot } from './browser'

const SHOTS = tempDir('muster-webhook-shots-')
setDefaultTimeout(60_000)

const got: { path: string; id: number; topic: string }[] = []
let down = true
const receiver = Bun.serve({
  port: 0,
  hostname: '127.0.0.1',
  async fetch(req) {
    const path = new URL(req.url).pathname
    const body = await req.json()
    got.push({ path, id: body.id, topic: body.topic })
    return new Response('ok', { status: path === '/down' && down ? 503 : 200 })
  },
})
const hookUrl = (path: string) => `http://127.0.0.1:${receiver.port}${path}`

const s = await startServer()
const api = (method: string, path: string, body?: unknown) => call(s.api, method, path, body)
let browser: BrowserContext
beforeAll(async () => (browser = await launch()))
afterAll(async () => {
  await browser?.close()
  receiver.stop(true)
  await s.cleanup()
  console.log(`webhook console screenshots: ${SHOTS}`)
})

test('deliveries with state and next retry, edit, redeliver one and since, disable and enable', async () => {
  expect((await api('POST', '/api/webhooks', { id: 'ui-queue', url: hookUrl('/down'), patterns: ['ui.*'] })).status).toBe(200)
  const event = (await api('POST', '/api/events/publish', { topic: 'ui.x', data: { n: 1 } })).body
  await eventually(() => got.length === 1)

  const { page, problems } = await open()
  const row = page.locator('#webhooks-table tr[data-id="ui-queue"]')
  await row.getByRole('button', { name: 'Deliveries' }).click()
  const first = page.locator(`#deliveries-table tr[data-delivery]`).first()
  await first.getByText('pending').waitFor()
  expect(await first.innerText()).toMatch(new RegExp(`ui\\.x\\s+#${event.id}[\\s\\S]*1 failed; next in \\d+ s[\\s\\S]*503[\\s\\S]*HTTP 503`))
  await sizes(page, 'webhook-pending')

  // Edit: the typed url survives the section's redraws; saving sends only what changed.
  await row.getByRole('button', { name: 'Edit' }).click()
  const form = page.locator('form.webhook-edit[data-id="ui-queue"]')
  await form.locator('[name=url]').fill(hookUrl('/up'))
  await page.evaluate(() => new Promise((r) => setTimeout(r, 2500))) // polls and the retry come and go
  expect(await form.locator('[name=url]').inputValue()).toBe(hookUrl('/up'))
  await sizes(page, 'webhook-edit')
  await form.getByRole('button', { name: 'Save' }).click()
  await page.getByText('Saved ui-queue: url changed.').waitFor()
  expect((await api('GET', '/api/webhooks/ui-queue')).body.url).toBe(hookUrl('/up'))
  // The waiting retry goes to the new url.
  await eventually(() => got.some((g) => g.path === '/up' && g.id === event.id), 8000)
  await first.getByText('delivered').waitFor({ timeout: 10_000 })

  // Redeliver one.
  await first.getByRole('button', { name: 'Redeliver' }).click()
  await page.getByText(/Queued #\d+ again\./).waitFor()
  await eventually(() => got.filter((g) => g.path === '/up' && g.id === event.id).length === 2)

  // Disabled: a redelivery since an hour ago waits; enable sends it.
  await row.getByRole('button', { name: 'Disable' }).click()
  await row.locator('.badge', { hasText: 'disabled' }).waitFor()
  await page.locator('#redeliver-since').getByRole('button', { name: 'Redeliver since' }).click()
  await page.getByText('Queued 1 delivery again: they go once ui-queue is enabled.').waitFor()
  await first.getByText('waits for Enable').waitFor()
  await sizes(page, 'webhook-disabled')
  await Bun.sleep(300)
  expect(got.filter((g) => g.path === '/up').length).toBe(2)
  await row.getByRole('button', { name: 'Enable' }).click()
  await eventually(() => got.filter((g) => g.path === '/up').length === 3)
  await first.getByText('delivered').waitFor({ timeout: 10_000 })
  expect(problems).toEqual([])
  await page.close()
})

async function open() {
  const opened = await openPage(browser, `${s.dashboard}/admin#webhooks`)
  await opened.page.locator('#webhooks-table').waitFor()
  return opened
}

async function sizes(page: import('playwright-core').Page, name: string) {
  await settled(page)
  expect(await overflowing(page)).toEqual([])
  await shot(page, SHOTS, `${name}-1400`)
  await page.setViewportSize(NARROW)
  await settled(page)
  expect(await overflowing(page)).toEqual([])
  await shot(page, SHOTS, `${name}-390`)
  await page.setViewportSize(WIDE)
}
