// The shell-write reader (lib/shell): each form the contract lists, across operators,
// subshells and `cd` prefixes, and the commands it must leave alone (nothing written,
// or nothing it can pin down).
import { describe, expect, test } from 'bun:test'
import { shellWrites } from '../lib/shell/writes'
import { lex } from '../lib/shell/lex'

/** The writes of `cmd` run in /r, as `path` (relative to /r where under it) with [tree] / [maybe] marks. */
const w = (cmd: string | string[], cwd = '/r') =>
  shellWrites(cmd, cwd).map((x) => (x.path.startsWith('/r/') ? x.path.slice(3) : x.path) + (x.tree ? ' [tree]' : '') + (x.maybe ? ' [maybe]' : ''))

describe('forms that write', () => {
  test.each([
    ['echo x > out.txt', ['out.txt']],
    ['echo x >> log.txt', ['log.txt']],
    ['make &> build.log', ['build.log']],
    ['make &>> build.log', ['build.log']],
    ['echo x >| clobber.txt', ['clobber.txt']],
    ['cmd 2> err.txt', ['err.txt']],
    ['cmd 2>> err.txt', ['err.txt']],
    ['cmd >&all.txt', ['all.txt']],
    ['exec 3<> rw.txt', ['rw.txt']],
    ['echo hi >out.txt;echo ho>>\'sp ace.txt\'', ['out.txt', 'sp ace.txt']],
    ["cat > f.txt <<'EOF'\nline > not-a-file\n$(not run)\nEOF\necho done > d.txt", ['f.txt', 'd.txt']],
    ['cat <<-EOF > tab.txt\n\tbody > no\n\tEOF\n', ['tab.txt']],
    ['cat <<EOF >> a.txt\nx\nEOF', ['a.txt']],
    ['tee out1 out2 < in', ['out1', 'out2']],
    ['echo x | tee -a log.txt', ['log.txt']],
    ['echo x | sudo tee --append /etc/hosts > /dev/null', ['/etc/hosts']],
    ["sed -i 's/a/b/' x.ts y.ts", ['x.ts', 'y.ts']],
    ['sed -i.bak -e s/a/b/ gnu.txt', ['gnu.txt']],
    ["sed -i '' s/a/b/ mac.txt", ['mac.txt']],
    ['sed -Ei -e s/a/b/ -e s/c/d/ e.txt', ['e.txt']],
    ['sed --in-place=.orig -f script.sed f.txt', ['f.txt']],
    ["perl -pi -e 's/a/b/' f.pl g.pl", ['f.pl', 'g.pl']],
    ["perl -i.bak -pe 's/a/b/' h.pl", ['h.pl']],
    ['cp a.ts b.ts', ['b.ts', 'b.ts/a.ts [maybe]']],
    ['cp a b c dir/', ['dir/a', 'dir/b', 'dir/c']],
    ['cp -t dest one.ts two.ts', ['dest/one.ts', 'dest/two.ts']],
    ['cp -r src/lib vendor/lib', ['vendor/lib [tree]', 'vendor/lib/lib [tree] [maybe]']],
    ['cp -T a.ts b.ts', ['b.ts']],
    ['mv old.ts new.ts', ['new.ts', 'new.ts/old.ts [maybe]', 'old.ts [tree]']],
    ['mv a.ts b.ts lib/', ['lib/a.ts', 'lib/b.ts', 'a.ts [tree]', 'b.ts [tree]']],
    ['install -m 644 x.sh bin/x', ['bin/x', 'bin/x/x.sh [maybe]']],
    ['install -d bin', []],
    ['rm a.ts b.ts', ['a.ts', 'b.ts']],
    ['rm -rf build', ['build [tree]']],
    ['rm -- -weird', ['-weird']],
    ['touch a b', ['a', 'b']],
    ['touch -d yesterday -r ref.txt stamp', ['stamp']],
    ['truncate -s 0 log', ['log']],
    ['truncate --size=0 log2', ['log2']],
    ['dd if=/dev/zero of=disk.img bs=1 count=1', ['disk.img']],
    ['git checkout -- src/a.ts', ['src/a.ts [tree]']],
    ['git checkout HEAD~1 -- src/a.ts src/b.ts', ['src/a.ts [tree]', 'src/b.ts [tree]']],
    ['git restore src/b.ts', ['src/b.ts [tree]']],
    ['git restore --source=HEAD --staged --worktree src/c.ts', ['src/c.ts [tree]']],
    ['git -C sub checkout main -- x', ['sub/x [tree]']],
    ['git rm -r --quiet src/old', ['src/old [tree]']],
    ['git mv src/a.ts src/b.ts', ['src/b.ts', 'src/b.ts/a.ts [maybe]', 'src/a.ts [tree]']],
  ])('%j writes %j', (cmd, expected) => expect(w(cmd)).toEqual(expected))
})

