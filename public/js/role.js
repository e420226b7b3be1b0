// What this console may do, from GET /api/whoami: admin (the server's token, or no auth),
// agent or viewer. The role goes on <html data-role>, and the stylesheet hides every
// control marked data-needs="write" (viewer) or data-needs="admin" (viewer and agent):
// hidden, not just disabled, so a read-only console shows no action it cannot take.
// Until the answer arrives nothing marked shows (no flash of buttons for a viewer);
// the last answer for this tab's token is kept so a reload draws at once.

import { api, currentToken, onTokenChange } from './api.js'

const KEY = 'muster.role'
const ROLES = new Set(['admin', 'agent', 'viewer'])
const listeners = new Set()
let role = null

function set(next) {
  role = next
  if (next) document.documentElement.dataset.role = next
  else delete document.documentElement.dataset.role
  for (const fn of listeners) fn(role)
}

/** FNV-1a of the token: enough to tell tokens apart without keeping a second copy of the secret. */
function fingerprint(token) {
  let x = 0x811c9dc5
  for (let i = 0; i < token.length; i++) x = Math.imul(x ^ token.charCodeAt(i), 0x01000193) >>> 0
  return x.toString(16)
}

/** The tab keeps the role beside the token it was learnt for, never for another token. */
function remembered() {
  try {
    const kept = JSON.parse(sessionStorage.getItem(KEY) ?? 'null')
    return kept && kept.of === fingerprint(currentToken()) && ROLES.has(kept.role) ? kept.role : null
  } catch {
    return null
  }
}

async function learn() {
  const asked = currentToken()
  let next = 'admin'
  try {
    const me = await api('/api/whoami')
    if (ROLES.has(me?.role)) next = me.role
  } catch (err) {
    // A server without /api/whoami has no roles: its one token opens everything.
    if (!err?.missingEndpoint && err?.status !== 404) {
      if (!role) set(remembered() ?? 'admin')
      return
    }
  }
  if (asked !== currentToken()) return
  sessionStorage.setItem(KEY, JSON.stringify({ of: fingerprint(asked), role: next }))
  set(next)
}

let started = false
/** Starts following the role (once per page); shell.js calls it. */
export function startRole() {
  if (started) return
  started = true
  const kept = remembered()
  if (kept) set(kept)
  learn()
  onTokenChange(() => {
    sessionStorage.removeItem(KEY)
    set(null)
    learn()
  })
}

/** The role once known, else null. */
export const currentRole = () => role

/** fn(role) runs whenever the role becomes known or changes. */
export function onRole(fn) {
  listeners.add(fn)
  if (role) fn(role)
}

/** Whether this console may take actions marked `needs` ('write' or 'admin'). */
export function allowed(needs) {
  if (needs === 'admin') return role === 'admin'
  if (needs === 'write') return role === 'admin' || role === 'agent'
  return true
}
