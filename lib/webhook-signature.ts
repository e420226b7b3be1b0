// Webhook signatures, two ways over the same secret, so receivers can verify
// with whatever they already use:
// - X-Service-Signature: sha256=<hex HMAC-SHA256(secret, body)>, the GitHub style
//   (e.g. @octokit/webhooks-methods verify(secret, body, signature));
// - Standard Webhooks (standardwebhooks.com): webhook-id, webhook-timestamp (Unix
//   seconds) and webhook-signature: v1,<base64 HMAC-SHA256(key, "id.timestamp.body")>.
//   Standard Webhooks secrets are base64 key bytes; our secrets are arbitrary
//   strings, so the key is the secret's UTF-8 bytes and a verifier is given
//   standardWebhooksSecret(secret) = "whsec_" + base64(secret).
import { createHmac } from 'node:crypto'

export const githubStyleSignature = (secret: string, body: string) => `sha256=${createHmac('sha256', secret).update(body).digest('hex')}`

export const standardWebhooksSecret = (secret: string) => `whsec_${Buffer.from(secret, 'utf8').toString('base64')}`

/** The signature headers of one delivery; `id` is also its X-Service-Delivery. */
export function signatureHeaders(secret: string, id: string, body: string, now = Date.now()): Record<string, string> {
  const timestamp = String(Math.floor(now / 1000))
  const v1 = createHmac('sha256', secret).update(`${id}.${timestamp}.${body}`).digest('base64')
  return {
    'x-service-signature': githubStyleSignature(secret, body),
    'webhook-id': id,
    'webhook-timestamp': timestamp,
    'webhook-signature': `v1,${v1}`,
  }
}