describe('across operators, subshells and working directories', () => {
  test.each([
    ["printf 'x' >> src/auth/login.ts", ['src/auth/login.ts']],
    ["cd src && printf 'x' >> auth/login.ts", ['src/auth/login.ts']],
    ['cd src; cd auth; touch login.ts', ['src/auth/login.ts']],
    ['cd /abs && touch f', ['/abs/f']],
    ['cd .. && touch up.txt', ['/up.txt']],
    ['false || touch a; true && touch b & touch c', ['a', 'b', 'c']],
    ['(cd sub && echo x > a); echo y > b', ['sub/a', 'b']],
    ['{ cd sub; echo x > a; }; echo y > b', ['sub/a', 'sub/b']],
    ['cat a | cd elsewhere | tee b', ['b']],
    ['if true; then echo x > in-if.txt; fi', ['in-if.txt']],
    ['for f in a b; do echo $f; done > loop.txt', ['loop.txt']],
    ['while read l; do echo "$l"; done < in.txt > out.txt', ['out.txt']],
    ["bash -lc 'echo hi > a'", ['a']],
    ["sh -c 'cd sub && rm x'", ['sub/x']],
    [['bash', '-lc', 'printf x >> src/auth/login.ts'], ['src/auth/login.ts']],
    [['tee', 'argv.txt'], ['argv.txt']],
    ['FOO=1 BAR=2 touch env.txt', ['env.txt']],
    ['env -C dir touch t', ['dir/t']],
    ['nohup nice -n 5 timeout 10 touch slow.txt', ['slow.txt']],
    ['command rm gone.txt', ['gone.txt']],
    ['echo a \\\n  > continued.txt', ['continued.txt']],
    ['echo $\'ansi\' > $\'c-quoted.txt\'', ['c-quoted.txt']],
    ['echo x > "with space.txt"', ['with space.txt']],
  ])('%j writes %j', (cmd, expected) => expect(w(cmd)).toEqual(expected))

  test('relative paths from the cwd given, absolute ones as they are', () => {
    expect(w('touch a /r/b ../c ../../d', '/r/sub')).toEqual(['sub/a', 'b', 'c', '/d'])
  })
})

describe('left alone', () => {
  test.each([
    'echo > /dev/null',
    'cmd 2>/dev/null >/dev/stderr 1>&2 &>/dev/null',
    'cat a | grep b',
    'cargo test',
    'git diff HEAD~1',
    'git status && git log --oneline | head',
    'git restore --staged src/c.ts',
    'git checkout main',
    'git rm --cached secret.env',
    'ls -la src/',
    "echo 'quoted > not' \"also > not\" \\> escaped",
    '[[ a > b ]] && echo ok',
    '(( i > 3 )) && echo ok',
    'x=$(echo a > inner); echo',
    'echo `echo a > inner2`',
    'diff <(sort a) <(sort b)',
    'echo $HOME > $OUT',
    'echo x > "$f"',
    'echo x > ${DIR}/f',
    'echo x > *.ts',
    'echo x > ~/notes.txt',
    'rm -rf $BUILD',
    'cd && echo x > home.txt',
    'cd "$D" && touch f',
    "sed -n 's/a/b/p' f",
    "sed 's/a/b/' f > /dev/null",
    "perl -pe 's/a/b/' f",
    'xargs rm < list.txt',
    'find . -name "*.tmp" -delete',
    'python -c "open(\'f\', \'w\')"',
    '# echo x > commented.txt',
    'cat <<EOF\necho x > inside-heredoc.txt\nEOF',
    "echo 'unterminated > quote",
    '',
  ])('%j', (cmd) => expect(w(cmd)).toEqual([]))

  test('outside the working tree: reported, for the hook to drop (paths outside the root are not checked)', () => {
    expect(w('ls > ../outside')).toEqual(['/outside'])
    expect(w('git diff > /tmp/x')).toEqual(['/tmp/x'])
  })
})

