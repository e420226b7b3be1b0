// The dashboard port: its files (also from the compiled binary), the events
// WebSocket tunnel, and the web UI itself driven in Debian's Chromium.
//
// One server for the file, started with an access token so every UI test also
// exercises auth. Screenshots go to a temp folder printed at the end.
import { describe, expect, setDefaultTimeout, test } from 'bun:test'
import type { Page } from 'playwright-core'
import { readdirSync, readFileSync, rmSync } from 'node:fs'
import { join, relative } from 'node:path'
import { assets } from '../public/assets'
import { browserSuite, openPage, settled, type Opened } from './browser'
import { call, eventually, register, startServer, tempDir } from './helpers'

const ROOT = join(import.meta.dir, '..')
const PUBLIC = join(ROOT, 'public')
const TOKEN = 'dashboard-test-token'
const AUTH = { authorization: `Bearer ${TOKEN}` }

// A browser on a busy 2-core machine needs more than bun's 5 s default (bunfig's timeout is not applied by bun 1.4).
setDefaultTimeout(30_000)

const { s, api, browser, shot } = await browserSuite('dashboard', TOKEN, ['--stale-timeout', '1s'])

const wsBase = (base: string) => base.replace(/^http/, 'ws')

interface OpenOptions {
  token?: boolean
  width?: number
  height?: number
  /** Runs before the first load, e.g. to set up page.route. */
  prepare?: (page: Page) => Promise<void>
}

const open = (path: string, { token = true, width = 1360, height = 900, prepare }: OpenOptions = {}): Promise<Opened> =>
  openPage(browser(), s.dashboard + path, { token: token ? TOKEN : undefined, size: { width, height }, prepare })

/** The manifest that lists the files for embedding (public/assets.js and its types) is not itself served. */
const MANIFEST = new Set(['assets.js', 'assets.d.ts'])

function publicFiles(dir = PUBLIC): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) =>
    e.isDirectory() ? publicFiles(join(dir, e.name)) : [relative(PUBLIC, join(dir, e.name))].filter((f) => !MANIFEST.has(f)),
  )
}
/** index.html is served at /, any other page at its name without .html (rules.html at /rules). */
const urlOf = (file: string) => (file === 'index.html' ? '/' : file.endsWith('.html') ? `/${file.slice(0, -5)}` : `/${file}`)

describe('dashboard files', () => {
  test('every file of public/ is listed for embedding and served with its type; anything else is a JSON 404', async () => {
    const files = publicFiles()
    expect(Object.keys(assets).sort()).toEqual(files.map(urlOf).sort())
    for (const file of files) {
      const res = await fetch(s.dashboard + urlOf(file))
      expect(res.status).toBe(200)
      expect(new Uint8Array(await res.arrayBuffer())).toEqual(new Uint8Array(readFileSync(join(PUBLIC, file))))
      const type = res.headers.get('content-type') ?? ''
      const ext = file.split('.').pop()!
      expect(type).toContain({ html: 'text/html', js: 'javascript', css: 'text/css', svg: 'image/svg+xml' }[ext]!)
      expect(res.headers.get('content-security-policy')).toContain("default-src 'self'")
    }
    const missing = await call(s.dashboard, 'GET', '/js/nope.js')
    expect(missing.status).toBe(404)
    expect(missing.body).toEqual({ error: 'not found', code: 404 })
  })

  test('the compiled binary serves the UI with no public/ folder beside it', async () => {
    const out = tempDir('muster-binary-')
    const runDir = tempDir('muster-binary-run-')
    try {
      const build = Bun.spawnSync([process.execPath, 'build', '--compile', 'app.ts', '--outfile', join(out, 'muster-server')], { cwd: ROOT, stderr: 'pipe' })
      if (build.exitCode !== 0) throw new Error(`bun build --compile failed:\n${build.stderr}`)
      const proc = Bun.spawn([join(out, 'muster-server'), '--bind', '127.0.0.1:0', '--dashboard-bind', '127.0.0.1:0', '--data-dir', join(runDir, 'data')], { cwd: runDir, stdout: 'pipe' })
      try {
        let text = ''
        const reader = proc.stdout.getReader()
        const m = await eventually(async () => {
          const { value } = await reader.read()
          text += new TextDecoder().decode(value ?? new Uint8Array())
          return /dashboard on (\S+),/.exec(text)
        }, 10_000)
        // Every file of public/, pages and modules alike, comes out of the binary unchanged.
        for (const file of publicFiles()) {
          const res = await fetch(m![1] + urlOf(file))
          expect(res.status).toBe(200)
          expect(new Uint8Array(await res.arrayBuffer())).toEqual(new Uint8Array(readFileSync(join(PUBLIC, file))))
        }
      } finally {
        proc.kill()
        await proc.exited
      }
    } finally {
      rmSync(out, { recursive: true, force: true })
      rmSync(runDir, { recursive: true, force: true })
    }
  })
})

