// What a hook session has been shown, as one number per session: the message id through
// which every message to its name is shown in that session or acked. Kept only where this
// process is the database's only writer: message ids then rise in commit order (a message
// sent later has a larger id), and shown and acked never go back, so the hooks' read of
// what is left to show starts after it. Without it that read walks every unacked message
// the name ever got, and an agent that never acks makes each read longer than the last.

/** Sessions remembered at most, oldest first; one forgotten reads from the start again. */
const MAX_SESSIONS = 50_000

export class ShownThrough {
  private through = new Map<string, number>()

  /** 0 when nothing is known: the read starts at the first message. */
  get(name: string, session: string): number {
    return this.through.get(`${session}\0${name}`) ?? 0
  }

  /**
   * After the COMMIT that marked `shown` for the session: `read` is the unshown list
   * (ids ascending) those were picked from. Every id of it up to the first one left out
   * is now shown, and any id between them the read skipped was shown or acked already.
   */
  note(name: string, session: string, read: readonly number[], shown: readonly number[]): void {
    const marked = new Set(shown)
    let upTo = 0
    for (const id of read) {
      if (!marked.has(id)) break
      upTo = id
    }
    const key = `${session}\0${name}`
    if (upTo <= (this.through.get(key) ?? 0)) return
    this.through.delete(key)
    if (this.through.size >= MAX_SESSIONS) this.through.clear()
    this.through.set(key, upTo)
  }
}
