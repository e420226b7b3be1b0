// Types for public/assets.js (plain JS so that TypeScript does not try to type
// the browser modules it embeds).

/** URL path on the dashboard port → path of the file to serve (on disk, or inside the compiled binary). */
export declare const assets: Record<string, string>
