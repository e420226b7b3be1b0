// Every call the pages make goes through here: the access token rides on each
// request, a 401 opens the token dialog once for all panels, and failures become
// ApiError with the API's {error, code} message.
//
// The token lives in sessionStorage (this tab, never on disk past the session) and
// is shared with the other tabs of this origin over a BroadcastChannel: a tab that
// meets a 401 without a token first asks the open tabs for theirs, and a token
// entered or forgotten in one tab is entered or forgotten in all of them.

const TOKEN_KEY = 'muster.token'
/** How long a tab waits for another tab to answer "who has the token?". */
const ASK_TABS_MS = 250

let token = sessionStorage.getItem(TOKEN_KEY) || ''
/** The open token dialog, shared by every request that met a 401 meanwhile. */
let asking = null
/** Set when the person closed the dialog: polling must not reopen it every few seconds. */
let declined = false
const tokenListeners = new Set()
/** Closes this tab's open token dialog with a token that arrived from another tab. */
let closeDialogWith = null

const channel = typeof BroadcastChannel === 'function' ? new BroadcastChannel('muster.token') : null
channel?.addEventListener('message', ({ data }) => {
  if (data?.type === 'ask' && token) channel.postMessage({ type: 'token', token })
  else if (data?.type === 'token' && typeof data.token === 'string' && data.token && data.token !== token) {
    setToken(data.token, false)
    closeDialogWith?.(data.token)
  } else if (data?.type === 'forget' && token) setToken('', false)
})

/** Asks the other open tabs for their token; resolves with it, or '' when none answers in time. */
function tokenFromOtherTabs() {
  if (!channel) return Promise.resolve('')
  return new Promise((resolve) => {
    const done = (value) => {
      clearTimeout(timer)
      channel.removeEventListener('message', onReply)
      resolve(value)
    }
    const onReply = ({ data }) => data?.type === 'token' && data.token && done(data.token)
    const timer = setTimeout(() => done(''), ASK_TABS_MS)
    channel.addEventListener('message', onReply)
    channel.postMessage({ type: 'ask' })
  })
}

export class ApiError extends Error {
  constructor(status, message, body = null) {
    super(message)
    this.status = status
    this.body = body
  }
  /** The route itself does not exist on this server (as opposed to a missing resource). */
  get missingEndpoint() {
    return (this.status === 404 && this.body?.error === 'not found') || this.status === 405
  }
  get needsToken() {
    return this.status === 401
  }
}

export const currentToken = () => token
export const hasToken = () => token !== ''

/** fn runs after a new token was accepted (panels reload) or forgotten. */
export function onTokenChange(fn) {
  tokenListeners.add(fn)
}

/** Sets this tab's token; `share` tells the other tabs too (not when the change came from them). */
function setToken(next, share = true) {
  token = next
  if (next) sessionStorage.setItem(TOKEN_KEY, next)
  else sessionStorage.removeItem(TOKEN_KEY)
  if (share) channel?.postMessage(next ? { type: 'token', token: next } : { type: 'forget' })
  for (const fn of tokenListeners) fn()
}

/** Forgets the token in every tab of this origin. */
export function forgetToken() {
  declined = false
  setToken('')
}

async function errorOf(res) {
  const text = await res.text().catch(() => '')
  let body = null
  try {
    body = JSON.parse(text)
  } catch {}
  const message = (body && typeof body.error === 'string' && body.error) || text.trim().slice(0, 200) || res.statusText || `HTTP ${res.status}`
  return new ApiError(res.status, message, body)
}

/**
 * Calls the API through the dashboard. Returns parsed JSON, or the Response
 * itself with {raw: true}. JSON bodies are encoded; strings and Blobs go as they are.
 */
export async function api(path, { method = 'GET', body, headers = {}, raw = false, signal } = {}) {
  let payload = body
  const baseHeaders = new Headers(headers)
  if (body !== undefined && typeof body !== 'string' && !(body instanceof Blob)) {
    payload = JSON.stringify(body)
    baseHeaders.set('content-type', 'application/json')
  }
  for (;;) {
    const sent = token
    const h = new Headers(baseHeaders)
    if (sent) h.set('authorization', `Bearer ${sent}`)
    let res
    try {
      res = await fetch(path, { method, headers: h, body: payload, signal, cache: 'no-store' })
    } catch (err) {
      if (err?.name === 'AbortError') throw err
      throw new ApiError(0, 'cannot reach the Muster dashboard server')
    }
    if (res.status === 401) {
      await res.body?.cancel()
      // Another request may have obtained a new token while this one was in flight.
      if (token && token !== sent) continue
      const next = await askForToken(sent ? 'rejected' : 'needed')
      if (next) continue
      throw new ApiError(401, 'this server needs an access token')
    }
    if (!res.ok) throw await errorOf(res)
    if (raw) return res
    if (res.status === 204 || res.status === 304) return null
    const text = await res.text()
    try {
      return text === '' ? null : JSON.parse(text)
    } catch {
      return text
    }
  }
}

