// Entry point of the admin page (GET /admin): one section at a time, chosen in the
// side list and kept in the URL (#webhooks, #templates/{id}, #contracts/{project}/{name},
// #instances/{id}). Only the open section loads and refreshes (every 5 s while
// the tab is visible). A section the console's role may not use (role.js) is left out
// of the list, and its URL opens the first one instead.

import { onTokenChange } from './api.js'
import { startShell } from './shell.js'
import { every, h } from './ui.js'
import { instancesSection } from './admin/instances.js'
import { webhooksSection } from './admin/webhooks.js'
import { templatesSection } from './admin/templates.js'
import { contractsSection } from './admin/contracts.js'
import { complianceSection } from './admin/compliance.js'
import { backupSection } from './admin/backup.js'
import { tokensSection } from './admin/tokens.js'
import { allowed, onRole } from './role.js'

/** [name, title, hint, section, role it needs] */
const SECTIONS = [
  ['instances', 'Instances', 'agents, metrics, deregister', instancesSection],
  ['tokens', 'Tokens', 'create, list, revoke', tokensSection, 'admin'],
  ['webhooks', 'Webhooks', 'create, test, enable', webhooksSection],
  ['templates', 'Templates', 'view, edit, apply', templatesSection],
  ['contracts', 'Contracts', 'validate, live test', contractsSection],
  ['compliance', 'Compliance', 'runs and history', complianceSection],
  ['backup', 'Backup', 'download, restore', backupSection, 'admin'],
]

startShell()
const main = document.getElementById('admin-main')
const nav = document.getElementById('section-list')
const mounted = new Map() // name → {root, section}
let current = null

const buttons = SECTIONS.map(([name, title, hint]) =>
  h('button', { type: 'button', dataset: { section: name }, onclick: () => (location.hash = name) },
    h('span', { class: 'name', text: title }), h('span', { class: 'hint', text: hint })))
nav.append(...buttons.map((b, i) => h('li', { 'data-needs': SECTIONS[i][4] }, b)))

function route() {
  const [name, ...rest] = location.hash.slice(1).split('/')
  const entry = SECTIONS.find(([n, , , , needs]) => n === name && allowed(needs)) ?? SECTIONS[0]
  const arg = rest.join('/')
  if (!mounted.has(entry[0])) {
    const root = h('div', { class: 'admin-section', id: `section-${entry[0]}` })
    main.append(root)
    mounted.set(entry[0], { root, section: entry[3](root) })
  }
  for (const [n, m] of mounted) m.root.hidden = n !== entry[0]
  for (const b of buttons) b.setAttribute('aria-current', String(b.dataset.section === entry[0]))
  document.title = `Muster · ${entry[1]}`
  current = mounted.get(entry[0]).section
  current.open(arg)
}

window.addEventListener('hashchange', route)
// The role decides which sections exist, so the first route waits for it.
let routed = false
onRole((role) => {
  if (!role) return
  if (!routed || !allowed(SECTIONS.find(([n]) => n === location.hash.slice(1).split('/')[0])?.[4])) route()
  routed = true
})
every(5000, () => current?.refresh())
onTokenChange(() => current?.open(''))
