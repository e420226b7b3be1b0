// A fake OpenAI Responses API for driving the real Codex CLI. The model's turns come from
// scripts (lib/script.ts) picked by a marker in the user's prompt; which turn is next is
// the number of model outputs after that prompt, so a conversation replays the same
// whatever Codex resends. Every request is logged (lib/script.ts's RequestLog), so a test
// asserts what reached the model: the briefing in the developer/user context, a deny
// reason in a function_call_output, a message in hook context.
//
// Shapes follow what Codex reads from a `wire_api = "responses"` provider: SSE events
// `response.created`, `response.output_item.added` / `.done` (a `function_call`, a
// `custom_tool_call` for the freeform `apply_patch` tool, or a `message`),
// `response.completed` with usage.
import { readRequest, RequestLog, ScriptBook, type Exchange, type Said } from './lib/script'

/** One model turn of Codex: an apply_patch, a shell command, a tool call, or a final text. */
export type CodexTurn =
  | { patch: string }
  | { shell: string; workdir?: string }
  | { call: string; arguments: Record<string, unknown>; namespace?: string }
  /** Codex's client-side tool_search (MCP tools are deferred behind it). */
  | { search: string }
  | Said

export interface FakeOpenAI {
  url: string
  /** `base_url` for Codex: ends in /v1. */
  baseUrl: string
  log: RequestLog
  scripts: ScriptBook<CodexTurn>
  stop(): void
}

/** All the text of a Responses request: instructions and every input item's strings. */
export function requestText(body: any): string {
  const out: string[] = []
  const walk = (v: unknown) => {
    if (typeof v === 'string') out.push(v)
    else if (Array.isArray(v)) v.forEach(walk)
    else if (v && typeof v === 'object') for (const [k, x] of Object.entries(v)) if (k !== 'tools') walk(x)
  }
  walk(body?.instructions)
  walk(body?.input)
  return out.join('\n')
}

/** Input items the model produced. */
const MODEL_ITEMS = new Set(['function_call', 'custom_tool_call', 'tool_search_call', 'local_shell_call'])
/** Input items that carry what a tool gave back to the model. */
const OUTPUT_ITEMS = new Set(['function_call_output', 'custom_tool_call_output', 'tool_search_output', 'local_shell_call_output'])

/** The input as a conversation: user messages and tool outputs from the user side, the model's items and messages from the model. */
function conversation(input: unknown): Exchange[] {
  if (!Array.isArray(input)) return []
  const out: Exchange[] = []
  for (const i of input) {
    if (!i || typeof i !== 'object') continue
    if (MODEL_ITEMS.has(i.type) || (i.type === 'message' && i.role === 'assistant')) out.push({ role: 'model', text: requestText({ input: i }) })
    else if ((i.type === 'message' && i.role === 'user') || OUTPUT_ITEMS.has(i.type)) out.push({ role: 'user', text: requestText({ input: i }) })
  }
  return out
}

let ids = 0
const id = (p: string) => `${p}_${Date.now().toString(36)}${(++ids).toString(36)}`

/** The output item for a turn, given the tools Codex offered in this request. */
function itemOf(turn: CodexTurn, tools: any[]): Record<string, unknown> {
  const names = new Set(tools.map((t) => t?.name ?? t?.type))
  if ('text' in turn) return { type: 'message', id: id('msg'), role: 'assistant', status: 'completed', content: [{ type: 'output_text', text: turn.text, annotations: [] }] }
  if ('patch' in turn) {
    const custom = tools.find((t) => t?.name === 'apply_patch')
    if (custom?.type === 'custom') return { type: 'custom_tool_call', id: id('ctc'), call_id: id('call'), name: 'apply_patch', input: turn.patch, status: 'completed' }
    if (custom) return { type: 'function_call', id: id('fc'), call_id: id('call'), name: 'apply_patch', arguments: JSON.stringify({ input: turn.patch }), status: 'completed' }
    throw new Error(`Codex offered no apply_patch tool (tools: ${[...names].join(', ')})`)
  }
  if ('shell' in turn) {
    // Codex offers one shell tool per model family: the unified exec tool, `shell_command`, or `shell`.
    if (names.has('exec_command')) return fc('exec_command', { cmd: turn.shell, ...(turn.workdir ? { workdir: turn.workdir } : {}), yield_time_ms: 30000 })
    if (names.has('shell_command')) return fc('shell_command', { command: turn.shell, ...(turn.workdir ? { workdir: turn.workdir } : {}), timeout_ms: 30000 })
    if (names.has('shell')) return fc('shell', { command: ['bash', '-lc', turn.shell], ...(turn.workdir ? { workdir: turn.workdir } : {}) })
    throw new Error(`Codex offered no shell tool (tools: ${[...names].join(', ')})`)
  }
  if ('search' in turn) {
    if (!names.has('tool_search')) throw new Error(`Codex offered no tool_search (tools: ${[...names].join(', ')})`)
    return { type: 'tool_search_call', id: id('tsc'), call_id: id('call'), execution: 'client', status: 'completed', arguments: { query: turn.search, limit: 8 } }
  }
  return { ...fc(turn.call, turn.arguments), ...(turn.namespace ? { namespace: turn.namespace } : {}) }
}

