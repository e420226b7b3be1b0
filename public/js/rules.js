// Entry point of the rules page (GET /rules). Everything goes through the API:
//   projects and counts   GET  /api/rules/export?source=local,learned,external
//   proposed rules        GET  /api/rules?status=proposed, POST /api/rules/{project}/{id}/accept|reject
//   one project's rules   GET  /api/validate/{project}/rules
//   add / edit / delete   PUT  /api/validate/{project}/rules (the whole edited list)
//   import / export       POST /api/rules/import, GET /api/rules/export

import { api, onTokenChange } from './api.js'
import { startShell } from './shell.js'
import { cell, download, every, failure, fill, h, loading, stateBox } from './ui.js'

const ALL_SOURCES = 'local,learned,external'
const GLOBAL = '_global'
const enc = encodeURIComponent

startShell()

const els = {
  projects: document.querySelector('#projects .project-list'),
  projectsMeta: document.querySelector('#projects .meta'),
  openProject: document.getElementById('open-project'),
  proposed: document.querySelector('#proposed .body'),
  proposedMeta: document.querySelector('#proposed .meta'),
  rulesTitle: document.getElementById('project-rules-title'),
  rulesMeta: document.querySelector('#project-rules .meta'),
  rules: document.querySelector('#project-rules .body'),
  stack: document.getElementById('stack-filter'),
  addRule: document.getElementById('add-rule'),
  dialog: document.getElementById('rule-dialog'),
}

let counts = new Map() // project → {accepted, proposed}
let proposals = null
let project = new URLSearchParams(location.hash.slice(1)).get('project') || GLOBAL
let rules = null // every rule of the selected project, unfiltered
let shownOverview = '' // what the project list and proposals were last drawn from

// ---- projects and proposals -------------------------------------------------------

async function loadOverview() {
  const [exported, proposed] = await Promise.allSettled([
    api(`/api/rules/export?source=${ALL_SOURCES}`),
    api('/api/rules?status=proposed'),
  ])
  counts = new Map([[GLOBAL, { accepted: 0, proposed: 0 }]])
  const bump = (p, field) => {
    const c = counts.get(p) ?? { accepted: 0, proposed: 0 }
    c[field]++
    counts.set(p, c)
  }
  if (exported.status === 'fulfilled') for (const r of exported.value) bump(r.project, 'accepted')
  proposals = null
  if (proposed.status === 'fulfilled') {
    proposals = Array.isArray(proposed.value) ? proposed.value : proposed.value?.rules ?? []
    proposals = proposals.filter((r) => !r.status || r.status === 'proposed')
    for (const r of proposals) bump(r.project, 'proposed')
  }
  if (!counts.has(project)) counts.set(project, { accepted: 0, proposed: 0 })
  // Polling redraws only on change, so a list never shifts under the pointer for nothing.
  const drawn = JSON.stringify([[...counts], proposals, exported.reason?.message, proposed.reason?.message])
  if (drawn === shownOverview) return
  shownOverview = drawn
  renderProjects(exported.status === 'rejected' ? exported.reason : null)
  renderProposals(proposed.status === 'rejected' ? proposed.reason : null)
}

function renderProjects(error) {
  const names = [...counts.keys()].sort((a, b) => (a === GLOBAL ? -1 : b === GLOBAL ? 1 : a.localeCompare(b)))
  els.projectsMeta.textContent = `${names.length}`
  fill(els.projects,
    error ? h('li', {}, failure(h('div'), error, 'GET /api/rules/export', refreshAll)) : null,
    names.map((name) => {
      const c = counts.get(name)
      return h('li', {},
        h('button', { type: 'button', 'aria-current': String(name === project), title: name === GLOBAL ? 'Rules that apply to every project' : name, onclick: () => selectProject(name) },
          h('span', { class: 'name', text: name }),
          h('span', { class: 'counts' },
            c.proposed ? h('span', { class: 'badge warn', title: `${c.proposed} proposed`, text: `${c.proposed} new` }) : null,
            h('span', { class: 'badge', title: `${c.accepted} accepted`, text: String(c.accepted) }))))
    }))
}