describe('lexer', () => {
  test('operators, redirections with descriptors, and words with what is plain', () => {
    expect(lex('a 2>&1 | b && c || d; e & f')).toEqual([
      { t: 'word', text: 'a', plain: true },
      { t: 'redir', op: '>&', fd: '2' },
      { t: 'word', text: '1', plain: true },
      { t: 'op', op: '|' },
      { t: 'word', text: 'b', plain: true },
      { t: 'op', op: '&&' },
      { t: 'word', text: 'c', plain: true },
      { t: 'op', op: '||' },
      { t: 'word', text: 'd', plain: true },
      { t: 'op', op: ';' },
      { t: 'word', text: 'e', plain: true },
      { t: 'op', op: '&' },
      { t: 'word', text: 'f', plain: true },
    ])
    expect(lex('echo "a$b" \'$c\' d*')).toEqual([
      { t: 'word', text: 'echo', plain: true },
      { t: 'word', text: 'a', plain: false },
      { t: 'word', text: '$c', plain: true },
      { t: 'word', text: 'd*', plain: false },
    ])
  })

  test('a long or hostile command is read in time and never throws', () => {
    const long = Array.from({ length: 2000 }, (_, i) => `echo ${i} > f${i % 7}.txt`).join(' && ')
    const t0 = performance.now()
    expect(w(long).length).toBe(7)
    expect(performance.now() - t0).toBeLessThan(2000)
    for (const bad of ['$((', '"$(', '`', "'", '<<', '> ', '((((', ')))', 'a >&', '${', '$(cat <<E', '\\']) expect(() => shellWrites(bad, '/r')).not.toThrow()
    expect(w(`echo x > first.txt; ${'"$('.repeat(20000)}`)).toEqual(['first.txt'])
    // past the first 64 KB nothing is read, so no command holds the others up
    const t1 = performance.now()
    expect(w(`cat > big.txt <<'EOF'\n${'x > y\n'.repeat(100_000)}EOF\necho > after.txt`)).toEqual(['big.txt'])
    expect(w('echo ' + '> a '.repeat(500_000))).toEqual(['a'])
    expect(performance.now() - t1).toBeLessThan(2000)
  })
})

describe('patches handed to apply_patch', () => {
  const patches = (cmd: string | string[]) => {
    const out: { text: string; cwd: string }[] = []
    const writes = shellWrites(cmd, '/r', (p) => out.push(p))
    return { writes, out }
  }
  const patch = '*** Begin Patch\n*** Update File: src/a.ts\n@@\n-a > b\n+c\n*** End Patch'

  test('a here-document, an argument or a here-string, with the directory of a cd before it', () => {
    expect(patches(`cd pkg && apply_patch <<'EOF'\n${patch}\nEOF\n`).out).toEqual([{ text: `${patch}\n`, cwd: '/r/pkg' }])
    expect(patches(['apply_patch', patch]).out).toEqual([{ text: patch, cwd: '/r' }])
    expect(patches(`apply_patch '${patch}'`).out).toEqual([{ text: patch, cwd: '/r' }])
    expect(patches(`apply_patch <<< '${patch}'`).out).toEqual([{ text: patch, cwd: '/r' }])
    // the patch's body is never read as commands
    expect(patches(`apply_patch <<'EOF'\n${patch}\nEOF\n`).writes).toEqual([])
  })

  test('no patch: nothing handed on', () => {
    expect(patches('apply_patch').out).toEqual([])
    expect(patches('echo apply_patch').out).toEqual([])
  })
})
