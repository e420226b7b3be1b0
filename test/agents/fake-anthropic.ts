// A fake Anthropic Messages API for the real Claude Code: POST /v1/messages answered as a
// stream of server-sent events (message_start, content_block_start/delta/stop with text
// and tool_use + input_json_delta, message_delta, message_stop) or as one JSON message,
// and POST /v1/messages/count_tokens. The model's turns come from scripts (lib/script.ts)
// picked by a marker in the prompt; a request that carries no marker, or offers no tools
// (Claude Code's own side requests: titles, summaries), gets a short text. Every request
// is logged; a path this fake does not know is logged too and answered 404 in the API's
// error shape, which Claude Code treats as "not available here".
import { RequestLog, ScriptBook, type Exchange, type Turn } from './lib/script'

export interface FakeAnthropic {
  url: string
  log: RequestLog
  scripts: ScriptBook
  stop(): Promise<void>
}

/** All the text of one message's content: strings, text blocks, tool results, tool inputs. */
function textOf(content: unknown): string {
  if (typeof content === 'string') return content
  if (!Array.isArray(content)) return ''
  return content
    .map((b: any) => {
      if (b?.type === 'text') return b.text ?? ''
      if (b?.type === 'tool_result') return textOf(b.content)
      if (b?.type === 'tool_use') return JSON.stringify(b.input ?? {})
      return ''
    })
    .join('\n')
}

function conversation(body: any): Exchange[] {
  const messages: any[] = Array.isArray(body?.messages) ? body.messages : []
  return messages.map((m) => ({ role: m.role === 'assistant' ? 'model' : 'user', text: textOf(m.content) }))
}

let ids = 0
const id = (prefix: string) => `${prefix}_fake${(++ids).toString().padStart(6, '0')}`

/** The content blocks of a turn, in the API's shape. */
function blocks(turn: Turn): any[] {
  const out: any[] = []
  if (turn.text) out.push({ type: 'text', text: turn.text })
  if (turn.tool) out.push({ type: 'tool_use', id: id('toolu'), name: turn.tool.name, input: turn.tool.input })
  if (!out.length) out.push({ type: 'text', text: '' })
  return out
}

const usage = (body: any) => ({ input_tokens: Math.ceil(JSON.stringify(body?.messages ?? []).length / 4), output_tokens: 8, cache_creation_input_tokens: 0, cache_read_input_tokens: 0 })

function message(body: any, content: any[]) {
  const stop_reason = content.some((b) => b.type === 'tool_use') ? 'tool_use' : 'end_turn'
  return { id: id('msg'), type: 'message', role: 'assistant', model: body?.model ?? 'claude-fake', content, stop_reason, stop_sequence: null, usage: usage(body) }
}

/** The same message as server-sent events, the tool input split over several deltas as the real API does. */
function events(msg: ReturnType<typeof message>): string {
  const out: string[] = []
  const send = (type: string, data: object) => out.push(`event: ${type}\ndata: ${JSON.stringify({ type, ...data })}\n\n`)
  send('message_start', { message: { ...msg, content: [], stop_reason: null, usage: { ...msg.usage, output_tokens: 1 } } })
  send('ping', {})
  msg.content.forEach((b: any, index: number) => {
    if (b.type === 'text') {
      send('content_block_start', { index, content_block: { type: 'text', text: '' } })
      for (const piece of b.text.match(/[\s\S]{1,40}/g) ?? []) send('content_block_delta', { index, delta: { type: 'text_delta', text: piece } })
    } else {
      send('content_block_start', { index, content_block: { type: 'tool_use', id: b.id, name: b.name, input: {} } })
      const json = JSON.stringify(b.input)
      for (const piece of json.match(/[\s\S]{1,30}/g) ?? []) send('content_block_delta', { index, delta: { type: 'input_json_delta', partial_json: piece } })
    }
    send('content_block_stop', { index })
  })
  send('message_delta', { delta: { stop_reason: msg.stop_reason, stop_sequence: null }, usage: { output_tokens: msg.usage.output_tokens } })
  send('message_stop', {})
  return out.join('')
}

export async function startFakeAnthropic(): Promise<FakeAnthropic> {
  const log = new RequestLog()
  const scripts = new ScriptBook()
  const server = Bun.serve({
    hostname: '127.0.0.1',
    port: 0,
    async fetch(req) {
      const url = new URL(req.url)
      const raw = req.method === 'GET' || req.method === 'HEAD' ? '' : await req.text()
      let body: any = null
      try {
        body = raw ? JSON.parse(raw) : null
      } catch {}
      const path = url.pathname
      if (req.method === 'POST' && path === '/v1/messages/count_tokens') {
        log.add({ method: req.method, path, body, raw, script: null, step: null })
        return Response.json({ input_tokens: usage(body).input_tokens })
      }
      if (req.method === 'POST' && path === '/v1/messages') {
        const hasTools = Array.isArray(body?.tools) && body.tools.length > 0
        const picked = hasTools ? scripts.select(conversation(body)) : null
        log.add({ method: req.method, path, body, raw, script: picked?.script.name ?? null, step: picked?.step ?? null })
        const turn: Turn = picked ? await scripts.turn(picked.script, picked.step, log) : { text: 'OK' }
        const msg = message(body, blocks(turn))
        if (body?.stream) return new Response(events(msg), { headers: { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' } })
        return Response.json(msg)
      }
      log.add({ method: req.method, path, body, raw, script: null, step: null })
      log.unknown.set(`${req.method} ${path}`, (log.unknown.get(`${req.method} ${path}`) ?? 0) + 1)
      return Response.json({ type: 'error', error: { type: 'not_found_error', message: `the fake Anthropic API does not serve ${req.method} ${path}` } }, { status: 404 })
    },
  })
  return { url: `http://127.0.0.1:${server.port}`, log, scripts, stop: async () => void server.stop(true) }
}
