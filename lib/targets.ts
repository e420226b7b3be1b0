// Where the server may send requests of its own (webhook deliveries, live contract
// tests). Loopback and private ranges stay allowed: local development is the main
// use. Refused by default: link-local (169.254/16, fe80::/10, where cloud metadata
// services answer), unspecified (0.0.0.0/8, ::) and the known metadata names and
// addresses; and always: the server itself, which would loop.

/** What the operator allows and who "the server itself" is. */
export interface TargetPolicy {
  allowLinkLocal: boolean
  /** The ports this server listens on (API, dashboard). */
  ownPorts: number[]
  /** The hosts it is bound to, as configured. */
  ownHosts: string[]
}

const METADATA_NAMES = new Set(['metadata.google.internal', 'metadata', 'instance-data', 'instance-data.ec2.internal', 'metadata.azure.internal'])
// Alibaba's metadata service, AWS's IPv6 one.
const METADATA_ADDRESSES = new Set(['100.100.100.200', 'fd00:ec2::254'])

/** The IPv4 address as four numbers (the URL parser has already normalised 0xA9.254... and 2852039166 forms). */
function ipv4(host: string): number[] | null {
  const m = /^(\d+)\.(\d+)\.(\d+)\.(\d+)$/.exec(host)
  return m ? m.slice(1).map(Number) : null
}

/** An IPv4 address mapped into IPv6 (::ffff:a9fe:a9fe, as the URL parser writes it), as IPv4. */
function mappedIpv4(host: string): number[] | null {
  const m = /^::ffff:([0-9a-f]{1,4}):([0-9a-f]{1,4})$/.exec(host)
  if (!m) return null
  const [hi, lo] = [parseInt(m[1], 16), parseInt(m[2], 16)]
  return [hi >> 8, hi & 255, lo >> 8, lo & 255]
}

const isLoopback = (host: string, v4: number[] | null) => host === 'localhost' || host.endsWith('.localhost') || host === '::1' || v4?.[0] === 127

/** Why the server must not call `url`, or null when it may. */
export function targetRefusal(url: URL, policy: TargetPolicy): string | null {
  const host = url.hostname.replace(/^\[|\]$/g, '').toLowerCase().replace(/\.$/, '')
  const v4 = ipv4(host) ?? mappedIpv4(host)
  const port = Number(url.port || (url.protocol === 'https:' ? 443 : 80))
  const unspecified = host === '::' || v4?.[0] === 0
  const ownHost = isLoopback(host, v4) || unspecified || policy.ownHosts.includes(host)
  if (ownHost && policy.ownPorts.includes(port)) return `${url.host} is this server: a delivery to itself would loop`
  if (policy.allowLinkLocal) return null
  if (unspecified) return `${url.host} is an unspecified address: not allowed as a target (see --allow-link-local-targets)`
  if ((v4 && v4[0] === 169 && v4[1] === 254) || /^fe[89ab][0-9a-f]:/.test(host))
    return `${url.host} is a link-local address (cloud metadata services answer there): not allowed as a target (see --allow-link-local-targets)`
  if (METADATA_NAMES.has(host) || METADATA_ADDRESSES.has(host) || (v4 && METADATA_ADDRESSES.has(v4.join('.'))))
    return `${url.host} is a cloud metadata service: not allowed as a target (see --allow-link-local-targets)`
  return null
}
