// The coordination page's view of the agents' hooks: each registered instance with the
// hook session it runs in (Claude Code, Codex, Gemini CLI, Copilot CLI, Cursor, Cline, OpenCode; none for an agent on REST or MCP), and
// the edits the PreToolUse hook denied, newest first: who was blocked, on which paths,
// held by whom. A blocked edit appears the moment its edit.blocked event arrives.
//   GET /api/instances, GET /api/sessions, GET /api/events/history?topic=edit.blocked

import { api } from './api.js'
import { cell, changed, every, failure, fill, fullTime, h, loading, stateBox, timeAgo } from './ui.js'

const KEEP = 50
const AGENT_KINDS = { 'claude-code': 'Claude Code', codex: 'Codex', 'gemini-cli': 'Gemini CLI', cline: 'Cline' }

const liveness = (status) =>
  h('span', { class: `badge ${status === 'active' ? 'ok' : status === 'stale' ? 'warn' : 'bad'}`, text: status || 'gone' })

const kindBadge = (session) =>
  session
    ? h('span', { class: `badge kind ${session.agent === 'codex' ? '' : 'accent'}`, title: `hook session ${session.session_id}`, text: AGENT_KINDS[session.agent] ?? session.agent })
    : h('span', { class: 'sub', text: 'no hook session' })

/** GET /api/sessions, or [] on a server without hooks (the rest of the page still works). */
async function sessions() {
  try {
    return await api('/api/sessions')
  } catch (err) {
    if (err.missingEndpoint) return []
    throw err
  }
}

/** instance id → its newest hook session. */
function sessionsByInstance(list) {
  const out = new Map()
  for (const s of list) {
    const had = out.get(s.instance_id)
    if (!had || String(s.started_at) > String(had.started_at)) out.set(s.instance_id, s)
  }
  return out
}

export function agentsPanel() {
  const section = document.getElementById('agents')
  const body = section.querySelector('.body')
  const meta = section.querySelector('.meta')
  const drawn = {}
  loading(body)
  const poll = every(10_000, async () => {
    let list, hooks
    try {
      ;[list, hooks] = await Promise.all([api('/api/instances'), sessions()])
    } catch (err) {
      drawn.last = null
      meta.textContent = ''
      return failure(body, err, 'GET /api/instances', () => poll.now())
    }
    const bySession = sessionsByInstance(hooks)
    if (!changed(drawn, [list, [...bySession.values()]])) return
    const hooked = list.filter((i) => bySession.has(i.id)).length
    meta.textContent = list.length ? `${list.length} registered · ${hooked} in hook sessions` : ''
    if (!list.length)
      return stateBox(body, 'empty', 'No agents registered',
        ['An agent session with Muster hooks registers with its first hook call (', h('code', { text: 'muster init <agent>' }), ').'])
    fill(body, h('table', { class: 'data cards' },
      h('thead', {}, h('tr', {}, ['Agent', 'Session', 'Root · project', 'Last seen'].map((t) => h('th', { text: t })))),
      h('tbody', {}, list.map((inst) => {
        const s = bySession.get(inst.id)
        return h('tr', { class: inst.status === 'active' ? null : 'stale', dataset: { id: inst.id, agent: s?.agent ?? '' } },
          cell('Agent', { class: 'name-cell' },
            h('div', { class: 'wrap-any' }, h('span', { text: inst.name }), ' ', liveness(inst.status)),
            h('div', { class: 'sub mono', title: inst.id, text: String(inst.id).slice(0, 8) })),
          cell('Session', {},
            h('div', {}, kindBadge(s)),
            s ? h('div', { class: 'sub mono', title: s.session_id, text: String(s.session_id).slice(0, 13) }) : null,
            s ? h('div', { class: 'sub', title: fullTime(s.started_at) }, 'started ', timeAgo(s.started_at)) : null),
          cell('Root · project', { class: 'wrap-any' },
            h('div', { class: 'mono', text: s?.root || inst.workspace || '—' }),
            s?.project ? h('div', { class: 'sub' }, 'project ', h('span', { class: 'mono', text: s.project })) : null),
          cell('Last seen', { class: 'nowrap' }, inst.last_seen ? timeAgo(inst.last_seen) : '—'))
      }))))
  })
  return poll
}

