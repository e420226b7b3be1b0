// A fake OpenAI Responses API for driving the real Codex CLI. Each request is answered
// from a scripted conversation picked by a marker that appears in the request's input
// (the user's prompt); the turn is the number of model outputs already in that input, so
// a conversation replays the same whatever Codex resends. Every request is logged, so a
// test asserts what reached the model: the briefing in the developer/user context, a deny
// reason in a function_call_output, a message in hook context.
//
// Shapes follow what Codex reads from a `wire_api = "responses"` provider: SSE events
// `response.created`, `response.output_item.added` / `.done` (a `function_call`, a
// `custom_tool_call` for the freeform `apply_patch` tool, or a `message`),
// `response.completed` with usage.

/** One model turn: a tool call, an apply_patch, a shell command, or a final text. */
export type Turn =
  | { patch: string }
  | { shell: string; workdir?: string }
  | { call: string; arguments: Record<string, unknown>; namespace?: string }
  /** Codex's client-side tool_search (MCP tools are deferred behind it). */
  | { search: string }
  | { text: string }

/** A turn decided when its request comes (it may act first: send a message, run another agent). */
export type Step = Turn | ((req: LoggedRequest) => Turn | Promise<Turn>)

export interface Script {
  /** A string that appears in the prompt: picks this script. */
  marker: string
  turns: Step[]
}

export interface LoggedRequest {
  method: string
  path: string
  body: any
  /** Every piece of text in the body's input and instructions, joined: what the model saw. */
  text: string
  /** The script and turn it was answered from, or null (unknown path, no marker). */
  marker: string | null
  turn: number | null
}

export interface FakeOpenAI {
  url: string
  /** `base_url` for Codex: ends in /v1. */
  baseUrl: string
  requests: LoggedRequest[]
  /** Requests to paths this fake does not know (logged, answered 404). */
  unknown: LoggedRequest[]
  script(s: Script): void
  /** The model requests of one script, in order. */
  of(marker: string): LoggedRequest[]
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

/** The model outputs already in the input: which turn of the script comes next. */
function turnOf(input: unknown): number {
  if (!Array.isArray(input)) return 0
  return input.filter(
    (i) =>
      i &&
      (i.type === 'function_call' || i.type === 'custom_tool_call' || i.type === 'tool_search_call' || i.type === 'local_shell_call' || (i.type === 'message' && i.role === 'assistant')),
  ).length
}

/** The user-typed text of the input (user messages), where markers are looked for. */
function userText(input: unknown): string {
  if (!Array.isArray(input)) return ''
  return input
    .filter((i) => i && i.type === 'message' && i.role === 'user')
    .map((i) => requestText({ input: i.content }))
    .join('\n')
}

let ids = 0
const id = (p: string) => `${p}_${Date.now().toString(36)}${(++ids).toString(36)}`

/** The output item for a turn, given the tools Codex offered in this request. */
function itemOf(turn: Turn, tools: any[]): Record<string, unknown> {
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
  const scripts: Script[] = []
  const requests: LoggedRequest[] = []
  const unknown: LoggedRequest[] = []
  const server = Bun.serve({
    hostname: '127.0.0.1',
    port: 0,
    // A scripted step may run another agent before it answers: no idle cut-off.
    idleTimeout: 0,
    async fetch(req) {
      const path = new URL(req.url).pathname
      const raw = req.method === 'POST' ? await req.text() : ''
      let body: any = null
      try {
        body = raw ? JSON.parse(raw) : null
      } catch {
        body = raw
      }
      const entry: LoggedRequest = { method: req.method, path, body, text: requestText(body), marker: null, turn: null }
      requests.push(entry)
      if (req.method === 'GET' && /\/models$/.test(path)) return Response.json({ object: 'list', data: [], models: [] })
      // Codex reports each turn's cost to its provider once its telemetry is on (muster init's [otel]).
      if (req.method === 'POST' && /\/analytics\/codex\/turn-costs$/.test(path)) return Response.json({})
      if (req.method !== 'POST' || !/\/responses$/.test(path)) {
        unknown.push(entry)
        return Response.json({ error: { message: `fake-openai: no ${req.method} ${path}` } }, { status: 404 })
      }
      const said = userText(body?.input)
      const script = scripts.find((s) => said.includes(s.marker))
      const model = typeof body?.model === 'string' ? body.model : 'gpt-5-codex'
      if (!script) return responseOf({ type: 'message', id: id('msg'), role: 'assistant', status: 'completed', content: [{ type: 'output_text', text: 'done', annotations: [] }] }, model)
      const turn = turnOf(body?.input)
      entry.marker = script.marker
      entry.turn = turn
      const step = script.turns[turn] ?? { text: 'done' }
      try {
        const next = typeof step === 'function' ? await step(entry) : step
        return responseOf(itemOf(next, Array.isArray(body?.tools) ? body.tools : []), model)
      } catch (err) {
        return Response.json({ error: { message: (err as Error).message } }, { status: 400 })
      }
    },
  })
  const url = `http://127.0.0.1:${server.port}`
  return {
    url,
    baseUrl: `${url}/v1`,
    requests,
    unknown,
    script: (s) => void scripts.unshift(s),
    of: (marker) => requests.filter((r) => r.marker === marker),
    stop: () => server.stop(true),
  }
}
