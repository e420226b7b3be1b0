// Examples shown at the end of every --help page, by command path ('' is
// `muster` itself). Kept in one table so a command without examples stands out
// (test/cli.test.ts checks that every command has some).
import type { Command } from 'commander'

export const EXAMPLES: Record<string, string[]> = {
  lock: ['muster lock acquire deploy --ttl 10m && ./deploy.sh; muster lock release deploy'],
  'lock acquire': ['muster lock acquire deploy --ttl 10m --reason "release 1.4"', 'muster lock acquire ci-runners --limit 3 --wait 30s'],
  'lock release': ['muster lock release deploy', 'muster lock release deploy --force'],
  'lock get': ['muster lock get deploy'],
  'lock list': ['muster lock list', 'muster lock list --prefix db/'],
  reserve: ['muster reserve shop "src/cart/**" --ttl 30m --reason "cart refactor"', 'muster reserve shop "docs/**" --shared'],
  release: ['muster release 3f2a…'],
  renew: ['muster renew 3f2a… --ttl 30m'],
  reservation: ['muster reservation 3f2a…'],
  reservations: ['muster reservations --project shop'],
  check: ['muster check shop src/cart/total.ts', 'git diff --cached --name-only | muster check shop --stdin'],
  send: [
    'muster send alice bob --subject "users schema changed" --body "rebase on main before you push" --ack',
    'muster send \'*\' --subject "deploy freeze until 14:00" --importance high',
    'git diff | muster send reviewer --subject "approve this migration?" --body - --ack-within 30m',
    'muster send alice --subject "done" --reply-to 41',
  ],
  inbox: ['muster inbox --unacked', 'muster inbox --after 41 --wait 30s'],
  ack: ['muster ack 42'],
  thread: ['muster thread 41'],
  message: ['muster message 42   # receipts: who got it, who acked'],
  messages: ['muster messages users schema', 'muster messages --from alice --limit 20', 'muster messages --to bob --thread 41'],
  'state watch': ['muster state watch app/plan --timeout 5m'],
  'events wait': ['muster events wait --topic "task.*" --timeout 30s'],
  task: ['muster task add build --title "compile" && muster task claim build --wait 30s'],
  'task add': [
    'muster task add build --title "compile api" --priority 5 --requires go',
    'muster task add build --title "deploy" --depends-on 12 --payload \'{"env":"staging"}\'',
    'muster task add refactor --title "split the auth module" --project shop --path \'src/auth/**\' --path src/app.ts',
  ],
  'task note': ['muster task note 12 "the users migration is done; the API still returns the old field"', 'git diff --stat | muster task note 12 -'],
  'task claim': ['muster task claim build --wait 30s', 'muster task claim build --visibility 10m'],
  'task ack': ['muster task ack 12 --result \'{"ok":true}\''],
  'task nack': ['muster task nack 12 --error "tests failed" --delay 30s'],
  'task extend': ['muster task extend 12 --visibility 10m'],
  'task get': ['muster task get 12'],
  'task cancel': ['muster task cancel 12'],
  'task retry': ['muster task retry 12   # a failed or cancelled task, ready again'],
  token: ['muster token create ada --role agent --ttl 7d', 'muster token list'],
  'token create': ['muster token create ada --role agent --ttl 7d   # the secret is in this answer only', 'muster token create wall --role viewer'],
  'token list': ['muster token list'],
  'token revoke': ['muster token revoke 3f2a…'],
  approvals: ['muster approvals', 'muster approvals --wait   # until an agent asks', 'muster approvals --status all --name ada --limit 20'],
  approve: ['muster approve 3f2a…', 'muster approve 3f2a… --remember   # and the same command from now on', 'muster approve 3f2a… 9c1d…'],
  approval: ['muster approval 3f2a…'],
  deny: ['muster deny 3f2a… --message "not on main: open a branch"'],
  'approval-rules': ['muster approval-rules add --tool Bash --match "npm test*" --decision allow', 'muster approval-rules list'],
  'approval-rules add': ['muster approval-rules add --tool Bash --match "npm test*" --decision allow', 'muster approval-rules add --tool Bash --match "git push*" --decision deny --message "pushes go through review"'],
  'approval-rules list': ['muster approval-rules list'],
  'approval-rules delete': ['muster approval-rules delete 3f2a…'],
  whoami: ['muster whoami'],
  project: ['muster project get shop', 'muster project set shop --case-insensitive   # agents on macOS or Windows'],
  'project list': ['muster project list'],
  'project get': ['muster project get shop'],
  'project set': ['muster project set shop --case-insensitive', 'muster project set shop --case-sensitive   # admin token'],
  'task list': ['muster task list', 'muster task list build --status ready'],
  '': ['muster config set server http://localhost:9800', 'muster register builder --workspace shop', 'muster state get shop/plan --pretty'],
  config: ['muster config set token "$MUSTER_TOKEN"', 'muster config show'],
  'config set': ['muster config set server http://muster.internal:9800', "muster config set token ''   # remove the token"],
  'config show': ['muster config show', 'SERVICE_SERVER=http://other:9800 muster config show'],
  status: ['muster status', 'muster status --server http://other:9800 --token T'],

  state: ['muster state list', 'muster state set shop/plan --data \'{"step":1}\''],
  'state list': ['muster state list --pretty'],
  'state get': ['muster state get shop/plan', 'muster state get shop/plan --version 2 > plan-v2.json'],
  'state set': [
    'muster state set shop/plan --data \'{"step":2}\' --if-version 1',
    'muster state set shop/logo --file logo.png --content-type image/png',
    'echo \'{"step":3}\' | muster state set shop/plan --file -',
  ],
  'state delete': ['muster state delete shop/plan', 'muster state delete shop/plan --if-version 3'],
  'state history': ['muster state history shop/plan --limit 5'],
  'state diff': ['muster state diff shop/plan --v1 1 --v2 3'],
  'state rollback': ['muster state rollback shop/plan --version 2'],

  specs: ['muster specs list shop', 'muster specs set shop/api --file api.json'],
  'specs list': ['muster specs list shop'],
  'specs get': ['muster specs get shop/api', 'muster specs get shop/api --version 1 --pretty'],
  'specs set': ['muster specs set shop/api --file api.json', 'muster specs set shop/api --data \'{"v":2}\' --if-version 1'],
  'specs delete': ['muster specs delete shop/api'],
  'specs history': ['muster specs history shop/api --limit 10'],
  'specs diff': ['muster specs diff shop/api --v1 1 --v2 2'],

  events: ['muster events publish build.done --data \'{"ok":true}\'', "muster events subscribe 'build.*' --count 1"],
  'events publish': ['muster events publish build.done --data \'{"ok":true}\'', 'muster events publish deploy.started'],
  'events history': ["muster events history --topic 'build.*' --last 10", 'muster events history --after-id 120'],
  'events subscriptions': ['muster events subscriptions --pretty'],
  'events subscribe': ["muster events subscribe 'build.*'", 'muster events subscribe build.done --count 1   # wait for one', 'muster events subscribe --poll'],

  register: ['muster register builder --workspace shop --intent "add checkout" --capabilities review,tests'],
  activate: ['muster activate', 'muster activate 6f1c…'],
  heartbeat: ['muster heartbeat', 'muster heartbeat --every 30s &   # side loop, ends when killed'],
  intent: ['muster intent "fixing the login form"'],
  capabilities: ['muster capabilities review,tests,docs', "muster capabilities ''   # none"],
  instances: ['muster instances list --workspace shop', 'muster instances stale'],
  'instances list': ['muster instances list', 'muster instances list --capability review'],
  'instances get': ['muster instances get 6f1c…'],
  'instances stale': ['muster instances stale'],
  'instances check': ['muster instances check'],
  'instances delete': ['muster instances delete 6f1c…'],

  webhooks: ['muster webhooks add ci https://ci.example/hook --pattern "build.*" --secret s3cret', 'muster webhooks list'],
  'webhooks list': ['muster webhooks list --pretty'],
  'webhooks get': ['muster webhooks get ci'],
  'webhooks add': [
    'muster webhooks add ci https://ci.example/hook --pattern "build.*" --pattern "deploy.*" --secret s3cret',
    'muster webhooks add all http://localhost:8080/events',
  ],
  'webhooks delete': ['muster webhooks delete ci'],
  'webhooks test': ['muster webhooks test ci'],
  'webhooks deliveries': ['muster webhooks deliveries ci --pretty'],
  'webhooks enable': ['muster webhooks enable ci   # sends what waited, oldest first'],
  'webhooks update': ['muster webhooks update ci --url https://ci.example/hook', "muster webhooks update ci --pattern 'task.*' --pattern 'lock.*'"],
  'webhooks redeliver': ['muster webhooks redeliver ci --delivery 42', 'muster webhooks redeliver ci --since 2h'],
  'webhooks disable': ['muster webhooks disable ci'],

  compliance: ['muster compliance run', 'muster compliance history --limit 5'],
  'compliance history': ['muster compliance history --instance-id 6f1c… --limit 5'],
  'compliance run': ['muster compliance run --pretty'],

  templates: ['muster templates list --kind rules', 'muster templates apply ts-lint --project shop'],
  'templates list': ['muster templates list', 'muster templates list --kind bundle --tag web'],
  'templates get': ['muster templates get ts-lint --pretty'],
  'templates create': ['muster templates create ts-lint --name "TS lint" --tag ts --file rules.json', 'muster templates create api --name API --kind contracts --file contract.json'],
  'templates update': ['muster templates update ts-lint --description "stricter" --file rules.json', 'muster templates update ts-lint --tag ts --tag strict'],
  'templates delete': ['muster templates delete ts-lint'],
  'templates apply': ['muster templates apply ts-lint --project shop'],

  audit: ['muster audit --actor admin --limit 20', 'muster audit --action state.put --from 2026-05-01T00:00:00Z'],
  'audit summary': ['muster audit summary', 'muster audit summary --from 2026-05-01T00:00:00Z'],
  metrics: ['muster metrics', 'muster metrics agents --period 2026-05-01'],
  'metrics agents': ['muster metrics agents', 'muster metrics agents --instance-id 6f1c… --period 2026-05-01T14'],

  llm: ['muster llm record --provider anthropic --model claude-sonnet --tokens-in 1200 --tokens-out 300 --cost 0.012', 'muster llm summary --by model'],
  'llm usage': ['muster llm usage --project shop --limit 20'],
  budgets: ['muster budgets', 'muster budgets set ada-daily --scope agent --target ada --limit 20 --action deny'],
  'budgets list': ['muster budgets list'],
  'budgets get': ['muster budgets get ada-daily'],
  'budgets set': ['muster budgets set ada-daily --scope agent --target ada --limit 20 --action deny', 'muster budgets set team --limit 500 --window week   # warn at 80% and 100%'],
  'budgets delete': ['muster budgets delete ada-daily'],
  'otel-headers': ['muster otel-headers   # what Claude Code\'s otelHeadersHelper runs: {"Authorization": "Bearer …"}'],
  'llm spend': ['muster llm spend --by task --step hour', 'muster llm spend --by instance --from 2026-11-01T00:00:00Z'],
  'llm summary': ['muster llm summary --by instance --from 2026-05-01T00:00:00Z'],
  'llm record': ['muster llm record --provider anthropic --model claude-sonnet --tokens-in 1200 --tokens-out 300 --cost 0.012 --project shop'],

  rules: ['muster rules list --status proposed', 'muster rules accept shop no-todo'],
  'rules list': ['muster rules list --status proposed', 'muster rules list --project shop'],
  'rules get': ['muster rules get shop', 'muster rules get shop --stack react'],
  'rules set': ['muster rules set shop --file rules.json', 'muster rules set shop --data \'[{"rule_id":"no-todo","pattern":"TODO"}]\''],
  'rules propose': ['muster rules propose shop no-todo --pattern TODO --severity warning --message "resolve TODOs" --context "seen in review"'],
  'rules put': ['muster rules put shop no-todo --data \'{"pattern":"TODO","severity":"warning"}\''],
  'rules delete': ['muster rules delete shop no-todo'],
  'rules accept': ['muster rules accept shop no-todo'],
  'rules reject': ['muster rules reject shop no-todo'],
  'rules import': ['muster rules import --file rules.json', 'muster rules export --source local | muster --server http://other:9800 rules import --file -'],
  'rules export': ['muster rules export --output rules.json', 'muster rules export --source local,learned,external'],
  validate: [
    'muster validate shop --file src/app.ts',
    'git diff | muster validate shop --file - --filename src/app.ts --fail-on warning',
  ],

  contract: ['muster contract set shop/users --file users.contract.json', 'muster contract test shop/users --endpoint "GET /users"'],
  'contract set': ['muster contract set shop/users --file users.contract.json'],
  'contract list': ['muster contract list shop --pretty'],
  'contract get': ['muster contract get shop/users', 'muster contract get shop/users --version 1'],
  'contract delete': ['muster contract delete shop/users'],
  'contract history': ['muster contract history shop/users'],
  'contract diff': ['muster contract diff shop/users --v1 1 --v2 2'],
  'contract validate': ['muster contract validate shop/users --endpoint "POST /users" --data \'{"name":"Ana"}\'', 'muster contract validate shop/users --endpoint "GET /users" --direction response --file answer.json'],
  'contract test': ['muster contract test shop/users --endpoint "GET /users" --base-url http://localhost:8080/api', 'muster contract test shop/users --endpoint "GET /users/{id}" --test-data \'{"id":1}\''],

  backup: ['muster backup --output muster-backup.db', 'muster backup --output - | gzip > muster-backup.db.gz'],
  restore: ['muster restore --file muster-backup.db', 'gunzip -c muster-backup.db.gz | muster restore --file -'],
  hook: ['muster hook codex < event.json   # what a Codex command hook runs', 'muster hook claude-code --fail-closed < event.json'],
  init: ['muster init claude-code --reserve 30m', 'muster init codex --trust --allow-network', 'muster init git   # pre-commit and pre-push guards'],
  guard: ['muster guard pre-commit   # what the pre-commit hook of `muster init git` runs'],
  doctor: ['muster doctor', 'muster doctor --json'],
  sessions: ['muster sessions --limit 20'],
  completion: [
    'source <(muster completion bash)        # in ~/.bashrc',
    'source <(muster completion zsh)         # in ~/.zshrc, after compinit',
    'muster completion fish > ~/.config/fish/completions/muster.fish',
  ],
}

/** The command's path below `muster`, e.g. "state set". */
const pathOf = (cmd: Command): string => {
  const names: string[] = []
  for (let c: Command | null = cmd; c?.parent; c = c.parent) names.unshift(c.name())
  return names.join(' ')
}

/** Appends each command's examples to its --help. */
export function addExamples(program: Command): void {
  const add = (cmd: Command) => {
    const examples = EXAMPLES[pathOf(cmd)]
    if (examples) cmd.addHelpText('after', `\nExamples:\n${examples.map((e) => `  $ ${e}`).join('\n')}`)
    cmd.commands.forEach(add)
  }
  add(program)
}