/** The blocked-edit list: history on every poll, and each live edit.blocked at once. */
export function blockedPanel() {
  const section = document.getElementById('blocked')
  const body = section.querySelector('.body')
  const meta = section.querySelector('.meta')
  const events = new Map() // event id → event
  let names = new Map()
  let bySession = new Map()
  const drawn = {}
  loading(body)

  const who = (id, sessionId) => {
    const inst = names.get(id)
    const s = bySession.get(sessionId)
    return { name: inst?.name ?? s?.name ?? String(id ?? '').slice(0, 8), status: inst?.status ?? 'gone', session: s }
  }

  const conflictLine = (c) => {
    const holder = names.get(c.instance_id)
    const name = c.instance_name || holder?.name || String(c.instance_id ?? '').slice(0, 8)
    const status = c.instance_status || holder?.status || 'gone'
    return h('li', { dataset: { holder: name } },
      h('span', { class: 'chip mono', title: 'the path the agent meant to write', text: c.path }),
      h('span', { class: 'sub', text: ' in ' }),
      h('span', { class: 'chip mono held', title: 'the reserved pattern it overlaps', text: c.held_path ?? c.pattern ?? '' }),
      h('div', { class: 'holder' }, 'held by ', h('b', { text: name }), ' ', liveness(status),
        c.reason ? h('span', { class: 'sub', text: ` · ${c.reason}` }) : null,
        c.expires_at ? h('span', { class: 'sub' }, ' · expires ', timeAgo(c.expires_at)) : null))
  }

  const draw = () => {
    const list = [...events.values()].sort((a, b) => b.id - a.id).slice(0, KEEP)
    meta.textContent = list.length ? `${list.length}${list.length === KEEP ? '+' : ''} recent` : ''
    if (!list.length)
      return stateBox(body, 'empty', 'No edits blocked', 'When a hook denies an edit of reserved files, it shows up here as it happens.')
    fill(body, h('table', { class: 'data cards' },
      h('thead', {}, h('tr', {}, ['When', 'Blocked', 'Paths and holders'].map((t) => h('th', { text: t })))),
      h('tbody', {}, list.map((e) => {
        const d = e.data ?? {}
        const w = who(d.instance_id, d.session_id)
        return h('tr', { dataset: { event: e.id, session: d.session_id ?? '' } },
          cell('When', { class: 'nowrap' }, timeAgo(e.created_at)),
          cell('Blocked', { class: 'name-cell' },
            h('div', { class: 'wrap-any' }, h('b', { class: 'who-blocked', text: w.name }), ' ', kindBadge(w.session)),
            h('div', { class: 'sub mono', title: d.session_id, text: `session ${String(d.session_id ?? '').slice(0, 13)}` })),
          cell('Paths and holders', { class: 'wrap-any' },
            (d.conflicts ?? []).length
              ? h('ul', { class: 'conflicts' }, d.conflicts.map(conflictLine))
              : (d.paths ?? []).map((p) => h('span', { class: 'chip mono', text: p }))))
      }))))
  }

  const add = (list) => {
    for (const e of list) if (e?.topic === 'edit.blocked' && !events.has(e.id)) events.set(e.id, e)
    for (const id of [...events.keys()].sort((a, b) => b - a).slice(KEEP)) events.delete(id)
  }

  const poll = every(10_000, async () => {
    let history, instances, hooks
    try {
      ;[history, instances, hooks] = await Promise.all([api(`/api/events/history?topic=edit.blocked&last=${KEEP}`), api('/api/instances'), sessions()])
    } catch (err) {
      drawn.last = null
      meta.textContent = ''
      return failure(body, err, 'GET /api/events/history', () => poll.now())
    }
    names = new Map(instances.map((i) => [i.id, i]))
    bySession = new Map(hooks.map((s) => [s.session_id, s]))
    add(history)
    // Redrawn when a name, a liveness or the list changed (a live event draws by itself).
    if (changed(drawn, [[...events.keys()], instances.map((i) => [i.id, i.name, i.status]), hooks.map((s) => [s.session_id, s.agent])])) draw()
  })

  return {
    now: () => poll.now(),
    /** A live edit.blocked: drawn at once; the names it needs are refreshed after. */
    event(e) {
      add([e])
      draw()
      if (!names.has(e.data?.instance_id) || !bySession.has(e.data?.session_id)) poll.now()
    },
  }
}
