// Muster for OpenCode: written to .opencode/plugin/muster.ts by `muster init opencode`
// (from Muster's cli/init/opencode-plugin.ts, embedded in the CLI as text: edit it there,
// never in a repository it was written to: a second `muster init opencode` puts it back).
//
// OpenCode runs no hook commands: it runs plugins like this one in its own process. Each
// event goes through `muster hook opencode` (the event as JSON on stdin, the answer on
// stdout), the same forwarder Codex's hooks run: it finds the server and token in the
// environment or the user's Muster settings at run time (nothing secret is written here),
// sends MUSTER_AGENT / MUSTER_PROJECT / MUSTER_RESERVE and the git root, and at session
// start writes the session's identity (.muster/agents/<name>.json) for the CLI in the
// model's shell. The events it sends (docs/agents/opencode.md):
//   {hook_event_name, session_id, cwd, source?, reason?, prompt?, tool_name?, tool_input?,
//    call_id?, stop_hook_active?}
// with hook_event_name one of session.created, chat.message, tool.execute.before,
// tool.execute.after, session.idle, session.deleted, dispose; the answer is {} (no opinion),
// {decision: "deny", reason} (a tool call: thrown, so the tool never runs and the model
// reads the reason) or {context} (text for the model), plus {muster: {agent, session}}
// when the server said which instance the session acts as.
import { spawn } from 'node:child_process'

/** The server `muster init opencode` wired; `--server` beats the environment, as Codex's hooks do. */
const SERVER = '__MUSTER_SERVER__'
/** Edit-reserve mode (`muster init opencode --reserve DUR`), else none. */
const RESERVE = '__MUSTER_RESERVE__'
/** A server that does not answer within this long is unreachable (the CLI gives up sooner). */
const TIMEOUT_MS = 15_000

type Json = Record<string, any>
interface Answer {
  decision?: string
  reason?: string
  context?: string
  muster?: { agent?: string; session?: string }
}

/** What OpenCode hands a plugin (@opencode-ai/plugin's PluginInput), as far as this one reads it. */
interface Input {
  directory: string
  worktree?: string
  client?: any
}

/** What was said on stderr already: a server that is down is said once, not on every tool call. */
const said = new Set<string>()
const say = (line: string) => {
  if (said.has(line)) return
  said.add(line)
  console.error(line)
}
const warn = (why: string) => say(`muster: ${why}; OpenCode goes on without coordination`)

/** Runs `muster hook opencode` with `event` on stdin; its answer, or {} when it cannot run. */
function hook(event: Json): Promise<Answer> {
  const args = ['hook', 'opencode', '--server', SERVER, ...(RESERVE ? ['--reserve', RESERVE] : [])]
  return new Promise((resolve) => {
    let out = ''
    let err = ''
    let child: ReturnType<typeof spawn>
    try {
      child = spawn('muster', args, { stdio: ['pipe', 'pipe', 'pipe'] })
    } catch (e) {
      warn(`cannot run muster (${(e as Error).message})`)
      return resolve({})
    }
    const timer = setTimeout(() => child.kill('SIGKILL'), TIMEOUT_MS)
    child.stdout!.on('data', (d) => (out += d))
    child.stderr!.on('data', (d) => (err += d))
    child.on('error', (e) => {
      clearTimeout(timer)
      warn(`cannot run muster (${e.message}): is it on PATH?`)
      resolve({})
    })
    child.on('close', (code) => {
      clearTimeout(timer)
      if (err.trim()) say(err.trim())
      // `muster hook --fail-closed` exits 2 when the server cannot be reached: the call is blocked.
      if (code === 2) return resolve({ decision: 'deny', reason: err.trim() || 'Muster cannot be reached and this repository is set to fail closed.' })
      try {
        const answer = JSON.parse(out)
        resolve(answer && typeof answer === 'object' ? answer : {})
      } catch {
        resolve({})
      }
    })
    child.stdin!.on('error', () => {})
    child.stdin!.end(JSON.stringify(event))
  })
}

