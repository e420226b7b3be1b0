// Claude Code and Codex on one Muster, in one repository: each agent its own token and
// name, each denied the file the other holds (the file unchanged, the reason reaching its
// own model through its fake), and each reaching the other by name (`muster send` from its
// model's shell, read in the other model's context). One line per scenario.
import { afterAll, beforeAll, expect, test } from 'bun:test'
import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { codexExec, codexWorld, muster, outputs, patchUpdate, type CodexWorld } from './codex'
import { startFakeAnthropic, type FakeAnthropic } from './fake-anthropic'
import { startFakeOpenAI, type FakeOpenAI } from './fake-openai'
import { bash, ClaudeSession, readAndEdit } from './lib/claude'
import { ensureAgent } from './lib/install'
import { startWorld, type World } from './lib/world'

/** The Claude Code session's name, and the Codex session's. */
const ADA = 'ada-claude'
const BOB = 'bob-codex'

let world: World
let anthropic: FakeAnthropic
let openai: FakeOpenAI
let cw: CodexWorld
let repo: string
let ada: ClaudeSession
/** The environment of Codex's runs: its own agent token and name. */
let bob: Record<string, string>

beforeAll(async () => {
  await Promise.all([ensureAgent('claude-code'), ensureAgent('codex')])
  ;[world, anthropic] = await Promise.all([startWorld(), startFakeAnthropic()])
  openai = startFakeOpenAI()
  cw = await codexWorld({ modelUrl: openai.baseUrl, server: world.server.api })
  const token = await world.api('POST', '/api/tokens', { name: 'agents-suite-codex', role: 'agent' })
  if (token.status !== 201) throw new Error(`creating Codex's agent token: ${token.status} ${token.text}`)
  bob = { MUSTER_AGENT: BOB, SERVICE_TOKEN: token.body.token }
  repo = world.repo('team')
  const claudeInit = await world.muster(['init', 'claude-code', '--reserve', '10m'], { cwd: repo })
  if (claudeInit.code !== 0) throw new Error(`muster init claude-code: ${claudeInit.code} ${claudeInit.stderr}`)
  const codexInit = muster(cw, repo, ['init', 'codex', '--trust', '--allow-network', '--reserve', '10m'], bob)
  if (codexInit.code !== 0) throw new Error(`muster init codex: ${codexInit.code} ${codexInit.stderr}`)
  ada = await ClaudeSession.start({ world, model: anthropic.url, cwd: repo, name: ADA })
}, 240_000)

afterAll(async () => {
  ada?.kill()
  openai?.stop()
  await Promise.all([world?.cleanup(), anthropic?.stop()])
  cw?.cleanup()
})

const codex = (prompt: string) => codexExec(cw, repo, prompt, { env: bob })
const text = (file: string) => readFileSync(join(repo, file), 'utf8')

test("Codex's edit of the file Claude Code holds is denied, the file unchanged, the reason reaching Codex's model", async () => {
  await ada.prompt(`Fix the answer. ${anthropic.scripts.add({ name: 'ada-holds', steps: readAndEdit(join(repo, 'src/app.ts'), '41', '42'), finally: 'Edited.' })}`)
  expect(text('src/app.ts')).toBe('export const answer = 42\n')
  const patch = patchUpdate('src/app.ts', 'export const answer = 42', 'export const answer = 43')
  const r = await codex(openai.scripts.add({ name: 'bob-denied', steps: [{ patch }, { text: 'denied, asking ada' }] }))
  expect(r.code, r.stderr).toBe(0)
  expect(text('src/app.ts')).toBe('export const answer = 42\n')
  const reason = outputs(openai.log.of('bob-denied')[1]).join('\n')
  expect(reason).toContain('src/app.ts')
  expect(reason).toContain(`by ${ADA} (active)`)
  expect(reason).toContain(`muster send ${ADA}`)
}, 120_000)

test("Claude Code's edit of the file Codex holds is denied, the file unchanged, the reason reaching Claude Code's model", async () => {
  let during = ''
  const adaTries = anthropic.scripts.add({ name: 'ada-denied', steps: readAndEdit(join(repo, 'README.md'), '# team (codex)', '# team (claude)'), finally: 'Denied.' })
  // Claude Code tries while Codex's session holds README.md: Codex's second turn waits for it.
  const holds = openai.scripts.add({
    name: 'bob-holds',
    steps: [
      { patch: patchUpdate('README.md', '# team', '# team (codex)') },
      async () => {
        await ada.prompt(`Retitle the readme. ${adaTries}`)
        during = text('README.md')
        return { text: 'done' }
      },
    ],
  })
  const r = await codex(holds)
  expect(r.code, r.stderr).toBe(0)
  expect(during).toBe('# team (codex)\n')
  const denied = ada.toolResults().join('\n')
  expect(denied).toContain('Muster denied this edit')
  expect(denied).toContain(`muster send ${BOB}`)
  // The request after the edit carried the deny reason to Claude Code's model.
  const after = anthropic.log.of('ada-denied')[2]?.text ?? ''
  expect(after).toContain(BOB)
  expect(after).toContain('README.md')
}, 120_000)

test('each reaches the other by name: muster send from its shell lands in the other model', async () => {
  await ada.prompt(`Tell bob. ${anthropic.scripts.add({ name: 'ada-sends', steps: [bash(`muster send ${BOB} --subject "tests are red" --body "please look at src/app.ts"`)], finally: 'Sent.' })}`)
  const send = `muster send ${ADA} --subject "on it" --body "looking at src/app.ts now"; echo "exit=$?"`
  const r = await codex(openai.scripts.add({ name: 'bob-sends', steps: [{ shell: send }, { text: 'replied' }] }))
  expect(r.code, r.stderr).toBe(0)
  const [first, second] = openai.log.of('bob-sends')
  expect(first.text).toContain('please look at src/app.ts')
  expect(outputs(second).join('\n')).toContain('exit=0')
  await ada.prompt(`Anything new? ${anthropic.scripts.add({ name: 'ada-reads', steps: [], finally: 'Read it.' })}`)
  expect(anthropic.log.of('ada-reads')[0].text).toContain('looking at src/app.ts now')
  const sent = ((await world.api('GET', '/api/messages')).body as any[]).map((m) => [m.from, m.to, m.subject])
  expect(sent.sort()).toEqual([
    [ADA, [BOB], 'tests are red'],
    [BOB, [ADA], 'on it'],
  ])
}, 120_000)
