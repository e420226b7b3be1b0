// State: the key list (GET /api/state) and a viewer for one key — its value at
// any version, its history, and a diff between two versions — with the writes a
// person needs: edit (PUT, only over the version shown: if_version), delete,
// roll back to an older version, and a new key (create-only: If-None-Match: *).
// The selected key lives in the URL (#key=...) so a reload or a shared link keeps it.
//
// A person's unsaved edit is never thrown away: while the editor is open, a new version
// written by an agent only shows a notice, and a save that meets 412 (someone wrote the
// key since the editor opened) keeps the typed text and shows the current value beside
// it, to overwrite it with the person's text or take theirs.

import { api, keyPath } from '../api.js'
import { act, bytes, changed, confirmButton, download, every, failure, fill, fullTime, h, loading, outcome, parseJson, pretty, stateBox, timeAgo } from '../ui.js'

const SHOW_LIMIT = 256 * 1024
/** Keys drawn at most; the filter narrows the rest. */
const LIST_LIMIT = 500
const TEXTUAL = /^(text\/|application\/(json|[\w.+-]*\+json|xml|[\w.+-]*\+xml|javascript|x-yaml|yaml|toml|x-www-form-urlencoded))/i

const selectedFromHash = () => new URLSearchParams(location.hash.slice(1)).get('key')

export function statePanel() {
  const section = document.getElementById('state')
  const meta = section.querySelector('.meta')
  const listEl = document.getElementById('key-list')
  const filterEl = document.getElementById('key-filter')
  const viewerEl = document.getElementById('viewer')

  let keys = null
  let selected = selectedFromHash()
  let shownVersion = null // version of the selected key the viewer was built for
  const viewer = keyViewer(viewerEl, {
    /** After a write made here: reload now; `key` is what to select (null after a delete). */
    written(key) {
      if (key !== undefined) {
        selected = key
        history.replaceState(null, '', key ? `#key=${encodeURIComponent(key)}` : location.pathname + location.search)
      }
      shownVersion = null
      drawn.last = null
      poll.now()
    },
  })
  document.getElementById('new-key')?.addEventListener('click', () => {
    selected = null
    shownVersion = null
    renderList()
    viewer.create()
  })

  const renderList = () => {
    if (!keys) return
    const q = filterEl.value.trim().toLowerCase()
    const shown = q ? keys.filter((k) => k.key.toLowerCase().includes(q)) : keys
    if (keys.length === 0)
      return stateBox(listEl, 'empty', 'No state keys yet', ['Agents write values with ', h('code', { text: 'PUT /api/state/{key}' }), '.'])
    if (shown.length === 0) return stateBox(listEl, 'empty', 'No key matches the filter')
    fill(listEl, shown.slice(0, LIST_LIMIT).map((k) =>
      h('li', {},
        h('button', { type: 'button', 'aria-current': String(k.key === selected), title: k.key, onclick: () => select(k.key) },
          h('span', { class: 'key', text: k.key }),
          h('span', { class: 'ver', text: `v${k.version}` }),
          h('span', { class: 'when' }, k.content_type, ' · ', timeAgo(k.updated_at))))),
      shown.length > LIST_LIMIT ? h('li', { class: 'note more', text: `Showing ${LIST_LIMIT} of ${shown.length} keys; type in the filter to narrow.` }) : null)
  }

  const renderViewer = () => {
    if (!keys) return
    if (viewer.creating()) return
    if (viewer.editing(selected)) return viewer.meanwhile(keys.find((k) => k.key === selected) ?? null)
    if (!selected) {
      shownVersion = null
      return stateBox(viewerEl, 'empty', keys.length ? 'Select a key' : 'Nothing to show yet', keys.length ? 'Its value, history and diffs appear here.' : null)
    }
    const entry = keys.find((k) => k.key === selected)
    if (!entry) {
      shownVersion = null
      return stateBox(viewerEl, 'empty', 'Key not found', [h('code', { text: selected }), ' does not exist (any more).'])
    }
    if (entry.version === shownVersion) return
    shownVersion = entry.version
    viewer.show(entry)
  }

  const select = (key) => {
    selected = key
    history.replaceState(null, '', `#key=${encodeURIComponent(key)}`)
    shownVersion = null
    renderList()
    renderViewer()
  }
  window.addEventListener('hashchange', () => {
    const key = selectedFromHash()
    if (key && key !== selected) select(key)
  })
  filterEl.addEventListener('input', renderList)

  const drawn = {}
  loading(listEl)
  const poll = every(5000, async () => {
    let next
    try {
      next = await api('/api/state')
    } catch (err) {
      keys = null
      drawn.last = null
      shownVersion = null
      meta.textContent = ''
      failure(listEl, err, 'GET /api/state', () => poll.now())
      fill(viewerEl)
      return
    }
    if (!changed(drawn, next)) return
    keys = next.sort((a, b) => a.key.localeCompare(b.key))
    meta.textContent = `${keys.length} ${keys.length === 1 ? 'key' : 'keys'}`
    if (!selected && keys.length && !viewer.creating()) selected = keys[0].key
    renderList()
    renderViewer()
  })
  return poll
}

