// How a task reads on its card and in its detail: one line for who has it (the claimer's
// liveness only while the claim is held), the last error placed as what it is (why this
// task failed, or how an earlier attempt ended), and the retry a failed or cancelled
// task offers (POST /api/tasks/{id}/retry).

import { api } from './api.js'
import { h, timeAgo } from './ui.js'

const LIVENESS = {
  active: ['ok', 'active'],
  stale: ['warn', 'stale: its claim ends at the next liveness check'],
}

/** "claimed by alice · active", or for a finished task "last claimed by alice"; null when nobody claimed it. */
export function claimerLine(task, instances) {
  if (!task.claimed_by) return null
  const who = instances.get(task.claimed_by)
  const name = who?.name || `gone ${String(task.claimed_by).slice(0, 8)}`
  if (task.status !== 'claimed')
    return h('div', { class: 'claimer', title: `instance ${task.claimed_by}` }, h('span', { text: 'last claimed by' }), h('b', { text: name }))
  const [cls, text] = LIVENESS[who?.status] ?? ['bad', 'deregistered: its claim ends now']
  return h('div', { class: 'claimer', title: `instance ${task.claimed_by}` },
    h('span', { text: 'claimed by' }), h('b', { text: name }), h('span', { class: `badge ${cls}`, text }))
}

/**
 * last_error where it belongs: a failed task failed with it; a task that runs again
 * (ready, claimed, blocked) carries it from an earlier attempt, so it says so, quietly.
 */
export function errorLine(task) {
  if (!task.last_error) return null
  if (task.status === 'failed') return h('div', { class: 'error', title: 'why it failed' }, h('b', { text: 'failed: ' }), task.last_error)
  return h('div', { class: 'earlier', title: 'how an earlier attempt ended' }, 'an earlier attempt ended: ', h('span', { text: task.last_error }))
}

/** "in 8 min"-style facts for when a claim times out or a delayed task becomes claimable. */
export function timingLine(task) {
  if (task.status === 'claimed' && task.visible_until) return h('div', { class: 'facts' }, 'requeued ', timeAgo(task.visible_until), ' unless acked or extended')
  if (task.status === 'ready' && task.available_at && Date.parse(task.available_at) > Date.now()) return h('div', { class: 'facts' }, 'claimable ', timeAgo(task.available_at))
  return null
}

export const retryable = (task) => task.status === 'failed' || task.status === 'cancelled'

/** Retry a failed or cancelled task: back to ready with its attempts reset. Resolves with the task. */
export async function retry(task) {
  try {
    return await api(`/api/tasks/${task.id}/retry`, { method: 'POST' })
  } catch (err) {
    if (err.missingEndpoint) err.message = 'This server cannot retry tasks (no POST /api/tasks/{id}/retry); add the task again instead.'
    throw err
  }
}
