// API tokens with roles (agent, viewer): only the SHA-256 of each is kept; the token
// itself is shown once, in the answer that made it. A revoked token keeps its row
// (revoked_at) so audit entries naming it still point somewhere.
import { stmt, type Runner } from './runner'

export type TokenRole = 'agent' | 'viewer'

export interface TokenRecord {
  id: string
  name: string
  role: TokenRole
  created_at: string
  expires_at: string | null
  last_used_at: string | null
}

export interface NewToken {
  name: string
  role: TokenRole
  hash: string
  expires_at: string | null
}

export interface TokensWrites {
  create(t: NewToken, at: string): Promise<TokenRecord>
  /** The token not revoked that holds `name`, expired or not. */
  byName(name: string): Promise<(TokenRecord & { revoked_at: string | null }) | null>
  /** Marks a token revoked; null when unknown or already revoked. */
  revoke(id: string, at: string): Promise<TokenRecord | null>
  /** Stores the newest use of each token, never moving a time back. */
  used(uses: [id: string, at: string][]): Promise<void>
}

export interface TokensStore {
  /** Tokens not revoked and not expired at `now`, oldest first. */
  live(now: string): Promise<TokenRecord[]>
  /** The token (not revoked) whose hash is `hash`, expired or not. */
  byHash(hash: string): Promise<TokenRecord | null>
}

const COLUMNS = 'id, name, role, created_at, expires_at, last_used_at'
const INSERT = stmt<TokenRecord>(`INSERT INTO tokens (id, name, role, hash, created_at, expires_at) VALUES (?, ?, ?, ?, ?, ?) RETURNING ${COLUMNS}`)
const BY_NAME = stmt<TokenRecord & { revoked_at: string | null }>(`SELECT ${COLUMNS}, revoked_at FROM tokens WHERE name = ? AND revoked_at IS NULL`)
const REVOKE = stmt<TokenRecord>(`UPDATE tokens SET revoked_at = ? WHERE id = ? AND revoked_at IS NULL RETURNING ${COLUMNS}`)
const LIVE = stmt<TokenRecord>(
  `SELECT ${COLUMNS} FROM tokens WHERE revoked_at IS NULL AND (expires_at IS NULL OR expires_at > ?) ORDER BY created_at, id`,
)
const BY_HASH = stmt<TokenRecord>(`SELECT ${COLUMNS} FROM tokens WHERE hash = ? AND revoked_at IS NULL`)
const USED = stmt('UPDATE tokens SET last_used_at = ? WHERE id = ? AND (last_used_at IS NULL OR last_used_at < ?)')

export function tokensWrites(w: Runner): TokensWrites {
  return {
    create: async (t, at) => (await w.get(INSERT, crypto.randomUUID(), t.name, t.role, t.hash, at, t.expires_at))!,
    byName: (name) => w.get(BY_NAME, name),
    revoke: (id, at) => w.get(REVOKE, at, id),
    async used(uses) {
      for (const [id, at] of uses) await w.run(USED, at, id, at)
    },
  }
}

export function tokensStore(r: Runner): TokensStore {
  return {
    live: (now) => r.all(LIVE, now),
    byHash: (hash) => r.get(BY_HASH, hash),
  }
}
