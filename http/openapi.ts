// GET /openapi.json (the document, built once from the mounted routes and made
// lint-clean by openapi-conform.ts) and GET /docs (Swagger UI served from the
// npm bundle embedded in the binary: nothing is loaded from elsewhere).
import { Elysia } from 'elysia'
import { OptionalKind } from '@sinclair/typebox'
import type { AnyElysia } from 'elysia'
import type { Ctx } from '../services/context'
import { VERSION } from '../lib/version'
import { docsAssets } from './docs-assets'

const DOCS_PAGE = `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>Muster API</title>
<link rel="stylesheet" href="/docs/swagger-ui.css">
</head>
<body>
<div id="docs"></div>
<script src="/docs/swagger-ui-bundle.js"></script>
<script src="/docs/init.js"></script>
</body>
</html>
`

// validatorUrl null: Swagger UI would otherwise send the document to validator.swagger.io.
// showExtensions: each operation shows the role it needs (x-access).
// allOperations: from 5.33 Swagger UI virtualizes the operations list once tags plus
// operations number 150 or more (a fixed threshold, no option turns it off): only the
// rows in view are in the page, so find-in-page misses the rest and a test sees a few.
// Our document is far below the size that needs it, so this plugin puts back Swagger
// UI's own unvirtualized rendering of the list, every tag with all its operations.
const DOCS_INIT = `const allOperations = (system) => ({
  components: {
    operations: ({ specSelectors, getComponent, oas3Selectors, layoutSelectors, layoutActions, getConfigs }) => {
      const h = system.React.createElement
      const tagged = specSelectors.taggedOperations()
      if (tagged.size === 0) return h('h3', null, 'No operations defined in spec!')
      const methods = specSelectors.validOperationMethods()
      const OperationTag = getComponent('OperationTag')
      const OperationContainer = getComponent('OperationContainer', true)
      const operation = (tag) => (op) =>
        h(OperationContainer, { key: op.get('path') + '-' + op.get('method'), specPath: op.get('specPath'), op, path: op.get('path'), method: op.get('method'), tag })
      const section = (tagObj, tag) =>
        h(OperationTag, { key: 'operation-' + tag, tagObj, tag, oas3Selectors, layoutSelectors, layoutActions, getConfigs, getComponent, specUrl: specSelectors.url() },
          h('div', { className: 'operation-tag-content' }, tagObj.get('operations').filter((op) => methods.includes(op.get('method'))).map(operation(tag)).toArray()))
      return h('div', null, tagged.map(section).valueSeq().toArray())
    },
  },
})
window.ui = SwaggerUIBundle({ url: '/openapi.json', dom_id: '#docs', deepLinking: true, validatorUrl: null, showExtensions: true, plugins: [allOperations] })
`

const hidden = { detail: { hide: true } }

/**
 * `app` is the API app with every route mounted; it is read on the first request, when the route table is complete.
 * The generator and its clean-up are loaded then too: a server that is never asked for its document never loads them.
 */
export function apiDocs(ctx: Ctx, app: () => AnyElysia) {
  let document: Promise<object> | null = null
  const build = async () => {
    const [{ toOpenAPISchema }, { conformDocument }] = await Promise.all([import('@elysiajs/openapi'), import('./openapi-conform')])
    const generated = toOpenAPISchema(app())
    const routes = app().routes
    const namedOperations = new Set(routes.map((r) => r.hooks?.detail?.operationId).filter((id): id is string => typeof id === 'string'))
    // A body declared `t.Optional(...)` may be left out (the handler reads `body ?? {}`).
    const optionalBodies = new Set(routes.filter((r) => (r.hooks?.body as any)?.[OptionalKind] === 'Optional').map((r) => `${r.method} ${r.path}`))
    return conformDocument(generated, { version: VERSION, serverUrl: ctx.apiUrl, bearerRequired: !!ctx.config.authToken, namedOperations, optionalBodies })
  }
  const plugin = new Elysia()
    // A failed build is not kept: the next request tries again.
    .get('/openapi.json', () => (document ??= build().catch((err) => ((document = null), Promise.reject(err)))), hidden)
    .get('/docs', () => new Response(DOCS_PAGE, { headers: { 'content-type': 'text/html; charset=utf-8' } }), hidden)
    .get('/docs/init.js', () => new Response(DOCS_INIT, { headers: { 'content-type': 'text/javascript; charset=utf-8' } }), hidden)
  for (const [path, file] of Object.entries(docsAssets)) plugin.get(path, () => new Response(Bun.file(file)), hidden)
  return plugin
}
