// How the CLI fails: the error kinds its commands throw and the exit code of each.

/** `check`: the command ran, but what it checked failed (validate --fail-on, contract validate/test). */
export const EXIT = { ok: 0, server: 1, usage: 2, check: 3 } as const

/** Bad invocation or unusable local input (missing file, --data that is not JSON): exit 2. */
export class UsageError extends Error {}

/** The server answered with an error status; `body` is its `{error, code}`: exit 1. */
export class ServerError extends Error {
  constructor(
    readonly status: number,
    readonly body: unknown,
  ) {
    super(`server answered ${status}`)
  }
}

/** The command already said what went wrong on stderr; only the exit code is left (`check`). */
export class Exit extends Error {
  constructor(readonly code: number) {
    super(`exit ${code}`)
  }
}

/** The request never got an answer (connection refused, DNS, reset): exit 1. */
export class ClientError extends Error {}

/** Returned by an action whose check failed: `result` is printed as usual, then exit 3 with `message` on stderr. */
export class CheckFailed extends Error {
  constructor(
    message: string,
    readonly result: unknown,
  ) {
    super(message)
  }
}
