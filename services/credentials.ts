// The agent and viewer tokens this server has seen, kept per server (ctx.credentials) so
// a token check is a map lookup, not a query: a token is read once, then known until it is
// revoked (token.revoked reaches every replica through the bus), it expires (checked at
// each use), or a restore replaces the tokens. Each use is noted in memory and stored as
// last_used_at within USE_FLUSH_MS, by whichever replica saw it. What a token holds open
// (held reads, WebSockets) ends with it: `endOf` is a signal aborted at its revocation,
// here or on another replica, or at its expiry, which each replica times itself.
import type { Ctx } from './context'
import type { Role } from './audit'
import type { TokenRecord } from '../store/tokens'
import { hashToken } from '../lib/token'
import { logFailure } from '../obs/log'
import { AppError, unauthorized } from '../lib/errors'

/** A request's credential: its role, and for an agent or viewer token that token. */
export interface Credential {
  role: Role
  /** null: the admin token, or auth off. */
  tokenId: string | null
  name: string | null
  /** Epoch ms after which the token is refused; null: never. */
  expiresAt: number | null
}

/** The admin token (`--auth-token`), and every caller when auth is off. */
export const ADMIN: Credential = { role: 'admin', tokenId: null, name: null, expiresAt: null }

/** How often the uses of tokens are written (access.md: last_used_at within 5 s of a use). */
export const USE_FLUSH_MS = 1000

/** Tokens kept; beyond that the oldest is read again at its next use. */
const KNOWN_TOKENS = 10_000

const credentialOf = (t: TokenRecord): Credential => ({
  role: t.role,
  tokenId: t.id,
  name: t.name,
  expiresAt: t.expires_at ? Date.parse(t.expires_at) : null,
})

const expired = (c: Credential) => c.expiresAt !== null && c.expiresAt <= Date.now()

/** The longest a timer may be set for; an expiry further off is timed in steps. */
const MAX_TIMER_MS = 2 ** 31 - 1

/** Why a token's held reads and WebSockets end: the 401 a held read answers, and the WebSocket close (access.md). */
export type TokenEnd = 'revoked' | 'expired'

const ENDED: Record<TokenEnd, string> = {
  revoked: 'token revoked: this connection and every request with the token end here; ask the admin for a new token',
  expired: 'token expired: this connection and every request with the token end here; ask the admin for a new token',
}

/** What a held request answers when its token ends (401), and the WebSocket close reason (its first words). */
export const tokenEnded = (why: TokenEnd): AppError => unauthorized(ENDED[why])
export const closeReason = (why: TokenEnd) => `token ${why}`

/** Throws the 401 of a held request whose token ended while it waited (`until`: http/caller.ts heldUntil). */
export function throwIfEnded(until: AbortSignal | undefined): void {
  if (until?.aborted) throw tokenEnded(until.reason as TokenEnd)
}

export class Credentials {
  private known = new Map<string, Credential>()
  // Counts forgetting, so a read that a revocation overtook is answered but not kept.
  private dropped = 0
  private uses = new Map<string, number>()
  /** Per token id, what aborts when the token ends; kept once aborted, so a request admitted just before a revocation sees it. */
  private ends = new Map<string, { controller: AbortController; timer?: ReturnType<typeof setTimeout> }>()

  constructor(bus: { listen(l: (event: { topic: string; data: unknown }) => void): unknown }) {
    bus.listen(({ topic, data }) => {
      if (topic === 'token.revoked') this.forget((data as { id?: unknown }).id)
      else if (topic === 'backup.restored') this.restored()
    })
  }

  /** The credential of a known token (null once it expired); undefined when it must be read first (`load`). */
  peek(token: string): Credential | null | undefined {
    const known = this.known.get(token)
    return known && (expired(known) ? null : known)
  }

  /** Reads `token`: its credential, or null for a token that is unknown, revoked or expired. */
  async load(ctx: Ctx, token: string): Promise<Credential | null> {
    const seen = this.dropped
    const record = await ctx.store.tokens.byHash(hashToken(token))
    if (!record) return null
    const credential = credentialOf(record)
    if (seen === this.dropped) {
      if (this.known.size >= KNOWN_TOKENS) this.known.delete(this.known.keys().next().value!)
      this.known.set(token, credential)
    }
    return expired(credential) ? null : credential
  }

  /** Notes a use of an agent or viewer token. */
  used(credential: Credential): void {
    if (credential.tokenId) this.uses.set(credential.tokenId, Date.now())
  }

  /** Stores the uses noted since the last flush (a job calls it every USE_FLUSH_MS). */
  async flush(ctx: Ctx): Promise<void> {
    if (this.uses.size === 0) return
    const uses = [...this.uses].map(([id, ms]): [string, string] => [id, new Date(ms).toISOString()])
    this.uses.clear()
    await ctx.store.write((tx) => tx.tokens.used(uses)).catch((err) => logFailure('token use flush failed', err))
  }

  /**
   * A signal aborted when the token of `credential` ends, with its reason a TokenEnd and
   * the 401 to answer (`tokenEnded`); null for the admin token, which never ends.
   * Revocation aborts it as its event arrives; expiry by a timer of this server's.
   */
  endOf(credential: Credential): AbortSignal | null {
    const id = credential.tokenId
    if (!id) return null
    let end = this.ends.get(id)
    if (!end) {
      this.ends.set(id, (end = { controller: new AbortController() }))
      if (credential.expiresAt !== null) this.timeExpiry(id, credential.expiresAt)
    }
    return end.controller.signal
  }

  private timeExpiry(id: string, at: number): void {
    const end = this.ends.get(id)!
    const ms = at - Date.now()
    end.timer = setTimeout(() => (ms > MAX_TIMER_MS ? this.timeExpiry(id, at) : this.end(id, 'expired')), Math.min(Math.max(0, ms), MAX_TIMER_MS))
    end.timer.unref?.()
  }

  private end(id: string, why: TokenEnd): void {
    let end = this.ends.get(id)
    if (!end) this.ends.set(id, (end = { controller: new AbortController() }))
    clearTimeout(end.timer)
    if (!end.controller.signal.aborted) end.controller.abort(why)
  }

  /** A restore replaced the tokens: each is read again, and one revoked since the backup may live again. */
  private restored(): void {
    this.dropped++
    this.known.clear()
    for (const [id, end] of this.ends) if (end.controller.signal.aborted) this.ends.delete(id)
  }

  private forget(id: unknown): void {
    this.dropped++
    for (const [token, known] of this.known) if (known.tokenId === id) this.known.delete(token)
    if (typeof id === 'string') this.end(id, 'revoked')
  }
}
