// The Approvals page (/approvals) in Debian's Chromium: a permission request appears
// live, raises a browser notification, is allowed with the keyboard and the held hook
// answers; next and deny by keyboard; several selected and decided at once; rules; the
// overview's count.
// Screenshots go to a temp folder printed at the end.
import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from 'bun:test'
import type { BrowserContext } from 'playwright-core'
import { join } from 'node:path'
import { launch, openPage } from './browser'
import { call, startServer, tempDir } from './helpers'

const TOKEN = 'approvals-page-token'
const AUTH = { authorization: `Bearer ${TOKEN}` }
const SHOTS = tempDir('muster-approvals-page-')
setDefaultTimeout(30_000)

const s = await startServer({ args: ['--auth-token', TOKEN] })
let browser: BrowserContext
beforeAll(async () => {
  browser = await launch()
  await browser.grantPermissions(['notifications'], { origin: s.dashboard })
})
afterAll(async () => {
  await browser?.close()
  await s.cleanup()
  console.log(`approvals page screenshots: ${SHOTS}`)
})

/** A Claude Code PermissionRequest, held by the server until decided: its answer. */
const ask = (name: string, command: string) =>
  fetch(`${s.api}/api/hooks/claude-code`, {
    method: 'POST',
    headers: { ...AUTH, 'content-type': 'application/json', 'x-muster-agent': name, 'x-muster-project': 'shop' },
    body: JSON.stringify({ session_id: crypto.randomUUID(), hook_event_name: 'PermissionRequest', cwd: '/tmp/shop', tool_name: 'Bash', tool_input: { command } }),
  }).then((r) => r.json())

/** Records the page's browser notifications (the real constructor still runs). */
const recordNotifications = () => {
  const Real = window.Notification
  ;(window as any).__notes = []
  const Recorded = function (title: string, options?: NotificationOptions) {
    ;(window as any).__notes.push({ title, body: options?.body })
    return new Real(title, options)
  } as unknown as typeof Notification
  Object.defineProperty(Recorded, 'permission', { get: () => Real.permission })
  Recorded.requestPermission = Real.requestPermission.bind(Real)
  window.Notification = Recorded
}

const open = (path: string) => openPage(browser, s.dashboard + path, { token: TOKEN, prepare: async (p) => void (await p.addInitScript(recordNotifications)) })

