import { namedSchema, type OperationDocs } from '../../platform/openapi.js';
import { checkoutBody, redirectOut } from './checkout/checkout.schemas.js';
import { creditUsageOut, planOut } from './plan/plan.schemas.js';
import { usageOut } from './usage/usage.schemas.js';
import { webhookAck } from './webhook/webhook.schemas.js';

namedSchema(planOut, 'WorkspacePlan', {
  description: "The workspace's plan, subscription, billing contact, what the caller may do, and usage against the limits.",
  example: {
    plan: {
      key: 'pro',
      name: 'Pro',
      monthly_price_cents: 2000,
      ai_credit: 20,
      max_documents: 500,
      max_storage_bytes: 5368709120,
      max_file_size_bytes: 52428800,
      model_tiers: ['fast', 'standard'],
      default_model: 'gpt-4o-mini',
    },
    interval: 'month',
    override: null,
    subscription: {
      status: 'active',
      trial_end: null,
      period_end: '2025-04-01T00:00:00.000Z',
      cancel_at: null,
      cancel_at_period_end: false,
    },
    billing_contact: { id: 42, name: 'Ana Silva', email: 'ana.silva@example.com' },
    viewer: { can_manage_billing: true, is_billing_contact: true },
    usage: {
      documents: 37,
      storage_bytes: 183500800,
      credit_used: 4.12,
      credit_limit: 20,
      credit_renews_at: '2025-04-01T00:00:00.000Z',
    },
  },
});
namedSchema(creditUsageOut, 'CreditUsage', {
  description: 'AI credit used in the current period, in US dollars.',
  example: { credit_limit: 20, total_cost_used: 4.12, percentage_used: 20.6 },
});
namedSchema(checkoutBody, 'CheckoutRequest', { description: 'The paid plan and billing interval to buy.', example: { plan: 'pro', interval: 'month' } });
namedSchema(redirectOut, 'Redirect', {
  description: "Where to send the browser next (the provider's hosted page).",
  example: { url: 'https://checkout.stripe.com/c/pay/cs_test_a1b2c3d4e5' },
});
namedSchema(webhookAck, 'WebhookAck', {
  description: 'The event was received; `outcome` says what processing did with it (for a redelivery: what it did the first time).',
  example: { received: true, outcome: 'applied', duplicate: false },
});

namedSchema(usageOut, 'UsageReport', {
  description: 'Calls, tokens and cost (USD) from the usage ledger, one row per group, for the range `[from, to)`.',
  example: {
    count: 2,
    next: null,
    previous: null,
    results: [
      { key: 'gpt-4o-mini', calls: 412, input_tokens: 183204, output_tokens: 40211, cost: 0.051602 },
      { key: 'text-embedding-3-small', calls: 37, input_tokens: 91002, output_tokens: 0, cost: 0.00182 },
    ],
    group_by: 'model',
    from: '2026-11-01T00:00:00.000Z',
    to: '2026-12-01T00:00:00.000Z',
  },
});

const member = { 403: ['not_workspace_member'] };

export const billingDocs: OperationDocs = {
  'GET /api/workspaces/:id/usage/': {
    operationId: 'billing_usage',
    summary: 'Get calls, tokens and cost by user, model, kind or day',
    description:
      'The owner and admins see every row of the workspace; a member sees only their own calls (the same endpoint, ' +
      'filtered). `group_by` is `user`, `model`, `kind` or `day` (UTC); `from` (inclusive) and `to` (exclusive for an ' +
      'instant, a whole day for a date) default to the last 30 days and cover at most 366 days (400 `range_too_long`; ' +
      '`invalid_range` when `from` is after `to`). Paginated; `format=csv` answers every group as `text/csv` with a ' +
      'header row, as an attachment.',
    errors: { 400: ['invalid_range', 'range_too_long'], 403: ['not_workspace_member'] },
    responses: {
      200: {
        description: 'The groups (JSON), or all of them as CSV with `format=csv`.',
        content: {
          'application/json': { schema: { $ref: '#/components/schemas/UsageReport' } },
          'text/csv': {
            schema: { type: 'string' },
            example: 'key,calls,input_tokens,output_tokens,cost\ngpt-4o-mini,412,183204,40211,0.051602\n',
          },
        },
      },
    },
  },
  'GET /api/workspaces/:id/credit-usage/': {
    operationId: 'billing_credit_usage',
    summary: 'Get the AI credit used this period',
    description: 'Any member of the workspace.',
    errors: member,
  },
  'GET /api/workspaces/:id/plan/': {
    operationId: 'billing_plan',
    summary: "Get the workspace's plan and usage",
    description: 'Any member of the workspace; `viewer` says whether the caller may manage billing.',
    errors: member,
  },
  'POST /api/workspaces/:id/billing/checkout/': {
    operationId: 'billing_checkout',
    summary: 'Start a checkout for a paid plan',
    description:
      'The workspace owner or an admin (403 `permission_denied`); returns the hosted checkout URL. 409 ' +
      '`already_subscribed` while a subscription grants a plan (use the portal), `plan_unavailable` when the plan is ' +
      'not sold with that interval. 503 `billing_not_configured` when the server has no payment provider; 502 ' +
      '`payment_provider_error` when it cannot be reached.',
    errors: {
      403: ['not_workspace_member', 'permission_denied'],
      409: ['already_subscribed', 'plan_unavailable', 'workspace_archived'],
      502: ['payment_provider_error'],
      503: ['billing_not_configured'],
    },
  },
  'POST /api/workspaces/:id/billing/portal/': {
    operationId: 'billing_portal',
    summary: "Open the provider's billing portal",
    description:
      "The workspace's billing contact only (403 `not_billing_contact`); returns the portal URL. 409 " +
      '`no_billing_account` before any checkout; 503 `billing_not_configured`; 502 `payment_provider_error`.',
    errors: {
      403: ['not_workspace_member', 'not_billing_contact'],
      409: ['no_billing_account'],
      502: ['payment_provider_error'],
      503: ['billing_not_configured'],
    },
  },
  'POST /api/subscriptions/webhook': {
    operationId: 'billing_webhook',
    summary: 'Receive payment provider events',
    description:
      'The payment provider only: the `Payment-Signature` header (HMAC of the exact body) is the credential, no user ' +
      'token is read. 400 `invalid_signature` or `invalid_payload`; 503 `webhook_not_configured` without a signing ' +
      'secret; 500 `webhook_processing_failed` asks the provider to deliver the event again. Redeliveries are ' +
      'answered with the first outcome.',
    errors: {
      400: ['invalid_signature', 'invalid_payload'],
      500: ['webhook_processing_failed'],
      503: ['webhook_not_configured'],
    },
    parameters: [
      {
        name: 'Payment-Signature',
        in: 'header',
        required: true,
        description: "The provider's signature of the exact body (timestamped HMAC-SHA256 with PAYMENT_WEBHOOK_SECRET).",
        schema: { type: 'string', example: 't=1741946700,v1=5257a869e7ecebeda32affa62cdca3fa51cad7e77a0e56ff536d0ce8e108d8bd' },
      },
    ],
    requestContent: {
      'application/json': {
        schema: {
          type: 'object',
          description: "The provider's event, verified byte for byte against `Payment-Signature` before it is parsed.",
          required: ['id', 'type', 'data'],
          properties: { id: { type: 'string' }, type: { type: 'string' }, data: { type: 'object' } },
        },
        example: { id: 'evt_1QxYz2AbCdEf', type: 'customer.subscription.updated', data: { object: { id: 'sub_1QxYz2', status: 'active' } } },
      },
    },
  },
};
