// The overview's spend and budgets in Debian's Chromium: cost over time by agent and by
// task (GET /api/llm/usage/buckets), and each budget with what it has spent.
import { describe, expect, setDefaultTimeout, test } from 'bun:test'
import { browserSuite, openPage } from './browser'

setDefaultTimeout(30_000)
const TOKEN = 'budgets-dashboard-token'
const { s, api, browser, shot } = await browserSuite('budgets-dashboard', TOKEN)

describe('spend and budgets on the overview', () => {
  test('spend by agent and by task, and budgets with spent, limit and state', async () => {
    const session = crypto.randomUUID()
    const start = await api('POST', '/api/hooks/claude-code', { session_id: session, hook_event_name: 'SessionStart', cwd: '/tmp/shop', source: 'startup' }, { 'x-muster-agent': 'ada', 'x-muster-project': 'shop' })
    expect(start.status).toBe(200)
    const instance = ((await api('GET', '/api/sessions')).body as any[]).find((x) => x.session_id === session).instance_id
    const task = (await api('POST', '/api/queues/ui/tasks', { title: 'pricing page' })).body
    for (const r of [
      { instance_id: instance, project: 'shop', task_id: task.id, cost_usd: 1.5 },
      { instance_id: instance, project: 'shop', cost_usd: 0.5 },
      { project: 'docs', cost_usd: 0.25 },
    ])
      expect((await api('POST', '/api/llm/usage', { provider: 'anthropic', model: 'claude-sonnet-4-5', ...r })).status).toBe(200)
    expect((await api('PUT', '/api/budgets/ada-daily', { scope: 'agent', target: 'ada', limit_usd: 1, window: 'day', action: 'deny' })).status).toBe(201)
    expect((await api('PUT', '/api/budgets/shop-weekly', { scope: 'project', target: 'shop', limit_usd: 2.4, window: 'week', action: 'warn' })).status).toBe(201)
    expect((await api('PUT', '/api/budgets/team', { scope: 'all', limit_usd: 100, window: 'total', action: 'warn' })).status).toBe(201)

    const { page, problems } = await openPage(browser(), s.dashboard + '/', { token: TOKEN })
    const llm = page.locator('#llm')
    await llm.locator('.totals').getByText('$2.25').waitFor()
    await llm.getByRole('button', { name: 'By agent' }).click()
    await llm.locator('th', { hasText: 'Agent' }).waitFor()
    expect(await llm.locator('tbody').innerText()).toMatch(/ada[\s\S]*\$2\.00[\s\S]*\(none\)[\s\S]*\$0\.25/)
    expect(await llm.locator('.chart svg rect').count()).toBeGreaterThan(0)
    await shot(page, 'spend-by-agent')
    await llm.getByRole('button', { name: 'By task' }).click()
    await llm.locator('th', { hasText: 'Task' }).waitFor()
    expect(await llm.locator('tbody').innerText()).toContain(`task ${task.id}`)

    const budgets = page.locator('#budgets')
    await budgets.locator('tr[data-name="ada-daily"]').waitFor()
    const text = await budgets.locator('tbody').innerText()
    expect(text).not.toContain("object")
    expect(text).toMatch(/ada-daily[\s\S]*agent ada[\s\S]*per day[\s\S]*since[\s\S]*deny[\s\S]*\$2\.00 of \$1\.00[\s\S]*exceeded · denying/)
    expect(text).toMatch(/shop-weekly[\s\S]*project shop[\s\S]*per week[\s\S]*\$2\.00 of \$2\.40[\s\S]*warning/)
    expect(text).toMatch(/team[\s\S]*all usage[\s\S]*in total[\s\S]*\$2\.25 of \$100\.00[\s\S]*ok/)
    expect(await budgets.locator('.meta').innerText()).toBe('3 budgets · 1 exceeded')
    await budgets.scrollIntoViewIfNeeded()
    await shot(page, 'budgets')
    expect(problems).toEqual([])
    await page.close()
  })
})
