// ANSI colour for output a person reads on a terminal. Whether it is used at all
// is decided once in output.ts (a terminal, no NO_COLOR, no --no-color); these
// helpers only paint when handed `on`.

export interface Paint {
  key(s: string): string
  string(s: string): string
  number(s: string): string
  bool(s: string): string
  dim(s: string): string
  bold(s: string): string
  /** A status word by what it means: fine, waiting, or gone wrong. */
  status(s: string): string
}

const sgr = (code: string) => (s: string) => `\x1b[${code}m${s}\x1b[0m`
const same = (s: string) => s

const GOOD = /^(ok|active|ready|done|accepted|pass(ed)?|enabled|delivered|success|healthy|true)$/i
const WAITING = /^(stale|claimed|proposed|blocked|pending|waiting|retrying|queued|held)$/i
const BAD = /^(failed|failure|error|rejected|cancelled|canceled|disabled|dead|gone|expired|denied|false)$/i

export function paint(on: boolean): Paint {
  if (!on) return { key: same, string: same, number: same, bool: same, dim: same, bold: same, status: same }
  const green = sgr('32')
  const yellow = sgr('33')
  const red = sgr('31')
  return {
    key: sgr('34;1'),
    string: green,
    number: sgr('36'),
    bool: yellow,
    dim: sgr('2'),
    bold: sgr('1'),
    status: (s) => (GOOD.test(s) ? green(s) : WAITING.test(s) ? yellow(s) : BAD.test(s) ? red(s) : s),
  }
}

/** JSON.stringify's text (indented by `indent`, 0 for one line) with keys and values painted. */
export function colorJson(value: unknown, indent: number, p: Paint): string {
  const nl = indent ? '\n' : ''
  const write = (v: unknown, depth: number): string => {
    if (v === null || v === undefined) return p.dim('null')
    if (typeof v === 'string') return p.string(JSON.stringify(v))
    if (typeof v === 'number') return p.number(JSON.stringify(v))
    if (typeof v === 'boolean') return p.bool(String(v))
    const pad = ' '.repeat(indent * (depth + 1))
    const end = ' '.repeat(indent * depth)
    if (Array.isArray(v)) {
      if (!v.length) return '[]'
      return `[${nl}${v.map((x) => pad + write(x, depth + 1)).join(`,${nl}`)}${nl}${end}]`
    }
    if (typeof v === 'object') {
      const entries = Object.entries(v).filter(([, x]) => x !== undefined)
      if (!entries.length) return '{}'
      const sep = indent ? ': ' : ':'
      return `{${nl}${entries.map(([k, x]) => `${pad}${p.key(JSON.stringify(k))}${sep}${write(x, depth + 1)}`).join(`,${nl}`)}${nl}${end}}`
    }
    return JSON.stringify(v) ?? 'null'
  }
  return write(value, 0)
}
