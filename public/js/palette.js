// The command palette (Ctrl+K, "/" or the Search button): one box that jumps to
// a state key, an instance, a rule or a template. The lists are fetched when the
// palette opens; matching is by substring of name, id and project, best first.

import { api } from './api.js'
import { fill, h } from './ui.js'

const MAX_SHOWN = 40
const enc = encodeURIComponent

async function everything() {
  const [keys, instances, rules, templates] = await Promise.allSettled([
    api('/api/state'), api('/api/instances'), api('/api/rules'), api('/api/templates'),
  ])
  const ok = (r) => (r.status === 'fulfilled' && Array.isArray(r.value) ? r.value : [])
  return [
    ...ok(instances).map((i) => ({ kind: 'instance', label: i.name, detail: `${i.status} · ${i.workspace || 'no workspace'} · ${i.id}`, text: `${i.name} ${i.id} ${i.workspace}`, href: `/admin#instances/${enc(i.id)}` })),
    ...ok(keys).map((k) => ({ kind: 'key', label: k.key, detail: `v${k.version} · ${k.content_type}`, text: k.key, href: `/#key=${enc(k.key)}` })),
    ...ok(rules).map((r) => ({ kind: 'rule', label: r.rule_id, detail: `${r.project} · ${r.status} · ${r.source}`, text: `${r.rule_id} ${r.project} ${r.pattern}`, href: `/rules#project=${enc(r.project)}` })),
    ...ok(templates).map((t) => ({ kind: 'template', label: t.name, detail: `${t.id} · ${t.kind}`, text: `${t.name} ${t.id} ${(t.tags ?? []).join(' ')}`, href: `/admin#templates/${enc(t.id)}` })),
  ]
}

/** Lower is better: a label starting with the query, then containing it, then any other field containing it. */
function score(item, q) {
  const label = item.label.toLowerCase()
  if (label.startsWith(q)) return 0
  if (label.includes(q)) return 1
  if (item.text.toLowerCase().includes(q)) return 2
  return -1
}

let dialog = null

export function openPalette() {
  if (dialog?.open) return
  const input = h('input', { type: 'search', placeholder: 'Jump to a key, instance, rule or template…', 'aria-label': 'Search', spellcheck: 'false', autocomplete: 'off' })
  const list = h('ul', { class: 'palette-results', role: 'listbox', id: 'palette-results' })
  dialog = h('dialog', { id: 'palette', class: 'palette', 'aria-label': 'Search' }, h('div', { class: 'palette-box' }, input, list,
    h('div', { class: 'note', text: '↑ ↓ to choose · Enter to open · Esc to close' })))
  let items = null
  let shown = []
  let active = 0

  const go = (item) => {
    if (!item) return
    close()
    const target = new URL(item.href, location.href)
    if (target.pathname !== location.pathname) location.href = target.href
    else if (target.hash !== location.hash) location.hash = target.hash
    else window.dispatchEvent(new HashChangeEvent('hashchange'))
  }
  const render = () => {
    if (!items) return fill(list, h('li', { class: 'note', text: 'Loading…' }))
    const q = input.value.trim().toLowerCase()
    shown = (q ? items.map((i) => [i, score(i, q)]).filter(([, s]) => s >= 0).sort((a, b) => a[1] - b[1]).map(([i]) => i) : items).slice(0, MAX_SHOWN)
    active = Math.min(active, Math.max(0, shown.length - 1))
    if (shown.length === 0) return fill(list, h('li', { class: 'note', text: q ? `Nothing matches “${input.value.trim()}”.` : 'Nothing to jump to yet.' }))
    fill(list, shown.map((item, i) => h('li', { role: 'option', 'aria-selected': String(i === active), dataset: { kind: item.kind }, onclick: () => go(item), onmousemove: () => i !== active && ((active = i), render()) },
      h('span', { class: `badge kind-${item.kind}`, text: item.kind }),
      h('span', { class: 'label', text: item.label }),
      h('span', { class: 'detail', text: item.detail }))))
    list.querySelector('[aria-selected=true]')?.scrollIntoView({ block: 'nearest' })
  }
  const close = () => {
    dialog.close()
    dialog.remove()
  }
  input.addEventListener('input', () => ((active = 0), render()))
  input.addEventListener('keydown', (e) => {
    if (e.key === 'ArrowDown') (active = Math.min(active + 1, shown.length - 1)), render(), e.preventDefault()
    else if (e.key === 'ArrowUp') (active = Math.max(active - 1, 0)), render(), e.preventDefault()
    else if (e.key === 'Enter') e.preventDefault(), go(shown[active])
  })
  dialog.addEventListener('close', () => dialog.remove())
  dialog.addEventListener('click', (e) => e.target === dialog && close())
  document.body.append(dialog)
  dialog.showModal()
  input.focus()
  render()
  everything().then((all) => {
    items = all
    render()
  })
}

/** The Search button for the top bar, and the keyboard shortcuts. */
export function paletteButton() {
  document.addEventListener('keydown', (e) => {
    const typing = /^(INPUT|TEXTAREA|SELECT)$/.test(document.activeElement?.tagName ?? '') || document.activeElement?.isContentEditable
    if ((e.key === 'k' && (e.ctrlKey || e.metaKey)) || (e.key === '/' && !typing && !document.querySelector('dialog[open]'))) {
      e.preventDefault()
      openPalette()
    }
  })
  return h('button', { class: 'btn search-btn', type: 'button', id: 'open-palette', title: 'Search (Ctrl+K or /)', onclick: openPalette }, 'Search', h('kbd', { text: 'Ctrl K' }))
}