function renderProposals(error) {
  if (error) {
    els.proposedMeta.textContent = ''
    if (error.missingEndpoint)
      return stateBox(els.proposed, 'missing', 'Proposed rules cannot be listed on this server',
        ['Listing them needs ', h('code', { text: 'GET /api/rules?status=proposed' }), ', which this server does not provide. Accept and reject still work through the API.'])
    return failure(els.proposed, error, 'GET /api/rules?status=proposed', refreshAll)
  }
  els.proposedMeta.textContent = proposals.length ? `${proposals.length} waiting` : ''
  if (proposals.length === 0)
    return stateBox(els.proposed, 'empty', 'Nothing to review', ['Agents suggest rules with ', h('code', { text: 'POST /api/rules/propose' }), ' or the MCP tool ', h('code', { text: 'propose_rule' }), '; they wait here for a decision.'])
  fill(els.proposed, proposals.map(proposalRow))
}

function proposalRow(r) {
  const status = h('div')
  const decide = async (verdict, button) => {
    for (const b of row.querySelectorAll('button')) b.disabled = true
    button.textContent = verdict === 'accept' ? 'Accepting…' : 'Rejecting…'
    try {
      await api(`/api/rules/${enc(r.project)}/${enc(r.rule_id)}/${verdict}`, { method: 'POST' })
      await refreshAll()
    } catch (err) {
      for (const b of row.querySelectorAll('button')) b.disabled = false
      button.textContent = verdict === 'accept' ? 'Accept' : 'Reject'
      fill(status, h('div', { class: 'inline-error', text: err.status === 404 ? 'This rule is no longer proposed (decided elsewhere?). Reloading…' : err.message }))
      if (err.status === 404) setTimeout(refreshAll, 1500)
    }
  }
  const accept = h('button', { class: 'btn good', type: 'button', onclick: () => decide('accept', accept), text: 'Accept' })
  const reject = h('button', { class: 'btn danger', type: 'button', onclick: () => decide('reject', reject), text: 'Reject' })
  const row = h('div', { class: 'proposal', dataset: { project: r.project, rule: r.rule_id } },
    h('div', { class: 'head' },
      h('span', { class: 'rid', text: r.rule_id }),
      h('span', { class: 'badge', text: r.project }),
      severityBadge(r.severity),
      r.stack ? h('span', { class: 'chip', text: `stack ${r.stack}` }) : null,
      r.proposed_by ? h('span', { class: 'note', title: r.proposed_by, text: `by ${String(r.proposed_by).slice(0, 8)}` }) : null),
    h('div', { class: 'pattern' }, h('span', { class: 'chip', text: r.match_type || 'regex' }), ' ', h('code', { class: 'pattern-code', text: r.pattern }),
      r.message ? h('span', { class: 'note', text: ` — ${r.message}` }) : null),
    r.context ? h('div', { class: 'context', text: r.context }) : null,
    h('div', { class: 'decide' }, accept, reject),
    status)
  return row
}

// ---- one project's rules ------------------------------------------------------------

const severityBadge = (s = 'error') => h('span', { class: `badge ${s === 'warning' ? 'warn' : 'bad'}`, text: s })
const isLocal = (r) => !r.source || r.source === 'local'
/** Rules that are live in the project: what PUT must write back (proposed/rejected ones are managed by accept/reject). */
const liveRules = () => (rules ?? []).filter((r) => !r.status || r.status === 'accepted')

function selectProject(name) {
  project = name
  history.replaceState(null, '', `#project=${enc(name)}`)
  if (!counts.has(name)) counts.set(name, { accepted: 0, proposed: 0 })
  shownOverview = ''
  renderProjects(null)
  loadProject()
}

async function loadProject() {
  els.rulesTitle.textContent = project === GLOBAL ? 'Rules of _global (every project)' : `Rules of ${project}`
  loading(els.rules)
  try {
    const res = await api(`/api/validate/${enc(project)}/rules`)
    rules = res.rules ?? []
  } catch (err) {
    rules = null
    els.rulesMeta.textContent = ''
    els.addRule.disabled = true
    return failure(els.rules, err, 'GET /api/validate/{project}/rules', loadProject)
  }
  els.addRule.disabled = false
  renderRules()
}

