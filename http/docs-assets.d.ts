// Types for http/docs-assets.js.

/** URL path → path of the file to serve (on disk, or inside the compiled binary). */
export declare const docsAssets: Record<string, string>
