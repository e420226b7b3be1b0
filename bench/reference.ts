// The bare Bun.serve both reference servers (bench/floor.ts, bench/kv.ts) answer on: their
// state handlers on /api/state/*, 404 otherwise, a clean exit on SIGTERM, and the
// "<name> on <url>," line bench/lib's startReference waits for.
type Handler = (request: Request) => Response | Promise<Response>

export function serveReference(name: string, handlers: { GET: Handler; PUT: Handler }): void {
  const server = Bun.serve({
    hostname: '127.0.0.1',
    port: 0,
    development: false,
    routes: { '/api/state/*': handlers },
    fetch: () => new Response('not found', { status: 404 }),
  })
  process.on('SIGTERM', () => process.exit(0))
  console.log(`${name} on http://127.0.0.1:${server.port},`)
}