describe('approvals page', () => {
  test('a request appears live with a notification; "a" allows it and the held hook answers allow', async () => {
    const { page, problems } = await open('/approvals')
    await page.locator('#stream-status.live').waitFor()
    await page.locator('#pending .state-box.empty').waitFor()
    const answer = ask('ada', 'npm run deploy -- --prod')
    const item = page.locator('.approval', { hasText: 'npm run deploy -- --prod' })
    await item.waitFor({ timeout: 5000 })
    expect(await item.locator('.who').textContent()).toBe('ada')
    expect(await item.locator('.tool').textContent()).toBe('Bash')
    expect(await item.getAttribute('aria-selected')).toBe('true')
    await page.locator('#approval-count:not([hidden])').waitFor()
    expect(await page.locator('#approval-count').textContent()).toBe('1')
    const notes = await page.waitForFunction(() => (window as any).__notes.length > 0 && (window as any).__notes)
    expect(await notes.jsonValue()).toEqual([{ title: 'ada asks to use Bash', body: 'npm run deploy -- --prod' }])
    await page.screenshot({ path: join(SHOTS, 'pending.png'), fullPage: true })

    await page.keyboard.press('a')
    expect(await answer).toEqual({ hookSpecificOutput: { hookEventName: 'PermissionRequest', decision: { behavior: 'allow' } } })
    await page.locator('#pending .state-box.empty').waitFor()
    await page.locator('#history tr', { hasText: 'npm run deploy' }).locator('.badge.ok').waitFor()
    expect(await page.locator('#approval-count').isHidden()).toBe(true)
    expect(problems).toEqual([])
    await page.close()
  })

  test('j moves to the next request; d denies it with the words typed; r remembers a rule', async () => {
    const { page, problems } = await open('/approvals')
    await page.locator('#stream-status.live').waitFor()
    const first = ask('bob', 'git push --force')
    await page.locator('.approval', { hasText: 'git push --force' }).waitFor()
    const second = ask('bob', 'rm -rf node_modules')
    await page.locator('.approval', { hasText: 'rm -rf node_modules' }).waitFor()
    // newest on top; the focus stays on the one in view (the first to arrive); j and k move it
    expect(await page.locator('.approval .summary').allTextContents()).toEqual(['rm -rf node_modules', 'git push --force'])
    const older = page.locator('.approval', { hasText: 'git push --force' })
    const newer = page.locator('.approval', { hasText: 'rm -rf node_modules' })
    expect(await older.getAttribute('aria-selected')).toBe('true')
    await page.keyboard.press('k')
    expect([await newer.getAttribute('aria-selected'), await older.getAttribute('aria-selected')]).toEqual(['true', 'false'])
    await page.keyboard.press('j')
    expect(await older.getAttribute('aria-selected')).toBe('true')
    await older.locator('input.message').fill('force pushes rewrite history: open a PR')
    await page.locator('body').click({ position: { x: 5, y: 300 } })
    await page.keyboard.press('d')
    const denied = await first
    expect(denied.hookSpecificOutput.decision.behavior).toBe('deny')
    expect(denied.hookSpecificOutput.decision.message).toContain('force pushes rewrite history: open a PR')
    // the remaining one is focused: r allows it and adds a rule
    await page.locator('.approval[aria-selected="true"]', { hasText: 'rm -rf node_modules' }).waitFor()
    await page.keyboard.press('r')
    expect((await second).hookSpecificOutput.decision.behavior).toBe('allow')
    await page.locator('#rules .rule-list li', { hasText: 'rm -rf node_modules' }).waitFor()
    await page.screenshot({ path: join(SHOTS, 'history-and-rules.png'), fullPage: true })
    expect(problems).toEqual([])
    await page.close()
  })

  test('x selects several; "Allow 2" decides them at once and each held hook answers', async () => {
    const { page, problems } = await open('/approvals')
    await page.locator('#stream-status.live').waitFor()
    const answers: Promise<any>[] = []
    for (const command of ['make lint', 'make docs', 'make clean']) {
      answers.push(ask('dee', command))
      await page.locator('.approval', { hasText: command }).waitFor()
    }
    // newest on top; the focus is on the first to arrive (the bottom one): x selects it, k moves up, x again
    await page.locator('.approval[aria-selected="true"]', { hasText: 'make lint' }).waitFor()
    await page.keyboard.press('x')
    await page.keyboard.press('k')
    await page.keyboard.press('x')
    await page.locator('#allow-all:not([hidden])').waitFor()
    expect(await page.locator('#allow-all').textContent()).toBe('Allow 2')
    await page.locator('#allow-all').click()
    const [lint, docs] = await Promise.all(answers.slice(0, 2))
    expect([lint.hookSpecificOutput.decision.behavior, docs.hookSpecificOutput.decision.behavior]).toEqual(['allow', 'allow'])
    // the third was not selected: still waiting, alone on the page
    await page.locator('#allow-all[hidden]').waitFor({ state: 'attached' })
    expect(await page.locator('.approval .summary').allTextContents()).toEqual(['make clean'])
    const waiting = ((await call(s.api, 'GET', '/api/approvals?status=pending', undefined, AUTH)).body as any[]).map((a) => a.summary)
    expect(waiting).toEqual(['make clean'])
    await page.keyboard.press('d')
    expect((await answers[2]).hookSpecificOutput.decision.behavior).toBe('deny')
    expect(problems).toEqual([])
    await page.close()
  })

  test('the overview counts the waiting requests, live', async () => {
    const { page, problems } = await open('/')
    await page.locator('.nav a[href="/approvals"]').waitFor()
    expect(await page.locator('#approval-count').isHidden()).toBe(true)
    const answer = ask('cy', 'make migrate')
    await page.locator('#approval-count:not([hidden])').waitFor({ timeout: 5000 })
    expect(await page.locator('#approval-count').textContent()).toBe('1')
    const id = ((await call(s.api, 'GET', '/api/approvals?status=pending', undefined, AUTH)).body as any[])[0].id
    await call(s.api, 'POST', `/api/approvals/${id}/decision`, { behavior: 'deny' }, AUTH)
    await answer
    await page.locator('#approval-count[hidden]').waitFor({ state: 'attached', timeout: 5000 })
    expect(problems).toEqual([])
    await page.close()
  })
})
