// Where the server may send requests of its own (webhook deliveries, live contract
// tests). Loopback and private ranges stay allowed: local development is the main
// use. Refused by default: link-local (169.254/16, fe80::/10, where cloud metadata
// services answer), unspecified (0.0.0.0/8, ::) and the known metadata names and
// addresses, each also as an IPv6 address carrying the IPv4 one (::ffff:a9fe:a9fe,
// 64:ff9b::a9fe:a9fe, ...); and always: the server itself, which would loop.

/** What the operator allows and who "the server itself" is. */
export interface TargetPolicy {
  allowLinkLocal: boolean
  /** The ports this server listens on (API, dashboard). */
  ownPorts: number[]
  /** The hosts that reach it: see ownHosts(). */
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

/** An IPv6 address in the URL parser's hex form as its eight 16-bit groups. */
function ipv6(host: string): number[] | null {
  const halves = host.split('::')
  if (!host.includes(':') || halves.length > 2) return null
  const [head, tail] = halves.map((h) => (h === '' ? [] : h.split(':').map((g) => (/^[0-9a-f]{1,4}$/.test(g) ? parseInt(g, 16) : NaN))))
  const groups = tail ? [...head, ...Array(8 - head.length - tail.length).fill(0), ...tail] : head
  return groups.length === 8 && !groups.some(Number.isNaN) ? groups : null
}

/**
 * The IPv4 address an IPv6 address carries in its last 32 bits: mapped (::ffff:0:0/96),
 * translated (::ffff:0:0:0/96), compatible (::/96, but :: and ::1 are IPv6's own) and NAT64
 * (64:ff9b::/96, and the local-use 64:ff9b:1::/48 with a /96 prefix inside it, as deployed).
 * Each reaches that IPv4 address, so it is judged as that address.
 */
function embeddedIpv4(g: number[]): number[] | null {
  const zero = (from: number, to: number) => g.slice(from, to).every((x) => x === 0)
  const carries =
    (zero(0, 5) && g[5] === 0xffff) ||
    (zero(0, 4) && g[4] === 0xffff && g[5] === 0) ||
    (zero(0, 6) && (g[6] !== 0 || g[7] > 1)) ||
    (g[0] === 0x64 && g[1] === 0xff9b && (zero(2, 6) || g[2] === 1))
  return carries ? [g[6] >> 8, g[6] & 255, g[7] >> 8, g[7] & 255] : null
}

/** A host as the URL parser writes it; `v4` the IPv4 address it reaches, if it is one; `key` the one spelling to compare. */
function address(hostname: string): { host: string; v4: number[] | null; key: string } {
  let host = hostname.replace(/^\[|\]$/g, '').replace(/%.*$/, '').toLowerCase().replace(/\.$/, '')
  try {
    host = new URL(`http://${host.includes(':') ? `[${host}]` : host}/`).hostname.replace(/^\[|\]$/g, '')
  } catch {} // not a host a URL can hold: compared as written
  const v6 = ipv6(host)
  const v4 = ipv4(host) ?? (v6 && embeddedIpv4(v6))
  return { host, v4, key: v4 ? v4.join('.') : host }
}

const isLoopback = (host: string, v4: number[] | null) => host === 'localhost' || host.endsWith('.localhost') || host === '::1' || v4?.[0] === 127
const isUnspecified = (host: string, v4: number[] | null) => host === '::' || v4?.[0] === 0

/**
 * The hosts that reach this server: the ones it is bound to and, when one of them is
 * a wildcard (0.0.0.0, ::), the address of every local interface (`interfaces()`).
 */
export function ownHosts(bound: string[], interfaces: () => string[]): string[] {
  const wildcard = bound.some((h) => {
    const { host, v4 } = address(h)
    return isUnspecified(host, v4)
  })
  return wildcard ? [...bound, ...interfaces()] : bound
}

/** Why the server must not call `url`, or null when it may. */
export function targetRefusal(url: URL, policy: TargetPolicy): string | null {
  const { host, v4, key } = address(url.hostname)
  const port = Number(url.port || (url.protocol === 'https:' ? 443 : 80))
  const unspecified = isUnspecified(host, v4)
  const ownHost = isLoopback(host, v4) || unspecified || policy.ownHosts.some((h) => address(h).key === key)
  const shown = v4 && host.includes(':') ? `${url.host} (${key})` : url.host
  if (ownHost && policy.ownPorts.includes(port)) return `${shown} is this server: a delivery to itself would loop`
  if (policy.allowLinkLocal) return null
  if (unspecified) return `${shown} is an unspecified address: not allowed as a target (see --allow-link-local-targets)`
  if ((v4 && v4[0] === 169 && v4[1] === 254) || /^fe[89ab][0-9a-f]:/.test(host))
    return `${shown} is a link-local address (cloud metadata services answer there): not allowed as a target (see --allow-link-local-targets)`
  if (METADATA_NAMES.has(host) || METADATA_ADDRESSES.has(key))
    return `${shown} is a cloud metadata service: not allowed as a target (see --allow-link-local-targets)`
  return null
}
