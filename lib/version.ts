// The package version, imported as JSON so the compiled binaries carry it (no package.json at run time).
import pkg from '../package.json' with { type: 'json' }

export const VERSION: string = pkg.version
