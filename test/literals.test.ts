// validation/literals.ts: the required texts of a pattern, and that the engine's shortcut
// through them (validation/rules.ts) finds exactly what RE2 alone finds.
import { describe, expect, test } from 'bun:test'
import { RE2JS } from 're2js'
import { requiredLiterals } from '../validation/literals'
import { checkRule, findings } from '../validation/rules'

describe('requiredLiterals', () => {
  test('the longest run of plain text of each top-level branch', () => {
    const cases: [string, string[] | null][] = [
      ['TODO', ['TODO']],
      ['\\bforbidden_5\\s*\\(', ['forbidden_5']],
      ['AKIA[0-9A-Z]{16}|secret_3', ['AKIA', 'secret_3']],
      ['console\\.log\\(', ['console.log(']],
      ['ctx\\.\\w+', ['ctx.']],
      ['colou?r', ['colo']],
      ['abc+d', ['ab']],
      ['x{2}yz', ['yz']],
      ['foo(bar|baz)?qux', ['foo']],
      ['[ab]cd', ['cd']],
      ['a\\]b', ['a]b']],
      ['\\b(todo|fixme)\\b', ['todo', 'fixme']],
      ['x(ab|cde)yz|(pq)', ['ab', 'cde', 'pq']],
    ]
    for (const [pattern, want] of cases) expect([pattern, requiredLiterals(pattern)?.texts ?? null]).toEqual([pattern, want])
    expect(requiredLiterals('(?i)\\b(ToDo|FIXME|xxx)\\b')).toEqual({ texts: ['todo', 'fixme', 'xxx'], caseless: true })
    expect(requiredLiterals('TODO')).toEqual({ texts: ['TODO'], caseless: false })
  })

  test('null whenever a branch has none or the syntax could fold case or hide text', () => {
    for (const pattern of ['\\d+', 'ab*c', 'a.b', 'x|abc', '(?s)todo', '(?:ab)cd', 'a(?i)bc', '(?i)éa', '(ab)?', '\\pLabc', '\\x41bc', '\\Qab\\E', '\\101bc', 'a(b', '[abc'])
      expect([pattern, requiredLiterals(pattern)]).toEqual([pattern, null])
  })
})

test('the shortcut finds exactly the lines RE2 finds alone', () => {
  const patterns = ['(?i)todo', '(?i)\\b(todo|fixme)\\b', '(?i)kelvin|ss', 'TODO', 'a+b', 'ab+c?d', 'x{2}yz', 'colou?r', 'foo(bar|baz)?qux', '[ab]cd', '^abc', 'abc$', '\\babc\\b', 'ab|cd', 'a\\.b', 'a\\]b', 'é+ab', '😀ab']
  const content = [
    'TODO abd abbd abcd xxyz xyz', 'color colour colr', 'fooqux foobarqux foobazqux foobqux', 'acd bcd ccd', 'abc', 'xabc', 'abcx',
    'zabc abc', 'ab', 'cd', 'a.b a]b a-b', 'ééab éab', '😀ab 😀', '', 'nothing here', 'abbbbbbbbbd', 'ToDo x', 'a FIXME', 'todos',
  ].join('\n')
  // ſ folds to s and K (Kelvin sign) to k in RE2; İ lower-cases to two characters: the caseless shortcut must stand aside or agree.
  for (const text of [content, content + '\nKELVIN \u212aelvin', content + '\nſs', content + '\nİ todo'])
    for (const pattern of patterns) expectSame(pattern, text)
})

function expectSame(pattern: string, content: string) {
  const rule = checkRule({ rule_id: 'r', pattern }, { project: 'p' })
  const re = RE2JS.compile(pattern, RE2JS.MULTILINE)
  const want = content.split('\n').flatMap((line, i) => (re.test(line) ? [i + 1] : []))
  const got = findings([rule], { content }).violations.map((v) => v.line)
  expect([pattern, got]).toEqual([pattern, want])
  const missing = checkRule({ rule_id: 'm', pattern, match_type: 'missing' }, { project: 'p' })
  expect([pattern, findings([missing], { content }).count]).toEqual([pattern, re.test(content) ? 0 : 1])
}
