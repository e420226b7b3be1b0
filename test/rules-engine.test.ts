// The rule engine (validation/rules.ts) directly: each validation semantics item, the
// edge cases of content, and the rule checks used by every write path.
import { describe, expect, test } from 'bun:test'
import { RE2JS } from 're2js'
import { applies, checkRule, checkRules, evaluate, findings, matchingCost, patternError, type RuleDraft, type Subject } from '../validation/rules'
import { nativeRegex } from '../validation/native-regex'

const rule = (r: Partial<RuleDraft> & { rule_id: string; pattern: string }): RuleDraft => checkRule({ ...r }, { project: 'p' })
const run = (rules: RuleDraft[], subject: Subject) =>
  evaluate(rules, subject).map((v) => [v.rule_id, v.line ?? null, v.match ?? null] as const)

describe('evaluate: semantics and edge cases', () => {
  const cases: {
    name: string
    rules: RuleDraft[]
    subject: Subject
    want: (readonly [string, number | null, string | null])[]
  }[] = [
    {
      name: '4. regex: one violation per matching line, 1-based, with the matched text',
      rules: [rule({ rule_id: 'todo', pattern: 'TODO\\(\\w+\\)' })],
      subject: { content: 'a\nb TODO(ann) x\nc\nTODO(bob)' },
      want: [['todo', 2, 'TODO(ann)'], ['todo', 4, 'TODO(bob)']],
    },
    {
      name: '4. several matches on one line give one violation with the first match',
      rules: [rule({ rule_id: 'any', pattern: 'any\\d' })],
      subject: { content: 'x: any1, y: any2, z: any3\nok' },
      want: [['any', 1, 'any1']],
    },
    {
      name: 'CRLF and CR line endings count lines and keep \\r out of matches and $',
      rules: [rule({ rule_id: 'end', pattern: '\\w+;$' })],
      subject: { content: 'one;\r\ntwo\r\nthree;\rfour;\r\n' },
      want: [['end', 1, 'one;'], ['end', 3, 'three;'], ['end', 4, 'four;']],
    },
    {
      name: 'unicode: code points match whole, line numbers unaffected',
      rules: [rule({ rule_id: 'u', pattern: 'caf.\\s\\p{Han}+' }), rule({ rule_id: 'emoji', pattern: '🚀.' })],
      subject: { content: '日本\ncafé 漢字です\n🚀x' },
      want: [['u', 2, 'café 漢字'], ['emoji', 3, '🚀x']],
    },
    {
      name: 'empty content: no lines, so regex rules pass and missing rules fire',
      rules: [rule({ rule_id: 'r', pattern: '.*' }), rule({ rule_id: 'm', pattern: 'license', match_type: 'missing' })],
      subject: { content: '' },
      want: [['m', null, null]],
    },
    {
      name: 'a trailing newline does not add a line',
      rules: [rule({ rule_id: 'blank', pattern: '^$' })],
      subject: { content: 'a\n\nb\n' },
      want: [['blank', 2, '']],
    },
    {
      name: '5. missing: one violation without line or match only when the pattern occurs nowhere',
      rules: [
        rule({ rule_id: 'lic', pattern: 'SPDX-License-Identifier', match_type: 'missing' }),
        rule({ rule_id: 'strict', pattern: "^'use strict'", match_type: 'missing' }),
      ],
      subject: { content: "// header\n'use strict'\ncode()" },
      want: [['lic', null, null]],
    },
    {
      name: '6. custom no-console-log flags each line with console.log(',
      rules: [rule({ rule_id: 'log', pattern: 'no-console-log', match_type: 'custom' })],
      subject: { content: 'console.log("a"); console.log(b)\nconsole.error(c)\n  console.log (d)\nx.console.log(e)' },
      want: [['log', 1, 'console.log('], ['log', 4, 'console.log(']],
    },
    {
      name: '6. an unknown custom name is a regex',
      rules: [rule({ rule_id: 'dbg', pattern: 'debugger;?', match_type: 'custom' })],
      subject: { content: 'a\n  debugger;\n' },
      want: [['dbg', 2, 'debugger;']],
    },
    {
      name: '2. with stack: that stack and universal rules run, other stacks are skipped',
      rules: [rule({ rule_id: 'go', pattern: 'x', stack: 'goth' }), rule({ rule_id: 're', pattern: 'x', stack: 'react' }), rule({ rule_id: 'all', pattern: 'x' })],
      subject: { content: 'x', stack: 'react' },
      want: [['re', 1, 'x'], ['all', 1, 'x']],
    },
    {
      name: '2. without stack every rule runs',
      rules: [rule({ rule_id: 'go', pattern: 'x', stack: 'goth' }), rule({ rule_id: 'all', pattern: 'x' })],
      subject: { content: 'x' },
      want: [['go', 1, 'x'], ['all', 1, 'x']],
    },
    {
      name: '3. applies_to matches the full path or the base name; no filename runs everything',
      rules: [
        rule({ rule_id: 'ts', pattern: 'x', applies_to: ['*.ts'] }),
        rule({ rule_id: 'src', pattern: 'x', applies_to: ['src/**/*.go'] }),
        rule({ rule_id: 'def', pattern: 'x' }),
      ],
      subject: { content: 'x', filename: 'src/deep/app.ts' },
      want: [['ts', 1, 'x'], ['def', 1, 'x']],
    },
    {
      name: '3. full-path glob and dotfiles under the default "*"',
      rules: [rule({ rule_id: 'src', pattern: 'x', applies_to: ['src/**/*.go', '*.py'] }), rule({ rule_id: 'def', pattern: 'x' })],
      subject: { content: 'x', filename: 'lib/a/.main.go' },
      want: [['def', 1, 'x']],
    },
    {
      name: '3. ** globs cover dotfiles too',
      rules: [rule({ rule_id: 'src', pattern: 'x', applies_to: ['src/**/*.go'] })],
      subject: { content: 'x', filename: 'src/a/.main.go' },
      want: [['src', 1, 'x']],
    },
    {
      name: 'ReDoS: (a+)+$ on 30 a and ! answers at once (RE2, linear time)',
      rules: [rule({ rule_id: 'evil', pattern: '(a+)+$' }), rule({ rule_id: 'evil2', pattern: '^(a|aa)+b' })],
      subject: { content: 'a'.repeat(30) + '!' },
      want: [],
    },
    {
      name: 'inline flags work: (?i)',
      rules: [rule({ rule_id: 'ci', pattern: '(?i)fixme' })],
      subject: { content: 'ok\nFixMe later' },
      want: [['ci', 2, 'FixMe']],
    },
    {
      name: '\\A anchors each line (the search shortcut is skipped for it)',
      rules: [rule({ rule_id: 'a', pattern: '\\Aimport' })],
      subject: { content: 'x\nimport a\n  import b' },
      want: [['a', 2, 'import']],
    },
  ]
  for (const c of cases)
    test(c.name, () => {
      const started = performance.now()
      expect(run(c.rules, c.subject)).toEqual(c.want)
      expect(performance.now() - started).toBeLessThan(200)
    })

  test('7. violations carry severity and the message, or a default per match type', () => {
    const v = evaluate(
      [
        rule({ rule_id: 'a', pattern: 'x', severity: 'warning', message: 'no x please' }),
        rule({ rule_id: 'b', pattern: 'x' }),
        rule({ rule_id: 'c', pattern: 'y', match_type: 'missing' }),
        rule({ rule_id: 'd', pattern: 'no-console-log', match_type: 'custom' }),
      ],
      { content: 'x console.log(1)' },
    )
    expect(v).toEqual([
      { rule_id: 'a', severity: 'warning', message: 'no x please', line: 1, match: 'x' },
      { rule_id: 'b', severity: 'error', message: 'forbidden pattern "x" found', line: 1, match: 'x' },
      { rule_id: 'c', severity: 'error', message: 'required pattern "y" not found' },
      { rule_id: 'd', severity: 'error', message: 'console.log( call found', line: 1, match: 'console.log(' },
    ])
    expect(evaluate([rule({ rule_id: 'b', pattern: 'x' })], { content: 'fine' })).toEqual([])
  })

  test('a 1 MB file against 100 rules stays well under a second', () => {
    const content = Array.from({ length: 14000 }, (_, i) => `const v${i} = compute(alpha, beta) // line ${i}`).join('\n')
    const rules = Array.from({ length: 100 }, (_, i) => rule({ rule_id: `r${i}`, pattern: i % 10 ? `forbidden_${i}\\(` : 'line 1399\\d$' }))
    const started = performance.now()
    expect(evaluate(rules, { content })).toHaveLength(100)
    expect(performance.now() - started).toBeLessThan(1000)
  })
})

