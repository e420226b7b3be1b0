// TypeBox models more than one route module uses, defined once.
import { t } from 'elysia'

export const IdParams = t.Object({ id: t.String() })
export const ProjectParams = t.Object({ project: t.String() })
export const ProjectNameParams = t.Object({ project: t.String(), name: t.String() })
/** Compare-and-swap on a versioned document (with If-Match / If-None-Match headers). */
export const CasQuery = t.Object({ if_version: t.Optional(t.String({ description: 'compare-and-swap on the current version' })) })
