// Templates (admin): the list (GET /api/templates), one template's data
// (GET /api/templates/{id}), create and edit in one form (POST / PUT), apply to
// a project (POST /api/templates/{id}/apply) and delete.

import { api } from '../api.js'
import { act, cell, changed, commaList, confirmButton, failure, field, fill, h, loading, outcome, panel, parseJson, stateBox, timeAgo } from '../ui.js'

const enc = encodeURIComponent
const KINDS = ['rules', 'contracts', 'bundle']
const EXAMPLE = { rules: '[{"rule_id": "no-todo", "pattern": "TODO", "severity": "warning"}]', contracts: '{"kind": "contract", "version": "1.0.0", "endpoints": {}}', bundle: '{"rules": [], "specs": {}}' }

export function templatesSection(root) {
  const list = panel({ id: 'admin-templates', title: 'Templates', flush: true, tools: [h('button', { class: 'btn primary', type: 'button', id: 'new-template', 'data-needs': 'admin', onclick: () => edit(null), text: 'New template' })] })
  const detail = panel({ id: 'template-detail', title: 'Template' })
  root.append(list.el, detail.el)
  const result = h('div', { class: 'action-result' })
  let selected = null
  let mode = 'view' // view | edit | new
  const drawn = {}

  async function refresh() {
    let all
    try {
      all = await api('/api/templates')
    } catch (err) {
      drawn.last = null
      return failure(list.body, err, 'GET /api/templates', refresh)
    }
    if (!changed(drawn, [all, selected])) return
    list.meta.textContent = `${all.length} ${all.length === 1 ? 'template' : 'templates'}`
    if (all.length === 0) {
      stateBox(list.body, 'empty', 'No templates yet', 'A template holds rules, a contract or a bundle of both that can be applied to any project.')
      list.body.prepend(result)
    } else
      fill(list.body, result, h('table', { class: 'data cards fixed', id: 'templates-table' },
        h('colgroup', {}, ['c-wide', 'c-status', 'c-globs', 'c-num', 'c-when'].map((c) => h('col', { class: c }))),
        h('thead', {}, h('tr', {}, ['Template', 'Kind', 'Tags', 'Version', 'Updated'].map((t, i) => h('th', { class: i === 3 ? 'num' : null, text: t })))),
        h('tbody', {}, all.map((t) => h('tr', { class: `clickable${t.id === selected ? ' selected' : ''}`, dataset: { id: t.id }, onclick: () => select(t.id) },
          cell('Template', { class: 'wrap-any' }, h('button', { type: 'button', class: 'btn link strong', text: t.name }), h('div', { class: 'sub mono', text: t.id })),
          cell('Kind', {}, h('span', { class: 'badge accent', text: t.kind })),
          cell('Tags', { class: 'wrap-any' }, (t.tags ?? []).map((tag) => h('span', { class: 'chip', text: tag }))),
          cell('Version', { class: 'num' }, `v${t.version}`),
          cell('Updated', {}, timeAgo(t.updated_at)))))))
    if (mode === 'view') await show()
  }

  function select(id) {
    selected = id
    mode = 'view'
    history.replaceState(null, '', `#templates/${enc(id)}`)
    drawn.last = null
    refresh()
  }

  async function show() {
    detail.el.hidden = !selected
    if (!selected) return
    let t
    try {
      t = await api(`/api/templates/${enc(selected)}`)
    } catch (err) {
      return failure(detail.body, err, 'GET /api/templates/{id}', show)
    }
    detail.meta.textContent = `${t.id} · v${t.version}`
    const project = h('input', { type: 'text', name: 'project', placeholder: 'project', required: true, spellcheck: 'false', 'aria-label': 'Project to apply to' })
    const applyResult = h('div')
    const apply = h('button', { class: 'btn primary', type: 'submit', text: 'Apply' })
    const applyForm = h('form', { class: 'inline-form', id: 'apply-form', 'data-needs': 'write' }, h('span', { class: 'strong', text: 'Apply to project' }), project, apply)
    applyForm.addEventListener('submit', (e) => {
      e.preventDefault()
      act(apply, 'Applying…', applyResult, async () => {
        const r = await api(`/api/templates/${enc(t.id)}/apply`, { method: 'POST', body: { project: project.value.trim() } })
        const parts = [`${r.rules} ${r.rules === 1 ? 'rule' : 'rules'}`]
        if (r.contracts?.length) parts.push(`contracts ${r.contracts.join(', ')}`)
        if (r.specs?.length) parts.push(`specs ${r.specs.join(', ')}`)
        return `Applied ${r.applied} to ${r.project}: ${parts.join(', ')}.`
      })
    })
    fill(detail.body,
      h('h3', { text: t.name }),
      t.description ? h('p', { class: 'note', text: t.description }) : null,
      h('div', { class: 'facts' }, h('span', {}, 'kind ', h('b', { text: t.kind })), h('span', {}, 'version ', h('b', { text: String(t.version) })), h('span', {}, 'created ', timeAgo(t.created_at))),
      h('div', { class: 'viewer-actions' },
        h('button', { class: 'btn small', type: 'button', 'data-needs': 'admin', onclick: () => edit(t), text: 'Edit' }),
        confirmButton('Delete', 'Confirm delete', async () => {
          await api(`/api/templates/${enc(t.id)}`, { method: 'DELETE' })
          outcome(result, true, `Deleted ${t.id}.`)
          selected = null
          history.replaceState(null, '', '#templates')
          drawn.last = null
          await refresh()
        }, { needs: 'admin', onError: (err) => outcome(applyResult, false, err.message) })),
      applyForm, applyResult,
      h('pre', { class: 'value', text: JSON.stringify(t.data, null, 2) }))
  }

  function edit(t) {
    mode = t ? 'edit' : 'new'
    detail.el.hidden = false
    detail.meta.textContent = t ? `${t.id} · v${t.version}` : ''
    const f = {
      id: h('input', { type: 'text', name: 'id', required: true, spellcheck: 'false', value: t?.id ?? '', disabled: !!t }),
      name: h('input', { type: 'text', name: 'name', required: true, value: t?.name ?? '' }),
      description: h('input', { type: 'text', name: 'description', value: t?.description ?? '' }),
      kind: h('select', { name: 'kind' }, KINDS.map((k) => h('option', { value: k, selected: k === (t?.kind ?? 'rules'), text: k }))),
      tags: h('input', { type: 'text', name: 'tags', spellcheck: 'false', value: (t?.tags ?? []).join(', ') }),
      data: h('textarea', { name: 'data', rows: 12, spellcheck: 'false' }),
    }
    f.data.value = t ? JSON.stringify(t.data, null, 2) : EXAMPLE.rules
    f.kind.addEventListener('change', () => !t && (f.data.value = EXAMPLE[f.kind.value]))
    const out = h('div')
    const save = h('button', { class: 'btn primary', type: 'submit', text: t ? `Save as v${t.version + 1}` : 'Create template' })
    const form = h('form', { class: 'form-grid', id: 'template-form' },
      field('Id', f.id), field('Name', f.name), field('Kind', f.kind), field('Tags', f.tags, 'comma separated'),
      h('div', { class: 'span-all' }, field('Description', f.description)),
      h('div', { class: 'span-all' }, field('Data (JSON)', f.data, 'rules: an array of rules · contracts: a contract · bundle: {rules, contracts, specs}')),
      h('div', { class: 'row span-all' },
        h('button', { class: 'btn', type: 'button', onclick: () => ((mode = 'view'), show()), text: 'Cancel' }), save),
      h('div', { class: 'span-all' }, out))
    form.addEventListener('submit', (e) => {
      e.preventDefault()
      act(save, 'Saving…', out, async () => {
        const body = { name: f.name.value.trim(), description: f.description.value, kind: f.kind.value, tags: commaList(f.tags.value), data: parseJson(f.data.value, 'data') }
        const saved = t
          ? await api(`/api/templates/${enc(t.id)}`, { method: 'PUT', body })
          : await api('/api/templates', { method: 'POST', body: { id: f.id.value.trim(), ...body } })
        select(saved.id)
      })
    })
    fill(detail.body, form)
    ;(t ? f.name : f.id).focus()
  }

  loading(list.body)
  detail.el.hidden = true
  return {
    refresh,
    open(arg) {
      if (arg) (selected = decodeURIComponent(arg)), (mode = 'view')
      drawn.last = null
      return refresh()
    },
  }
}