describe('applies', () => {
  test('stack and globs', () => {
    const r = rule({ rule_id: 'r', pattern: 'x', stack: 'goth', applies_to: ['*.templ', 'views/**'] })
    expect(applies(r, { stack: 'goth', filename: 'a/b.templ' })).toBe(true)
    expect(applies(r, { stack: 'react', filename: 'a/b.templ' })).toBe(false)
    expect(applies(r, { filename: 'views/x/y.go' })).toBe(true)
    expect(applies(r, { filename: 'a/views/y.go' })).toBe(false)
    expect(applies(r, { filename: 'views\\win.go' })).toBe(true)
    expect(applies(r, {})).toBe(true)
  })
})

describe('checkRule and checkRules', () => {
  test('defaults are filled in', () => {
    expect(checkRule({ project: 'p', rule_id: ' r1 ', pattern: 'x' })).toEqual({
      project: 'p',
      rule_id: 'r1',
      severity: 'error',
      match_type: 'regex',
      pattern: 'x',
      message: '',
      applies_to: ['*'],
      stack: '',
      proposed_by: '',
      context: '',
    })
    expect(checkRule({ rule_id: 'r', pattern: 'x', applies_to: [] }, { project: 'p' }).applies_to).toEqual(['*'])
  })

  const bad: [string, unknown, string][] = [
    ['missing rule_id', [{ pattern: 'x' }], 'rule 0: rule_id is required'],
    ['blank rule_id', [{ rule_id: '  ', pattern: 'x' }], 'rule 0: rule_id is required'],
    ['missing pattern', [{ rule_id: 'a', pattern: 'x' }, { rule_id: 'b' }], 'rule 1: pattern is required'],
    ['duplicate ids', [{ rule_id: 'a', pattern: 'x' }, { rule_id: 'b', pattern: 'y' }, { rule_id: 'a', pattern: 'z' }], 'rule 2: duplicate rule_id "a" (also rule 0)'],
    ['unbalanced regex', [{ rule_id: 'a', pattern: '(abc' }], 'rule 0: invalid pattern "(abc": missing closing ): `(abc`'],
    ['backreference', [{ rule_id: 'a', pattern: '(a)\\1' }], 'rule 0: invalid pattern "(a)\\1"'],
    ['lookahead', [{ rule_id: 'a', pattern: 'foo(?!bar)' }], 'rule 0: invalid pattern "foo(?!bar)"'],
    ['missing-type regex is compiled too', [{ rule_id: 'a', pattern: '[', match_type: 'missing' }], 'rule 0: invalid pattern "["'],
    ['unknown custom name is compiled as regex', [{ rule_id: 'a', pattern: '*x', match_type: 'custom' }], 'rule 0: invalid pattern "*x"'],
    ['bad severity', [{ rule_id: 'a', pattern: 'x', severity: 'fatal' }], 'rule 0: invalid severity: expected error, warning'],
    ['bad match_type', [{ rule_id: 'a', pattern: 'x', match_type: 'glob' }], 'rule 0: invalid match_type: expected regex, missing, custom'],
    ['applies_to not an array', [{ rule_id: 'a', pattern: 'x', applies_to: '*.ts' }], 'rule 0: invalid applies_to'],
    ['not an object', ['x'], 'rule 0: expected a rule object'],
    ['not an array', { rule_id: 'a' }, 'expected an array of rules'],
  ]
  for (const [name, raw, message] of bad)
    test(`400: ${name}`, () => {
      let err: any
      try {
        checkRules(raw, { project: 'p' })
      } catch (e) {
        err = e
      }
      expect(err?.kind).toBe('invalid')
      expect(err.message.startsWith(message)).toBe(true)
    })

  test('the project must be named when the URL does not', () => {
    expect(() => checkRules([{ rule_id: 'a', pattern: 'x' }])).toThrow('rule 0: project is required')
    // the same rule_id in two projects is no duplicate
    expect(checkRules([{ project: 'a', rule_id: 'r', pattern: 'x' }, { project: 'b', rule_id: 'r', pattern: 'x' }])).toHaveLength(2)
    expect(() => checkRules([])).toThrow('expected at least one rule')
    expect(checkRules([], { allowEmpty: true })).toEqual([])
  })
})

