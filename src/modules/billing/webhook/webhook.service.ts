import { accessTags, type CacheInvalidator } from '../../../platform/cache/shared-cache.js';
import type { Db } from '../../../db/client.js';
import { AppError } from '../../../platform/errors.js';
import type { ServiceMetrics } from '../../../platform/metrics.js';
import { assertCleanText } from '../../../platform/input-gate.js';
import { billingErrors } from '../billing.errors.js';
import * as inboxStore from './inbox.repo.js';
import { isUniqueViolation, rootMessage } from '../../../db/errors.js';
import { fieldErrorsOf } from '../../../platform/zod-issues.js';
import { verifyWebhookSignature } from '../payment-provider.js';
import { applyPrice, applyProduct } from './catalog.mirror.js';
import { applySubscription, type Duplicate, type Processed } from './subscription.mirror.js';
import { ONE_GRANTING_INDEX } from '../subscriptions.repo.js';
import { eventLog, type WebhookLog } from './webhook.log.js';
import {
  eventEnvelope,
  type EventEnvelope,
  type HandledEventType,
  isHandledType,
  objectSchemaFor,
  type PriceObject,
  type ProductObject,
  type SubscriptionObject,
  type WebhookAck,
  type WebhookOutcome,
} from './webhook.schemas.js';

export type { WebhookLog } from './webhook.log.js';

/** A verified, structurally valid event; `object` is null for a type we do not handle. */
type ParsedEvent =
  | { envelope: EventEnvelope; type: HandledEventType; object: SubscriptionObject | ProductObject | PriceObject }
  | { envelope: EventEnvelope; type: string; object: null };

/** Zod issues as `{path: [messages]}` for the 400 body (at most 20). */
const issuesOf = (error: { issues: Parameters<typeof fieldErrorsOf>[0] }) => fieldErrorsOf(error.issues, 20);

/**
 * The payment webhook: verification, structural validation, then processing of each event in one
 * SQL statement that applies it and records it in the inbox (`webhook_events`; the mirrors and
 * src/modules/billing/README.md, "Webhooks", for how that holds against concurrent events):
 * - every event id is recorded once with its outcome; a redelivery of a finished event is
 *   acknowledged without being applied again, a `failed` one is retried;
 * - each mirrored object applies only events at least as new as the last one applied to it
 *   (`last_event_at`), so duplicated and shuffled deliveries end in the in-order state;
 * - an ended subscription (canceled, incomplete_expired) never comes back, and an ended-status
 *   event always applies to one that has not ended, even when a later `created` was seen first:
 *   delivered in order, that later event would have been ignored as a late one.
 */
