// A shell command's text as tokens: words (quotes removed, with whether the word is
// plain: no expansion, glob or substitution left in it), control operators and
// redirections. Here-document bodies are skipped, never read as commands; `$(…)`,
// backquotes, `${…}`, `((…))` and process substitutions are kept whole inside a word
// that is not plain. Only what says which files a command writes is modelled: this is
// not a shell, and anything it cannot read ends up in a word that is not plain.

export interface Word {
  text: string
  /** False when the shell would change the word (an expansion, a glob, a `~`): its file is not known. */
  plain: boolean
  /** A here-document's delimiter carries the document's body (as written, not expanded). */
  body?: string
}

export type Token =
  | ({ t: 'word' } & Word)
  | { t: 'op'; op: '&&' | '||' | ';' | '|' | '&' | '(' | ')' }
  | { t: 'redir'; op: string; fd: string | null }

const META = new Set([' ', '\t', '\n', ';', '&', '|', '(', ')', '<', '>'])
/** `[fd]op` at a token's start; `&>`/`&>>` take no fd. Longest first. */
const REDIR = /(?:(\d+)|\{[A-Za-z_]\w*\})?(>>|>\||>&|<<<|<<-|<<|<>|<&|>|<)|(&>>|&>)/y
/** Words after which a command starts again (`if x; then y`, `! z`, `{ a; }`). */
const STARTERS = new Set(['!', '{', '}', 'then', 'do', 'else', 'elif', 'if', 'while', 'until', 'time', 'fi', 'done', 'esac'])

/** The index just past the `close` that ends a group opened before `i`, quotes and nesting kept. */
function skipGroup(s: string, i: number, open: string, close: string): number {
  let depth = 1
  while (i < s.length) {
    const c = s[i]
    if (c === '\\') i += 2
    else if (c === "'") i = s.indexOf("'", i + 1) === -1 ? s.length : s.indexOf("'", i + 1) + 1
    else if (c === '"') i = skipDouble(s, i + 1)
    else if (c === '`') i = skipBackquote(s, i + 1)
    else if (c === open) (depth++, i++)
    else if (c === close) {
      i++
      if (--depth === 0) return i
    } else i++
  }
  return i
}

/** Past the `"` that closes a double-quoted string whose body starts at `i`. */
function skipDouble(s: string, i: number): number {
  while (i < s.length && s[i] !== '"') {
    if (s[i] === '\\') i += 2
    else if (s.startsWith('$(', i)) i = skipGroup(s, i + 2, '(', ')')
    else if (s[i] === '`') i = skipBackquote(s, i + 1)
    else i++
  }
  return i + 1
}

function skipBackquote(s: string, i: number): number {
  while (i < s.length && s[i] !== '`') i += s[i] === '\\' ? 2 : 1
  return i + 1
}

const ANSI: Record<string, string> = { n: '\n', t: '\t', r: '\r', '\\': '\\', "'": "'", '"': '"', a: '\x07', b: '\b', e: '\x1b', f: '\f', v: '\v' }

