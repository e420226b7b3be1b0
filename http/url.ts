// The URL of a request, whatever its Host header.

const PLACEHOLDER_ORIGIN = 'http://localhost'

/**
 * The request's URL. Bun gives a bare path as the URL of a request without a Host
 * header (HTTP/1.0): resolved against a placeholder origin instead of throwing.
 */
export const urlOf = (request: Request): URL => new URL(request.url, PLACEHOLDER_ORIGIN)

/**
 * Wraps an app's router (Elysia's wrap): it finds the path after the origin, so a
 * request whose URL is a bare path would be routed by the wrong part of it.
 */
export const withOrigin = (route: (request: Request) => unknown) => (request: Request) =>
  route(request.url.startsWith('/') ? new Request(PLACEHOLDER_ORIGIN + request.url, request) : request)
