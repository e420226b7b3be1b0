// What a template's data must look like for its kind (pure, no I/O). Checked on
// create and update, so applying a stored template cannot fail on its shape.
import { compileContract, isContractDoc } from '../contracts/contract'
import { isObject } from '../lib/values'
import { invalid } from '../lib/errors'
import { checkRules } from '../validation/rules'
import type { TemplateKind } from '../store/templates'


/** The parts a template writes into a project. */
export interface TemplateParts {
  /** Rule objects; their project is set to the target project on apply. */
  rules: unknown[]
  /** Stored through /api/contracts (checked as contracts). */
  contracts: Record<string, unknown>
  /** Stored through /api/specs (any JSON). */
  specs: Record<string, unknown>
}

const PLACEHOLDER_PROJECT = 'template'
const BUNDLE_PARTS = ['rules', 'contracts', 'specs']


/** The data a template of this kind gets when none is given. */
export const defaultData = (kind: TemplateKind): unknown => (kind === 'rules' ? [] : kind === 'bundle' ? {} : undefined)

function checkContract(data: unknown, where: string): void {
  try {
    compileContract(data)
  } catch (err) {
    throw invalid(`${where}${(err as Error).message}`, (err as { extra?: Record<string, unknown> }).extra)
  }
}

function checkSpecs(specs: unknown, where: string): Record<string, unknown> {
  if (!isObject(specs)) throw invalid(`${where}expected an object of name: JSON`)
  for (const [name, value] of Object.entries(specs)) {
    if (!name.trim()) throw invalid(`${where}a name is empty`)
    if (value === null || value === undefined) throw invalid(`${where}${name}: the spec is empty`)
  }
  return specs
}

/**
 * Splits a template's data into the parts apply writes, or throws 400 naming the
 * problem. `templateId` names the single spec of a `contracts` template.
 */
export function templateParts(kind: TemplateKind, data: unknown, templateId: string): TemplateParts {
  const parts: TemplateParts = { rules: [], contracts: {}, specs: {} }
  if (kind === 'rules') {
    checkRules(data, { project: PLACEHOLDER_PROJECT, allowEmpty: true })
    parts.rules = data as unknown[]
  } else if (kind === 'contracts') {
    if (data === null || data === undefined) throw invalid('data is required for a contracts template')
    // A contract document is checked as one; any other JSON is stored as a plain spec.
    if (isContractDoc(data)) {
      checkContract(data, 'data: ')
      parts.contracts[templateId] = data
    } else parts.specs[templateId] = data
  } else {
    if (!isObject(data)) throw invalid('data of a bundle must be an object {rules?, contracts?, specs?}')
    const unknown = Object.keys(data).filter((k) => !BUNDLE_PARTS.includes(k))
    if (unknown.length) throw invalid(`data of a bundle has unknown part ${unknown.map((k) => `"${k}"`).join(', ')} (expected rules, contracts, specs)`)
    if (data.rules !== undefined) {
      try {
        checkRules(data.rules, { project: PLACEHOLDER_PROJECT, allowEmpty: true })
      } catch (err) {
        throw invalid(`data.rules: ${(err as Error).message}`)
      }
      parts.rules = data.rules as unknown[]
    }
    if (data.contracts !== undefined) {
      parts.contracts = checkSpecs(data.contracts, 'data.contracts: ')
      for (const [name, doc] of Object.entries(parts.contracts)) checkContract(doc, `data.contracts.${name}: `)
    }
    if (data.specs !== undefined) parts.specs = checkSpecs(data.specs, 'data.specs: ')
  }
  return parts
}
