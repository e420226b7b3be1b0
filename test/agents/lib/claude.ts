// Drives the real Claude Code: `claude -p` with stream-json in and out, so one process is
// one session that takes prompts one by one on stdin (each answered by a `result` event)
// and ends, with its SessionEnd hook, when stdin closes. It talks to the fake Anthropic
// API only; `--permission-mode acceptEdits` with `--allowedTools` stands in for
// `--dangerously-skip-permissions`, which Claude Code refuses as root.
import type { Subprocess } from 'bun'
import { ensureAgent } from './install'
import type { World } from './world'

export interface ClaudeOptions {
  world: World
  /** The fake model server's URL. */
  model: string
  cwd: string
  /** MUSTER_AGENT: the name the hooks register the session under. */
  name?: string
  env?: Record<string, string>
  /** Tools allowed without asking (default: the file tools, Bash and Muster's MCP tools). */
  allowedTools?: string[]
}

export const DEFAULT_TOOLS = ['Read', 'Edit', 'Write', 'Bash', 'mcp__muster']

/** The environment that keeps Claude Code on the fake model and off every other host. */
export function claudeEnv(model: string): Record<string, string> {
  return {
    ANTHROPIC_BASE_URL: model,
    ANTHROPIC_API_KEY: 'sk-ant-fake-key-for-tests',
    ANTHROPIC_MODEL: 'claude-sonnet-4-5',
    DISABLE_TELEMETRY: '1',
    DISABLE_AUTOUPDATER: '1',
    DISABLE_ERROR_REPORTING: '1',
    DISABLE_BUG_COMMAND: '1',
    CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC: '1',
    CLAUDE_CODE_DISABLE_FEEDBACK_SURVEY: '1',
    CLAUDE_CODE_DISABLE_AUTO_MEMORY: '1',
    CLAUDE_CODE_DISABLE_TERMINAL_TITLE: '1',
  }
}

export interface Event {
  type: string
  subtype?: string
  [k: string]: any
}

export class ClaudeSession {
  readonly events: Event[] = []
  stderr = ''
  private waiters: (() => void)[] = []
  private constructor(private proc: Subprocess<'pipe', 'pipe', 'pipe'>) {
    void this.pump()
  }

  static async start(o: ClaudeOptions): Promise<ClaudeSession> {
    const claude = await ensureAgent('claude-code')
    const args = [claude, '-p', '--verbose', '--input-format', 'stream-json', '--output-format', 'stream-json', '--permission-mode', 'acceptEdits']
    args.push('--allowedTools', (o.allowedTools ?? DEFAULT_TOOLS).join(','))
    const env = o.world.env({ ...claudeEnv(o.model), ...(o.name ? { MUSTER_AGENT: o.name } : {}), ...o.env })
    const proc = Bun.spawn(args, { cwd: o.cwd, env, stdin: 'pipe', stdout: 'pipe', stderr: 'pipe' })
    return new ClaudeSession(proc)
  }

  private async pump() {
    const decoder = new TextDecoder()
    let buf = ''
    const err = (async () => {
      for await (const chunk of this.proc.stderr) this.stderr += decoder.decode(chunk, { stream: true })
    })()
    for await (const chunk of this.proc.stdout) {
      buf += decoder.decode(chunk, { stream: true })
      let nl: number
      while ((nl = buf.indexOf('\n')) !== -1) {
        const line = buf.slice(0, nl).trim()
        buf = buf.slice(nl + 1)
        if (!line) continue
        try {
          this.events.push(JSON.parse(line))
        } catch {
          this.events.push({ type: 'unparsed', line })
        }
        for (const w of this.waiters.splice(0)) w()
      }
    }
    await err
    for (const w of this.waiters.splice(0)) w()
  }

  /** The session id Claude Code reported (its hooks send the same). */
  get sessionId(): string | undefined {
    return this.events.find((e) => e.type === 'system' && e.subtype === 'init')?.session_id
  }

  private async until(pred: () => boolean, timeoutMs: number, what: string) {
    const deadline = Date.now() + timeoutMs
    while (!pred()) {
      if (this.proc.exitCode !== null) throw new Error(`claude exited (${this.proc.exitCode}) before ${what}:\n${this.stderr}\n${this.tail()}`)
      const left = deadline - Date.now()
      if (left <= 0) throw new Error(`claude: no ${what} within ${timeoutMs} ms:\n${this.stderr}\n${this.tail()}`)
      await Promise.race([new Promise<void>((r) => this.waiters.push(r)), Bun.sleep(Math.min(left, 200))])
    }
  }

  private tail() {
    return this.events
      .slice(-8)
      .map((e) => JSON.stringify(e).slice(0, 400))
      .join('\n')
  }

  /** Sends one prompt and waits for its `result`: the events of that turn. */
  async prompt(text: string, timeoutMs = 60_000): Promise<Event[]> {
    const from = this.events.length
    const results = () => this.events.slice(from).filter((e) => e.type === 'result').length
    this.proc.stdin.write(JSON.stringify({ type: 'user', message: { role: 'user', content: text } }) + '\n')
    this.proc.stdin.flush()
    await this.until(() => results() > 0, timeoutMs, 'result for the prompt')
    return this.events.slice(from)
  }

  /** Closes stdin (the session ends, its SessionEnd hook runs) and waits for the exit code. */
  async end(timeoutMs = 20_000): Promise<number> {
    this.proc.stdin.end()
    const timer = setTimeout(() => this.proc.kill('SIGKILL'), timeoutMs)
    const code = await this.proc.exited
    clearTimeout(timer)
    return code
  }

  /** Stops the process whatever state it is in (a test's cleanup). */
  kill() {
    if (this.proc.exitCode === null) this.proc.kill('SIGKILL')
  }

  /** The tool results Claude Code fed back to the model in this session, as text. */
  toolResults(): string[] {
    return this.events
      .filter((e) => e.type === 'user')
      .flatMap((e) => (Array.isArray(e.message?.content) ? e.message.content : []))
      .filter((b: any) => b.type === 'tool_result')
      .map((b: any) => (typeof b.content === 'string' ? b.content : JSON.stringify(b.content)))
  }
}