/** Opens the token dialog on demand (the "Enter token" buttons), even after a cancel. */
export function requestToken() {
  declined = false
  return askForToken('needed', { tabs: false })
}

function askForToken(reason, { tabs = true } = {}) {
  if (asking) return asking
  if (declined) return Promise.resolve(null)
  asking = (async () => {
    // A token known to another tab is taken silently (unless it is the one just rejected).
    const shared = tabs && reason === 'needed' ? await tokenFromOtherTabs() : ''
    if (shared) {
      setToken(shared, false)
      return shared
    }
    const next = await showTokenDialog(reason)
    if (next) setToken(next)
    else declined = true
    return next
  })().finally(() => (asking = null))
  return asking
}

/** Any /api path answers 401 before routing, so a 1-entry audit read checks a token cheaply. */
async function tokenWorks(candidate) {
  const res = await fetch('/api/audit?limit=1', { headers: { authorization: `Bearer ${candidate}` }, cache: 'no-store' })
  await res.body?.cancel()
  return res.status !== 401
}

function showTokenDialog(reason) {
  return new Promise((resolve) => {
    const dialog = document.createElement('dialog')
    dialog.id = 'token-dialog'
    dialog.innerHTML = `
      <form method="dialog">
        <h2>Access token needed</h2>
        <p>This Muster server only answers requests that carry its access token
        (the server's <code>--auth-token</code>). It is kept for this browser session: shared with
        this dashboard's other open tabs, gone when the last one closes.</p>
        <label>Token <input type="password" name="token" autocomplete="off" spellcheck="false" required></label>
        <div class="inline-error" role="alert" hidden></div>
        <div class="buttons">
          <button type="button" class="btn" value="cancel">Not now</button>
          <button type="submit" class="btn primary">Continue</button>
        </div>
      </form>`
    const form = dialog.querySelector('form')
    const input = dialog.querySelector('input')
    const error = dialog.querySelector('.inline-error')
    const submit = dialog.querySelector('button[type=submit]')
    const showError = (text) => {
      error.textContent = text
      error.hidden = false
    }
    if (reason === 'rejected') showError('The saved token was not accepted. Enter the current one.')
    const finish = (value) => {
      closeDialogWith = null
      dialog.close()
      dialog.remove()
      resolve(value)
    }
    closeDialogWith = finish
    dialog.querySelector('button[value=cancel]').addEventListener('click', () => finish(null))
    dialog.addEventListener('cancel', (e) => {
      e.preventDefault()
      finish(null)
    })
    form.addEventListener('submit', async (e) => {
      e.preventDefault()
      const candidate = input.value.trim()
      if (!candidate) return showError('Enter the token.')
      submit.disabled = true
      submit.textContent = 'Checking…'
      try {
        if (await tokenWorks(candidate)) return finish(candidate)
        showError('That token was not accepted by the server.')
        input.select()
      } catch {
        showError('Cannot reach the server to check the token.')
      } finally {
        submit.disabled = false
        submit.textContent = 'Continue'
      }
    })
    document.body.append(dialog)
    dialog.showModal()
    input.focus()
  })
}

/** Path for a state key: each segment encoded, slashes kept. */
export const keyPath = (key) => key.split('/').map(encodeURIComponent).join('/')

/** ws:// URL on this origin; the token goes as ?token= because browsers cannot set headers on a WebSocket. */
export function socketUrl(path, params) {
  const url = new URL(path, location.href)
  url.protocol = location.protocol === 'https:' ? 'wss:' : 'ws:'
  for (const [k, v] of Object.entries(params)) if (v !== undefined && v !== null && v !== '') url.searchParams.set(k, String(v))
  if (token) url.searchParams.set('token', token)
  return url.toString()
}
