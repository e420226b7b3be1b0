// What the fake model servers (fake-anthropic.ts, fake-openai.ts) share: scripts of model
// turns picked by a marker in the prompt, and the log of every request they got, so a test
// asserts what reached the model. A fake turns its wire format into `Exchange`s (the
// conversation so far) and plays the script's next turn; which turn is next is read from
// the conversation itself (the model turns after the marked prompt), so a retried request
// gets the same answer and a side request of the agent moves nothing along.

/** One call of a tool by the model: the agent's own tool name and its input. */
export interface ToolCall {
  name: string
  input: Record<string, unknown>
}

/** What the model says in one turn: some text, a tool call, or both (text first). The Messages API's turn, and the default. */
export interface Turn {
  text?: string
  tool?: ToolCall
}

/** The closing turn every wire format can say: text only. */
export interface Said {
  text: string
}

/**
 * A turn, or a function that makes one when the request for it arrives: to use what
 * reached the model so far, or to act at that moment (send a message while the agent is
 * between a prompt and its tool call).
 */
export type Step<T = Turn> = T | ((log: RequestLog) => T | Promise<T>)

/** A script of turns of type `T`: each fake says what its model turns can be (a tool_use, an apply_patch, …). */
export interface Script<T = Turn> {
  /** The word in the prompt that picks this script: the prompt holds `marker(name)`. */
  name: string
  steps: Step<T>[]
  /** Said once the steps are played. */
  finally?: string
}

/** The text to put in a prompt so the fake plays `name`'s script. */
export const marker = (name: string) => `[[script:${name}]]`
const MARKER = /\[\[script:([\w.-]+)\]\]/g

/** One message of a conversation as a fake sees it: who spoke, and all its text (tool results included). */
export interface Exchange {
  role: 'user' | 'model'
  text: string
}

export interface LoggedRequest {
  /** Arrival order, from 1. */
  seq: number
  method: string
  path: string
  /** The parsed JSON body (null when none or not JSON). */
  body: any
  /** The body as text: what a test searches for what reached the model. */
  raw: string
  /** Every piece of text the model reads (system prompt or instructions, the conversation; not the tool list), unescaped. */
  text: string
  /** The script this request played, and the step's index (null: no script). */
  script: string | null
  step: number | null
}

export class RequestLog {
  readonly entries: LoggedRequest[] = []
  /** Paths the fake does not serve, with how often each was asked. */
  readonly unknown = new Map<string, number>()

  add(entry: Omit<LoggedRequest, 'seq'>): LoggedRequest {
    const e = { ...entry, seq: this.entries.length + 1 }
    this.entries.push(e)
    return e
  }

  /** Logs a request to a path the fake does not serve, and counts it under its method and path. */
  stray(entry: Pick<LoggedRequest, 'method' | 'path' | 'body' | 'raw'>): LoggedRequest {
    const key = `${entry.method} ${entry.path}`
    this.unknown.set(key, (this.unknown.get(key) ?? 0) + 1)
    return this.add({ ...entry, text: '', script: null, step: null })
  }

  /** The requests that played `name`'s script, in order. */
  of(name: string): LoggedRequest[] {
    return this.entries.filter((e) => e.script === name)
  }

  /** Whether any request of `name`'s script carried `text` (anywhere in its body). */
  reached(name: string, text: string): boolean {
    return this.of(name).some((e) => e.raw.includes(text) || e.raw.includes(JSON.stringify(text).slice(1, -1)))
  }

  /** The body of the last request of `name`'s script (a test's view of the model's context then). */
  last(name: string): string {
    return this.of(name).at(-1)?.raw ?? ''
  }
}

/** A request as both fakes read it: the body's text, and its JSON (null when none or not JSON). */
export async function readRequest(req: Request): Promise<{ method: string; path: string; raw: string; body: any }> {
  const raw = req.method === 'GET' || req.method === 'HEAD' ? '' : await req.text()
  let body: any = null
  try {
    body = raw ? JSON.parse(raw) : null
  } catch {}
  return { method: req.method, path: new URL(req.url).pathname, raw, body }
}

export class ScriptBook<T = Turn> {
  private scripts = new Map<string, Script<T>>()

  add(script: Script<T>): string {
    this.scripts.set(script.name, script)
    return marker(script.name)
  }

  /**
   * The script and step to play for a conversation: the last user message that carries a
   * marker picks the script; the model turns after it say which step comes next. Null when
   * no message carries a known marker.
   */
  select(conversation: Exchange[]): { script: Script<T>; step: number } | null {
    for (let i = conversation.length - 1; i >= 0; i--) {
      const m = conversation[i]
      if (m.role !== 'user') continue
      const names = [...m.text.matchAll(MARKER)].map((x) => x[1])
      const script = names.reverse().map((n) => this.scripts.get(n)).find(Boolean)
      if (!script) continue
      const step = conversation.slice(i + 1).filter((x) => x.role === 'model').length
      return { script, step }
    }
    return null
  }

  /** The turn to answer with: the step's, or the closing text once the steps are played. */
  async turn(script: Script<T>, step: number, log: RequestLog): Promise<T | Said> {
    const s = script.steps[step]
    if (s === undefined) return { text: script.finally ?? `Done (${script.name}).` }
    return typeof s === 'function' ? (s as (log: RequestLog) => T | Promise<T>)(log) : s
  }
}
