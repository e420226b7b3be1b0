// Tokens (admin): a token per agent or per person, with a role.
//   create   POST   /api/tokens {name, role, ttl_ms?}  the secret comes back in this answer only
//   list     GET    /api/tokens                         never the secret
//   revoke   DELETE /api/tokens/{id}                    refused from the next request on
// The secret is shown once, in a box with a copy button, until the person closes it;
// it is never written to the URL, storage or the list.

import { api } from '../api.js'
import { act, cell, changed, confirmButton, duration, failure, field, fill, h, loading, outcome, panel, parseDuration, stateBox, timeAgo } from '../ui.js'

const enc = encodeURIComponent
const TTL_MIN = 1000
const TTL_MAX = 604_800_000
const ROLE_HINT = {
  agent: 'registers instances and acts as them: state, locks, tasks, messages; no admin actions',
  viewer: 'reads everything, changes nothing: for people and dashboards',
}

export function tokensSection(root) {
  const list = panel({ id: 'admin-tokens', title: 'Tokens', flush: true })
  const create = panel({ id: 'token-create', title: 'Create a token' })
  root.append(create.el, list.el)
  const result = h('div', { class: 'action-result' })
  const drawn = {}

  const f = {
    name: h('input', { type: 'text', name: 'name', required: true, maxlength: 100, spellcheck: 'false', autocomplete: 'off', placeholder: 'ada' }),
    role: h('select', { name: 'role' }, ['agent', 'viewer'].map((r) => h('option', { value: r, text: r }))),
    ttl: h('input', { type: 'text', name: 'ttl', spellcheck: 'false', placeholder: 'never expires' }),
  }
  const roleHint = h('div', { class: 'note span-all', id: 'token-role-hint', text: ROLE_HINT.agent })
  f.role.addEventListener('change', () => (roleHint.textContent = ROLE_HINT[f.role.value]))
  const createResult = h('div', { class: 'span-all' })
  const shown = h('div', { class: 'span-all' })
  const submit = h('button', { class: 'btn primary', type: 'submit', text: 'Create token' })
  const form = h('form', { class: 'form-grid', id: 'token-form' },
    field('Name', f.name, '1-100 characters, unique'),
    field('Role', f.role),
    field('Expires after', f.ttl, 'optional: 30m, 12h, 7d (at most 7 days)'),
    roleHint,
    h('div', { class: 'row span-all' }, submit), createResult, shown)
  form.addEventListener('submit', (e) => {
    e.preventDefault()
    act(submit, 'Creating…', createResult, async () => {
      const body = { name: f.name.value.trim(), role: f.role.value }
      if (!body.name) throw new Error('Enter a name for the token, e.g. the agent that will use it.')
      const ttl = f.ttl.value.trim()
      if (ttl) {
        const ms = parseDuration(ttl)
        if (ms === null) throw new Error(`"${ttl}" is no duration: write e.g. 30m, 12h or 7d, or leave it empty.`)
        if (ms < TTL_MIN || ms > TTL_MAX) throw new Error(`A token lives from 1 s to 7 days; "${ttl}" is ${duration(ms)}.`)
        body.ttl_ms = ms
      }
      const made = await api('/api/tokens', { method: 'POST', body })
      form.reset()
      roleHint.textContent = ROLE_HINT.agent
      fill(createResult)
      showOnce(made)
      await refresh()
      return null
    })
  })
  fill(create.body, form)

  /** The secret, once: selectable, with a copy button, gone when closed. */
  function showOnce(made) {
    const secret = h('input', { type: 'text', readonly: true, class: 'mono', id: 'token-secret', value: made.token, 'aria-label': `Token ${made.name}`, spellcheck: 'false' })
    secret.addEventListener('focus', () => secret.select())
    const copied = h('span', { class: 'sub', role: 'status' })
    const copy = h('button', { class: 'btn primary', type: 'button', id: 'token-copy', text: 'Copy' })
    copy.addEventListener('click', async () => {
      secret.select()
      try {
        await navigator.clipboard.writeText(made.token)
        copied.textContent = 'Copied.'
      } catch {
        // Without clipboard access (plain http on another host) the selected text can still be copied by hand.
        copied.textContent = 'Selected: press Ctrl+C to copy.'
      }
    })
    const done = h('button', { class: 'btn', type: 'button', text: 'I have copied it', onclick: () => fill(shown) })
    fill(shown, h('div', { class: 'token-once', id: 'token-once', role: 'alert' },
      h('div', { class: 'strong' }, `Token “${made.name}” (${made.role}) created`, made.expires_at ? [', expires ', timeAgo(made.expires_at)] : ', never expires'),
      h('div', { class: 'warn-text', text: 'Copy it now: it is not shown again. The server keeps only a hash; a lost token can only be revoked and replaced.' }),
      h('div', { class: 'row' }, secret, copy, copied),
      h('div', { class: 'sub' }, 'Give it to the agent as ', h('code', { text: 'MUSTER_TOKEN' }), ' or a ', h('code', { text: 'Authorization: Bearer …' }), ' header.'),
      h('div', { class: 'row' }, done)))
    secret.focus()
  }

  const row = (t) => {
    const expired = t.expires_at && Date.parse(t.expires_at) <= Date.now()
    return h('tr', { class: expired ? 'stale' : null, dataset: { id: t.id, name: t.name } },
      cell('Name', { class: 'wrap-any' }, h('div', { class: 'strong', text: t.name }), h('div', { class: 'sub mono', text: t.id })),
      cell('Role', {}, h('span', { class: `badge ${t.role === 'viewer' ? '' : 'accent'}`, title: ROLE_HINT[t.role] ?? '', text: t.role })),
      cell('Created', {}, timeAgo(t.created_at)),
      cell('Expires', {}, t.expires_at ? [expired ? 'expired ' : '', timeAgo(t.expires_at)] : h('span', { class: 'sub', text: 'never' })),
      cell('Last used', {}, t.last_used_at ? timeAgo(t.last_used_at) : h('span', { class: 'sub', text: 'never' })),
      cell('', { class: 'actions-cell' },
        confirmButton('Revoke', 'Confirm revoke', async () => {
          await api(`/api/tokens/${enc(t.id)}`, { method: 'DELETE' })
          outcome(result, true, `Revoked ${t.name}: it is refused from now on.`)
          await refresh()
        }, { needs: 'admin', onError: (err) => outcome(result, false, `Revoke failed: ${err.message}`) })))
  }

  async function refresh() {
    let tokens
    try {
      tokens = await api('/api/tokens')
    } catch (err) {
      drawn.last = null
      list.meta.textContent = ''
      return failure(list.body, err, 'GET /api/tokens', refresh)
    }
    if (!changed(drawn, tokens)) return
    list.meta.textContent = `${tokens.length} ${tokens.length === 1 ? 'token' : 'tokens'}`
    if (tokens.length === 0) {
      stateBox(list.body, 'empty', 'No tokens yet', 'Only the server’s own token works. Create one per agent above, and a viewer token for people who only watch.')
      return list.body.prepend(result)
    }
    fill(list.body, result, h('table', { class: 'data cards fixed', id: 'tokens-table' },
      h('colgroup', {}, ['c-wide', 'c-status', 'c-when', 'c-when', 'c-when', 'c-actions2'].map((c) => h('col', { class: c }))),
      h('thead', {}, h('tr', {}, ['Name', 'Role', 'Created', 'Expires', 'Last used', ''].map((text) => h('th', { text })))),
      h('tbody', {}, tokens.map(row))))
  }

  loading(list.body)
  return { refresh, open: () => ((drawn.last = null), refresh()) }
}
