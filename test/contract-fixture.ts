// A small live API for contract tests: some endpoints honour the contract below,
// some break it; `downUrl` is a port where nothing listens.

export const user = {
  type: 'object',
  required: ['name', 'role'],
  additionalProperties: false,
  properties: {
    name: { type: 'string' },
    role: { enum: ['admin', 'dev'] },
    address: { type: 'object', required: ['city'], properties: { city: { type: 'string' } } },
    tags: { type: 'array', items: { type: 'string' } },
  },
}

/** The contract the fixture is measured against (base_url filled in by the test). */
export const apiContract = (baseUrl?: string) => ({
  kind: 'contract',
  version: '1.0.0',
  ...(baseUrl ? { base_url: baseUrl } : {}),
  endpoints: {
    'GET /users': { response: { type: 'array', items: user } },
    'GET /users/{id}': { response: user },
    'POST /users': {
      request: user,
      response: { type: 'object', required: ['id'], properties: { id: { type: 'integer' } } },
      response_status: 201,
    },
    'GET /search': {
      query: { type: 'object', required: ['q'], properties: { q: { type: 'string' }, limit: { type: 'integer' } } },
      response: { type: 'object', required: ['q', 'limit'], properties: { q: { type: 'string' }, limit: { type: 'integer' } } },
    },
    'GET /broken': { response: user },
    'GET /error': { response: user },
    'GET /text': { response: user },
    'GET /slow': {},
  },
})

export interface Fixture {
  url: string
  downUrl: string
  /** "METHOD /path?query" and body of every request received. */
  received: { line: string; body: string }[]
  stop(): void
}

export async function startFixture(): Promise<Fixture> {
  const received: { line: string; body: string }[] = []
  const server = Bun.serve({
    port: 0,
    hostname: '127.0.0.1',
    async fetch(req) {
      const url = new URL(req.url)
      const body = await req.text()
      received.push({ line: `${req.method} ${url.pathname}${url.search}`, body })
      const route = `${req.method} ${url.pathname}`
      if (route === 'GET /users')
        return Response.json([
          { name: 'ana', role: 'admin', address: { city: 'Oslo' }, tags: ['x'] },
          { name: 'bo', role: 'dev' },
        ])
      if (req.method === 'GET' && url.pathname.startsWith('/users/'))
        return Response.json({ name: decodeURIComponent(url.pathname.slice(7)), role: 'dev' })
      if (route === 'POST /users') {
        const parsed = JSON.parse(body || 'null')
        return parsed?.name ? Response.json({ id: 42 }, { status: 201 }) : Response.json({ error: 'name' }, { status: 400 })
      }
      if (route === 'GET /search')
        return Response.json({ q: url.searchParams.get('q'), limit: Number(url.searchParams.get('limit') ?? 10) })
      if (route === 'GET /broken') return Response.json({ name: 5, role: 'boss', address: {}, extra: true })
      if (route === 'GET /error') return Response.json({ error: 'boom' }, { status: 500 })
      if (route === 'GET /text') return new Response('hello', { headers: { 'content-type': 'text/plain' } })
      if (route === 'GET /slow') {
        await Bun.sleep(3000)
        return Response.json({})
      }
      return new Response('no', { status: 404 })
    },
  })
  const closed = Bun.serve({ port: 0, hostname: '127.0.0.1', fetch: () => new Response() })
  const downUrl = `http://127.0.0.1:${closed.port}`
  closed.stop(true)
  return { url: `http://127.0.0.1:${server.port}`, downUrl, received, stop: () => server.stop(true) }
}