function renderRules() {
  if (!rules) return
  const stack = els.stack.value.trim()
  const shown = stack ? rules.filter((r) => !r.stack || r.stack === stack) : rules
  els.rulesMeta.textContent = `${rules.length} ${rules.length === 1 ? 'rule' : 'rules'}`
  if (rules.length === 0)
    return stateBox(els.rules, 'empty', 'No rules in this project yet', 'Add one here, import a file, or accept a proposal.')
  if (shown.length === 0) return stateBox(els.rules, 'empty', `No rule applies to stack ${stack}`)
  fill(els.rules, h('table', { class: 'data cards', id: 'rules-table' },
    h('thead', {}, h('tr', {}, ['Rule', 'Status', 'Severity', 'Match', 'Applies to', 'Stack', ''].map((t) => h('th', { text: t })))),
    h('tbody', {}, shown.map(ruleRow))))
}

function ruleRow(r) {
  const local = isLocal(r)
  return h('tr', { dataset: { rule: r.rule_id } },
    cell('Rule', { class: 'wrap-any' }, h('div', { class: 'mono', text: r.rule_id }), r.message ? h('div', { class: 'sub', text: r.message }) : null),
    cell('Status', {},
      h('span', { class: `badge ${r.status === 'accepted' || !r.status ? 'ok' : r.status === 'proposed' ? 'warn' : ''}`, text: r.status || 'accepted' }),
      h('div', { class: 'sub', text: r.source || 'local' })),
    cell('Severity', {}, severityBadge(r.severity)),
    cell('Match', { class: 'wrap-any' }, h('span', { class: 'chip', text: r.match_type || 'regex' }), ' ', h('code', { class: 'pattern-code', text: r.pattern })),
    cell('Applies to', {}, (r.applies_to ?? ['*']).map((g) => h('span', { class: 'chip mono', text: g }))),
    cell('Stack', {}, r.stack || h('span', { class: 'sub', text: 'any' })),
    cell('', { class: 'nowrap' },
      local
        ? [h('button', { class: 'btn small', type: 'button', onclick: () => editRule(r), text: 'Edit' }), ' ', deleteButton(r)]
        : h('span', { class: 'sub', title: 'Learned rules come from proposals, external ones from import', text: 'read-only' })))
}

function deleteButton(r) {
  let armed = null
  const b = h('button', { class: 'btn small danger', type: 'button', text: 'Delete' })
  b.addEventListener('click', async () => {
    if (!armed) {
      b.textContent = 'Confirm delete'
      armed = setTimeout(() => ((armed = null), (b.textContent = 'Delete')), 4000)
      return
    }
    clearTimeout(armed)
    b.disabled = true
    try {
      await saveRules(liveRules().filter((x) => x.rule_id !== r.rule_id))
    } catch (err) {
      b.disabled = false
      b.textContent = 'Delete'
      els.rules.prepend(h('div', { class: 'inline-error', text: `Delete failed: ${err.message}` }))
    }
  })
  return b
}

/** The fields PUT takes; an empty message is left out so the server generates one. */
function ruleBody(r) {
  const out = { rule_id: r.rule_id, severity: r.severity || 'error', match_type: r.match_type || 'regex', pattern: r.pattern, applies_to: r.applies_to?.length ? r.applies_to : ['*'], stack: r.stack || '' }
  if (r.message) out.message = r.message
  return out
}

async function saveRules(list) {
  await api(`/api/validate/${enc(project)}/rules`, { method: 'PUT', body: list.map(ruleBody) })
  await refreshAll()
}

// ---- the add / edit dialog -------------------------------------------------------------

