// Instance names for ids. Audit actors, proposers, compliance runs and agent
// metrics name instances by UUID; the pages show the name instead, with the id
// on hover and one click to copy it.

import { api } from './api.js'
import { h } from './ui.js'

const FRESH_MS = 4000
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i

let pending = null
let loadedAt = 0

/** id → instance, from GET /api/instances (shared by every caller for a few seconds; empty when it fails). */
export function instanceNames() {
  if (!pending || Date.now() - loadedAt > FRESH_MS) {
    loadedAt = Date.now()
    pending = api('/api/instances')
      .then((list) => new Map((Array.isArray(list) ? list : []).map((i) => [i.id, i])))
      .catch(() => new Map())
  }
  return pending
}

/** Drops the cached list (after a register or deregister made here). */
export const forgetNames = () => (pending = null)

/** The text an id reads as: the instance's name, or the id itself when it is no instance. */
export function nameOf(names, id) {
  const inst = names.get(id)
  if (inst) return inst.name
  return UUID.test(String(id)) ? `gone ${String(id).slice(0, 8)}` : String(id ?? '')
}

/**
 * An instance by name: hover shows the id, a click copies it. Actors that are no
 * instance ("admin", "anonymous") stay plain text.
 */
export function who(names, id) {
  const text = String(id ?? '')
  if (!text) return h('span', { class: 'sub', text: '—' })
  const known = names.has(text)
  if (!known && !UUID.test(text)) return h('span', { class: 'who plain', text })
  const b = h('button', {
    type: 'button',
    class: `who${known ? '' : ' gone'}`,
    title: `${known ? '' : 'deregistered instance '}${text} (click to copy the id)`,
    dataset: { id: text },
    text: nameOf(names, text),
  })
  b.addEventListener('click', async (e) => {
    e.stopPropagation()
    try {
      await navigator.clipboard.writeText(text)
      b.dataset.copied = 'true'
      setTimeout(() => delete b.dataset.copied, 1200)
    } catch {}
  })
  return b
}
