// The messages page (/messages) in Debian's Chromium: a person writes to agents from
// the form, receipts follow acks live, an ack past its deadline is highlighted, and
// the word search narrows the threads. Screenshots go to a temp folder printed at the end.
import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from 'bun:test'
import type { BrowserContext, Page } from 'playwright-core'
import { join } from 'node:path'
import { launch, openPage, overflowing } from './browser'
import { call, register, startServer, tempDir, type TestServer } from './helpers'

setDefaultTimeout(60_000)
const SHOTS = process.env.MUSTER_SHOTS ?? tempDir('muster-messages-shots-')
const TOKEN = 'messages-ui-token'
const AUTH = { authorization: `Bearer ${TOKEN}` }
/** Well before the page's 15 s safety-net poll: only the event stream can redraw this fast. */
const LIVE = { timeout: 5000 }

let s: TestServer
let browser: BrowserContext
beforeAll(async () => {
  s = await startServer({ args: ['--auth-token', TOKEN] })
  browser = await launch()
})
afterAll(async () => {
  await browser?.close()
  await s.cleanup()
  console.log(`messages screenshots: ${SHOTS}`)
})

const api = (method: string, path: string, body?: unknown, headers: Record<string, string> = {}) => call(s.api, method, path, body, { ...AUTH, ...headers })
const open = (path = '/messages', width = 1400) => openPage(browser, s.dashboard + path, { token: TOKEN, size: { width, height: 900 } })
const shot = (page: Page, name: string) => page.screenshot({ path: join(SHOTS, `${name}.png`), fullPage: true })
const receipt = (page: Page, id: number, to: string) => page.locator(`.message[data-id="${id}"] .receipts li[data-to="${to}"]`)

