// Driving the dashboard in Debian's Chromium: one persistent browser per test
// file, pages that report their own errors, screenshots, and layout checks.
import { afterAll, beforeAll } from 'bun:test'
import { chromium, type BrowserContext, type Page } from 'playwright-core'
import { statSync } from 'node:fs'
import { join } from 'node:path'
import { call, startServer, tempDir } from './helpers'

const CHROMIUM = '/usr/bin/chromium'
export const WIDE = { width: 1400, height: 1000 }
export const NARROW = { width: 390, height: 844 }

export async function launch(): Promise<BrowserContext> {
  if (!statSync(CHROMIUM, { throwIfNoEntry: false }))
    throw new Error(`Chromium not found at ${CHROMIUM}: apt-get install -y chromium (.ci/run does this)`)
  return chromium.launchPersistentContext(tempDir('muster-chromium-'), {
    executablePath: CHROMIUM,
    headless: true,
    viewport: WIDE,
    args: ['--no-sandbox', '--disable-gpu', '--disable-background-networking', '--disable-component-update', '--disable-sync', '--no-first-run'],
  })
}

export interface Opened {
  page: Page
  /** Uncaught page errors and console errors other than failed resource loads (expected 401/404s). */
  problems: string[]
}

export interface OpenOptions {
  /** The tab starts with this token (as if entered before). */
  token?: string
  size?: { width: number; height: number }
  /** Runs before the first load, e.g. to set up page.route. */
  prepare?: (page: Page) => Promise<void>
}

/** A new tab on `url`. */
export async function openPage(browser: BrowserContext, url: string, { token, size = WIDE, prepare }: OpenOptions = {}): Promise<Opened> {
  const page = await browser.newPage()
  await page.setViewportSize(size)
  await prepare?.(page)
  const problems: string[] = []
  page.on('pageerror', (e) => problems.push(`pageerror: ${e.message}`))
  page.on('console', (m) => {
    if (m.type() === 'error' && !m.text().startsWith('Failed to load resource')) problems.push(`console: ${m.text()}`)
  })
  if (token) await page.addInitScript((t) => sessionStorage.setItem('muster.token', t), token)
  await page.goto(url)
  return { page, problems }
}

/** Every panel must end in content or a deliberate state, never stay on "Loading…". */
export async function settled(page: Page) {
  await page.waitForFunction(() => document.querySelectorAll('.state-box.loading').length === 0, null, { timeout: 10_000 })
}

/** Full page, or just the window when a modal dialog is open (its backdrop covers only the window). */
export async function shot(page: Page, dir: string, name: string, fullPage = true) {
  await page.evaluate(() => window.scrollTo(0, 0)) // else the sticky top bar lands mid-page in a full-page capture
  await page.screenshot({ path: join(dir, `${name}.png`), fullPage })
}

/**
 * Every visible table's cells end inside their panel, and no scrolling box scrolls
 * sideways: a column pushed out of view fails. Returns what overflows ([] = none).
 */
export function overflowing(page: Page): Promise<string[]> {
  return page.evaluate(() => {
    const out: string[] = []
    for (const table of document.querySelectorAll('table.data')) {
      const box = table.closest('.panel') ?? table.parentElement!
      if (!(table as HTMLElement).offsetParent) continue
      const right = box.getBoundingClientRect().right + 0.5
      const name = `${box.id || box.className} ${table.id || ''}`.trim()
      for (const c of table.querySelectorAll('th, td'))
        if (c.getBoundingClientRect().right > right) {
          out.push(`${name}: "${(c.textContent ?? '').trim().slice(0, 30)}" ends ${Math.round(c.getBoundingClientRect().right - right)}px past the panel`)
          break
        }
      for (let el: Element | null = table.parentElement; el && el !== box.parentElement; el = el.parentElement)
        if (el.scrollWidth > el.clientWidth + 1 && getComputedStyle(el).overflowX !== 'visible') out.push(`${name}: ${el.className || el.tagName} scrolls sideways`)
    }
    if (document.documentElement.scrollWidth > window.innerWidth) out.push(`page is ${document.documentElement.scrollWidth}px wide in a ${window.innerWidth}px window`)
    return out
  })
}

/**
 * One server run with the access token `token` (and `args`) and one browser for a test
 * file: the server starts at once, the browser before the first test; both close after
 * the last, and the folder of the file's screenshots is printed. `api` calls the server
 * as the admin.
 */
export async function browserSuite(label: string, token: string, args: string[] = []) {
  const shots = tempDir(`muster-${label}-shots-`)
  const s = await startServer({ args: ['--auth-token', token, ...args] })
  const auth = { authorization: `Bearer ${token}` }
  let context: BrowserContext | undefined
  beforeAll(async () => (context = await launch()))
  afterAll(async () => {
    await context?.close()
    await s.cleanup()
    console.log(`${label} screenshots: ${shots}`)
  })
  return {
    s,
    api: (method: string, path: string, body?: unknown, headers: Record<string, string> = {}) => call(s.api, method, path, body, { ...auth, ...headers }),
    browser: () => context!,
    shot: (page: Page, name: string, fullPage = true) => shot(page, shots, name, fullPage),
  }
}
