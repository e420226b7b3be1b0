// Which instance an X-Instance-Token belongs to, kept per server (ctx.tokens) so a
// repeated caller costs no hashing and no query. http/caller.ts asks it.
import type { Ctx } from './context'
import type { Instance } from '../store/instances'
import { hashToken } from '../lib/token'
import { Groups } from '../lib/groups'

/** Tokens whose instance is known here; beyond that the oldest is looked up again. */
const KNOWN_TOKENS = 100_000

/**
 * Instances by X-Instance-Token, so a repeated caller costs no hashing and no query:
 * one per server (ctx.tokens), dropped for an instance as its instance.deregistered
 * arrives through the bus (from any replica) and all at once on a restore. holderOf
 * still reads the instance itself, so a token of an instance deregistered elsewhere a
 * moment ago, whose event has not arrived yet, still gets 403; only readerOf trusts
 * what is known here, and only where the bus hears every write at its commit.
 */
export class TokenIds {
  private known = new Map<string, { id: string; tokenId: string | null; name?: string }>()
  /** The tokens known here of each instance, so forgetting one costs its own tokens, not a walk over all. */
  private tokensOf = new Groups<string, string>()
  // Counts forgetting, so a lookup that one overtook is answered but not kept.
  private dropped = 0

  constructor(bus: { listen(l: (event: { topic: string; data: unknown }) => void): unknown }) {
    bus.listen(({ topic, data }) => {
      if (topic === 'instance.deregistered') this.forget((data as { id?: unknown }).id)
      else if (topic === 'backup.restored') (this.dropped++, this.known.clear(), this.tokensOf.clear())
    })
  }

  async idOf(ctx: Ctx, token: string): Promise<string | null> {
    const known = this.known.get(token)
    if (known) return known.id
    const seen = this.dropped
    const found = await ctx.store.instances.byTokenHash(hashToken(token))
    if (found && seen === this.dropped) {
      if (this.known.size >= KNOWN_TOKENS) this.drop(this.known.keys().next().value!)
      this.known.set(token, { id: found.id, tokenId: found.token_id })
      this.tokensOf.add(found.id, token)
    }
    return found?.id ?? null
  }

  /**
   * The agent token that registered the instance of `token` (null: the admin token, or
   * none), when known here; undefined when unknown (read it with idOf).
   */
  boundTo(token: string): string | null | undefined {
    return this.known.get(token)?.tokenId
  }

  /** The instance id of `token` when known here, without a lookup. */
  knownId(token: string): string | undefined {
    return this.known.get(token)?.id
  }

  /** The name of the instance of `token`, when known here (an instance keeps its name). */
  nameOf(token: string): string | undefined {
    return this.known.get(token)?.name
  }

  /** Notes the name of `instance`, just read for `token`. */
  named(token: string, instance: Instance): void {
    const known = this.known.get(token)
    if (known?.id === instance.id) known.name = instance.name
  }

  private forget(id: unknown): void {
    this.dropped++
    if (typeof id !== 'string') return
    for (const token of this.tokensOf.take(id)) this.known.delete(token)
  }

  /** Forgets one token (the oldest, past the bound). */
  private drop(token: string): void {
    const known = this.known.get(token)
    this.known.delete(token)
    if (known) this.tokensOf.remove(known.id, token)
  }
}