describe('bounded findings and the inline cost estimate', () => {
  test('lists the first `max` violations in rule then line order, counts them all', () => {
    const rules = [rule({ rule_id: 'a', pattern: 'a' }), rule({ rule_id: 'gone', match_type: 'missing', pattern: 'zzz' }), rule({ rule_id: 'no-log', match_type: 'custom', pattern: 'no-console-log' })]
    const content = 'a console.log(\n'.repeat(5)
    const f = findings(rules, { content }, 7)
    expect(f.count).toBe(11)
    expect(f.truncated).toBe(true)
    expect(f.violations.map((v) => [v.rule_id, v.line ?? null])).toEqual([['a', 1], ['a', 2], ['a', 3], ['a', 4], ['a', 5], ['gone', null], ['no-log', 1]])
    expect(findings(rules, { content }, 11).truncated).toBe(false)
    expect(findings(rules, { content }).violations).toEqual(evaluate(rules, { content }))
  })

  test('the cost grows with the program size of the rules that apply and the content length', () => {
    const small = matchingCost([rule({ rule_id: 't', pattern: 'TODO' })], { content: 'x'.repeat(1000) })
    const costly = matchingCost([rule({ rule_id: 's', pattern: '(.*a){100}' })], { content: 'x'.repeat(1000) })
    expect(costly).toBeGreaterThan(small * 50)
    expect(matchingCost([rule({ rule_id: 's', pattern: '(.*a){100}', applies_to: ['*.md'] })], { content: 'x'.repeat(1000), filename: 'a.ts' })).toBe(0)
    expect(matchingCost([rule({ rule_id: 'c', match_type: 'custom', pattern: 'no-console-log' })], { content: 'x'.repeat(1000) })).toBe(0)
  })
})

