// The text of cli/init/opencode-plugin.ts, which `muster init opencode` writes into a
// repository. Imported `with { type: 'text' }`, so `bun build --compile` embeds it in the
// binary; plain JS (typed by the .d.ts beside it) since TypeScript reads this import as
// the module's exports, not its text.
import source from './opencode-plugin.ts' with { type: 'text' }

export const OPENCODE_PLUGIN_SOURCE = source
