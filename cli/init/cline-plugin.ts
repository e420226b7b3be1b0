// The Cline plugin `muster init cline` writes to .cline/plugins/muster.js. A PreToolUse hook
// file can only cancel Cline's whole task (its `cancel` stops the run, and the reason never
// reaches the model); a plugin's beforeTool can skip one call and hand the model the reason.
// The plugin posts Cline's own hook events through `muster hook cline` (the same endpoint and
// adapter as the hook files): agent_start when a task runs, whose briefing goes to the model
// with the first tool call's result (Cline reads no start hook's output), and tool_call
// before each tool. A server that cannot be reached, or answers too late (Cline fails the task
// when a plugin hook takes over 3 s), lets the call run (as `muster hook` does).

/** The plugin's source: plain ES module JavaScript, which Cline loads from .cline/plugins/ as it is. */
export function clinePlugin(command: string[]): string {
  return `// Muster for Cline: written by \`muster init cline\` (run it again to update it; edits here are lost).
// Posts Cline's hook events to Muster through \`muster hook cline\`: agent_start when a task runs
// (the briefing reaches the model with the first tool call's result), tool_call before each tool
// (a write of a file another agent holds is skipped, and the model told who holds it and why).
import { spawn } from 'node:child_process'

const COMMAND = ${JSON.stringify(command)}
/**
 * Cline fails the whole task when a plugin hook takes over 3 s: past this, the call goes on
 * without Muster (\`muster hook cline\` itself gives up on the server after 2 s).
 */
const TIMEOUT_MS = 2700
/** The briefing of each task, until its first tool call hands it to the model. */
const briefings = new Map()
/** The CLI's session (the hook files' sessionContext.rootSessionId): the lead agent's and its sub-agents'. */
let rootSessionId = null

/** Muster's answer to one event ({cancel, errorMessage, contextModification}), or null when there is none. */
function ask(event) {
  return new Promise((resolve) => {
    let out = ''
    let child
    try {
      child = spawn(COMMAND[0], COMMAND.slice(1), { stdio: ['pipe', 'pipe', 'inherit'] })
    } catch {
      return resolve(null)
    }
    const timer = setTimeout(() => {
      child.kill('SIGKILL')
      resolve(null)
    }, TIMEOUT_MS)
    child.on('error', () => {
      clearTimeout(timer)
      resolve(null)
    })
    child.stdout.on('data', (d) => (out += d))
    child.on('close', () => {
      clearTimeout(timer)
      try {
        const answer = JSON.parse(out)
        resolve(answer && typeof answer === 'object' ? answer : null)
      } catch {
        resolve(null)
      }
    })
    child.stdin.on('error', () => {})
    child.stdin.end(JSON.stringify(event))
  })
}

/** The fields every Cline hook event carries. */
function base(snapshot, hookName) {
  return {
    clineVersion: process.env.CLINE_VERSION || '',
    hookName,
    timestamp: new Date().toISOString(),
    taskId: snapshot?.conversationId || snapshot?.runId || snapshot?.agentId,
    workspaceRoots: [process.cwd()],
    ...(rootSessionId ? { sessionContext: { rootSessionId } } : {}),
    agent_id: snapshot?.agentId,
    parent_agent_id: snapshot?.parentAgentId ?? null,
  }
}

const strings = (input) =>
  Object.fromEntries(Object.entries(input && typeof input === 'object' ? input : {}).map(([k, v]) => [k, typeof v === 'string' ? v : JSON.stringify(v)]))

const said = (v) => (typeof v === 'string' && v.trim() !== '' ? v : null)

export const plugin = {
  name: 'muster',
  manifest: { capabilities: ['hooks'] },
  setup(_api, ctx) {
    rootSessionId = typeof ctx?.session?.sessionId === 'string' ? ctx.session.sessionId : null
  },
  hooks: {
    async beforeRun({ snapshot }) {
      const resume = process.env.CLINE_HOOK_AGENT_RESUME === '1'
      const event = resume
        ? { ...base(snapshot, 'agent_resume'), taskResume: { taskMetadata: {}, previousState: {} } }
        : { ...base(snapshot, 'agent_start'), taskStart: { taskMetadata: {} } }
      const briefing = said((await ask(event))?.contextModification)
      if (briefing) briefings.set(event.taskId, briefing)
      return undefined
    },
    async beforeTool({ snapshot, toolCall, input }) {
      const event = {
        ...base(snapshot, 'tool_call'),
        iteration: snapshot?.iteration,
        tool_call: { id: toolCall.toolCallId, name: toolCall.toolName, input },
        preToolUse: { toolName: toolCall.toolName, parameters: strings(input) },
      }
      const answer = await ask(event)
      const briefing = briefings.get(event.taskId) ?? null
      briefings.delete(event.taskId)
      const context = [briefing, answer?.cancel === true ? null : said(answer?.contextModification)].filter(Boolean).join('\\n\\n')
      const extra = context ? { appendContext: context } : {}
      if (answer?.cancel === true) return { skip: true, reason: said(answer.errorMessage) ?? 'Muster denied this call.', ...extra }
      return context ? extra : undefined
    },
  },
}

export default plugin
`
}
