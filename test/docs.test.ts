// /docs in headless Chromium with every request off the server refused: the
// viewer (embedded from npm) loads, reads /openapi.json and renders the operations.
import { afterAll, describe, expect, test } from 'bun:test'
import { join } from 'node:path'
import { launch, openPage, shot } from './browser'
import { call, startServer, tempDir } from './helpers'

const s = await startServer()
const browser = await launch()
const SHOTS = tempDir('muster-docs-shots-')
afterAll(async () => {
  await browser.close()
  await s.cleanup()
  console.log(`docs screenshots: ${SHOTS}`)
})

describe('/docs', () => {
  test('renders every operation offline: nothing is requested from anywhere but the server', async () => {
    const origin = new URL(s.api).origin
    const refused: string[] = []
    const { page, problems } = await openPage(browser, `${s.api}/docs`, {
      prepare: async (page) => {
        await page.route('**/*', (route) => {
          if (new URL(route.request().url()).origin === origin) return route.continue()
          refused.push(route.request().url())
          return route.abort()
        })
      },
    })
    await page.locator('.opblock').first().waitFor({ timeout: 15_000 })
    const paths = await page.locator('.opblock-summary-path').allTextContents()
    const doc = (await call(s.api, 'GET', '/openapi.json')).body
    const operations = Object.values<Record<string, unknown>>(doc.paths).reduce((n, item) => n + Object.keys(item).length, 0)
    expect(paths.length).toBe(operations)
    expect(paths.map((p) => p.replace(/\u200b/g, ''))).toEqual(expect.arrayContaining(['/api/state/{key}', '/api/instances/register', '/metrics']))
    await expect(page.locator('.info .title').textContent()).resolves.toContain('Muster API')

    await shot(page, SHOTS, 'docs-top', false)

    // One operation opened: its parameters and the {error, code} answers show.
    await page.locator('#operations-state-getStateByKey .opblock-summary').click()
    await page.locator('#operations-state-getStateByKey .parameters').waitFor()
    const opened = await page.locator('#operations-state-getStateByKey').textContent()
    for (const text of ['key', 'If-None-Match', '304', '404', 'ETag']) expect(opened).toContain(text)
    await page.locator('#operations-state-getStateByKey').screenshot({ path: join(SHOTS, 'docs-state-read.png') })
    expect(refused).toEqual([])
    expect(problems).toEqual([])
  }, 60_000)

  test('served from the npm bundle with the API auth: a token server refuses /docs and its files without the token', async () => {
    const token = await startServer({ args: ['--auth-token', 'docs-token'] })
    try {
      for (const path of ['/docs', '/docs/swagger-ui-bundle.js', '/openapi.json']) expect((await call(token.api, 'GET', path)).status).toBe(401)
      const viewer = await fetch(`${token.api}/docs/swagger-ui-bundle.js`, { headers: { authorization: 'Bearer docs-token' } })
      expect(viewer.status).toBe(200)
      expect(await viewer.text()).toContain('SwaggerUIBundle')
    } finally {
      await token.cleanup()
    }
  })
})