const fc = (name: string, args: Record<string, unknown>) => ({ type: 'function_call', id: id('fc'), call_id: id('call'), name, arguments: JSON.stringify(args), status: 'completed' })

function sse(events: Record<string, unknown>[]): Response {
  const body = events.map((e) => `event: ${e.type}\ndata: ${JSON.stringify(e)}\n\n`).join('')
  return new Response(body, { headers: { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' } })
}

function responseOf(item: Record<string, unknown> | null, model: string): Response {
  const rid = id('resp')
  const usage = { input_tokens: 100, input_tokens_details: { cached_tokens: 0 }, output_tokens: 10, output_tokens_details: { reasoning_tokens: 0 }, total_tokens: 110 }
  const base = { id: rid, object: 'response', model, created_at: Math.floor(Date.now() / 1000) }
  const events: Record<string, unknown>[] = [{ type: 'response.created', response: { ...base, status: 'in_progress', output: [] } }]
  if (item) {
    events.push({ type: 'response.output_item.added', output_index: 0, item: { ...item, status: 'in_progress' } })
    events.push({ type: 'response.output_item.done', output_index: 0, item })
  }
  events.push({ type: 'response.completed', response: { ...base, status: 'completed', output: item ? [item] : [], usage } })
  return sse(events)
}

export function startFakeOpenAI(): FakeOpenAI {
  const log = new RequestLog()
  const scripts = new ScriptBook<CodexTurn>()
  const server = Bun.serve({
    hostname: '127.0.0.1',
    port: 0,
    // A scripted step may run another agent before it answers: no idle cut-off.
    idleTimeout: 0,
    async fetch(req) {
      const { method, path, raw, body } = await readRequest(req)
      if (method === 'GET' && /\/models$/.test(path)) {
        log.add({ method, path, body, raw, text: '', script: null, step: null })
        return Response.json({ object: 'list', data: [], models: [] })
      }
      // Codex reports each turn's cost to its provider once its telemetry is on (muster init's [otel]).
      if (method === 'POST' && /\/analytics\/codex\/turn-costs$/.test(path)) {
        log.add({ method, path, body, raw, text: '', script: null, step: null })
        return Response.json({})
      }
      if (method !== 'POST' || !/\/responses$/.test(path)) {
        log.stray({ method, path, body, raw })
        return Response.json({ error: { message: `fake-openai: no ${method} ${path}` } }, { status: 404 })
      }
      const picked = scripts.select(conversation(body?.input))
      log.add({ method, path, body, raw, text: requestText(body), script: picked?.script.name ?? null, step: picked?.step ?? null })
      const model = typeof body?.model === 'string' ? body.model : 'gpt-5-codex'
      try {
        const turn: CodexTurn = picked ? await scripts.turn(picked.script, picked.step, log) : { text: 'done' }
        return responseOf(itemOf(turn, Array.isArray(body?.tools) ? body.tools : []), model)
      } catch (err) {
        return Response.json({ error: { message: (err as Error).message } }, { status: 400 })
      }
    },
  })
  const url = `http://127.0.0.1:${server.port}`
  return { url, baseUrl: `${url}/v1`, log, scripts, stop: () => server.stop(true) }
}
