// The coordination page in Debian's Chromium: held locks and reservations by
// project with holder names and liveness, kept current from the event stream,
// and force-release. Screenshots go to a temp folder printed at the end.
import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from 'bun:test'
import type { BrowserContext, Page } from 'playwright-core'
import { join } from 'node:path'
import { launch, openPage } from './browser'
import { call, register, startServer, tempDir, type TestServer } from './helpers'

setDefaultTimeout(60_000)
const SHOTS = tempDir('muster-coordination-shots-')
const TOKEN = 'coordination-ui-token'
const AUTH = { authorization: `Bearer ${TOKEN}` }

let s: TestServer
let browser: BrowserContext
beforeAll(async () => {
  s = await startServer({ args: ['--auth-token', TOKEN, '--stale-timeout', '1s', '--liveness-interval', '1h'] })
  browser = await launch()
})
afterAll(async () => {
  await browser?.close()
  await s.cleanup()
  console.log(`coordination screenshots: ${SHOTS}`)
})

const api = (method: string, path: string, body?: unknown, headers: Record<string, string> = {}) => call(s.api, method, path, body, { ...AUTH, ...headers })

const open = (width = 1360) => openPage(browser, s.dashboard + '/coordination', { token: TOKEN, size: { width, height: 900 } })
const shot = (page: Page, name: string) => page.screenshot({ path: join(SHOTS, `${name}.png`), fullPage: true })

describe('coordination page', () => {
  test('shows what is held with holder and liveness, follows the event stream, and force-releases', async () => {
    const alice = await register(s, 'alice', AUTH)
    const bob = await register(s, 'bob', AUTH)
    await api('PUT', '/api/locks/deploy/prod', { reason: 'release 2.4', ttl_ms: 600_000 }, alice.h)
    await api('PUT', '/api/locks/gpu', { limit: 2 }, alice.h)
    await api('PUT', '/api/locks/gpu', {}, bob.h)
    await api('POST', '/api/reservations', { project: 'shop', paths: ['src/api/**', 'src/db/schema.ts'], reason: 'auth rework' }, alice.h)
    await api('POST', '/api/reservations', { project: 'shop', paths: ['docs/**'], exclusive: false }, bob.h)
    await api('POST', '/api/reservations', { project: 'billing', paths: ['invoices/*.ts'], ttl_ms: 3_600_000 }, bob.h)

    const { page, problems } = await open()
    const locks = page.locator('#locks')
    const reservations = page.locator('#reservations')
    await locks.locator('tr[data-lock="deploy/prod"]').waitFor()
    await page.locator('#stream-status.live').waitFor()
    expect(await locks.locator('tr[data-lock="deploy/prod"]').innerText()).toMatch(/deploy\/prod[\s\S]*alice\s+active[\s\S]*release 2\.4/)
    expect(await locks.locator('tr[data-lock="gpu"]').count()).toBe(2)
    expect(await locks.locator('tr[data-lock="gpu"]').first().innerText()).toContain('2 of 2 slots')
    // The panels load independently: the reservations may still be on their way when the locks are in.
    await reservations.locator('[data-project="billing"]').waitFor()
    await reservations.locator('[data-project="shop"]').waitFor()
    expect(await reservations.locator('.project-group h3').allTextContents()).toEqual(['billing · 1', 'shop · 2'])
    const shop = reservations.locator('[data-project="shop"]')
    expect(await shop.innerText()).toMatch(/src\/api\/\*\*[\s\S]*exclusive[\s\S]*alice\s+active[\s\S]*auth rework/)
    expect(await shop.innerText()).toMatch(/docs\/\*\*[\s\S]*shared[\s\S]*bob\s+active/)
    await shot(page, 'coordination-1-held')

    // Live: a grant made elsewhere shows up without a reload (the poll is every 10 s).
    const t0 = Date.now()
    await api('POST', '/api/reservations', { project: 'shop', paths: ['README.md'] }, bob.h)
    await shop.getByText('README.md').waitFor({ timeout: 5000 })
    expect(Date.now() - t0).toBeLessThan(5000)

    // Force release takes two clicks and goes through the API.
    const deploy = locks.locator('tr[data-lock="deploy/prod"]')
    await deploy.getByRole('button', { name: 'Force release' }).click()
    await deploy.getByRole('button', { name: 'Confirm release' }).click()
    await deploy.waitFor({ state: 'detached', timeout: 5000 })
    expect((await api('GET', '/api/locks/deploy/prod')).status).toBe(404)
    const released = (await api('GET', '/api/events/history?topic=lock.released')).body
    expect(released[0].data).toMatchObject({ name: 'deploy/prod', reason: 'forced' })

    const billing = reservations.locator('[data-project="billing"]')
    await billing.getByRole('button', { name: 'Force release' }).click()
    await billing.getByRole('button', { name: 'Confirm release' }).click()
    await billing.waitFor({ state: 'detached', timeout: 5000 })

    // A holder that goes stale loses everything, and the page follows.
    await Bun.sleep(1100)
    await api('PUT', '/api/locks/gpu', {}, bob.h) // bob's call is a heartbeat
    await api('POST', '/api/liveness/check')
    await shop.locator('tr', { hasText: 'src/api/**' }).waitFor({ state: 'detached', timeout: 5000 })
    expect(await locks.locator('tr[data-lock="gpu"]').count()).toBe(1)
    expect(await locks.locator('tr[data-lock="gpu"]').innerText()).toContain('bob')
    await shot(page, 'coordination-2-after')

    const narrow = await open(390)
    await narrow.page.locator('#reservations [data-project="shop"]').waitFor()
    expect(await narrow.page.evaluate(() => document.documentElement.scrollWidth)).toBe(390)
    await shot(narrow.page, 'coordination-3-narrow')
    expect([...problems, ...narrow.problems]).toEqual([])
    await narrow.page.close()
    await page.close()
  })

  test('empty and token-needed states are deliberate', async () => {
    const page = await browser.newPage()
    await page.goto(s.dashboard + '/coordination') // no token in this tab
    await page.locator('dialog#token-dialog[open] button[value=cancel]').click()
    await page.locator('#locks .state-box.auth').getByText('Access token needed').waitFor()
    await page.locator('#reservations .state-box.auth').getByText('Access token needed').waitFor()
    await page.close()
    const t = await startServer()
    try {
      const empty = await browser.newPage()
      await empty.goto(t.dashboard + '/coordination')
      await empty.locator('#locks').getByText('No locks held').waitFor()
      await empty.locator('#reservations').getByText('No paths reserved').waitFor()
      await shot(empty, 'coordination-4-empty')
      await empty.close()
    } finally {
      await t.cleanup()
    }
  })
})

