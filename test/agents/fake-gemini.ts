// A fake Gemini API (generativelanguage v1beta) for driving the real Gemini CLI: the CLI
// reaches it through GOOGLE_GEMINI_BASE_URL with an API key. It serves
// `models/{model}:streamGenerateContent?alt=sse` (the agent's own turns, as server-sent
// events of GenerateContentResponse chunks), `:generateContent` (side requests: routing,
// next-speaker checks, summaries), `:countTokens`, and the model list. The model's turns
// come from scripts (lib/script.ts) picked by a marker in the prompt; a request that offers
// no tools or carries no marker gets a short text (or a small JSON object when the CLI asks
// for JSON). Every request is logged; an unknown path is logged and answered 404 in the
// API's error shape.
//
// A turn is a `functionCall` part (the CLI's own tool names: write_file, replace,
// run_shell_command, …) or text. What a tool gave back reaches the next request as a
// `functionResponse` part: a deny reason is there, hook context is appended to it.
import { readRequest, RequestLog, ScriptBook, type Exchange, type Turn } from './lib/script'

export interface FakeGemini {
  /** GOOGLE_GEMINI_BASE_URL: the CLI appends /v1beta/models/… */
  url: string
  log: RequestLog
  scripts: ScriptBook
  stop(): void
}

/** All the text of some parts: text, function calls' args, function responses. */
function textOf(parts: unknown): string {
  if (!Array.isArray(parts)) return ''
  return parts
    .map((p: any) => {
      if (typeof p?.text === 'string') return p.text
      if (p?.functionCall) return JSON.stringify(p.functionCall.args ?? {})
      if (p?.functionResponse) return JSON.stringify(p.functionResponse.response ?? {})
      return ''
    })
    .join('\n')
}

function conversation(body: any): Exchange[] {
  const contents: any[] = Array.isArray(body?.contents) ? body.contents : []
  return contents.map((c) => ({ role: c?.role === 'model' ? 'model' : 'user', text: textOf(c?.parts) }))
}

/** What the model reads: the system instruction and the conversation (not the tool list). */
const seen = (body: any) => [textOf(body?.systemInstruction?.parts), ...conversation(body).map((m) => m.text)].join('\n')

const tokens = (body: any) => Math.ceil(JSON.stringify(body?.contents ?? []).length / 4)

let ids = 0

/** The model's parts for a turn: text first, then the function call. */
function partsOf(turn: Turn): any[] {
  const parts: any[] = []
  if (turn.text) parts.push({ text: turn.text })
  if (turn.tool) parts.push({ functionCall: { id: `call_fake${++ids}`, name: turn.tool.name, args: turn.tool.input } })
  if (!parts.length) parts.push({ text: '' })
  return parts
}

function responseOf(body: any, parts: any[], model: string) {
  const prompt = tokens(body)
  return {
    candidates: [{ content: { role: 'model', parts }, finishReason: 'STOP', index: 0 }],
    usageMetadata: { promptTokenCount: prompt, candidatesTokenCount: 8, totalTokenCount: prompt + 8 },
    modelVersion: model,
    responseId: `resp_fake${++ids}`,
  }
}

/** One response as server-sent events: the text in small chunks, the function call whole (as the API sends it), the finish reason last. */
function sse(res: ReturnType<typeof responseOf>): Response {
  const [candidate] = res.candidates
  const chunks: any[] = []
  for (const p of candidate.content.parts) {
    if (typeof p.text === 'string') for (const piece of p.text.match(/[\s\S]{1,40}/g) ?? ['']) chunks.push({ text: piece })
    else chunks.push(p)
  }
  const events = chunks.map((part, i) => {
    const last = i === chunks.length - 1
    const chunk = { candidates: [{ content: { role: 'model', parts: [part] }, index: 0, ...(last ? { finishReason: candidate.finishReason } : {}) }], ...(last ? { usageMetadata: res.usageMetadata } : {}), modelVersion: res.modelVersion, responseId: res.responseId }
    return `data: ${JSON.stringify(chunk)}\r\n\r\n`
  })
  return new Response(events.join(''), { headers: { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' } })
}

/** A side request that wants JSON (routing, next speaker): a small object that says "the user speaks next". */
const SIDE_JSON = { reasoning: 'the fake model has nothing to add', next_speaker: 'user', model_choice: 'pro', complexity_reasoning: 'fake', complexity_score: 1 }

export function startFakeGemini(): FakeGemini {
  const log = new RequestLog()
  const scripts = new ScriptBook()
  const server = Bun.serve({
    hostname: '127.0.0.1',
    port: 0,
    // A scripted step may run another agent before it answers: no idle cut-off.
    idleTimeout: 0,
    async fetch(req) {
      const { method, path, raw, body } = await readRequest(req)
      const call = /^\/v1(?:beta|alpha)?\/models\/([^/:]+):(\w+)$/.exec(path)
      if (method === 'GET' && /^\/v1(beta|alpha)?\/models$/.test(path)) {
        log.add({ method, path, body, raw, text: '', script: null, step: null })
        return Response.json({ models: [] })
      }
      if (method === 'POST' && call?.[2] === 'countTokens') {
        log.add({ method, path, body, raw, text: seen(body), script: null, step: null })
        return Response.json({ totalTokens: tokens(body) })
      }
      if (method === 'POST' && (call?.[2] === 'streamGenerateContent' || call?.[2] === 'generateContent')) {
        const model = call[1]
        const hasTools = Array.isArray(body?.tools) && body.tools.some((t: any) => Array.isArray(t?.functionDeclarations) && t.functionDeclarations.length)
        const picked = hasTools ? scripts.select(conversation(body)) : null
        log.add({ method, path, body, raw, text: seen(body), script: picked?.script.name ?? null, step: picked?.step ?? null })
        let parts: any[]
        if (picked) parts = partsOf(await scripts.turn(picked.script, picked.step, log))
        else if (body?.generationConfig?.responseMimeType === 'application/json') parts = [{ text: JSON.stringify(SIDE_JSON) }]
        else parts = [{ text: 'OK' }]
        const res = responseOf(body, parts, model)
        return call[2] === 'streamGenerateContent' ? sse(res) : Response.json(res)
      }
      log.stray({ method, path, body, raw })
      return Response.json({ error: { code: 404, message: `the fake Gemini API does not serve ${method} ${path}`, status: 'NOT_FOUND' } }, { status: 404 })
    },
  })
  return { url: `http://127.0.0.1:${server.port}`, log, scripts, stop: () => server.stop(true) }
}
