// Entry point of the rules page (GET /rules). Everything goes through the API:
//   projects and counts   GET  /api/rules/export?source=local,learned,external
//   proposed rules        GET  /api/rules?status=proposed, POST /api/rules/{project}/{id}/accept|reject
//   rejected rules        GET  /api/rules?status=rejected, reopened with POST /api/rules/propose
//   one project's rules   GET  /api/validate/{project}/rules
//   add / edit / delete   PUT | DELETE /api/rules/{project}/{id} (one rule: the others keep their source)
//   import / export       POST /api/rules/import, GET /api/rules/export

import { api, onTokenChange } from './api.js'
import { instanceNames, who } from './names.js'
import { startShell } from './shell.js'
import { cell, confirmButton, download, every, failure, fill, h, loading, outcome, stateBox } from './ui.js'

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
  rejected: document.querySelector('#rejected .body'),
  rejectedMeta: document.querySelector('#rejected .meta'),
  rulesTitle: document.getElementById('project-rules-title'),
  rulesMeta: document.querySelector('#project-rules .meta'),
  rules: document.querySelector('#project-rules .body'),
  stack: document.getElementById('stack-filter'),
  addRule: document.getElementById('add-rule'),
  dialog: document.getElementById('rule-dialog'),
}

let counts = new Map() // project → {accepted, proposed}
let proposals = null
let rejected = null
let names = new Map()
let project = new URLSearchParams(location.hash.slice(1)).get('project') || GLOBAL
let rules = null // every rule of the selected project, unfiltered
let shownOverview = '' // what the project list and proposals were last drawn from

// ---- projects and proposals -------------------------------------------------------

async function loadOverview() {
  const [exported, proposed, refused, known] = await Promise.allSettled([
    api(`/api/rules/export?source=${ALL_SOURCES}`),
    api('/api/rules?status=proposed'),
    api('/api/rules?status=rejected'),
    instanceNames(),
  ])
  names = known.status === 'fulfilled' ? known.value : new Map()
  rejected = refused.status === 'fulfilled' ? (Array.isArray(refused.value) ? refused.value : []) : null
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
  const drawn = JSON.stringify([[...counts], proposals, rejected, [...names.keys()], exported.reason?.message, proposed.reason?.message, refused.reason?.message])
  if (drawn === shownOverview) return
  shownOverview = drawn
  renderProjects(exported.status === 'rejected' ? exported.reason : null)
  renderProposals(proposed.status === 'rejected' ? proposed.reason : null)
  renderRejected(refused.status === 'rejected' ? refused.reason : null)
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
  const accept = h('button', { class: 'btn good', type: 'button', 'data-needs': 'admin', onclick: () => decide('accept', accept), text: 'Accept' })
  const reject = h('button', { class: 'btn danger', type: 'button', 'data-needs': 'admin', onclick: () => decide('reject', reject), text: 'Reject' })
  const row = h('div', { class: 'proposal', dataset: { project: r.project, rule: r.rule_id } },
    h('div', { class: 'head' },
      h('span', { class: 'rid', text: r.rule_id }),
      h('span', { class: 'badge', text: r.project }),
      severityBadge(r.severity),
      r.stack ? h('span', { class: 'chip', text: `stack ${r.stack}` }) : null,
      r.proposed_by ? h('span', { class: 'note' }, 'by ', who(names, r.proposed_by)) : null),
    h('div', { class: 'pattern' }, h('span', { class: 'chip', text: r.match_type || 'regex' }), ' ', h('code', { class: 'pattern-code', text: r.pattern }),
      r.message ? h('span', { class: 'note', text: ` — ${r.message}` }) : null),
    r.context ? h('div', { class: 'context', text: r.context }) : null,
    h('div', { class: 'decide' }, accept, reject),
    status)
  return row
}

/** Rejected rules never fire; Reopen proposes one again (it returns to proposed, with its proposer and context). */
function renderRejected(error) {
  if (!els.rejected) return
  if (error) {
    els.rejectedMeta.textContent = ''
    return failure(els.rejected, error, 'GET /api/rules?status=rejected', refreshAll)
  }
  els.rejectedMeta.textContent = rejected.length ? String(rejected.length) : ''
  if (rejected.length === 0) return stateBox(els.rejected, 'empty', 'No rejected rules', 'Rules rejected here or through the API are kept and listed here; they can be reopened.')
  fill(els.rejected, h('table', { class: 'data cards fixed', id: 'rejected-table' },
    h('colgroup', {}, h('col', { class: 'c-rule' }), h('col', { class: 'c-wide' }), h('col', { class: 'c-who' }), h('col', { class: 'c-actions' })),
    h('thead', {}, h('tr', {}, ['Rule', 'Match', 'Proposed by', ''].map((t) => h('th', { text: t })))),
    h('tbody', {}, rejected.map((r) => {
      const result = h('div')
      const reopen = h('button', { class: 'btn small', type: 'button', 'data-needs': 'write', text: 'Reopen' })
      reopen.addEventListener('click', async () => {
        reopen.disabled = true
        try {
          await api('/api/rules/propose', { method: 'POST', body: { ...ruleBody(r), project: r.project, proposed_by: r.proposed_by, context: r.context } })
          await refreshAll()
        } catch (err) {
          reopen.disabled = false
          outcome(result, false, err.message)
        }
      })
      return h('tr', { dataset: { project: r.project, rule: r.rule_id } },
        cell('Rule', { class: 'wrap-any' }, h('div', { class: 'mono', text: r.rule_id }), h('div', { class: 'sub', text: r.project })),
        cell('Match', { class: 'wrap-any' }, h('span', { class: 'chip', text: r.match_type || 'regex' }), ' ', h('code', { class: 'pattern-code', text: r.pattern }),
          r.context ? h('div', { class: 'sub', text: r.context }) : null),
        cell('Proposed by', {}, r.proposed_by ? who(names, r.proposed_by) : h('span', { class: 'sub', text: '—' })),
        cell('', {}, reopen, result))
    }))))
}