describe('events WebSocket on the dashboard port', () => {
  const upgrade = { upgrade: 'websocket', connection: 'Upgrade', 'sec-websocket-key': 'dGhlIHNhbXBsZSBub25jZQ==', 'sec-websocket-version': '13' }

  test('refuses the upgrade with 401 when the token is missing or wrong', async () => {
    for (const query of ['', '?token=wrong']) {
      const res = await fetch(`${s.dashboard}/api/events/subscribe${query}`, { headers: upgrade })
      expect(res.status).toBe(401)
      expect(await res.json()).toEqual({ error: 'invalid or missing bearer token', code: 401 })
    }
  })

  test('relays events with the pattern, and replays after_id, with ?token= or Authorization', async () => {
    const got: any[] = []
    const ws = new WebSocket(`${wsBase(s.dashboard)}/api/events/subscribe?pattern=relay.*&token=${TOKEN}`)
    ws.onmessage = (m) => got.push(JSON.parse(String(m.data)))
    await new Promise((resolve, reject) => ((ws.onopen = resolve), (ws.onerror = reject)))
    await api('POST', '/api/events/publish', { topic: 'other.one', data: 1 })
    const first = await api('POST', '/api/events/publish', { topic: 'relay.one', data: { n: 1 } })
    await api('POST', '/api/events/publish', { topic: 'relay.two', data: { n: 2 } })
    await eventually(() => got.length >= 2)
    expect(got.map((e) => e.topic)).toEqual(['relay.one', 'relay.two'])
    expect(got[0]).toEqual(first.body)
    ws.close()

    const replayed: any[] = []
    const again = new WebSocket(`${wsBase(s.dashboard)}/api/events/subscribe?pattern=relay.*&after_id=${first.body.id}`, { headers: AUTH } as any)
    again.onmessage = (m) => replayed.push(JSON.parse(String(m.data)))
    await eventually(() => replayed.length >= 1)
    expect(replayed.map((e) => e.topic)).toEqual(['relay.two'])
    again.close()
  })

  test('SIGTERM ends open event streams (1001) and the server exits promptly', async () => {
    const other = await startServer()
    try {
      const ws = new WebSocket(`${wsBase(other.dashboard)}/api/events/subscribe`)
      await new Promise((resolve, reject) => ((ws.onopen = resolve), (ws.onerror = reject)))
      const closed = new Promise<number>((resolve) => (ws.onclose = (e) => resolve(e.code)))
      const started = Date.now()
      await other.stop()
      expect(Date.now() - started).toBeLessThan(3000)
      expect(other.proc.exitCode).toBe(0)
      expect(await closed).toBe(1001)
    } finally {
      await other.cleanup()
    }
  })
})

