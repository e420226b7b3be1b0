// Claude Code, Codex and Gemini CLI on one Muster, in one repository, each with its own
// agent token and name: each denied the files the others hold (the file unchanged, the
// reason reaching its own model through its own fake), and each reaching the others by
// name (`muster send` from its model's shell, read in the other model's context).
import { afterAll, beforeAll, expect, test } from 'bun:test'
import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { codexExec, codexWorld, muster as codexMuster, outputs, patchUpdate, type CodexWorld } from './codex'
import { startFakeAnthropic, type FakeAnthropic } from './fake-anthropic'
import { startFakeGemini, type FakeGemini } from './fake-gemini'
import { startFakeOpenAI, type FakeOpenAI } from './fake-openai'
import { geminiRun, geminiWorld, muster as geminiMuster, responses, type GeminiWorld } from './gemini'
import { bash, ClaudeSession, readAndEdit } from './lib/claude'
import { ensureAgent } from './lib/install'
import { startWorld, type World } from './lib/world'

const ADA = 'ada-claude'
const BOB = 'bob-codex'
const GIA = 'gia-gemini'

let world: World
let anthropic: FakeAnthropic
let openai: FakeOpenAI
let google: FakeGemini
let cw: CodexWorld
let gw: GeminiWorld
let repo: string
let ada: ClaudeSession
/** The environments of Codex's and Gemini CLI's runs: each its own agent token and name. */
let bob: Record<string, string>
let gia: Record<string, string>

async function agentToken(name: string): Promise<string> {
  const r = await world.api('POST', '/api/tokens', { name, role: 'agent' })
  if (r.status !== 201) throw new Error(`creating the agent token ${name}: ${r.status} ${r.text}`)
  return r.body.token
}

beforeAll(async () => {
  await Promise.all([ensureAgent('claude-code'), ensureAgent('codex'), ensureAgent('gemini-cli')])
  ;[world, anthropic] = await Promise.all([startWorld(), startFakeAnthropic()])
  openai = startFakeOpenAI()
  google = startFakeGemini()
  cw = await codexWorld({ modelUrl: openai.baseUrl, server: world.server.api })
  gw = await geminiWorld({ modelUrl: google.url, server: world.server.api })
  bob = { MUSTER_AGENT: BOB, SERVICE_TOKEN: await agentToken('agents-suite-codex') }
  gia = { MUSTER_AGENT: GIA, SERVICE_TOKEN: await agentToken('agents-suite-gemini') }
  repo = world.repo('team3')
  const claudeInit = await world.muster(['init', 'claude-code', '--reserve', '10m'], { cwd: repo })
  if (claudeInit.code !== 0) throw new Error(`muster init claude-code: ${claudeInit.code} ${claudeInit.stderr}`)
  const codexInit = codexMuster(cw, repo, ['init', 'codex', '--trust', '--allow-network', '--reserve', '10m'], bob)
  if (codexInit.code !== 0) throw new Error(`muster init codex: ${codexInit.code} ${codexInit.stderr}`)
  const geminiInit = geminiMuster(gw, repo, ['init', 'gemini-cli', '--trust', '--reserve', '10m'], gia)
  if (geminiInit.code !== 0) throw new Error(`muster init gemini-cli: ${geminiInit.code} ${geminiInit.stderr}`)
  ada = await ClaudeSession.start({ world, model: anthropic.url, cwd: repo, name: ADA })
}, 300_000)

afterAll(async () => {
  ada?.kill()
  openai?.stop()
  google?.stop()
  await Promise.all([world?.cleanup(), anthropic?.stop()])
  cw?.cleanup()
  gw?.cleanup()
})

const codex = (prompt: string) => codexExec(cw, repo, prompt, { env: bob })
const gemini = (prompt: string) => geminiRun(gw, repo, prompt, { env: gia })
const text = (file: string) => readFileSync(join(repo, file), 'utf8')
const writeFile = (file: string, content: string) => ({ tool: { name: 'write_file', input: { file_path: file, content } } })

test('the file Claude Code holds: Codex and Gemini CLI are denied, the file unchanged, each reason reaching its own model', async () => {
  await ada.prompt(`Fix the answer. ${anthropic.scripts.add({ name: 'ada-holds', steps: readAndEdit(join(repo, 'src/app.ts'), '41', '42'), finally: 'Edited.' })}`)
  expect(text('src/app.ts')).toBe('export const answer = 42\n')
  const patch = patchUpdate('src/app.ts', 'export const answer = 42', 'export const answer = 43')
  const b = await codex(openai.scripts.add({ name: 'bob-denied-ada', steps: [{ patch }, { text: 'denied, asking ada' }] }))
  expect(b.code, b.stderr).toBe(0)
  const g = await gemini(google.scripts.add({ name: 'gia-denied-ada', steps: [writeFile('src/app.ts', 'export const answer = 44\n'), { text: 'denied, asking ada' }] }))
  expect(g.code, g.stderr).toBe(0)
  expect(text('src/app.ts')).toBe('export const answer = 42\n')
  for (const reason of [outputs(openai.log.of('bob-denied-ada')[1]).join('\n'), responses(google.log.of('gia-denied-ada')[1]).join('\n')]) {
    expect(reason).toContain('src/app.ts')
    expect(reason).toContain(`by ${ADA} (active)`)
    expect(reason).toContain(`muster send ${ADA}`)
  }
}, 180_000)