/** An expansion starting at `s[i] === '$'`: its end, or -1 when the `$` is literal. */
function expansionEnd(s: string, i: number): number {
  const n = s[i + 1]
  if (n === '(') return s[i + 2] === '(' ? skipGroup(s, i + 3, '(', ')') + 1 : skipGroup(s, i + 2, '(', ')')
  if (n === '{') return skipGroup(s, i + 2, '{', '}')
  if (n !== undefined && /[A-Za-z_]/.test(n)) {
    let j = i + 1
    while (j < s.length && /\w/.test(s[j])) j++
    return j
  }
  if (n !== undefined && /[0-9@*#?$!-]/.test(n)) return i + 2
  return -1
}

/** Tokens of `s`. Never throws: an unterminated quote runs to the end of the text, and nesting too deep ends the tokens. */
export function lex(s: string): Token[] {
  const out: Token[] = []
  const heredocs: { delim: string; strip: boolean; word: Word }[] = []
  let i = 0
  let commandStart = true
  let dblBracket = false

  const readHeredocs = () => {
    for (const h of heredocs.splice(0)) {
      const start = i
      let bodyEnd = s.length
      while (i < s.length) {
        const end = s.indexOf('\n', i)
        const line = s.slice(i, end === -1 ? s.length : end)
        const at = i
        i = end === -1 ? s.length : end + 1
        if ((h.strip ? line.replace(/^\t+/, '') : line) === h.delim) {
          bodyEnd = at
          break
        }
      }
      h.word.body = s.slice(start, bodyEnd)
    }
  }

  const readWord = (): Word => {
    let text = ''
    let plain = true
    const start = i
    while (i < s.length) {
      const c = s[i]
      if (META.has(c) && !(dblBracket && (c === '<' || c === '>' || c === '(' || c === ')'))) break
      if (c === '\\') {
        if (s[i + 1] === '\n') i += 2
        else (text += s[i + 1] ?? ''), (i += 2)
      } else if (c === "'") {
        const end = s.indexOf("'", i + 1)
        text += s.slice(i + 1, end === -1 ? s.length : end)
        i = end === -1 ? s.length : end + 1
      } else if (c === '"') {
        i++
        while (i < s.length && s[i] !== '"') {
          if (s[i] === '\\' && '$`"\\\n'.includes(s[i + 1] ?? '')) {
            if (s[i + 1] !== '\n') text += s[i + 1]
            i += 2
          } else if (s[i] === '$' && expansionEnd(s, i) !== -1) {
            plain = false
            i = expansionEnd(s, i)
          } else if (s[i] === '`') {
            plain = false
            i = skipBackquote(s, i + 1)
          } else text += s[i++]
        }
        i++
      } else if (c === '$' && s[i + 1] === "'") {
        i += 2
        while (i < s.length && s[i] !== "'") {
          if (s[i] === '\\') (text += ANSI[s[i + 1]] ?? s[i + 1] ?? ''), (i += 2)
          else text += s[i++]
        }
        i++
      } else if (c === '$' && s[i + 1] === '"') {
        i++ // a locale string reads as a double-quoted one
      } else if (c === '$' && expansionEnd(s, i) !== -1) {
        plain = false
        i = expansionEnd(s, i)
      } else if (c === '`') {
        plain = false
        i = skipBackquote(s, i + 1)
      } else {
        if (c === '*' || c === '?' || c === '[' || (c === '~' && i === start) || ((c === '{' || c === '}') && !(text === '' && (s[i + 1] === undefined || META.has(s[i + 1]))))) plain = false
        text += c
        i++
      }
    }
    return { text, plain }
  }

  const push = (tok: Token) => {
    out.push(tok)
    if (tok.t === 'op') commandStart = tok.op !== ')'
    else if (tok.t === 'word') commandStart = commandStart && STARTERS.has(tok.text) && tok.plain
  }

  try {
    lexAll()
  } catch {
    // Nesting deeper than the stack (`"$("$(…`): the tokens before it are what can be read.
  }
  return out

  function lexAll() {
    while (i < s.length) {
      const c = s[i]
      if (c === ' ' || c === '\t') {
        i++
        continue
      }
      if (c === '\\' && s[i + 1] === '\n') {
        i += 2
        continue
      }
      if (c === '\n') {
        i++
        if (!dblBracket) push({ t: 'op', op: ';' })
        readHeredocs()
        continue
      }
      if (c === '#') {
        while (i < s.length && s[i] !== '\n') i++
        continue
      }
      if (dblBracket) {
        const w = readWord()
        if (w.text === '' && i < s.length && META.has(s[i])) w.text = s[i++]
        if (w.text === ']]') dblBracket = false
        push({ t: 'word', ...w, plain: false })
        continue
      }
      if (commandStart && s.startsWith('((', i)) {
        i = skipGroup(s, i + 2, '(', ')') + 1
        push({ t: 'word', text: '((…))', plain: false })
        continue
      }
      if ((c === '<' || c === '>') && s[i + 1] === '(') {
        i = skipGroup(s, i + 2, '(', ')')
        const rest = readWord()
        push({ t: 'word', text: `${c}(…)${rest.text}`, plain: false })
        continue
      }
      let r: RegExpExecArray | null = null
      if (c === '<' || c === '>' || c === '&' || c === '{' || (c >= '0' && c <= '9')) {
        REDIR.lastIndex = i
        r = REDIR.exec(s)
      }
      if (r) {
        i += r[0].length
        const op = r[2] ?? r[3]
        push({ t: 'redir', op, fd: r[1] ?? null })
        if (op === '<<' || op === '<<-') {
          while (s[i] === ' ' || s[i] === '\t') i++
          const word: Token = { t: 'word', ...readWord() }
          heredocs.push({ delim: word.text, strip: op === '<<-', word })
          out.push(word)
        }
        continue
      }
      if (c === '&' || c === '|' || c === ';' || c === '(' || c === ')') {
        const two = s.slice(i, i + 2)
        if (two === '&&' || two === '||') {
          i += 2
          push({ t: 'op', op: two })
        } else if (c === ';') {
          while (s[i] === ';' || s[i] === '&') i++ // `;;`, `;&`, `;;&` end a case item
          push({ t: 'op', op: ';' })
        } else if (two === '|&') {
          i += 2
          push({ t: 'op', op: '|' })
        } else {
          i++
          push({ t: 'op', op: c as '&' | '|' | '(' | ')' })
        }
        continue
      }
      const w = readWord()
      if (commandStart && w.text === '[[') dblBracket = true
      push({ t: 'word', ...w })
    }
  }
}