describe('web UI in Chromium', () => {
  test('asks for the token once, keeps it across reloads, and offers it again after "Not now"', async () => {
    await api('PUT', '/api/state/auth/check', { ok: true })
    const { page, problems } = await open('/', { token: false })
    const dialog = page.locator('dialog#token-dialog[open]')
    await dialog.waitFor()
    await page.waitForTimeout(300) // every panel has met its 401 by now
    expect(await page.locator('dialog[open]').count()).toBe(1)
    await dialog.locator('input').fill('not-the-token')
    await dialog.locator('button[type=submit]').click()
    await dialog.getByText('That token was not accepted by the server.').waitFor()
    await shot(page, 'auth-1-rejected', false)
    await dialog.locator('input').fill(TOKEN)
    await dialog.locator('button[type=submit]').click()
    await page.locator('#key-list button', { hasText: 'auth/check' }).waitFor()
    expect(await page.evaluate(() => sessionStorage.getItem('muster.token'))).toBe(TOKEN)
    expect(await page.locator('dialog[open]').count()).toBe(0)
    await settled(page)
    await shot(page, 'auth-2-accepted')

    await page.reload()
    await page.locator('#key-list button', { hasText: 'auth/check' }).waitFor()
    expect(await page.locator('dialog[open]').count()).toBe(0)
    // With no other tab open to hand the token over (test/dashboard-admin.test.ts covers that), a new tab asks.
    await page.close()

    const other = await open('/', { token: false })
    await other.page.locator('dialog#token-dialog[open] button[value=cancel]').click()
    const statePrompt = other.page.locator('#key-list .state-box.auth')
    await statePrompt.getByText('Access token needed').waitFor()
    await settled(other.page)
    await shot(other.page, 'auth-3-declined')
    await statePrompt.getByRole('button', { name: 'Enter token' }).click()
    await other.page.locator('dialog#token-dialog[open] input').fill(TOKEN)
    await other.page.locator('dialog#token-dialog[open] button[type=submit]').click()
    await other.page.locator('#key-list button', { hasText: 'auth/check' }).waitFor()
    expect([...problems, ...other.problems]).toEqual([])
    await other.page.close()
  })

  test('every page draws the one top bar: each nav link, its own marked, the health pill live, the stream pill where it follows events', async () => {
    const pages = { '/': 'Overview', '/rules': 'Rules', '/coordination': 'Coordination', '/tasks': 'Tasks', '/messages': 'Messages', '/approvals': 'Approvals', '/admin': 'Admin' }
    const { page, problems } = await open('/')
    for (const [path, name] of Object.entries(pages)) {
      if (path !== '/') await page.goto(s.dashboard + path)
      const bar = page.locator('header.topbar')
      await bar.locator('#health.ok').waitFor()
      expect(await bar.locator('nav a').evaluateAll((links) => links.map((a) => [a.getAttribute('href'), a.textContent]))).toEqual(Object.entries(pages))
      expect(await bar.locator('nav a[aria-current=page]').textContent()).toBe(name)
      if (path === '/coordination' || path === '/tasks' || path === '/messages' || path === '/approvals') await bar.locator('#stream-status.live').waitFor()
      else expect(await bar.locator('#stream-status').count()).toBe(0)
      expect(await bar.locator('#auth-slot button', { hasText: 'Forget token' }).count()).toBe(1)
    }
    expect(problems).toEqual([])
    await page.close()
  })

  test('the overview renders state with history and diff, and the audit trail, created through the API', async () => {
    await api('PUT', '/api/state/ui/config', { name: 'a', port: 1 })
    await api('PUT', '/api/state/ui/config', { name: 'b', port: 1 })
    await api('PUT', '/api/state/ui/config', { name: 'b', port: 1, owner: 'agent-7' })
    await api('PUT', '/api/state/ui/notes', 'first line\n<b>not html</b>', { 'content-type': 'text/plain' })
    await api('PUT', '/api/state/ui/blob', new Uint8Array([0, 1, 2, 250]), { 'content-type': 'application/octet-stream' })
    await api('DELETE', '/api/state/ui/never-there')

    const { page, problems } = await open('/#key=ui/config')
    const viewer = page.locator('#viewer')
    await viewer.locator('pre.value').getByText('"owner": "agent-7"').waitFor()
    expect(await page.locator('#key-list button', { hasText: 'ui/config' }).textContent()).toContain('v3')
    await viewer.getByRole('tab', { name: 'History' }).click()
    await viewer.locator('.history-list').waitFor()
    await expect(viewer.locator('.history-list .v').allTextContents()).resolves.toEqual(['v3', 'v2', 'v1'])
    await viewer.getByRole('button', { name: 'Diff v1 → v2' }).click()
    const diffRow = viewer.locator('tbody tr')
    await diffRow.first().waitFor()
    expect(await diffRow.count()).toBe(1)
    expect(await diffRow.first().innerText()).toMatch(/replace\s+\/name\s+"a"\s+"b"/i)

    // Text is shown as text (never as HTML); binary values are offered as a download.
    await page.locator('#key-list button', { hasText: 'ui/notes' }).click()
    await viewer.locator('pre.value').getByText('<b>not html</b>').waitFor()
    await page.locator('#key-list button', { hasText: 'ui/blob' }).click()
    await viewer.getByText('Binary value').waitFor()

    const audit = page.locator('#audit tbody')
    await audit.getByText('state/ui/config').first().waitFor()
    const failed = audit.locator('tr.failed', { hasText: 'state/ui/never-there' })
    expect(await failed.innerText()).toContain('state.delete')
    await settled(page)
    await shot(page, 'overview')
    expect(problems).toEqual([])
    await page.close()
  })

  test('narrow windows: one column, tables as cards, no sideways scrolling', async () => {
    const { page, problems } = await open('/#key=ui/config', { width: 390, height: 844 })
    await page.locator('#audit tbody tr').first().waitFor()
    await settled(page)
    const layout = await page.evaluate(() => ({
      scrollWidth: document.documentElement.scrollWidth,
      theadHidden: getComputedStyle(document.querySelector('#audit thead')!).display === 'none',
      panelLefts: new Set([...document.querySelectorAll('.grid > .panel')].map((p) => Math.round(p.getBoundingClientRect().left))).size,
      panelsWithin: [...document.querySelectorAll('.panel')].every((p) => p.getBoundingClientRect().right <= window.innerWidth),
    }))
    expect(layout).toEqual({ scrollWidth: 390, theadHidden: true, panelLefts: 1, panelsWithin: true })
    await shot(page, 'overview-narrow')
    const rules = await open('/rules', { width: 390, height: 844 })
    await settled(rules.page)
    expect(await rules.page.evaluate(() => document.documentElement.scrollWidth)).toBe(390)
    await shot(rules.page, 'rules-narrow')
    expect([...problems, ...rules.problems]).toEqual([])
    await rules.page.close()
    await page.close()
  })

  test('a failing endpoint shows its error with Retry, and a missing one says so', async () => {
    const failing = (url: URL) => url.pathname === '/api/instances'
    // The real API never fails on demand, so these two answers are substituted in the browser.
    const { page, problems } = await open('/', {
      async prepare(page) {
        await page.route(failing, (route) =>
          route.fulfill({ status: 500, contentType: 'application/json', body: JSON.stringify({ error: 'internal server error', code: 500 }) }))
        await page.route((url) => url.pathname === '/api/llm/usage/summary', (route) =>
          route.fulfill({ status: 404, contentType: 'application/json', body: JSON.stringify({ error: 'not found', code: 404 }) }))
      },
    })
    const instances = page.locator('#instances .state-box.error')
    await instances.getByText('500: internal server error').waitFor()
    await page.locator('#llm .state-box.missing').getByText('Not available on this server').waitFor()
    await settled(page)
    await shot(page, 'overview-errors')
    await page.unroute(failing)
    await instances.getByRole('button', { name: 'Retry' }).click()
    await page.locator('#instances .state-box.error').waitFor({ state: 'detached' })
    expect(problems).toEqual([])
    await page.close()
  })

  test('an event published through the API appears in the live stream, filtered by topic', async () => {
    const { page, problems } = await open('/?topic=live.*')
    await page.locator('#stream-status', { hasText: 'Live' }).waitFor()
    expect(await page.inputValue('#topic-filter')).toBe('live.*')
    await api('POST', '/api/events/publish', { topic: 'elsewhere.ping', data: { n: 0 } })
    const published = await api('POST', '/api/events/publish', { topic: 'live.ping', data: { build: 'green', n: 42 } })
    const item = page.locator(`ol.events li[data-id="${published.body.id}"]`)
    await item.waitFor()
    expect(await item.innerText()).toContain('live.ping')
    expect(await item.locator('.ev-summary').innerText()).toBe('build green · n 42')
    await item.click()
    expect(await item.locator('pre.ev-data').innerText()).toContain('"build": "green"')
    expect(await page.locator('ol.events li[data-topic="elsewhere.ping"]').count()).toBe(0)
    await shot(page, 'live-events')
    expect(problems).toEqual([])
    await page.close()
  })

  test('instances show status, intent and last seen; stale ones stand out', async () => {
    const gone = await register(s, { name: 'ui-gone', workspace: 'web', intent: 'fixing the login form' }, AUTH)
    const alive = await register(s, { name: 'ui-alive', workspace: 'api', intent: 'adding pagination', stack: 'goth' }, AUTH)
    await Bun.sleep(1100) // past the 1 s stale timeout this server runs with
    await api('POST', `/api/instances/${alive.body.id}/heartbeat`)
    await api('POST', '/api/liveness/check')
    const { page, problems } = await open('/')
    const staleRow = page.locator(`#instances tr[data-id="${gone.body.id}"]`)
    await staleRow.waitFor()
    expect(await staleRow.getAttribute('class')).toContain('stale')
    expect(await staleRow.innerText()).toContain('fixing the login form')
    const aliveRow = page.locator(`#instances tr[data-id="${alive.body.id}"]`)
    expect(await aliveRow.innerText()).toMatch(/active[\s\S]*adding pagination[\s\S]*(just now|s ago)/)
    expect(await page.locator('#instances .meta').innerText()).toContain('stale')
    await shot(page, 'instances')
    expect(problems).toEqual([])
    await page.close()
  })

  test('LLM usage: totals, cost chart, by model and by project', async () => {
    const rows = [
      { model: 'model-a', project: 'proj-x', cost_usd: 0.5, tokens_in: 1000, tokens_out: 200 },
      { model: 'model-a', project: 'proj-y', cost_usd: 0.25, tokens_in: 500, tokens_out: 100 },
      { model: 'model-b', project: 'proj-x', cost_usd: 1, tokens_in: 2000, tokens_out: 400 },
    ]
    for (const r of rows) expect((await api('POST', '/api/llm/usage', { provider: 'test', ...r })).status).toBe(200)
    const { page, problems } = await open('/')
    const panel = page.locator('#llm')
    await panel.locator('.totals').getByText('$1.75').waitFor()
    expect(await panel.locator('.chart svg rect').count()).toBeGreaterThan(0)
    expect(await panel.locator('tbody').innerText()).toMatch(/model-b[\s\S]*model-a/)
    await panel.getByRole('button', { name: 'By project' }).click()
    await panel.locator('th', { hasText: 'Project' }).waitFor()
    expect(await panel.locator('tbody').innerText()).toMatch(/proj-x[\s\S]*\$1\.50/)
    await shot(page, 'llm-usage')
    expect(problems).toEqual([])
    await page.close()
  })

  test('a proposed rule accepted in the rules UI becomes accepted through the API', async () => {
    const proposed = await api('POST', '/api/rules/propose', { project: 'uiproj', rule_id: 'no-todo', pattern: 'TODO', severity: 'warning', context: 'TODOs keep slipping into merges' })
    expect(proposed.status).toBe(200)
    await api('POST', '/api/rules/propose', { project: 'uiproj', rule_id: 'no-fixme', pattern: 'FIXME' })
    const { page, problems } = await open('/rules#project=uiproj')
    const card = page.locator('.proposal[data-project="uiproj"][data-rule="no-todo"]')
    await card.getByText('TODOs keep slipping into merges').waitFor()
    await shot(page, 'rules-proposed')
    await card.getByRole('button', { name: 'Accept' }).click()
    await card.waitFor({ state: 'detached' })
    const learned = await api('GET', '/api/rules/export?source=learned')
    expect(learned.body).toContainEqual(expect.objectContaining({ project: 'uiproj', rule_id: 'no-todo', status: 'accepted', source: 'learned' }))
    const still = await api('GET', '/api/rules?status=proposed')
    const pending = (Array.isArray(still.body) ? still.body : still.body.rules).map((r: any) => `${r.project}/${r.rule_id}`)
    expect(pending).toContain('uiproj/no-fixme')
    expect(pending).not.toContain('uiproj/no-todo')
    await page.locator('#rules-table tr[data-rule="no-todo"]').waitFor()
    await shot(page, 'rules-accepted')
    expect(problems).toEqual([])
    await page.close()
  })

  test('local rules: add, edit and delete in the rules UI write through the API', async () => {
    const { page, problems } = await open('/rules#project=uilocal')
    await page.locator('#project-rules .state-box.empty').waitFor()
    await page.getByRole('button', { name: 'Add rule' }).click()
    const form = page.locator('#rule-dialog form')
    await form.locator('[name=rule_id]').fill('no-debugger')
    await form.locator('[name=pattern]').fill('debugger;')
    await form.locator('[name=applies_to]').fill('*.js, *.ts')
    await form.getByRole('button', { name: 'Save' }).click()
    await page.locator('#rules-table tr[data-rule="no-debugger"]').waitFor()
    let rules = (await api('GET', '/api/validate/uilocal/rules')).body.rules
    expect(rules).toEqual([expect.objectContaining({ rule_id: 'no-debugger', pattern: 'debugger;', severity: 'error', applies_to: ['*.js', '*.ts'] })])

    await page.locator('#rules-table tr[data-rule="no-debugger"]').getByRole('button', { name: 'Edit' }).click()
    await form.locator('[name=severity]').selectOption('warning')
    await form.getByRole('button', { name: 'Save' }).click()
    await page.locator('#rules-table tr[data-rule="no-debugger"] .badge', { hasText: 'warning' }).waitFor()
    rules = (await api('GET', '/api/validate/uilocal/rules')).body.rules
    expect(rules).toEqual([expect.objectContaining({ rule_id: 'no-debugger', severity: 'warning' })])
    await shot(page, 'rules-local')

    const del = page.locator('#rules-table tr[data-rule="no-debugger"]').getByRole('button', { name: 'Delete' })
    await del.click()
    await page.getByRole('button', { name: 'Confirm delete' }).click()
    await page.locator('#project-rules .state-box.empty').waitFor()
    expect((await api('GET', '/api/validate/uilocal/rules')).body.rules).toEqual([])
    expect(problems).toEqual([])
    await page.close()
  })
})