/** The right-hand viewer: value / history / diff tabs for one key, and its edit, delete and rollback. */
function keyViewer(el, { written }) {
  let entry = null
  let making = false // the new-key form is open
  let tab = 'value'
  let versions = null
  let viewVersion = null // null = latest
  let diffPair = null
  const content = h('div')
  const actionResult = h('div', { class: 'action-result' })
  const tabs = {}

  /**
   * The value editor. A save writes over the version the editor opened at (if_version);
   * after a 412 it writes over the version shown beside the text, which the person saw.
   */
  let editor = null // {key, base: version written over (null: the key is gone, create it), form} while open

  async function edit() {
    loading(content)
    let text = ''
    let type = entry.content_type || 'application/json'
    let version = entry.version
    try {
      const res = await api(`/api/state/${keyPath(entry.key)}`, { raw: true })
      type = res.headers.get('content-type') || type
      version = Number(res.headers.get('x-service-version')) || version
      text = await res.text()
    } catch (err) {
      return failure(content, err, 'GET /api/state/{key}', edit)
    }
    if (!TEXTUAL.test(type)) return stateBox(content, 'empty', 'Binary value', 'Only text values can be edited here; write binary values through the API.')
    for (const b of Object.values(tabs)) b.setAttribute('aria-selected', 'false')
    const key = entry.key
    editor = { key, base: version, form: null }
    editor.form = valueForm({
      text: /json/i.test(type) ? pretty(text) : text,
      type,
      saveLabel: `Save as v${version + 1}`,
      async save(value, contentType) {
        const over = editor.base === null ? { 'if-none-match': '*' } : {}
        const q = editor.base === null ? '' : `?if_version=${editor.base}`
        try {
          await api(`/api/state/${keyPath(key)}${q}`, { method: 'PUT', body: value, headers: { 'content-type': contentType, ...over } })
        } catch (err) {
          if (err.status !== 412) throw err
          await conflict()
          throw new Error('Not saved: the key changed while you were editing. Your text is kept; compare it with theirs beside it.')
        }
        editor = null
        written(key)
      },
      cancel: () => {
        editor = null
        written(undefined) // redraws at the current version, which may be newer than the one edited
      },
    })
    fill(content, editor.form.el)
  }

  /** After a 412: the current value beside the typed text, and the choice of what to keep. */
  async function conflict() {
    const ed = editor
    let theirs = null
    try {
      const res = await api(`/api/state/${keyPath(ed.key)}`, { raw: true })
      theirs = { version: Number(res.headers.get('x-service-version')), type: res.headers.get('content-type') || '', text: await res.text() }
    } catch (err) {
      if (err.status !== 404) throw err
    }
    if (editor !== ed) return
    ed.base = theirs ? theirs.version : null
    const mine = () => ed.form.submit()
    const takeTheirs = () => {
      editor = null
      written(ed.key)
    }
    ed.form.setSaveLabel(theirs ? `Overwrite v${theirs.version} with mine` : 'Create it again with mine')
    ed.form.aside(h('div', { class: 'conflict', role: 'alert' },
      h('div', { class: 'conflict-head' },
        h('b', { text: theirs ? `Theirs: v${theirs.version}, written while you were editing` : 'Theirs: the key was deleted while you were editing' }),
        h('span', { class: 'sub', text: 'Your text stays on the left. Merge by hand there and save, or choose:' })),
      theirs ? h('pre', { class: 'value theirs', text: /json/i.test(theirs.type) ? pretty(theirs.text) : theirs.text }) : null,
      h('div', { class: 'row' },
        h('button', { class: 'btn primary', type: 'button', id: 'conflict-mine', onclick: mine, text: theirs ? 'Overwrite with mine' : 'Create with mine' }),
        h('button', { class: 'btn', type: 'button', id: 'conflict-theirs', onclick: takeTheirs, text: theirs ? 'Take theirs' : 'Leave it deleted' }))))
  }

  async function rollback(version, button, out) {
    await act(button, 'Rolling back…', out, async () => {
      await api(`/api/state/${keyPath(entry.key)}?rollback=${version}&if_version=${entry.version}`, { method: 'POST' })
      written(entry.key)
    })
  }

  const header = () => [
    h('h3', { text: entry.key }),
    h('div', { class: 'facts' },
      h('span', {}, 'version ', h('b', { text: String(entry.version) })),
      h('span', {}, 'type ', h('b', { text: entry.content_type })),
      h('span', { title: fullTime(entry.updated_at) }, 'updated ', timeAgo(entry.updated_at))),
    h('div', { class: 'viewer-actions' },
      h('button', { class: 'btn small', type: 'button', 'data-needs': 'write', onclick: () => edit(), text: 'Edit value' }),
      confirmButton('Delete key', 'Confirm delete', async () => {
        await api(`/api/state/${keyPath(entry.key)}?if_version=${entry.version}`, { method: 'DELETE' })
        written(null)
      }, { onError: (err) => outcome(actionResult, false, `Delete failed: ${err.message}`) }),
      actionResult),
    h('div', { class: 'tabs', role: 'tablist' },
      ['value', 'history', 'diff'].map((name) =>
        (tabs[name] = h('button', { type: 'button', role: 'tab', 'aria-selected': String(tab === name), onclick: () => open(name), text: name[0].toUpperCase() + name.slice(1) })))),
    content,
  ]

  const open = (name) => {
    tab = name
    for (const [n, b] of Object.entries(tabs)) b.setAttribute('aria-selected', String(n === name))
    ;({ value: showValue, history: showHistory, diff: showDiff })[name]()
  }

  async function loadVersions() {
    if (versions) return versions
    const res = await api(`/api/state/${keyPath(entry.key)}?history=1&limit=200`)
    versions = res.versions
    return versions
  }

  async function showValue() {
    loading(content)
    const forKey = entry.key
    try {
      const q = viewVersion ? `?version=${viewVersion}` : ''
      const res = await api(`/api/state/${keyPath(entry.key)}${q}`, { raw: true })
      const type = res.headers.get('content-type') || ''
      const version = res.headers.get('x-service-version')
      const blob = await res.blob()
      if (forKey !== entry?.key || tab !== 'value') return
      const name = entry.key.split('/').pop() || 'value'
      const info = h('div', { class: 'facts' },
        h('span', {}, viewVersion ? `showing version ${version} (older)` : `showing the latest version (${version})`),
        h('span', { text: bytes(blob.size) }),
        viewVersion ? h('button', { class: 'btn link', type: 'button', onclick: () => ((viewVersion = null), showValue()), text: 'back to latest' }) : null,
        h('button', { class: 'btn link', type: 'button', onclick: () => download(blob, name), text: 'download' }))
      if (!TEXTUAL.test(type)) {
        return fill(content, info, stateBox(h('div'), 'empty', 'Binary value', `${type || 'unknown type'}, ${bytes(blob.size)}: use download to save it.`))
      }
      const text = await blob.slice(0, SHOW_LIMIT).text()
      fill(content, info,
        h('pre', { class: 'value', text: blob.size > SHOW_LIMIT ? text : pretty(text) }),
        blob.size > SHOW_LIMIT ? h('div', { class: 'note', text: `Showing the first ${bytes(SHOW_LIMIT)}; download for the full value.` }) : null)
    } catch (err) {
      failure(content, err, 'GET /api/state/{key}', showValue)
    }
  }

  async function showHistory() {
    loading(content)
    try {
      const list = await loadVersions()
      if (tab !== 'history') return
      const rollbackResult = h('div')
      fill(content, rollbackResult, h('ul', { class: 'history-list' }, list.map((v, i) => {
        const older = list[i + 1]
        return h('li', {},
          h('span', { class: 'v', text: `v${v.version}` }),
          h('span', { class: 'hash mono', title: v.hash, text: v.hash.slice(0, 12) }),
          timeAgo(v.updated_at),
          h('span', { class: 'actions' },
            h('button', { class: 'btn small', type: 'button', onclick: () => ((viewVersion = i === 0 ? null : v.version), open('value')), text: 'View' }),
            i > 0 ? h('button', { class: 'btn small', type: 'button', 'data-needs': 'write', onclick: (e) => rollback(v.version, e.currentTarget, rollbackResult), text: `Roll back to v${v.version}` }) : null,
            older ? h('button', { class: 'btn small', type: 'button', onclick: () => ((diffPair = [older.version, v.version]), open('diff')), text: `Diff v${older.version} → v${v.version}` }) : null))
      })), list.length >= 200 ? h('div', { class: 'note', text: 'Showing the latest 200 versions.' }) : null)
    } catch (err) {
      failure(content, err, 'GET /api/state/{key}?history=1', showHistory)
    }
  }

  async function showDiff() {
    loading(content)
    let list
    try {
      list = await loadVersions()
    } catch (err) {
      return failure(content, err, 'GET /api/state/{key}?history=1', showDiff)
    }
    if (tab !== 'diff') return
    if (list.length < 2) return stateBox(content, 'empty', 'Only one version', 'A diff needs at least two versions of this key.')
    diffPair ??= [list[1].version, list[0].version]
    const pick = (value) => h('select', {}, list.map((v) => h('option', { value: v.version, selected: v.version === value, text: `v${v.version}` })))
    const from = pick(diffPair[0])
    const to = pick(diffPair[1])
    const result = h('div')
    const compare = async () => {
      diffPair = [Number(from.value), Number(to.value)]
      loading(result, 'Comparing…')
      try {
        const d = await api(`/api/state/${keyPath(entry.key)}?diff=${diffPair[0]},${diffPair[1]}`)
        if (d.diffs.length === 0) return stateBox(result, 'empty', `v${d.v1} and v${d.v2} are identical`)
        fill(result, h('div', { class: 'scroll' }, h('table', { class: 'data cards' },
          h('thead', {}, h('tr', {}, ['Change', 'Path', `Old (v${d.v1})`, `New (v${d.v2})`].map((t) => h('th', { text: t })))),
          h('tbody', {}, d.diffs.map((x) => h('tr', {},
            h('td', { dataset: { label: 'Change' } }, h('span', { class: `op ${x.operation}`, text: x.operation })),
            h('td', { class: 'mono wrap-any', dataset: { label: 'Path' }, text: x.path || '/' }),
            h('td', { class: 'mono wrap-any old', dataset: { label: 'Old' }, text: x.operation === 'add' ? '—' : JSON.stringify(x.old_value) }),
            h('td', { class: 'mono wrap-any new', dataset: { label: 'New' }, text: x.operation === 'remove' ? '—' : JSON.stringify(x.new_value) })))))))
      } catch (err) {
        if (err.status === 400) return stateBox(result, 'error', 'Cannot diff these versions', err.message)
        failure(result, err, 'GET /api/state/{key}?diff=v1,v2', compare)
      }
    }
    fill(content,
      h('div', { class: 'diff-controls' }, 'Compare ', from, ' with ', to,
        h('button', { class: 'btn small primary', type: 'button', onclick: compare, text: 'Compare' })),
      result)
    compare()
  }

  return {
    creating: () => making,
    /** The value editor is open (for the selected key): live updates must not replace it. */
    editing: (key) => editor !== null && editor.key === key,
    /** A newer version (or none) of the key being edited arrived: say so, keep the text. */
    meanwhile(next) {
      if (!editor) return
      const v = next?.version
      if (next && v === editor.base) return editor.form.notice(null)
      editor.form.notice(next
        ? `v${v} was written while you are editing (you started from v${editor.base}). Saving will show both, so nothing of yours is lost.`
        : 'This key was deleted while you are editing. Saving will show it, so nothing of yours is lost.')
    },
    /** The new-key form; written(key) selects the key once it exists. */
    create() {
      making = true
      editor = null
      entry = null
      const name = h('input', { type: 'text', name: 'key', placeholder: 'project/area/name', spellcheck: 'false', 'aria-label': 'Key', required: true })
      fill(el, h('h3', { text: 'New key' }),
        h('label', { class: 'field' }, 'Key', name),
        valueForm({
          text: '{}',
          type: 'application/json',
          saveLabel: 'Create',
          async save(value, contentType) {
            const key = name.value.trim().replace(/^\/+/, '')
            if (!key) throw new Error('Enter the key.')
            await api(`/api/state/${keyPath(key)}`, { method: 'PUT', body: value, headers: { 'content-type': contentType, 'if-none-match': '*' } })
            making = false
            written(key)
          },
          cancel: () => {
            making = false
            written(undefined)
          },
        }).el)
      name.focus()
    },
    show(next) {
      making = false
      editor = null
      const sameKey = entry?.key === next.key
      entry = next
      versions = null
      if (!sameKey) {
        tab = 'value'
        viewVersion = null
        diffPair = null
      }
      fill(el, header())
      open(tab)
    },
  }
}

