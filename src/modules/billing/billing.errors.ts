import {
  AppError,
  ConflictError,
  NotFoundError,
  PaymentRequiredError,
  PermissionDeniedError,
  ServiceUnavailableError,
  ValidationError,
} from '../../platform/errors.js';

/** The one `model_not_in_plan` refusal: chats (choosing a model), messages and speech (admit) all raise it. */
export const modelNotInPlan = (id: string) =>
  new PaymentRequiredError(`The workspace's plan does not include the model "${id}".`, 'model_not_in_plan');

export const billingErrors = {
  // --- the model-call gate (admit) ---
  modelNotInPlan,
  // --- webhook ---
  invalidSignature: () =>
    new ValidationError('Missing or invalid Payment-Signature header.', undefined, 'invalid_signature'),
  invalidPayload: (errors?: Record<string, string[]>) =>
    new ValidationError('The event payload is not a valid event.', errors, 'invalid_payload'),
  webhookNotConfigured: () =>
    new ServiceUnavailableError('Webhook signing secret is not configured.', 'webhook_not_configured'),
  // The provider retries on any 5xx; the body says nothing about the cause (that is in the log).
  webhookFailed: () =>
    new AppError(500, 'webhook_processing_failed', 'The event could not be processed; it will be retried.'),
  // --- webhook replay (operators) ---
  eventNotFound: (id: string) => new NotFoundError(`No webhook event with id ${id}.`, 'webhook_event_not_found'),
  payloadNotKept: (id: string) =>
    new ConflictError(
      `The payload of webhook event ${id} is not kept (WEBHOOK_PAYLOAD_RETENTION_DAYS); it cannot be replayed.`,
      'webhook_payload_not_kept',
    ),
  replayFailed: (cause: string) => new AppError(500, 'webhook_replay_failed', `Replaying the event failed: ${cause}`),

  // --- billing actions ---
  notConfigured: () =>
    new ServiceUnavailableError('Billing is not configured on this server.', 'billing_not_configured'),
  ownerOrAdminOnly: () =>
    new PermissionDeniedError('Only the workspace owner or an admin can start a checkout.', 'permission_denied'),
  notBillingContact: () =>
    new PermissionDeniedError('Only the billing contact can open the billing portal.', 'not_billing_contact'),
  alreadySubscribed: () =>
    new ConflictError(
      'This workspace already has an active subscription; change it in the billing portal.',
      'already_subscribed',
    ),
  planUnavailable: (plan: string, interval: string) =>
    new ConflictError(`The ${plan} plan is not available with ${interval}ly billing.`, 'plan_unavailable'),
  noBillingAccount: () =>
    new ConflictError('You have no billing account yet; start a checkout first.', 'no_billing_account'),
  // 502: the upstream payment provider failed; the detail stays generic (the log has the cause).
  providerError: () =>
    new AppError(502, 'payment_provider_error', 'The payment provider could not be reached; please try again.'),
};
