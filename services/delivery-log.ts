// Webhook deliveries used to be kept in memory per server (ctx.deliveries); they are rows of
// the delivery queue now (store/webhook-deliveries.ts), listed by GET /api/webhooks/{id}/deliveries.
// The type stays until the context drops the field.

/** Unused: ctx.deliveries, kept empty. */
export type DeliveryLog = Map<string, unknown[]>
