// What a server that cannot start on PostgreSQL says: where it looked (host, port and
// database from --database, never the password) and why, so the operator can tell a
// wrong address from a database that is down, refuses the login or lacks the database.
// Bun's own error says only "Failed to connect".

/** Bun's codes for a connection that was never made (it reports a host name that does not resolve as refused too). */
const BUN_REASONS: Record<string, string> = {
  ERR_POSTGRES_CONNECTION_REFUSED: 'connection refused',
  ERR_POSTGRES_CONNECTION_FAILED: 'connection failed',
  ERR_POSTGRES_CONNECTION_TIMEOUT: 'no answer before the connect timeout',
  ERR_POSTGRES_CONNECTION_CLOSED: 'the server closed the connection',
}
/** PostgreSQL's codes that mean the session never started: connection exceptions, login refused, no such database, starting or shutting down, no slot left. */
const NO_SESSION = /^(08\w{3}|28\w{3}|3D000|57P0[123]|53300)$/

/** `host:port (database name)` of a PostgreSQL URL, without user or password. */
export function pgWhere(url: string): string {
  try {
    const u = new URL(url)
    const host = u.hostname || u.searchParams.get('host') || 'localhost'
    const database = decodeURIComponent(u.pathname.slice(1)) || decodeURIComponent(u.username) || 'postgres'
    return `${host}:${u.port || '5432'} (database ${database})`
  } catch {
    return 'the --database URL'
  }
}

/** The start failure `err` (from the first queries on `url`) as an error naming where, why and what to check. */
export function pgStartError(url: string, err: unknown): Error {
  const e = err as { code?: unknown; errno?: unknown; message?: unknown }
  const code = typeof e?.code === 'string' ? e.code : ''
  const errno = typeof e?.errno === 'string' ? e.errno : ''
  const where = pgWhere(url)
  const message = hidePassword(url, String(e?.message ?? err))
  if (BUN_REASONS[code])
    return new Error(`cannot connect to PostgreSQL at ${where}: ${BUN_REASONS[code]}; check that PostgreSQL listens there and that --database / SERVICE_DATABASE names it`)
  if (NO_SESSION.test(errno)) return new Error(`cannot connect to PostgreSQL at ${where}: ${message} (${errno}); check the user, password and database in --database / SERVICE_DATABASE`)
  return new Error(`cannot set up the schema in PostgreSQL at ${where}: ${message}${errno ? ` (${errno})` : ''}`)
}

/** `text` without the URL's password, should a driver or server ever echo it (a password of 1-3 characters is left: it would blank out ordinary words). */
function hidePassword(url: string, text: string): string {
  let password = ''
  try {
    password = decodeURIComponent(new URL(url).password)
  } catch {}
  return password.length >= 4 ? text.split(password).join('***') : text
}
