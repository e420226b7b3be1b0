// The top bar every page shares: the search box (command palette), service
// health (GET /health, open without a token) and the access-token control.

import { forgetToken, hasToken, onTokenChange } from './api.js'
import { paletteButton } from './palette.js'
import { every, h, fill } from './ui.js'

export function startShell() {
  const pill = document.getElementById('health')
  pill.before(paletteButton())
  every(5000, async () => {
    try {
      const res = await fetch('/health', { cache: 'no-store' })
      const body = await res.json()
      if (!res.ok || body.status !== 'ok') throw new Error(body.error || `HTTP ${res.status}`)
      pill.className = 'pill ok'
      pill.textContent = `Healthy · up ${body.uptime}`
      pill.title = 'GET /health answered ok'
    } catch (err) {
      pill.className = 'pill bad'
      pill.textContent = 'Server unreachable'
      pill.title = String(err?.message ?? err)
    }
  })

  const slot = document.getElementById('auth-slot')
  const render = () =>
    fill(slot, hasToken()
      ? h('button', { class: 'btn small', type: 'button', title: 'Remove the access token from every tab of this dashboard', onclick: () => forgetToken(), text: 'Forget token' })
      : null)
  onTokenChange(render)
  render()
}
