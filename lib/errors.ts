// Domain errors: thrown by the store and the logic modules, which know nothing of
// HTTP; the API layer maps each kind to its status code in one place (http/errors.ts).

export type ErrorKind =
  | 'invalid' // 400
  | 'unauthorized' // 401
  | 'forbidden' // 403
  | 'not_found' // 404
  | 'method' // 405
  | 'conflict' // 409
  | 'precondition' // 412
  | 'too_large' // 413
  | 'unsupported' // 415
  | 'unavailable' // 503: the database cannot be reached; the same request may succeed in a moment

export class AppError extends Error {
  constructor(
    readonly kind: ErrorKind,
    message: string,
    /** Extra fields merged into the error body, e.g. current_version on 412. */
    readonly extra: Record<string, unknown> = {},
  ) {
    super(message)
  }
}

export const invalid = (message: string, extra?: Record<string, unknown>) => new AppError('invalid', message, extra)
export const notFound = (message: string) => new AppError('not_found', message)
export const conflict = (message: string, extra?: Record<string, unknown>) => new AppError('conflict', message, extra)
export const forbidden = (message: string) => new AppError('forbidden', message)
export const unauthorized = (message: string) => new AppError('unauthorized', message)