// ---- one project's rules ------------------------------------------------------------

const severityBadge = (s = 'error') => h('span', { class: `badge ${s === 'warning' ? 'warn' : 'bad'}`, text: s })
/** The single-rule endpoint of a rule of the selected project. */
const rulePath = (r) => `/api/rules/${enc(project)}/${enc(r.rule_id)}`

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
  fill(els.rules, h('table', { class: 'data cards fixed', id: 'rules-table' },
    h('colgroup', {}, ['c-rule', 'c-status', 'c-sev', 'c-wide', 'c-globs', 'c-stack', 'c-actions'].map((c) => h('col', { class: c }))),
    h('thead', {}, h('tr', {}, ['Rule', 'Status', 'Severity', 'Match', 'Applies to', 'Stack', ''].map((t) => h('th', { text: t })))),
    h('tbody', {}, shown.map(ruleRow))))
}

function ruleRow(r) {
  return h('tr', { dataset: { rule: r.rule_id, source: r.source || 'local' } },
    cell('Rule', { class: 'wrap-any' }, h('div', { class: 'mono', text: r.rule_id }), r.message ? h('div', { class: 'sub', text: r.message }) : null),
    cell('Status', {},
      h('span', { class: `badge ${r.status === 'accepted' || !r.status ? 'ok' : r.status === 'proposed' ? 'warn' : ''}`, text: r.status || 'accepted' }),
      h('div', { class: 'sub', text: r.source || 'local' }),
      r.proposed_by ? h('div', { class: 'sub ellipsis' }, 'by ', who(names, r.proposed_by)) : null),
    cell('Severity', {}, severityBadge(r.severity)),
    cell('Match', { class: 'wrap-any' }, h('span', { class: 'chip', text: r.match_type || 'regex' }), ' ', h('code', { class: 'pattern-code', text: r.pattern })),
    cell('Applies to', {}, (r.applies_to ?? ['*']).map((g) => h('span', { class: 'chip mono', text: g }))),
    cell('Stack', {}, r.stack || h('span', { class: 'sub', text: 'any' })),
    cell('', { class: 'actions-cell' },
      h('button', { class: 'btn small', type: 'button', 'data-needs': 'write', onclick: () => editRule(r), text: 'Edit' }), ' ',
      confirmButton('Delete', 'Confirm delete', async () => {
        await api(rulePath(r), { method: 'DELETE' })
        await refreshAll()
      }, { needs: 'admin', onError: (err) => els.rules.prepend(h('div', { class: 'inline-error', text: `Delete failed: ${err.message}` })) })))
}

/** The fields PUT takes; an empty message is left out so the server generates one. */
function ruleBody(r) {
  const out = { rule_id: r.rule_id, severity: r.severity || 'error', match_type: r.match_type || 'regex', pattern: r.pattern, applies_to: r.applies_to?.length ? r.applies_to : ['*'], stack: r.stack || '' }
  if (r.message) out.message = r.message
  return out
}

/**
 * Writes one rule. An edit keeps the rule's source (learned, external) since the
 * body names none; a renamed rule is written under its new id (with the old
 * source) before the old id is deleted.
 */
async function saveRule(next, original) {
  const body = ruleBody(next)
  if (original && original.rule_id !== next.rule_id)
    Object.assign(body, { source: original.source || 'local', proposed_by: original.proposed_by || '', context: original.context || '' })
  await api(rulePath(next), { method: 'PUT', body })
  if (original && original.rule_id !== next.rule_id) await api(rulePath(original), { method: 'DELETE' })
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
  form.querySelector('.hint-put')?.remove()
  if (original && original.source && original.source !== 'local')
    error.insertAdjacentElement('beforebegin', h('p', { class: 'note hint-put', text: `This rule stays ${original.source}: saving changes only this rule.` }))

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
    if ((rules ?? []).some((r) => r.rule_id === next.rule_id && r !== original)) return show(`${project} already has a rule ${next.rule_id}.`)
    // PUT would edit a proposal or a rejected rule in place (keeping its status): it is decided or reopened instead.
    const pending = [...(proposals ?? []), ...(rejected ?? [])].find((r) => r.project === project && r.rule_id === next.rule_id)
    if (pending && next.rule_id !== original?.rule_id) return show(`${project} has a ${pending.status} rule ${next.rule_id}: accept, reopen or pick another id.`)
    const save = form.querySelector('button[type=submit]')
    save.disabled = true
    try {
      await saveRule(next, original)
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
window.addEventListener('hashchange', () => {
  const next = new URLSearchParams(location.hash.slice(1)).get('project')
  if (next && next !== project) selectProject(next)
})
els.addRule.addEventListener('click', () => editRule(null))
onTokenChange(refreshAll)
setupTransfer()
loading(els.proposed)
loadProject()
every(10000, loadOverview)