/**
 * A text value with its content type, Save and Cancel; JSON types must parse before
 * anything is sent. Returns {el, submit(), setSaveLabel(text), notice(text|null), aside(el)}:
 * `aside` puts something beside the text (the value it conflicts with).
 */
function valueForm({ text, type, saveLabel, save, cancel }) {
  const area = h('textarea', { class: 'value-editor', rows: 14, spellcheck: 'false', 'aria-label': 'Value' })
  area.value = text
  const typeInput = h('input', { type: 'text', value: type, spellcheck: 'false', 'aria-label': 'Content type' })
  const result = h('div')
  const note = h('div', { class: 'inline-warn', role: 'status', hidden: true })
  const side = h('div', { class: 'editor-side', hidden: true })
  let label = saveLabel
  const submit = h('button', { class: 'btn primary', type: 'submit', text: label })
  const form = h('form', { class: 'value-form' },
    note,
    h('div', { class: 'editor-pair' }, h('div', { class: 'editor-mine' }, area), side),
    h('div', { class: 'row' },
      h('label', { class: 'inline' }, 'Content type ', typeInput),
      h('span', { class: 'spacer' }),
      h('button', { class: 'btn', type: 'button', onclick: cancel, text: 'Cancel' }),
      submit),
    result)
  form.addEventListener('submit', (e) => {
    e.preventDefault()
    act(submit, 'Saving…', result, async () => {
      const contentType = typeInput.value.trim() || 'application/json'
      if (area.value === '') throw new Error('A value cannot be empty (delete the key instead).')
      // A JSON type with text that is not JSON is refused before anything is sent.
      if (/json/i.test(contentType)) parseJson(area.value)
      await save(area.value, contentType)
    }).then(() => (submit.textContent = label))
  })
  return {
    el: form,
    submit: () => form.requestSubmit(),
    setSaveLabel: (text) => (submit.textContent = label = text),
    notice(text) {
      note.hidden = !text
      note.textContent = text ?? ''
    },
    aside(el) {
      note.hidden = true
      form.classList.add('with-side')
      fill(side, el)
      side.hidden = false
    },
  }
}
