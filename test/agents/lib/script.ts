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

/** What the model says in one turn: some text, a tool call, or both (text first). */
export interface Turn {
  text?: string
  tool?: ToolCall
}

/**
 * A turn, or a function that makes one when the request for it arrives: to use what
 * reached the model so far, or to act at that moment (send a message while the agent is
 * between a prompt and its tool call).
 */
export type Step = Turn | ((log: RequestLog) => Turn | Promise<Turn>)

export interface Script {
  /** The word in the prompt that picks this script: the prompt holds `marker(name)`. */
  name: string
  steps: Step[]
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

export class ScriptBook {
  private scripts = new Map<string, Script>()

  add(script: Script): string {
    this.scripts.set(script.name, script)
    return marker(script.name)
  }

  /**
   * The script and step to play for a conversation: the last user message that carries a
   * marker picks the script; the model turns after it say which step comes next. Null when
   * no message carries a known marker.
   */
  select(conversation: Exchange[]): { script: Script; step: number } | null {
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
  async turn(script: Script, step: number, log: RequestLog): Promise<Turn> {
    const s = script.steps[step]
    if (s === undefined) return { text: script.finally ?? `Done (${script.name}).` }
    return typeof s === 'function' ? s(log) : s
  }
}
