// Types for cli/init/opencode-plugin-source.js.

/** The source of the OpenCode plugin `muster init opencode` writes (cli/init/opencode-plugin.ts). */
export declare const OPENCODE_PLUGIN_SOURCE: string