test('the file Gemini CLI holds: Claude Code and Codex are denied while it runs, the file unchanged', async () => {
  let during = ''
  const adaTries = anthropic.scripts.add({ name: 'ada-denied-gia', steps: readAndEdit(join(repo, 'README.md'), '# team3 (gemini)', '# team3 (claude)'), finally: 'Denied.' })
  const bobTries = openai.scripts.add({ name: 'bob-denied-gia', steps: [{ patch: patchUpdate('README.md', '# team3 (gemini)', '# team3 (codex)') }, { text: 'denied' }] })
  // Gemini CLI's session holds README.md (edit-reserve) until it exits: its second turn runs the others.
  const holds = google.scripts.add({
    name: 'gia-holds',
    steps: [
      writeFile('README.md', '# team3 (gemini)\n'),
      async () => {
        await ada.prompt(`Retitle the readme. ${adaTries}`)
        const r = await codex(bobTries)
        expect(r.code, r.stderr).toBe(0)
        during = text('README.md')
        return { text: 'done' }
      },
    ],
  })
  const g = await gemini(holds)
  expect(g.code, g.stderr).toBe(0)
  expect(during).toBe('# team3 (gemini)\n')
  expect(ada.toolResults().join('\n')).toContain(`muster send ${GIA}`)
  expect(anthropic.log.of('ada-denied-gia')[2]?.text ?? '').toContain(GIA)
  const reason = outputs(openai.log.of('bob-denied-gia')[1]).join('\n')
  expect(reason).toContain('README.md')
  expect(reason).toContain(`by ${GIA} (active)`)
  // Gemini CLI's session ended with its run: README.md is free again.
  const held = ((await world.api('GET', '/api/reservations')).body as any[]).filter((r) => r.paths.includes('README.md'))
  expect(held).toEqual([])
}, 240_000)

test('the file Codex holds: Gemini CLI is denied while Codex runs', async () => {
  let during = ''
  const giaTries = google.scripts.add({ name: 'gia-denied-bob', steps: [{ tool: { name: 'run_shell_command', input: { command: "printf 'export const b = 2\\n' > src/bob.ts" } } }, { text: 'denied' }] })
  const holds = openai.scripts.add({
    name: 'bob-holds',
    steps: [
      { patch: `*** Begin Patch\n*** Add File: src/bob.ts\n+export const b = 1\n*** End Patch\n` },
      async () => {
        const r = await gemini(giaTries)
        expect(r.code, r.stderr).toBe(0)
        during = text('src/bob.ts')
        return { text: 'done' }
      },
    ],
  })
  const b = await codex(holds)
  expect(b.code, b.stderr).toBe(0)
  expect(during).toBe('export const b = 1\n')
  const reason = responses(google.log.of('gia-denied-bob')[1]).join('\n')
  expect(reason).toContain('src/bob.ts')
  expect(reason).toContain(`by ${BOB} (active)`)
}, 240_000)

test('each reaches the others by name: muster send from its shell lands in the next model', async () => {
  // Claude Code → Gemini CLI → Codex → Claude Code.
  await ada.prompt(`Tell gia. ${anthropic.scripts.add({ name: 'ada-sends', steps: [bash(`muster send ${GIA} --subject "tests are red" --body "please look at src/app.ts"`)], finally: 'Sent.' })}`)
  const giaSend = `muster send ${BOB} --subject "gia on it" --body "bob, the fixture is yours"; echo "exit=$?"`
  const g = await gemini(google.scripts.add({ name: 'gia-sends', steps: [{ tool: { name: 'run_shell_command', input: { command: giaSend } } }, { text: 'passed on' }] }))
  expect(g.code, g.stderr).toBe(0)
  const [gFirst, gSecond] = google.log.of('gia-sends')
  expect(gFirst.text).toContain('please look at src/app.ts')
  expect(responses(gSecond).join('\n')).toContain('exit=0')
  const bobSend = `muster send ${ADA} --subject "bob on it" --body "fixture fixed"; echo "exit=$?"`
  const b = await codex(openai.scripts.add({ name: 'bob-sends', steps: [{ shell: bobSend }, { text: 'replied' }] }))
  expect(b.code, b.stderr).toBe(0)
  const [bFirst, bSecond] = openai.log.of('bob-sends')
  expect(bFirst.text).toContain('bob, the fixture is yours')
  expect(outputs(bSecond).join('\n')).toContain('exit=0')
  await ada.prompt(`Anything new? ${anthropic.scripts.add({ name: 'ada-reads', steps: [], finally: 'Read it.' })}`)
  expect(anthropic.log.of('ada-reads')[0].text).toContain('fixture fixed')
  const sent = ((await world.api('GET', '/api/messages')).body as any[]).map((m) => [m.from, m.to, m.subject])
  expect(sent.sort()).toEqual([
    [ADA, [GIA], 'tests are red'],
    [BOB, [ADA], 'bob on it'],
    [GIA, [BOB], 'gia on it'],
  ])
}, 180_000)