export const MusterPlugin = async ({ directory, client }: Input) => {
  /** Session id → its parent's (a subagent's session acts as the session that started it). */
  const parents = new Map<string, string | null>()
  /** The sessions started here (their session.created sent), with the start in flight. */
  const started = new Map<string, Promise<void>>()
  /** Sessions over (deleted, or OpenCode shutting down): nothing more is sent for them, or it would register them again. */
  const ended = new Set<string>()
  /** Each session's calls in flight: its end waits for them, so none arrives after it. */
  const inflight = new Map<string, Set<Promise<unknown>>>()
  /** Text for the model not shown yet (the briefing before the first prompt), by session. */
  const pending = new Map<string, string[]>()
  /** Which instance each session acts as: its shell commands' MUSTER_AGENT. */
  const who = new Map<string, { agent?: string; session?: string }>()
  /** Sessions whose last prompt was ours (a message read at session.idle): never prompt twice in a row. */
  const prompted = new Set<string>()

  /** The session a call acts as: a subagent's root session. */
  async function rootOf(id: string): Promise<string> {
    let current = id
    for (let depth = 0; depth < 16; depth++) {
      if (!parents.has(current)) {
        let parent: string | null = null
        try {
          const r = await client?.session?.get?.({ path: { id: current } })
          parent = r?.data?.parentID ?? null
        } catch {}
        parents.set(current, parent)
      }
      const parent = parents.get(current)
      if (!parent) return current
      current = parent
    }
    return current
  }

  const send = (session: string, event: Json, last = false): Promise<Answer> => {
    if (ended.has(session) && !last) return Promise.resolve({})
    const call = hook({ session_id: session, cwd: directory, ...event }).then((answer) => {
      if (answer.muster?.agent) who.set(session, answer.muster)
      return answer
    })
    const calls = inflight.get(session) ?? new Set()
    inflight.set(session, calls)
    calls.add(call)
    void call.finally(() => calls.delete(call))
    return call
  }

  const queue = (session: string, text: string | undefined) => {
    if (text) pending.set(session, [...(pending.get(session) ?? []), text])
  }

  const drain = (session: string, more?: string): string => {
    const texts = [...(pending.get(session) ?? []), ...(more ? [more] : [])]
    pending.delete(session)
    return texts.join('\n\n')
  }

  /** Registers (or resumes) the session once, whichever of its events comes first. */
  function start(session: string, source: 'startup' | 'resume'): Promise<void> {
    let p = started.get(session)
    if (!p && ended.has(session)) return Promise.resolve()
    if (!p) {
      p = send(session, { hook_event_name: 'session.created', source }).then((a) => queue(session, a.context))
      started.set(session, p)
    }
    return p
  }

  async function end(session: string, reason: string, event: string) {
    if (!started.has(session) || ended.has(session)) return
    ended.add(session)
    await started.get(session)
    await Promise.allSettled([...(inflight.get(session) ?? [])])
    await send(session, { hook_event_name: event, reason }, true)
    inflight.delete(session)
  }

  /** The session an event acts as, started. */
  async function acting(id: string): Promise<string> {
    const session = await rootOf(id)
    await start(session, 'resume')
    return session
  }

  return {
    event: async ({ event }: { event: { type: string; properties?: Json } }) => {
      const props = event.properties ?? {}
      if (event.type === 'session.created') {
        const info = props.info ?? {}
        if (typeof info.id !== 'string') return
        parents.set(info.id, typeof info.parentID === 'string' ? info.parentID : null)
        if (!info.parentID) await start(info.id, 'startup')
      } else if (event.type === 'session.deleted') {
        const id = props.info?.id
        if (typeof id === 'string') await end(id, 'deleted', 'session.deleted')
      } else if (event.type === 'session.idle') {
        const id = props.sessionID
        if (typeof id !== 'string' || !started.has(id) || ended.has(id)) return
        const active = prompted.delete(id)
        const answer = await send(id, { hook_event_name: 'session.idle', stop_hook_active: active })
        const text = drain(id, answer.context)
        if (!text || !client?.session?.promptAsync) return queue(id, text)
        // Messages arrived as the model stopped: one more turn to read them.
        prompted.add(id)
        await client.session.promptAsync({ path: { id }, body: { parts: [{ type: 'text', text, synthetic: true }] } }).catch(() => queue(id, text))
      }
    },

    'chat.message': async (input: { sessionID: string }, output: { message: Json; parts: Json[] }) => {
      const session = await acting(input.sessionID)
      // Our own prompt at session.idle (all its parts synthetic) is no prompt of the user's.
      if (output.parts.every((p) => p.synthetic)) return
      const prompt = output.parts.filter((p) => p.type === 'text' && !p.synthetic).map((p) => p.text).join('\n')
      const answer = await send(session, { hook_event_name: 'chat.message', prompt })
      const text = drain(session, answer.context)
      if (!text) return
      // A part of the user's message the user does not see: the model reads it with the prompt.
      const last = output.parts.at(-1)
      const base = { sessionID: input.sessionID, messageID: output.message?.id ?? last?.messageID }
      output.parts.push({ ...base, id: last?.id ? `${last.id}muster` : undefined, type: 'text', text, synthetic: true })
    },

    'tool.execute.before': async (input: { tool: string; sessionID: string; callID: string }, output: { args: Json }) => {
      const session = await acting(input.sessionID)
      const answer = await send(session, { hook_event_name: 'tool.execute.before', tool_name: input.tool, tool_input: output.args, call_id: input.callID })
      // A thrown error stops the call: OpenCode gives its message to the model as the tool's error.
      if (answer.decision === 'deny') throw new Error(answer.reason || 'Muster denied this call.')
    },

    'tool.execute.after': async (input: { tool: string; sessionID: string; callID: string; args: Json }, output: { output: string }) => {
      const session = await acting(input.sessionID)
      const answer = await send(session, { hook_event_name: 'tool.execute.after', tool_name: input.tool, tool_input: input.args, call_id: input.callID })
      const text = drain(session, answer.context)
      if (text) output.output = `${output.output ?? ''}\n\n${text}`
    },

    // The model's shell commands act as the session: the CLI reads .muster/agents/<agent>.json.
    'shell.env': async (input: { sessionID?: string }, output: { env: Record<string, string> }) => {
      if (!input.sessionID) return
      const id = who.get(await rootOf(input.sessionID))
      if (id?.agent) output.env.MUSTER_AGENT = id.agent
      if (id?.session) output.env.MUSTER_SESSION = id.session
    },

    // OpenCode is shutting down (`opencode run` done, the TUI closed): its sessions end here.
    dispose: async () => {
      await Promise.all([...started.keys()].map((id) => end(id, 'exit', 'dispose')))
    },
  }
}
