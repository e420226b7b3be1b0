// The URL of a request, whatever its Host header.
import { sameConnection } from './holds'

const PLACEHOLDER_ORIGIN = 'http://localhost'

/**
 * The request's URL. Bun gives a bare path as the URL of a request without a Host
 * header (HTTP/1.0): resolved against a placeholder origin instead of throwing.
 */
export const urlOf = (request: Request): URL => new URL(request.url, PLACEHOLDER_ORIGIN)

/** urlOf(request).pathname of a request's URL, with a few string searches instead of a URL parse (every request needs it). */
export const pathOf = (url: string): string => {
  const start = url.startsWith('/') ? 0 : url.indexOf('/', url.indexOf('//') + 2)
  let end = url.indexOf('?', start)
  const hash = url.indexOf('#', start)
  if (hash >= 0 && (end < 0 || hash < end)) end = hash
  return end < 0 ? url.slice(start) : url.slice(start, end)
}

/**
 * Wraps an app's router (Elysia's wrap): it finds the path after the origin, so a
 * request whose URL is a bare path would be routed by the wrong part of it.
 */
export const withOrigin =
  <R>(route: (request: Request) => R) =>
  (request: Request): R => {
    if (!request.url.startsWith('/')) return route(request)
    const absolute = new Request(PLACEHOLDER_ORIGIN + request.url, request)
    sameConnection(request, absolute)
    return route(absolute)
  }

/** Percent-encoded unreserved characters (RFC 3986 2.3): the same URL spelled otherwise. */
const ENCODED_UNRESERVED = /%(2[dDeE]|3[0-9]|[46][1-9a-fA-F]|[57][0-9aA]|5[fF]|7[eE])/g

/**
 * A path as it is spelled once: slashes not doubled nor trailing, unreserved characters
 * not percent-encoded. The routers serve only this spelling of a route's literal part;
 * a 404 names it when it is served (http/route-table.ts).
 */
export const canonicalPath = (path: string): string =>
  path.replace(ENCODED_UNRESERVED, (e) => String.fromCharCode(parseInt(e.slice(1), 16))).replace(/\/{2,}/g, '/').replace(/(.)\/$/, '$1')