describe('coordination page: agent hooks', () => {
  const hook = (agent: string, event: Record<string, unknown>, name: string) =>
    api('POST', `/api/hooks/${agent}`, { cwd: '/work/garden', ...event }, { 'x-muster-agent': name, 'x-muster-project': 'garden', 'x-muster-root': '/work/garden' })

  test('each instance shows its hook session and agent kind; a blocked edit shows up live with who, which paths, held by whom', async () => {
    expect((await hook('claude-code', { session_id: 'cc-5f2a9e61', hook_event_name: 'SessionStart', source: 'startup' }, 'claude-ivy')).status).toBe(200)
    expect((await hook('codex', { session_id: 'cx-77d0b3c4', hook_event_name: 'SessionStart', source: 'startup' }, 'codex-oak')).status).toBe(200)
    const holder = await register(s, 'rowan', AUTH)
    await api('POST', '/api/reservations', { project: 'garden', paths: ['beds/**'], reason: 'replanting', ttl_ms: 3_600_000 }, holder.h)

    const { page, problems } = await open()
    await page.locator('#stream-status.live').waitFor()
    const agents = page.locator('#agents')
    await agents.locator('tr[data-agent="claude-code"]').waitFor()
    expect(await agents.locator('tr[data-agent="claude-code"]').innerText()).toMatch(/claude-ivy\s+active[\s\S]*Claude Code[\s\S]*cc-5f2a9e61[\s\S]*\/work\/garden[\s\S]*project garden/)
    expect(await agents.locator('tr[data-agent="codex"]').innerText()).toMatch(/codex-oak\s+active[\s\S]*Codex/)
    expect(await agents.locator('tr', { hasText: 'rowan' }).innerText()).toContain('no hook session')
    await page.locator('#blocked').getByText('No edits blocked').waitFor()

    // The Claude Code session tries to write a file rowan holds: denied, and on the page at once (the poll is every 10 s).
    const denied = await hook('claude-code', { session_id: 'cc-5f2a9e61', hook_event_name: 'PreToolUse', tool_name: 'Write', tool_input: { file_path: '/work/garden/beds/roses.md', content: 'x' } }, 'claude-ivy')
    expect(denied.body.hookSpecificOutput.permissionDecision).toBe('deny')
    const row = page.locator('#blocked tr[data-session="cc-5f2a9e61"]')
    await row.waitFor({ timeout: 5000 })
    expect(await row.innerText()).toMatch(/claude-ivy[\s\S]*Claude Code[\s\S]*beds\/roses\.md[\s\S]*beds\/\*\*[\s\S]*held by rowan\s+active[\s\S]*replanting/)
    expect(await row.locator('[data-holder]').getAttribute('data-holder')).toBe('rowan')
    await shot(page, 'coordination-5-hooks')

    // The session ends: its instance goes, the page follows; the blocked edit stays in the list.
    await hook('claude-code', { session_id: 'cc-5f2a9e61', hook_event_name: 'SessionEnd', reason: 'exit' }, 'claude-ivy')
    await agents.locator('tr[data-agent="claude-code"]').waitFor({ state: 'detached', timeout: 5000 })
    expect(await page.locator('#blocked tr[data-session="cc-5f2a9e61"] .who-blocked').textContent()).toBe('claude-ivy')
    const narrow = await open(390)
    await narrow.page.locator('#blocked tr[data-session="cc-5f2a9e61"]').waitFor()
    expect(await narrow.page.evaluate(() => document.documentElement.scrollWidth)).toBe(390)
    await shot(narrow.page, 'coordination-6-hooks-narrow')
    expect([...problems, ...narrow.problems]).toEqual([])
    await narrow.page.close()
    await page.close()
  })
})