// The native engine (validation/native-regex.ts) runs what it can prove linear; RE2 line by
// line is the reference it must match exactly: same lines, same first match.
describe('native engine and RE2 agree', () => {
  function re2Lines(pattern: string, content: string): [number, string][] {
    const re = RE2JS.compile(pattern, RE2JS.MULTILINE)
    const text = content.replace(/\r\n?/g, '\n')
    const lines = text === '' ? [] : text.split('\n')
    if (lines.length > 1 && lines[lines.length - 1] === '') lines.pop()
    return lines.flatMap((line, i): [number, string][] => {
      if (!re.test(line)) return []
      const m = re.matcher(line)
      m.find()
      return [[i + 1, m.group() ?? '']]
    })
  }
  /** All the rules at once (one literal scan for all), each compared with RE2 alone. */
  function expectSame(patterns: string[], content: string) {
    const rules = patterns.map((pattern, i) => rule({ rule_id: `r${i}`, pattern }))
    const got = evaluate(rules, { content }).map((v) => [v.rule_id, v.line, v.match])
    const want = patterns.flatMap((p, i) => re2Lines(p, content).map(([line, match]) => [`r${i}`, line, match]))
    expect({ patterns, content, got }).toEqual({ patterns, content, got: want })
  }

  const corpus = [
    '\\bconst\\b', 'ctx\\.\\w+', '\\d+', 'Response', '\\(\\w+', '(?i)\\b(todo|fixme|xxx)\\b', 'AKIA[0-9A-Z]{16}|secret_3', ':\\s*any4\\b',
    '\\bforbidden_5\\s*\\(', 'TODO\\(\\w+\\)', 'console\\.log\\(', 'debugger;?', '^$', '.*', '^\\s*//', '\\Aimport', 'end\\z', '(?s)a.b', '(?-m)^x',
    '(?i)kelvin|ss', '(?i)[a-z]+q', '(?i)\\w+!', '[^\\n]+', '[^abc]', '\\W\\S\\D', '\\x41\\x{1F600}', 'a{,2}', 'x{2}yz', 'x{0}y', '[a-b-c]', '[]a]',
    '\\t|\\v', 'é+ab', '😀.', '\\p{Han}', 'colou?r', 'foo|foobar', '(ab|a)(c|bcd)', 'a+?b', 'a*?', '(a|ab)(c|bcd)(d*)', '\\bword\\d+\\b',
    '(?P<name>\\w+)=\\d', '(?<n>x)y', '(?i-i)a', '(?im-s)x.$', '(|a)+', '(a*)*b', 'a{2,}?', '[\\d-z]+', '\\.\\*\\+', '[[]', '\\B\\w\\B',
  ]
  const contents = [
    '', '\n', 'a\n', '\n\nx', 'const a = ctx.store(1) // TODO(ann)\r\nResponse.json(2)\rforbidden_5 (x) :any4 ',
    'AKIAABCDEFGHIJKLMNOP secret_3 x: any4;\n  // note\nimport x\nend', 'KELVIN \u212aelvin ſs SS kelvin!\nCOLOUR color colr',
    'aaa\u2028bbb\u2029 a.b a\nb', 'abcd abcbcd acbcd\nfoobar foo', 'x=1 name=2 word12 word1x', 'é😀x 😀\u{1F600} A\u{1F600} \ud800x\udc00',
    'xxyz xyz y aab a a{,2} a{b ]a [x', '\t\v\f ', '日本 漢字', 'ab+ .*+ [ ] {}', '   // comment\n\tconst\u00a0x',
  ]
  test('on a corpus of patterns and contents, the violations are the same', () => {
    for (const content of contents) expectSame(corpus, content)
    // The corpus exercises the native engine, not only RE2.
    expect(corpus.filter((p) => nativeRegex(p)).length).toBeGreaterThan(corpus.length / 2)
  })

  test('on random patterns and contents, the violations are the same', () => {
    let seed = 42
    const random = () => ((seed = (seed * 1103515245 + 12345) & 0x7fffffff) / 0x7fffffff)
    const pick = <T,>(xs: readonly T[]) => xs[Math.floor(random() * xs.length)]
    const atoms = ['a', 'b', 'ab', 'k', 'K', 's', '_', '1', '\\d', '\\w', '\\s', '\\W', '\\D', '\\S', '.', '[a-c]', '[^a]', '[\\w-]', '\\(', ' ', 'é', '😀', '\\b', '\\B', '^', '$', '\\A', '\\z', '{', ']', '\\n']
    const quantifiers = ['*', '+', '?', '{2}', '{1,3}', '{0,2}', '{2,}', '*?', '+?', '??']
    const gen = (depth: number): string => {
      const r = random()
      if (depth <= 0 || r < 0.35) return pick(atoms)
      if (r < 0.6) return gen(depth - 1) + gen(depth - 1)
      if (r < 0.72) return `${gen(depth - 1)}|${gen(depth - 1)}`
      if (r < 0.82) return `(?:${gen(depth - 1)})`
      return `(${gen(depth - 1)})${pick(quantifiers)}`
    }
    const chars = ['a', 'a', 'b', 'k', 'K', '\u212a', 's', 'S', '\u017f', '_', '1', ' ', ' ', '\t', '(', 'é', '😀', '\u2028', '\r', '\n', '\ud800', '{', ']']
    const text = () => Array.from({ length: Math.floor(random() * 40) }, () => pick(chars)).join('')
    const patterns: string[] = []
    while (patterns.length < 600) {
      const p = (random() < 0.2 ? '(?i)' : '') + gen(4)
      if (patternError(p) === null) patterns.push(p)
    }
    for (let i = 0; i < patterns.length; i += 20) for (let k = 0; k < 4; k++) expectSame(patterns.slice(i, i + 20), text())
    expect(patterns.filter((p) => nativeRegex(p)).length).toBeGreaterThan(200)
  })

  test("the (?i) folding of ASCII and \\w is RE2's: the Kelvin sign and long s besides the other case", () => {
    const want = (re: RegExp) => [...Array(0x10000).keys()].filter((cp) => re.test(String.fromCharCode(cp)))
    const letters = RE2JS.compile('(?i)[a-z]')
    const words = RE2JS.compile('(?i)\\w')
    const bmp = [...Array(0x10000).keys()].filter((cp) => cp < 0xd800 || cp > 0xdfff)
    expect(bmp.filter((cp) => letters.matches(String.fromCharCode(cp)))).toEqual(want(/[A-Za-z\u017f\u212a]/))
    expect(bmp.filter((cp) => words.matches(String.fromCharCode(cp)))).toEqual(want(/[0-9A-Z_a-z\u017f\u212a]/))
    expect(nativeRegex('(?i)[a-z]')!.re.test('\u212a')).toBe(true)
    expect(nativeRegex('(?i)\\w')!.re.test('\u017f')).toBe(true)
  })
})

