// The slice of picomatch (it ships no types) that lib/rules.ts uses.
declare module 'picomatch' {
  interface Options {
    dot?: boolean
    nocase?: boolean
    windows?: boolean
  }
  function picomatch(glob: string | string[], options?: Options): (path: string) => boolean
  export default picomatch
}
