// Backup (admin): download the whole database (GET /api/backup) and restore one
// (POST /api/restore). The file is sent as the request body straight from disk:
// the browser streams it and the dashboard server passes the stream on.

import { api } from '../api.js'
import { act, bytes, download, field, h, outcome, panel } from '../ui.js'

export function backupSection(root) {
  const take = panel({ id: 'admin-backup', title: 'Backup' })
  const put = panel({ id: 'admin-restore', title: 'Restore' })
  root.append(take.el, put.el)

  const dlOut = h('div')
  const dl = h('button', { class: 'btn primary', type: 'button', id: 'backup-download', text: 'Download backup' })
  dl.addEventListener('click', () => act(dl, 'Taking snapshot…', dlOut, async () => {
    const res = await api('/api/backup', { raw: true })
    const name = /filename="([^"]+)"/.exec(res.headers.get('content-disposition') ?? '')?.[1] ?? 'muster-backup.db'
    const blob = await res.blob()
    download(blob, name)
    return `Downloaded ${name} (${bytes(blob.size)}).`
  }))
  take.body.append(
    h('p', { class: 'note', text: 'A consistent snapshot of the whole database as one SQLite file: state and spec history, events, audit, instances, webhooks (with secrets), metrics and LLM usage. The server keeps serving while it is taken.' }),
    h('div', { class: 'row' }, dl), dlOut)

  const file = h('input', { type: 'file', id: 'restore-file', accept: '.db,.sqlite,application/vnd.sqlite3,application/octet-stream' })
  const confirm = h('input', { type: 'checkbox', id: 'restore-confirm' })
  const upOut = h('div')
  const up = h('button', { class: 'btn danger', type: 'submit', id: 'restore-submit', text: 'Restore' })
  const form = h('form', { id: 'restore-form' },
    h('p', { class: 'note', text: 'Replaces every piece of data on this server with the backup (at most 1 GB). The file is checked first; the current database is kept beside it as muster.db.pre-restore.' }),
    field('Backup file', file),
    h('label', { class: 'check' }, confirm, ' I understand this replaces all current data'),
    h('div', { class: 'row' }, up), upOut)
  form.addEventListener('submit', (e) => {
    e.preventDefault()
    const chosen = file.files?.[0]
    if (!chosen) return outcome(upOut, false, 'Choose a backup file first.')
    if (!confirm.checked) return outcome(upOut, false, 'Tick the box to confirm that all current data is replaced.')
    act(up, `Uploading ${bytes(chosen.size)}…`, upOut, async () => {
      const r = await api('/api/restore', { method: 'POST', body: chosen, headers: { 'content-type': 'application/octet-stream' } })
      confirm.checked = false
      return `Restored ${bytes(r.bytes)} (schema version ${r.schema_version}).`
    })
  })
  put.body.append(form)

  return { refresh: async () => {}, open: async () => {} }
}
