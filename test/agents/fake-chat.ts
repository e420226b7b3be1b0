// A fake OpenAI Chat Completions API (POST /v1/chat/completions) for agents that talk to an
// "OpenAI-compatible" provider that way (Cline's `openai-compatible`). The model's turns come
// from scripts (lib/script.ts) picked by a marker in a user message; the step is the number
// of assistant messages after it, so a replayed conversation gets the same answers. Answers
// stream as `chat.completion.chunk` server-sent events (text deltas, a tool call whose
// arguments arrive in pieces, a usage chunk, `[DONE]`) or as one JSON completion. Every
// request is logged; an unknown path is logged and answered 404 in the API's error shape.
import { readRequest, RequestLog, ScriptBook, type Exchange, type Turn } from './lib/script'

export interface FakeChat {
  url: string
  /** The provider's base URL: ends in /v1. */
  baseUrl: string
  log: RequestLog
  scripts: ScriptBook
  stop(): void
}

/** All the text of a message's content: a string, or text parts. */
function textOf(content: unknown): string {
  if (typeof content === 'string') return content
  if (!Array.isArray(content)) return ''
  return content.map((p: any) => (typeof p === 'string' ? p : typeof p?.text === 'string' ? p.text : '')).join('\n')
}

/** One message's text, the arguments of the calls an assistant message makes included. */
function messageText(m: any): string {
  const calls = Array.isArray(m?.tool_calls) ? m.tool_calls.map((c: any) => `${c?.function?.name ?? ''} ${c?.function?.arguments ?? ''}`) : []
  return [textOf(m?.content), ...calls].filter(Boolean).join('\n')
}

/** The conversation as a script reads it: user and tool messages from the user side, assistant messages from the model. */
function conversation(body: any): Exchange[] {
  const messages: any[] = Array.isArray(body?.messages) ? body.messages : []
  return messages.filter((m) => m?.role !== 'system' && m?.role !== 'developer').map((m) => ({ role: m.role === 'assistant' ? 'model' : 'user', text: messageText(m) }))
}

/** What the model reads: every message's text, system prompt included. */
const seen = (body: any) => (Array.isArray(body?.messages) ? body.messages.map(messageText).join('\n') : '')

let ids = 0
const id = (prefix: string) => `${prefix}_fake${(++ids).toString().padStart(6, '0')}`

const usage = (body: any) => {
  const prompt = Math.ceil(JSON.stringify(body?.messages ?? []).length / 4)
  return { prompt_tokens: prompt, completion_tokens: 8, total_tokens: prompt + 8 }
}

/** The turn as a chat message: its text, and its tool call with JSON arguments. */
function messageOf(turn: Turn) {
  const call = turn.tool ? { id: id('call'), type: 'function', function: { name: turn.tool.name, arguments: JSON.stringify(turn.tool.input) } } : null
  return { role: 'assistant', content: turn.text ?? (call ? null : ''), ...(call ? { tool_calls: [call] } : {}) }
}

function chunks(body: any, msg: ReturnType<typeof messageOf>): string {
  const base = { id: id('chatcmpl'), object: 'chat.completion.chunk', created: Math.floor(Date.now() / 1000), model: body?.model ?? 'fake' }
  const out: string[] = []
  const send = (choice: object | null, extra: object = {}) => out.push(`data: ${JSON.stringify({ ...base, choices: choice ? [{ index: 0, logprobs: null, finish_reason: null, ...choice }] : [], ...extra })}\n\n`)
  send({ delta: { role: 'assistant', content: '' } })
  for (const piece of (msg.content ?? '').match(/[\s\S]{1,40}/g) ?? []) send({ delta: { content: piece } })
  const call = msg.tool_calls?.[0]
  if (call) {
    send({ delta: { tool_calls: [{ index: 0, id: call.id, type: 'function', function: { name: call.function.name, arguments: '' } }] } })
    for (const piece of call.function.arguments.match(/[\s\S]{1,30}/g) ?? []) send({ delta: { tool_calls: [{ index: 0, function: { arguments: piece } }] } })
  }
  send({ delta: {}, finish_reason: call ? 'tool_calls' : 'stop' })
  if (body?.stream_options?.include_usage) send(null, { usage: usage(body) })
  out.push('data: [DONE]\n\n')
  return out.join('')
}

export function startFakeChat(): FakeChat {
  const log = new RequestLog()
  const scripts = new ScriptBook()
  const server = Bun.serve({
    hostname: '127.0.0.1',
    port: 0,
    // A scripted step may wait on the test (a message sent mid-run): no idle cut-off.
    idleTimeout: 0,
    async fetch(req) {
      const { method, path, raw, body } = await readRequest(req)
      if (method === 'GET' && /\/models$/.test(path)) {
        log.add({ method, path, body, raw, text: '', script: null, step: null })
        return Response.json({ object: 'list', data: [{ id: body?.model ?? 'fake', object: 'model', owned_by: 'fake' }] })
      }
      if (method !== 'POST' || !/\/chat\/completions$/.test(path)) {
        log.stray({ method, path, body, raw })
        return Response.json({ error: { message: `the fake Chat Completions API does not serve ${method} ${path}`, type: 'invalid_request_error' } }, { status: 404 })
      }
      const picked = scripts.select(conversation(body))
      log.add({ method, path, body, raw, text: seen(body), script: picked?.script.name ?? null, step: picked?.step ?? null })
      const turn: Turn = picked ? await scripts.turn(picked.script, picked.step, log) : { text: 'OK' }
      const msg = messageOf(turn)
      if (body?.stream) return new Response(chunks(body, msg), { headers: { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' } })
      const finish = msg.tool_calls ? 'tool_calls' : 'stop'
      return Response.json({ id: id('chatcmpl'), object: 'chat.completion', created: Math.floor(Date.now() / 1000), model: body?.model ?? 'fake', choices: [{ index: 0, message: msg, finish_reason: finish, logprobs: null }], usage: usage(body) })
    },
  })
  const url = `http://127.0.0.1:${server.port}`
  return { url, baseUrl: `${url}/v1`, log, scripts, stop: () => void server.stop(true) }
}
