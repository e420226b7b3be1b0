// The docs: every link, flag, command, environment variable, route and file they
// name exists (test/docs-check.ts reads them against the repository), and the README
// stays short. Then /docs in headless Chromium with every request off the server
// refused: the viewer (embedded from npm) loads, reads /openapi.json and renders the operations.
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { existsSync, readFileSync } from 'node:fs'
import { dirname, join } from 'node:path'
import type { BrowserContext } from 'playwright-core'
import { buildProgram } from '../cli'
import { launch, openPage, shot } from './browser'
import {
  ROOT,
  checkCli,
  checkLinks,
  cliTree,
  codeOf,
  declaredRoutes,
  envNamesInCode,
  namesInCode,
  pathsNamed,
  readDocs,
  routeExists,
  routesNamed,
  segmentsOf,
  serverFlags,
  topLevel,
  type Finding,
  type Route,
} from './docs-check'
import { call, startServer, tempDir, type TestServer } from './helpers'

const docs = readDocs()
const report = (findings: Finding[]) => findings.map((f) => `${f.file}:${f.line}: ${f.problem}`)

// Names the docs must mention that no code in the repository holds.
const FOREIGN_ENV = new Map<string, string>([])

describe('the docs name only what exists', () => {
  test('README.md is at most 250 lines', () => {
    expect(readFileSync(join(ROOT, 'README.md'), 'utf8').trimEnd().split('\n').length).toBeLessThanOrEqual(250)
  })

  test('every relative link resolves to a file, and every #anchor to a heading', () => {
    expect(report(checkLinks(docs))).toEqual([])
  })

  test('every page under docs/ is linked from another page', () => {
    const linked = new Set<string>()
    for (const doc of docs)
      for (const m of doc.text.matchAll(/\]\(([^)#\s]+)(?:#[^)]*)?\)/g))
        if (!/^(https?|mailto):/.test(m[1]!)) linked.add(join(dirname(doc.file), m[1]!))
    expect(docs.filter((d) => d.file.startsWith('docs/') && !linked.has(d.file)).map((d) => d.file)).toEqual([])
  })

  test('no doc cites a file kept outside the repository', () => {
    const out: Finding[] = []
    for (const doc of docs)
      doc.lines.forEach((text, i) => {
        // Contracts and notes live beside the repository, not in it: describe them, never cite them.
        for (const m of text.matchAll(/`([\w.-]+\.md)`|\.\.\/shared|\/work\//g)) {
          if (m[1] && ['CLAUDE.md', 'AGENTS.md', 'GEMINI.md', 'README.md', 'CHANGELOG.md'].includes(m[1])) continue
          out.push({ file: doc.file, line: i + 1, problem: `cites ${m[0]}: link to a file in the repository instead` })
        }
      })
    expect(report(out)).toEqual([])
  })

  test('every muster command exists with its options, and every flag is a server flag or a muster option', () => {
    const server = serverFlags()
    const tree = cliTree(buildProgram())
    const cli = new Set([...tree.globals, ...[...tree.commands.values()].flatMap((s) => [...s])])
    // A bare flag in these pages is the server's; elsewhere it may be either's.
    const serverPage = (file: string) => /docs\/(configuration|replicas)\.md$/.test(file)
    const out: Finding[] = []
    for (const doc of docs)
      for (const { code, line, fenced } of codeOf(doc))
        // On the CLI's page a span that starts with a command (`state get <key>`) is that command.
        for (const { program, words } of segmentsOf(!fenced && doc.file === 'docs/cli.md' && tree.commands.has(code.split(/\s/)[0]!) ? `muster ${code}` : code)) {
          const flags = words.map((w) => /^\[?(--[a-zA-Z][a-zA-Z0-9-]*)/.exec(w)?.[1]).filter((f): f is string => !!f)
          const fail = (problem: string) => out.push({ file: doc.file, line, problem })
          if (program === 'muster') checkCli(words, tree).forEach(fail)
          else if (program === 'server' || (program === 'none' && serverPage(doc.file)))
            flags.filter((f) => !server.has(f)).forEach((f) => fail(`${f} is not a server flag (lib/config.ts)`))
          else if (program === 'none')
            flags.filter((f) => !server.has(f) && !cli.has(f)).forEach((f) => fail(`${f} is neither a server flag nor a muster option`))
        }
    expect(report(out)).toEqual([])
  })

  test('docs/configuration.md names every server flag and its variable', () => {
    const page = docs.find((d) => d.file === 'docs/configuration.md')!.text
    const source = readFileSync(join(ROOT, 'lib/config.ts'), 'utf8')
    const names = [...source.matchAll(/flag:\s*'(--[a-z0-9-]+)',\s*env:\s*'([A-Z_]+)'/g)].flatMap((m) => [m[1]!, m[2]!])
    expect(names.length).toBeGreaterThan(30)
    expect(names.filter((n) => !page.includes(`\`${n}`))).toEqual([])
  })

  test('docs/cli.md names every command of the CLI', () => {
    const tree = cliTree(buildProgram())
    const spans = codeOf(docs.find((d) => d.file === 'docs/cli.md')!).map((c) => c.code)
    const paths = [...tree.commands.keys()]
    const leaves = paths.filter((k) => k && !paths.some((o) => o.startsWith(`${k} `)))
    // `webhooks delete|test <id>` names `webhooks test` too.
    const named = (path: string) => {
      const [group, ...rest] = path.split(' ')
      return spans.some((s) => s.startsWith(path) || (rest.length > 0 && s.startsWith(`${group} `) && new RegExp(`(^|[\\s|])${rest.join(' ')}([\\s|\\\\]|$)`).test(s.slice(group!.length))))
    }
    expect(leaves.length).toBeGreaterThan(80)
    expect(leaves.filter((k) => !named(k))).toEqual([])
  })

  test('every SERVICE_* and MUSTER_* variable is one the code reads', () => {
    const known = envNamesInCode()
    const out: Finding[] = []
    for (const doc of docs)
      doc.lines.forEach((text, i) => {
        for (const m of text.matchAll(/\b(?:SERVICE|MUSTER)_[A-Z0-9_]+\b/g))
          if (!known.has(m[0]) && !FOREIGN_ENV.has(m[0])) out.push({ file: doc.file, line: i + 1, problem: `${m[0]} appears in no source file` })
      })
    expect(report(out)).toEqual([])
  })

  test('every Prometheus metric, event topic and audit action named is one the code uses', () => {
    const out: Finding[] = []
    const metrics = namesInCode(/\b(?:muster|process)_[a-z_]+\b/g)
    for (const doc of docs)
      for (const { code, line } of codeOf(doc))
        for (const m of code.matchAll(/^(?:muster|process)_[a-z_]+$/g))
          if (!metrics.has(m[0])) out.push({ file: doc.file, line, problem: `metric ${m[0]} appears in no source file` })
    // Event topics and audit actions are written whole in their services (`tx.emit('task.retried', …)`,
    // `audit: 'task.retry'`), or a few as the two halves of `${kind}.${change}`.
    const quoted = namesInCode(/'[a-z]+\.[a-z]+'|'[a-z]+'/g)
    const KINDS = 'state|spec|specs|contract|instance|instances|rule|rules|webhook|template|compliance|backup|task|lock|reservation|message|token|hook|edit|llm|liveness'
    for (const doc of docs)
      for (const { code, line } of codeOf(doc))
        for (const m of code.matchAll(new RegExp(`^(${KINDS})\\.([a-z]+)$`, 'g')))
          if (!quoted.has(`'${m[1]}.${m[2]}'`) && !(quoted.has(`'${m[2]}'`) && quoted.has(`'${m[1]}'`)))
            out.push({ file: doc.file, line, problem: `${m[0]}: no event or audit action of that name in the code` })
    expect(report(out)).toEqual([])
  })

  test('every route a route file declares is named in the docs', () => {
    const named = docs.flatMap((d) => routesNamed(d))
    // The dashboard's proxy (`any /api/*`) and the viewer's own files are described, not listed as routes.
    const unlisted = declaredRoutes().filter(
      (r) =>
        r.method !== 'ALL' &&
        r.segments[0] !== 'docs' &&
        !named.some((n) => routeExists(n.method, n.path, [r])),
    )
    expect(unlisted.map((r) => `${r.method} /${r.segments.join('/')}`)).toEqual([])
  })

  test('every route named (GET /api/…, or a table row) is declared by a route file', () => {
    const routes = declaredRoutes()
    expect(routes.length).toBeGreaterThan(50)
    const out: Finding[] = []
    for (const doc of docs)
      for (const r of routesNamed(doc))
        if (!routeExists(r.method, r.path, routes)) out.push({ file: doc.file, line: r.line, problem: `${r.method} ${r.path}: no such route in routes/ or http/` })
    expect(report(out)).toEqual([])
  })

  test('every repository path named in code spans exists', () => {
    const top = topLevel()
    const out: Finding[] = []
    for (const doc of docs)
      for (const { code, line } of codeOf(doc))
        for (const path of pathsNamed(code, top))
          if (!existsSync(join(ROOT, path)))
            out.push({ file: doc.file, line, problem: `${path}: no such file or directory` })
    expect(report(out)).toEqual([])
  })
})

describe('the docs check itself', () => {
  // Made-up mistakes, one of each kind: the checks above would pass vacuously if they found nothing.
  const fake = (text: string) => ({ file: 'docs/fake.md', text, lines: text.split('\n') })
  test('finds a missing file, a missing anchor, an unknown command, option, flag, route and path', () => {
    expect(report(checkLinks([fake('[a](api/nothing.md) [b](api/state.md#no-such-heading) [c](api/state.md#history-retention)')]))).toEqual([
      'docs/fake.md:1: link to api/nothing.md: no such file in the repository',
      'docs/fake.md:1: link to api/state.md#no-such-heading: no heading #no-such-heading in docs/api/state.md',
    ])
    const tree = cliTree(buildProgram())
    const cli = (code: string) => segmentsOf(code).flatMap((seg) => (seg.program === 'muster' ? checkCli(seg.words, tree) : []))
    expect(cli('muster deploy now')).toEqual(['`muster deploy`: no such command'])
    expect(cli('muster state get k --forever')).toEqual(['`muster state get` has no option --forever'])
    expect(cli('muster state frobnicate k')).toEqual(['`muster state frobnicate`: no such command'])
    expect(cli('git diff --cached | muster check shop --stdin --pretty')).toEqual([])
    expect(serverFlags().has('--bind')).toBe(true)
    expect(serverFlags().has('--no-such-flag')).toBe(false)
    const routes = declaredRoutes()
    expect(routeExists('GET', '/api/state/{key…}', routes)).toBe(true)
    expect(routeExists('POST', '/api/rules/{project}/{rule_id}/accept|reject', routes)).toBe(true)
    expect(routeExists('DELETE', '/api/audit', routes)).toBe(false)
    expect(routeExists('GET', '/api/nothing', routes)).toBe(false)
    expect(pathsNamed('bun bench/run.ts queue; see routes/<name>.ts', topLevel())).toEqual(['bench/run.ts'])
    expect(envNamesInCode().has('SERVICE_BIND')).toBe(true)
  })
})

let s: TestServer
let browser: BrowserContext
const SHOTS = tempDir('muster-docs-shots-')

describe('/docs', () => {
  beforeAll(async () => {
    s = await startServer()
    browser = await launch()
  })
  afterAll(async () => {
    await browser?.close()
    await s?.cleanup()
    console.log(`docs screenshots: ${SHOTS}`)
  })

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

  test('every route the docs name is an operation of the served /openapi.json (the viewer and the document themselves aside)', async () => {
    const doc = (await call(s.api, 'GET', '/openapi.json')).body
    const operations: Route[] = Object.entries<Record<string, unknown>>(doc.paths).flatMap(([path, item]) =>
      Object.keys(item).map((method) => ({ method: method.toUpperCase(), segments: path.split('/').filter(Boolean).map((seg) => seg.replace(/^\{(.*)\}$/, ':$1')) })),
    )
    // /api/state/{key} holds a key with slashes: the document names it as one parameter.
    for (const op of operations) if (op.segments.join('/') === 'api/state/:key') op.segments = ['api', 'state', '*']
    const out: Finding[] = []
    for (const d of docs)
      for (const r of routesNamed(d))
        if (!['/docs', '/openapi.json'].includes(r.path) && !routeExists(r.method, r.path, operations))
          out.push({ file: d.file, line: r.line, problem: `${r.method} ${r.path}: not in /openapi.json` })
    expect(report(out)).toEqual([])
  })

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

