// Tokens are stored and compared only as their SHA-256.

/** The close code of an events WebSocket whose token was revoked or expired (access.md): 4000 + the 401 its next request gets. */
export const TOKEN_CLOSE_CODE = 4401

export function hashToken(token: string): string {
  return new Bun.CryptoHasher('sha256').update(token).digest('hex')
}

/**
 * The instance token of instance `id` registered with agent token `agentToken`: made from
 * the two, so the same agent token can be told it again (a registration of the same name
 * resumes the instance, same id and token) while the server keeps only its hash.
 */
export function derivedInstanceToken(agentToken: string, id: string): string {
  return new Bun.CryptoHasher('sha256', agentToken).update(`muster instance ${id}`).digest('hex')
}