export function createWebhookService({
  db,
  secret,
  log,
  metrics,
  payloadRetentionDays = 30,
  invalidate,
}: {
  db: Db;
  /** Drops cached billing states in every process once an event applied (src/deps.ts). */
  invalidate?: CacheInvalidator;
  secret: string | undefined;
  log: WebhookLog;
  metrics: Pick<ServiceMetrics, 'webhookEvent'>;
  /** WEBHOOK_PAYLOAD_RETENTION_DAYS: raw bodies are kept this long for replay; 0 keeps none. */
  payloadRetentionDays?: number;
}) {
  /** Signature, JSON, text and structure, in that order; nothing is recorded for a refused request. */
  async function parse(rawBody: Buffer, signature: string | undefined, requestLog: WebhookLog): Promise<ParsedEvent> {
    if (!secret) {
      requestLog.error({}, 'PAYMENT_WEBHOOK_SECRET is not set; refusing payment webhook');
      throw billingErrors.webhookNotConfigured();
    }
    if (!(await verifyWebhookSignature(rawBody, signature, secret))) throw billingErrors.invalidSignature();
    return parseBody(rawBody);
  }

  /** JSON, text and structure of a body whose signature was checked (now, or when it was received). */
  function parseBody(rawBody: Buffer): ParsedEvent {
    let json: unknown;
    try {
      json = JSON.parse(rawBody.toString('utf8'));
    } catch {
      throw billingErrors.invalidPayload({ non_field_errors: ['Body is not valid JSON.'] });
    }
    // The input gate, after the signature (an unsigned body learns nothing): a NUL or a lone
    // surrogate can never be stored, so this is a 400 the provider does not retry, not a 500.
    assertCleanText(json, 'body');
    const envelope = eventEnvelope.safeParse(json);
    if (!envelope.success) throw billingErrors.invalidPayload(issuesOf(envelope.error));
    const { type } = envelope.data;
    if (!isHandledType(type)) return { envelope: envelope.data, type, object: null };
    const object = objectSchemaFor(type).safeParse(envelope.data.data.object);
    if (!object.success) {
      const errors = issuesOf(object.error);
      throw billingErrors.invalidPayload(Object.fromEntries(Object.entries(errors).map(([k, v]) => [`data.object.${k}`, v])));
    }
    return { envelope: envelope.data, type, object: object.data };
  }

  /**
   * Applies the event and records it in the inbox (`inbox`; null: a replay, which re-applies and
   * sets the recorded row's outcome), in one statement (the mirrors); a duplicate is not applied.
   * Runs it again when a concurrent event attached another access-granting subscription to the
   * workspace meanwhile (the unique index refused the attachment and the statement wrote nothing):
   * the next run sees that subscription. Once it applied, drops the cached billing states it
   * changed, in every process: the subscription's workspaces, or every one for a catalog change
   * (a product's plan, a price: any workspace's plan may move).
   */
  async function processEvent(
    event: ParsedEvent & { type: HandledEventType },
    elog: WebhookLog,
    inbox: inboxStore.InboxEvent | null,
  ): Promise<Processed | Duplicate> {
    for (let attempt = 1; ; attempt++) {
      let result: Processed | Duplicate;
      try {
        result = await apply(event, elog, inbox);
      } catch (error) {
        if (attempt >= 3 || !isUniqueViolation(error, ONE_GRANTING_INDEX)) throw error;
        continue;
      }
      if ('outcome' in result && result.outcome === 'applied' && invalidate) {
        const subscription = event.type.startsWith('customer.subscription.');
        const tags = subscription ? result.workspaces.map((id) => accessTags.billingOf(id)) : [accessTags.billing()];
        if (tags.length) await invalidate(...tags);
      }
      return result;
    }
  }

  function apply(event: ParsedEvent & { type: HandledEventType }, elog: WebhookLog, inbox: inboxStore.InboxEvent | null) {
    const { type } = event;
    if (type.startsWith('customer.subscription.')) {
      return applySubscription(db, event.envelope, type, event.object as SubscriptionObject, elog, inbox);
    }
    if (type.startsWith('product.')) return applyProduct(db, event.envelope, type, event.object as ProductObject, inbox);
    return applyPrice(db, event.envelope, type, event.object as PriceObject, inbox);
  }

  return {
    /**
     * Handles one delivery. Throws the 400/503 errors for refused requests and a generic 500 when
     * processing fails (the provider retries; the attempt is recorded as `failed`).
     */
    async receive(rawBody: Buffer, signature: string | undefined, requestLog: WebhookLog = log): Promise<WebhookAck> {
      // Handled types by name; anything else the provider sends is `other` (bounded labels).
      let type = 'unknown';
      try {
        const ack = await handle(rawBody, signature, requestLog, (parsedType) => {
          type = isHandledType(parsedType) ? parsedType : 'other';
        });
        metrics.webhookEvent(type, ack.duplicate ? 'duplicate' : ack.outcome);
        return ack;
      } catch (error) {
        metrics.webhookEvent(type, error instanceof AppError && error.status < 500 ? 'rejected' : 'failed');
        throw error;
      }
    },

    /**
     * Processes a recorded event again from its stored payload, through the same `apply` as a live
     * delivery, whatever its first outcome: the mirrored object is re-synced from the payload (an
     * operator's repair after hand edits or a lost row). The ordering rules still hold, so a replay
     * never rolls an object back past a newer event applied since (it comes out `stale`), and every
     * write is a set (fields, items recreated), so replaying twice changes nothing more. The inbox
     * row takes the replay's outcome.
     */
    async replay(eventId: string, replayLog: WebhookLog = log): Promise<{ id: string; type: string; outcome: WebhookOutcome; previous: WebhookOutcome }> {
      const stored = await inboxStore.findEvent(db, eventId);
      if (!stored) throw billingErrors.eventNotFound(eventId);
      if (stored.payload === null) throw billingErrors.payloadNotKept(eventId);
      const parsed = parseBody(Buffer.from(stored.payload, 'utf8'));
      if (parsed.envelope.id !== stored.id) throw billingErrors.invalidPayload({ id: ['The stored payload belongs to another event.'] });
      const elog = eventLog(replayLog, { event: stored.id, type: stored.type, replay: true });
      if (parsed.object === null) return { id: stored.id, type: stored.type, outcome: 'unhandled', previous: stored.outcome };
      let outcome: WebhookOutcome;
      try {
        const result = await processEvent(parsed as ParsedEvent & { type: HandledEventType }, elog, null);
        // Never a duplicate: a replay does not look at the recorded outcome.
        outcome = 'outcome' in result ? result.outcome : stored.outcome;
      } catch (error) {
        const message = rootMessage(error).slice(0, 1000);
        elog.error({ err: error }, 'payment webhook replay failed');
        throw billingErrors.replayFailed(message);
      }
      elog.info({ outcome, previous: stored.outcome }, 'payment webhook event replayed');
      return { id: stored.id, type: stored.type, outcome, previous: stored.outcome };
    },

    /** Recorded events, newest first, with whether their payload is still kept. */
    listEvents: (filter: { type?: string; outcome?: WebhookOutcome; limit?: number } = {}) =>
      inboxStore.listEvents(db, { ...filter, limit: Math.min(Math.max(filter.limit ?? 50, 1), 1000) }),

    /** Housekeeping: clears payloads older than the retention (all of them when it is 0). */
    prunePayloads: () => inboxStore.clearOldPayloads(db, payloadRetentionDays),
  };

  /** One delivery; `onType` learns the event's type once the body is verified and parsed. */
  async function handle(
    rawBody: Buffer,
    signature: string | undefined,
    requestLog: WebhookLog,
    onType: (type: string) => void,
  ): Promise<WebhookAck> {
    const parsed = await parse(rawBody, signature, requestLog);
    onType(parsed.type);
    const { envelope } = parsed;
    const inbox: inboxStore.InboxEvent = {
      id: envelope.id,
      type: envelope.type,
      createdAt: new Date(envelope.created * 1000),
      payload: payloadRetentionDays > 0 ? rawBody.toString('utf8') : null,
    };
    const elog = eventLog(requestLog, { event: envelope.id, type: envelope.type });

    if (parsed.object === null) {
      const fresh = await inboxStore.recordUnhandled(db, inbox);
      if (fresh) return { received: true, outcome: 'unhandled', duplicate: false };
      return previous(envelope.id);
    }

    let result: Processed | Duplicate;
    try {
      result = await processEvent(parsed as ParsedEvent & { type: HandledEventType }, elog, inbox);
    } catch (error) {
      const message = rootMessage(error).slice(0, 1000);
      elog.error({ err: error }, 'payment webhook processing failed; the provider will retry');
      await inboxStore.recordFailure(db, inbox, message).catch((recordError: unknown) => {
        elog.error({ err: recordError }, 'could not record the failed webhook attempt');
      });
      throw billingErrors.webhookFailed();
    }
    if (!('outcome' in result)) {
      // The outcome committed before the statement started; else (a concurrent delivery) read it now.
      return result.previous && result.previous !== 'failed' ? { received: true, outcome: result.previous, duplicate: true } : previous(envelope.id);
    }
    if (result.outcome !== 'applied') elog.info({ outcome: result.outcome }, 'payment webhook event not applied');
    return { received: true, outcome: result.outcome, duplicate: false };
  }

  /** The acknowledgement of a redelivered event: what happened the first time. */
  async function previous(id: string): Promise<WebhookAck> {
    const row = await inboxStore.findEvent(db, id);
    return { received: true, outcome: row?.outcome ?? 'applied', duplicate: true };
  }
}

export type WebhookService = ReturnType<typeof createWebhookService>;
