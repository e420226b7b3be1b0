// TypeBox models more than one route module uses, defined once.
import { t } from 'elysia'

export const IdParams = t.Object({ id: t.String() })
export const ProjectParams = t.Object({ project: t.String() })
export const ProjectNameParams = t.Object({ project: t.String(), name: t.String() })
/** Compare-and-swap on a versioned document (with If-Match / If-None-Match headers). */
export const CasQuery = t.Object({ if_version: t.Optional(t.String({ description: 'compare-and-swap on the current version' })) })

/** A field that is always present and may be null (expires_at without a TTL, reason when none was given). */
export const Nullable = <T extends Parameters<typeof t.Union>[0][number]>(s: T) => t.Union([s, t.Null()])

/** `?force=1`: release whoever holds it (no instance token needed). */
export const ForceQuery = t.Object({ force: t.Optional(t.String({ description: '1: release whoever holds it (no instance token needed)' })) })
