// Where a worker entry file is. Each worker is its own build entrypoint: run from
// source it sits beside this repo's files; in a compiled binary (bun build
// --compile) at the same repo path under the bundle root, which is then
// import.meta.url's directory rather than lib/.
const compiled = /[/\\](\$bunfs|~BUN)[/\\]/.test(import.meta.url)
const root = new URL(compiled ? '.' : '..', import.meta.url)

/** URL for `new Worker()` of a file given by its path in the repo, e.g. "store/sqlite/checkpointer.ts". */
export const workerUrl = (repoPath: string): string => new URL(repoPath, root).href