function editRule(original) {
  const form = els.dialog.querySelector('form')
  const error = form.querySelector('.inline-error')
  form.reset()
  error.hidden = true
  form.querySelector('h2').textContent = original ? `Edit ${original.rule_id}` : `Add a rule to ${project}`
  if (original)
    for (const name of ['rule_id', 'severity', 'match_type', 'pattern', 'message', 'stack'])
      form.elements[name].value = original[name] ?? (name === 'severity' ? 'error' : name === 'match_type' ? 'regex' : '')
  form.elements.applies_to.value = (original?.applies_to ?? ['*']).join(', ')
  const others = liveRules().filter((r) => !isLocal(r)).length
  form.querySelector('.hint-put')?.remove()
  if (others)
    error.insertAdjacentElement('beforebegin', h('p', { class: 'note hint-put', text: `Saving writes the project's whole rule list (PUT replaces all of its rules); its ${others} learned or external rule${others === 1 ? ' is' : 's are'} written back with it.` }))

  form.onsubmit = async (e) => {
    e.preventDefault()
    const f = form.elements
    const next = {
      rule_id: f.rule_id.value.trim(),
      severity: f.severity.value,
      match_type: f.match_type.value,
      pattern: f.pattern.value,
      message: f.message.value.trim(),
      stack: f.stack.value.trim(),
      applies_to: f.applies_to.value.split(',').map((s) => s.trim()).filter(Boolean),
    }
    const show = (text) => ((error.textContent = text), (error.hidden = false))
    if (!next.rule_id) return show('The rule id is required.')
    if (!next.pattern) return show('The pattern is required.')
    const current = liveRules()
    if (current.some((r) => r.rule_id === next.rule_id && r !== original)) return show(`${project} already has a rule ${next.rule_id}.`)
    const list = original ? current.map((r) => (r === original ? next : r)) : [...current, next]
    const save = form.querySelector('button[type=submit]')
    save.disabled = true
    try {
      await saveRules(list)
      els.dialog.close()
    } catch (err) {
      show(err.message)
    } finally {
      save.disabled = false
    }
  }
  form.querySelector('button[value=cancel]').onclick = () => els.dialog.close()
  els.dialog.showModal()
  form.elements.rule_id.focus()
}

// ---- import and export --------------------------------------------------------------------

function setupTransfer() {
  const importForm = document.getElementById('import-form')
  const text = document.getElementById('import-text')
  const result = document.getElementById('import-result')
  document.getElementById('import-file').addEventListener('change', async (e) => {
    const file = e.target.files[0]
    if (file) text.value = await file.text()
  })
  importForm.addEventListener('submit', async (e) => {
    e.preventDefault()
    let list
    try {
      list = JSON.parse(text.value)
    } catch (err) {
      return fill(result, h('div', { class: 'inline-error', text: `Not valid JSON: ${err.message}` }))
    }
    if (!Array.isArray(list)) return fill(result, h('div', { class: 'inline-error', text: 'Expected a JSON array of rules.' }))
    try {
      const res = await api('/api/rules/import', { method: 'POST', body: list })
      fill(result, h('div', { class: 'inline-ok', text: `Imported ${res.imported} ${res.imported === 1 ? 'rule' : 'rules'}.` }))
      text.value = ''
      await refreshAll()
    } catch (err) {
      failure(result, err, 'POST /api/rules/import')
    }
  })

  const exportForm = document.getElementById('export-form')
  const exportResult = document.getElementById('export-result')
  exportForm.addEventListener('submit', async (e) => {
    e.preventDefault()
    const sources = [...exportForm.querySelectorAll('input[name=source]:checked')].map((i) => i.value)
    if (sources.length === 0) return fill(exportResult, h('div', { class: 'inline-error', text: 'Pick at least one source.' }))
    try {
      const list = await api(`/api/rules/export?source=${sources.join(',')}`)
      download(new Blob([JSON.stringify(list, null, 2)], { type: 'application/json' }), `muster-rules-${new Date().toISOString().slice(0, 10)}.json`)
      fill(exportResult, h('div', { class: 'inline-ok', text: `Exported ${list.length} ${list.length === 1 ? 'rule' : 'rules'} (${sources.join(', ')}).` }))
    } catch (err) {
      failure(exportResult, err, 'GET /api/rules/export')
    }
  })
}

// ---- wiring ---------------------------------------------------------------------------------

async function refreshAll() {
  await Promise.all([loadOverview(), loadProject()])
}

els.openProject.addEventListener('submit', (e) => {
  e.preventDefault()
  const input = els.openProject.elements.project
  const name = input.value.trim()
  if (!name) return
  input.value = ''
  selectProject(name)
})
els.stack.addEventListener('input', renderRules)
els.addRule.addEventListener('click', () => editRule(null))
onTokenChange(refreshAll)
setupTransfer()
loading(els.proposed)
loadProject()
every(10000, loadOverview)
