// /api/contracts: API contracts (JSON Schema per endpoint) stored as specs, so
// they share the specs' versions, ETags and history; plus payload validation
// and a live test of an endpoint.
import { t } from 'elysia'
import { CasQuery, Deleted, ProjectNameParams, ProjectParams, checks, withExample } from '../http/models'
import { invalid, notFound } from '../lib/errors'
import {
  DIRECTIONS,
  checkBaseUrl,
  compiledFromDoc,
  decodeJson,
  describeProblems,
  isContractDoc,
  type CompiledContract,
} from '../contracts/contract'
import { DEFAULT_TIMEOUT_MS, callEndpoint, requestFromTestData } from '../contracts/contract-call'
import type { Ctx } from '../services/context'
import type { Doc } from '../store/versioned'
import { audited } from '../http/audit'
import { resolvedRefusal } from '../services/targets'
import { DocReadQuery, keyParam, readDocument, writeCondition } from '../http/documents'
import { rawBodyDoc, readJsonBody } from '../http/body'
import { SpecMetaSchema, specNames, specSource } from './specs'
import { deleteContract, putContract } from '../services/contracts'

const Params = ProjectNameParams
const tags = ['contracts']
const MAX_TIMEOUT_MS = 60_000

const ContractList = t.Object({
  project: t.String(),
  contracts: t.Array(
    t.Object({
      name: t.String(),
      version: t.Integer({ description: 'version of the stored document' }),
      updated_at: t.String(),
      // Any JSON: a document stored through /api/specs is listed even when it is no valid contract.
      contract_version: t.Unknown({ description: "the contract's own `version` field, null when absent" }),
      base_url: t.Unknown({ description: "the contract's `base_url`, null when absent" }),
      endpoints: t.Array(t.String(), { description: '"METHOD /path" keys' }),
      valid: t.Boolean({ description: 'whether the document compiles as a contract' }),
    }),
  ),
})
const Violation = t.Object({ field: t.String({ description: 'JSON pointer into the payload ("" is the whole payload)' }), message: t.String() })
const Validated = t.Object({ valid: t.Boolean(), violations: t.Array(Violation) })
const LiveResult = t.Object({
  endpoint: t.String(),
  url: t.String(),
  pass: t.Boolean(),
  status: t.Union([t.Integer(), t.Null()], { description: 'null when no response came back' }),
  duration_ms: t.Integer(),
  error: t.Optional(t.String({ description: 'why no response came back' })),
  violations: t.Array(Violation),
  request_violations: t.Array(Violation, { description: 'how test_data fares against the request or query schema' }),
})

/** A contract an example can write and then validate and test against. */
const EXAMPLE_CONTRACT = {
  kind: 'contract',
  version: '1.0.0',
  base_url: 'http://127.0.0.1:8080',
  endpoints: {
    'GET /users/{id}': { response: { type: 'object', required: ['name'], properties: { name: { type: 'string' } } } },
    'POST /users': { request: { type: 'object', required: ['name'], properties: { name: { type: 'string' } } }, response_status: 201 },
  },
}