describe('messages page', () => {
  test('a person writes to two agents from the form; receipts follow delivery and acks live', async () => {
    const alice = await register(s, 'alice', AUTH)
    const bob = await register(s, 'bob', AUTH)
    const { page, problems } = await open()
    await page.locator('#stream-status.live').waitFor()
    await page.locator('#threads .state-box.empty').getByText('No messages yet').waitFor()

    // The quick picks fill the To field; the form sends as "human".
    const form = page.locator('#compose-form')
    await form.locator('.recipients button', { hasText: 'alice' }).click()
    await form.locator('.recipients button', { hasText: 'bob' }).click()
    expect(await form.locator('input[name=to]').inputValue()).toBe('alice, bob')
    await form.locator('input[name=subject]').fill('Freeze src/db before the release')
    await form.locator('textarea[name=body]').fill('Stop editing src/db until the branch is cut.\nAck when you have.')
    await form.locator('select[name=importance]').selectOption('high')
    await form.locator('input[name=ack_required]').check()
    await form.locator('input[name=ack_within]').fill('10m')
    await form.getByRole('button', { name: 'Send' }).click()
    await form.locator('.inline-ok').getByText(/^Sent #\d+ to alice, bob\.$/).waitFor()

    const [sent] = (await api('GET', '/api/messages?from=human')).body
    expect(sent).toMatchObject({ from: 'human', from_instance_id: null, to: ['alice', 'bob'], importance: 'high', ack_required: true, ack_within_ms: 600_000 })
    expect(sent.body).toBe('Stop editing src/db until the branch is cut.\nAck when you have.')
    const card = page.locator(`.message[data-id="${sent.id}"]`)
    await card.waitFor()
    expect(await card.locator('.receipts li').evaluateAll((lis) => lis.map((li) => (li as HTMLElement).dataset.to))).toEqual(['alice', 'bob'])
    expect(await receipt(page, sent.id, 'alice').innerText()).toContain('not delivered yet')
    expect(await page.locator('#threads [aria-current="true"] .subject').textContent()).toBe('Freeze src/db before the release')

    // alice reads her inbox (delivered), bob acks over REST (acked): both show without a reload.
    await api('GET', '/api/inbox', undefined, alice.h)
    await api('POST', `/api/messages/${sent.id}/ack`, undefined, bob.h)
    await receipt(page, sent.id, 'bob').locator('.badge.ok', { hasText: /^acked / }).waitFor(LIVE)
    await receipt(page, sent.id, 'alice').locator('.badge', { hasText: /^delivered / }).waitFor(LIVE)

    // alice replies in the thread: it joins the open thread live.
    const reply = (await api('POST', '/api/messages', { to: ['human'], subject: 'Re: freeze', body: 'Done.', reply_to: sent.id }, alice.h)).body
    await page.locator(`.message[data-id="${reply.id}"]`).waitFor(LIVE)
    expect(await page.locator('#thread .message').count()).toBe(2)

    // The person answers with Reply: to alice, in the same thread.
    await page.locator(`.message[data-id="${reply.id}"]`).getByRole('button', { name: 'Reply' }).click()
    expect(await form.locator('input[name=to]').inputValue()).toBe('alice')
    expect(await form.locator('input[name=subject]').inputValue()).toBe('Re: freeze')
    await form.locator('textarea[name=body]').fill('Thanks.')
    await form.getByRole('button', { name: 'Send' }).click()
    await page.locator('#thread .message').nth(2).waitFor()
    const [answer] = (await api('GET', '/api/messages?limit=1')).body
    expect(answer).toMatchObject({ from: 'human', to: ['alice'], reply_to: reply.id, thread: sent.thread, ack_required: false })
    await shot(page, 'messages-1-thread')

    // A bad send changes nothing and says why.
    await form.locator('input[name=to]').fill('*')
    await form.locator('input[name=subject]').fill('Everyone, ack in a minute')
    await form.locator('input[name=ack_required]').check()
    await form.locator('input[name=ack_within]').fill('1m')
    await form.getByRole('button', { name: 'Send' }).click()
    await form.locator('.inline-error').getByText(/named recipients/).waitFor()
    expect((await api('GET', '/api/messages')).body).toHaveLength(3)
    expect(problems).toEqual([])
    await page.close()
  })

  test('an ack asked within a time that passed is highlighted as overdue', async () => {
    const carol = await register(s, 'carol', AUTH)
    await register(s, 'dave', AUTH)
    const erin = await register(s, 'erin', AUTH)
    const { page, problems } = await open()
    await page.locator('#stream-status.live').waitFor()
    const m = (await api('POST', '/api/messages', { to: ['dave', 'erin'], subject: 'Rotate the staging keys', body: 'Today, please.', ack_required: true, ack_within_ms: 1500 }, carol.h)).body
    // The newest thread opens by itself when nothing is chosen; this one arrives live and becomes the newest.
    await page.locator(`#threads button[data-thread="${m.thread}"]`).click(LIVE)
    await receipt(page, m.id, 'dave').waitFor(LIVE)
    expect(await page.locator(`.message[data-id="${m.id}"].late`).count()).toBe(0)
    await api('POST', `/api/messages/${m.id}/ack`, undefined, erin.h) // erin acks in time
    await receipt(page, m.id, 'dave').locator('.badge.bad', { hasText: 'overdue' }).waitFor(LIVE)
    expect(await receipt(page, m.id, 'dave').getAttribute('class')).toBe('overdue')
    expect(await receipt(page, m.id, 'erin').getAttribute('class')).toBe('acked')
    expect(await page.locator(`.message[data-id="${m.id}"]`).getAttribute('class')).toBe('message late')
    expect(await page.locator('#thread .meta').innerText()).toContain('1 overdue')
    await shot(page, 'messages-2-overdue')

    await page.setViewportSize({ width: 390, height: 844 })
    expect(await overflowing(page)).toEqual([])
    await shot(page, 'messages-3-narrow')
    expect(problems).toEqual([])
    await page.close()
  })

  test('the word search lists only the threads with a matching message', async () => {
    const { page, problems } = await open('/messages?q=staging%20keys')
    await page.locator('#threads button[data-thread]').first().waitFor()
    expect(await page.locator('#search').inputValue()).toBe('staging keys')
    expect(await page.locator('#threads .subject').allTextContents()).toEqual(['Rotate the staging keys'])
    await page.locator('#search').fill('freeze')
    await page.locator('#search-form button').click()
    await page.locator('#threads .subject', { hasText: 'Freeze src/db before the release' }).waitFor()
    expect(await page.locator('#threads .subject').allTextContents()).toEqual(['Freeze src/db before the release'])
    await page.locator('#search').fill('nosuchword')
    await page.locator('#search-form button').click()
    await page.locator('#threads .state-box').getByText('No message matches').waitFor()
    expect(new URL(page.url()).searchParams.get('q')).toBe('nosuchword')
    expect(problems).toEqual([])
    await page.close()
  })
})
