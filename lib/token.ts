// Tokens are stored and compared only as their SHA-256.
export function hashToken(token: string): string {
  return new Bun.CryptoHasher('sha256').update(token).digest('hex')
}