export function contractsRoutes(ctx: Ctx) {
  /** The stored document; 404 when missing or when that spec is not a contract. */
  const stored = async (project: string, name: string): Promise<Doc> => {
    const doc = await ctx.store.specs.get(project, name)
    if (!doc || !isContractDoc(decodeJson(doc.value))) throw notFound('contract not found')
    return doc
  }

  /** The compiled contract; one stored (through /api/specs) with problems is 400 naming them. */
  const compiled = async (project: string, name: string): Promise<CompiledContract> => {
    const { compiled, problems } = compiledFromDoc(project, name, await stored(project, name))
    if (!compiled) throw invalid(`stored contract ${project}/${name}: ${describeProblems(problems)}`, { violations: problems })
    return compiled
  }

  const endpointOf = (contract: CompiledContract, key: string) => {
    const endpoint = contract.endpoint(key)
    if (!endpoint) {
      const known = [...contract.contract.endpoints.keys()].map((k) => `"${k}"`).join(', ') || 'none'
      throw invalid(`endpoint "${key}" is not in the contract (it has: ${known})`)
    }
    return endpoint
  }

  return audited(ctx)
    .get(
      '/api/contracts/:project',
      async ({ params }) => {
        const project = keyParam(params.project, 'project')
        const contracts = []
        for (const { name } of await ctx.store.specs.list(project)) {
          const doc = await ctx.store.specs.get(project, name)
          const data = doc && decodeJson(doc.value)
          if (!doc || !isContractDoc(data)) continue
          const { version: contractVersion, base_url, endpoints } = data as Record<string, any>
          contracts.push({
            name,
            version: doc.version,
            updated_at: doc.updated_at,
            contract_version: contractVersion ?? null,
            base_url: base_url ?? null,
            endpoints: typeof endpoints === 'object' && endpoints !== null ? Object.keys(endpoints) : [],
            valid: compiledFromDoc(project, name, doc).compiled !== null,
          })
        }
        return { project, contracts }
      },
      {
        params: ProjectParams,
        response: { 200: ContractList },
        detail: { summary: "List a project's contracts (no documents)", tags },
      },
    )
    .get(
      '/api/contracts/:project/:name',
      async ({ params, query, request }) => {
        const { project, name } = specNames(params)
        await stored(project, name)
        return readDocument(specSource(ctx, project, name), query, request, 'contract', { project, name })
      },
      {
        params: Params,
        query: DocReadQuery,
        detail: {
          summary: 'Read a contract (raw JSON with ETag), its history, a version, or a diff',
          description: 'Precedence when combined: history, then diff, then version.',
          tags,
        },
      },
    )
    .put(
      '/api/contracts/:project/:name',
      async ({ params, query, request, audit }) => {
        const { project, name } = specNames(params)
        const cond = writeCondition(request, query, true)
        const { bytes, json } = await readJsonBody(request)
        return putContract(ctx, audit, project, name, bytes, json, cond)
      },
      {
        parse: 'none',
        params: Params,
        query: CasQuery,
        response: { 200: SpecMetaSchema },
        audit: 'contract.put',
        detail: {
          summary: 'Write a contract (checked and compiled first; raw JSON body)',
          tags,
          requestBody: withExample(rawBodyDoc('application/json', 'The contract document: {kind: "contract", version?, base_url?, endpoints: {"METHOD /path": {request?, response?, query?, response_status?}}}'), EXAMPLE_CONTRACT),
        },
      },
    )
    .delete(
      '/api/contracts/:project/:name',
      async ({ params, query, request, audit }) => {
        const { project, name } = specNames(params)
        await stored(project, name)
        await deleteContract(ctx, audit, project, name, writeCondition(request, query, false))
        return { deleted: `${project}/${name}` }
      },
      { params: Params, query: CasQuery, response: { 200: Deleted }, audit: 'contract.delete', detail: { summary: 'Delete a contract and its history', tags } },
    )
    .post(
      '/api/contracts/:project/:name/validate',
      async ({ params, body }) => {
        const { project, name } = specNames(params)
        // t.Unknown() lets a missing key through; JSON has no undefined, so absent it is
        if (body.payload === undefined) throw invalid('payload is required')
        const direction = DIRECTIONS.find((d) => d === body.direction)
        if (!direction) throw invalid(`invalid direction: expected ${DIRECTIONS.join(', ')}`)
        const contract = await compiled(project, name)
        const violations = contract.validate(endpointOf(contract, body.endpoint), direction, body.payload)
        return { valid: violations.length === 0, violations }
      },
      {
        params: Params,
        body: t.Object(
          {
            endpoint: t.String({ description: '"METHOD /path" as in the contract' }),
            // checked in the handler, for a clearer message than TypeBox's union error
            direction: t.String({ enum: [...DIRECTIONS], description: DIRECTIONS.join(' | ') }),
            payload: t.Unknown({ description: 'the JSON to check (query: an object of parameters)' }),
          },
          { examples: [{ endpoint: 'POST /users', direction: 'request', payload: { name: 'ada' } }] },
        ),
        response: { 200: Validated },
        detail: { summary: 'Validate a payload against an endpoint schema', tags },
      },
    )
    .post(
      '/api/contracts/:project/:name/test',
      async ({ params, body }) => {
        const { project, name } = specNames(params)
        const timeout = body.timeout_ms ?? DEFAULT_TIMEOUT_MS
        if (!Number.isInteger(timeout) || timeout < 1 || timeout > MAX_TIMEOUT_MS)
          throw invalid(`invalid timeout_ms: expected an integer from 1 to ${MAX_TIMEOUT_MS}`)
        const contract = await compiled(project, name)
        const endpoint = endpointOf(contract, body.endpoint)
        let baseUrl = contract.contract.baseUrl
        if (body.base_url !== undefined) {
          baseUrl = checkBaseUrl(body.base_url)
          if (!baseUrl) throw invalid('invalid base_url: expected an absolute http or https URL')
        }
        if (!baseUrl) throw invalid('base_url is required: the contract has none')
        const refused = await resolvedRefusal(ctx, baseUrl)
        if (refused) throw invalid(`invalid base_url: ${refused}`)
        const { request, requestViolations } = requestFromTestData(contract, endpoint, body.test_data)
        const result = await callEndpoint(contract, endpoint, baseUrl, request, timeout)
        return { ...result, request_violations: requestViolations }
      },
      {
        params: Params,
        body: t.Object(
          {
            endpoint: t.String({ description: '"METHOD /path" as in the contract' }),
            base_url: t.Optional(t.String({ description: "overrides the contract's base_url" })),
            test_data: t.Optional(t.Unknown({ description: 'JSON body for POST/PUT/PATCH, query parameters otherwise; fills {path} placeholders' })),
            timeout_ms: t.Optional(
              t.Number({ description: 'how long to wait for the answer', ...checks({ minimum: 1, maximum: MAX_TIMEOUT_MS, default: DEFAULT_TIMEOUT_MS }) }),
            ),
          },
          { examples: [{ endpoint: 'GET /users/{id}', test_data: { id: 1 }, timeout_ms: DEFAULT_TIMEOUT_MS }] },
        ),
        response: { 200: LiveResult },
        detail: { summary: 'Call the live endpoint and check its status and response', tags },
      },
    )
}
