// Template use cases: create, update, delete (each with its template.* event and
// audit entry), and apply: every part of the template written into the project in
// one unit, all or nothing, each part with its own change event and audit entry.
import type { Ctx } from './context'
import type { Template, TemplateInput } from '../store/templates'
import { AppError, invalid, notFound } from '../lib/errors'
import { checkRules } from '../validation/rules'
import { compileContract } from '../contracts/contract'
import { templateParts } from './template-data'
import { SYSTEM, recordAudit, scopeFor, type AuditScope } from './audit'
import { writeContract } from './contracts'
import { writeSpec } from './specs'
import { importRulesIn } from './rules'

const SOURCE = 'templates'
const summary = (t: Template) => ({ id: t.id, kind: t.kind, version: t.version })

export function createTemplate(ctx: Ctx, scope: AuditScope | undefined, input: TemplateInput): Promise<Template> {
  return ctx.store.write(async (tx) => {
    const template = await tx.templates.create(input)
    await tx.emit('template.created', summary(template), SOURCE)
    await recordAudit(tx, scope, `${template.kind} template`)
    return template
  })
}

export function updateTemplate(ctx: Ctx, scope: AuditScope | undefined, input: TemplateInput): Promise<Template> {
  return ctx.store.write(async (tx) => {
    const template = await tx.templates.update(input)
    await tx.emit('template.updated', summary(template), SOURCE)
    await recordAudit(tx, scope, `version ${template.version}`)
    return template
  })
}

export function deleteTemplate(ctx: Ctx, scope: AuditScope | undefined, id: string): Promise<void> {
  return ctx.store.write(async (tx) => {
    if (!await tx.templates.delete(id)) throw notFound('template not found')
    await tx.emit('template.deleted', { id }, SOURCE)
    await recordAudit(tx, scope)
  })
}

export interface Applied {
  applied: string
  project: string
  kind: string
  rules: number
  contracts: string[]
  specs: string[]
}

/** Writes the template's contracts, specs and rules into `project`, all in one unit. */
export function applyTemplate(ctx: Ctx, scope: AuditScope | undefined, template: Template, project: string): Promise<Applied> {
  if (!project.trim()) throw invalid('project is required')
  const parts = templateParts(template.kind, template.data, template.id)
  const rules = checkRules(parts.rules, { project, allowEmpty: true })
  const encode = (doc: unknown) => new TextEncoder().encode(JSON.stringify(doc))
  const contracts = Object.entries(parts.contracts).map(([name, doc]) => {
    try {
      return { name, bytes: encode(doc), compiled: compileContract(doc) }
    } catch (err) {
      throw invalid(`contract ${name}: ${(err as Error).message}`)
    }
  })
  // Each part is audited as the caller's own write of it, beside the template.apply entry.
  const partScope = (action: string, resource: string) => scopeFor(scope ?? SYSTEM, action, resource)
  // A part's error names the part: "contract api: spec p/api exists and is not a contract".
  const named = async <T>(what: string, write: () => Promise<T>): Promise<T> => {
    try {
      return await write()
    } catch (err) {
      if (err instanceof AppError) throw new AppError(err.kind, `${what}: ${err.message}`, err.extra)
      throw err
    }
  }
  return ctx.store.write(async (tx) => {
    for (const c of contracts) {
      const meta = await named(`contract ${c.name}`, () => writeContract(tx, project, c.name, c.bytes, c.compiled))
      await recordAudit(tx, partScope('contract.put', `contracts/${project}/${c.name}`), `version ${meta.version} (template ${template.id})`)
    }
    for (const [name, doc] of Object.entries(parts.specs)) {
      const meta = await named(`spec ${name}`, () => writeSpec(tx, project, name, encode(doc)))
      await recordAudit(tx, partScope('spec.put', `specs/${project}/${name}`), `version ${meta.version} (template ${template.id})`)
    }
    if (rules.length) {
      await importRulesIn(tx, rules)
      await recordAudit(tx, partScope('rules.import', 'rules/import'), `${rules.length} rules (template ${template.id})`)
    }
    const result: Applied = {
      applied: template.id,
      project,
      kind: template.kind,
      rules: rules.length,
      contracts: contracts.map((c) => c.name),
      specs: Object.keys(parts.specs),
    }
    await tx.emit('template.applied', { id: template.id, version: template.version, project, rules: result.rules, contracts: result.contracts, specs: result.specs }, SOURCE)
    await recordAudit(tx, scope, `${template.id} v${template.version} → ${project}: ${rules.length} rules, ${result.contracts.length} contracts, ${result.specs.length} specs`)
    return result
  })
}
