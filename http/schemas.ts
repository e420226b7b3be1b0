// TypeBox pieces that several route modules declare alike.
import { t } from 'elysia'

/** A field that is always present and may be null (expires_at without a TTL, reason when none was given). */
export const Nullable = <T extends Parameters<typeof t.Union>[0][number]>(s: T) => t.Union([s, t.Null()])

/** `?force=1`: release whoever holds it (no instance token needed). */
export const ForceQuery = t.Object({ force: t.Optional(t.String({ description: '1: release whoever holds it (no instance token needed)' })) })

/** A query flag: present and not 0/false/empty. */
export const isSet = (value: string | undefined) => value !== undefined && value !== '' && value !== '0' && value !== 'false'
