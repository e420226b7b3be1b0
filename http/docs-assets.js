// The API docs viewer (Swagger UI from npm), imported `with { type: 'file' }` so
// `bun build --compile` embeds it and /docs works offline from the binary.
// Plain JS, like public/assets.js, so TypeScript does not try to type the bundle.
import bundle from 'swagger-ui-dist/swagger-ui-bundle.js' with { type: 'file' }
import css from 'swagger-ui-dist/swagger-ui.css' with { type: 'file' }

export const docsAssets = {
  '/docs/swagger-ui-bundle.js': bundle,
  '/docs/swagger-ui.css': css,
}