describe('only patterns proven linear run natively', () => {
  test('catastrophic and quadratic patterns stay on RE2', () => {
    const evil = ['(a+)+$', '^(\\w+\\s?)*$', '(a|aa)+b', '(a|a)*c', '(.*a){20}', '\\w+\\(', '\\w+;$', '\\s+$', '\\d+$', 'a.*b.*c', '[^abc]+!', 'x\\w*\\w*y', '(\\w|\\d)+!', '(?:a+)+', 'a{0,1000}b', '(ab)+c', '[ab]?c+d', 'x(\\s*,\\s*x)*;']
    for (const p of evil) expect([p, nativeRegex(p)]).toEqual([p, null])
  })

  test('the usual lint patterns run natively', () => {
    const usual = ['\\bconst\\b', 'ctx\\.\\w+', '\\d+', '\\(\\w+', '(?i)\\b(todo|fixme|xxx)\\b', 'AKIA[0-9A-Z]{16}|secret_3', ':\\s*any4\\b', '\\bforbidden_5\\s*\\(', 'TODO\\(\\w+\\)', 'console\\.log\\(', '\\bword\\d+\\b']
    for (const p of usual) expect([p, nativeRegex(p) !== null]).toEqual([p, true])
  })

  test('patterns run natively stay fast on long pumped lines', () => {
    const accepted = ['ctx\\.\\w+', '\\d+', '\\(\\w+', ':\\s*any4\\b', '\\bforbidden_5\\s*\\(', 'TODO\\(\\w+\\)', '\\bword\\d+\\b', '"[^"]*"', '.*', '\\bimport\\s+\\w+;']
    const pumps = ['a', ' ', '1', 'ab', 'ctx.', 'TODO(', ':', 'word', 'x, ', 'forbidden_5 ']
    for (const p of accepted) {
      const re = nativeRegex(p)
      expect([p, re !== null]).toEqual([p, true])
      const rules = [rule({ rule_id: 'r', pattern: p })]
      for (const pump of pumps) {
        const content = pump.repeat(Math.ceil(200_000 / pump.length)) + '!'
        const started = performance.now()
        evaluate(rules, { content })
        // Linear: a few ms. Quadratic on 200k characters would be tens of seconds.
        expect([p, pump, performance.now() - started < 500]).toEqual([p, pump, true])
      }
    }
  })
})
