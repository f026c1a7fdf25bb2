import type Stripe from 'stripe';
import type { Config } from '../../config/env.js';

/**
 * The payment provider as the billing module uses it: three calls and the webhook signature
 * check, implemented with the `stripe` SDK. Services depend on this interface, not on Stripe's
 * types, so provider failures are mapped in one place. The SDK (a few hundred files) is loaded on
 * the first provider call or webhook, not at start-up.
 */
export interface PaymentProvider {
  createCustomer(input: { email: string; name: string; userId: number; idempotencyKey: string }): Promise<{ id: string }>;
  createCheckoutSession(input: {
    customerId: string;
    priceId: string;
    workspaceId: string;
    userId: number;
    successUrl: string;
    cancelUrl: string;
  }): Promise<{ id: string; url: string }>;
  createPortalSession(input: { customerId: string; returnUrl: string }): Promise<{ url: string }>;
}

/** Any failure talking to the provider (network, HTTP error, unexpected answer). */
export class PaymentProviderError extends Error {
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'PaymentProviderError';
  }
}

/** Webhook signatures older or newer than this many seconds are refused (the provider's default). */
export const SIGNATURE_TOLERANCE_SECONDS = 300;
/** Provider calls are user-facing (checkout button): fail within this time rather than hang. */
const REQUEST_TIMEOUT_MS = 15_000;

let sdk: Promise<typeof Stripe> | undefined;
/** The `stripe` module, imported once, on first use. */
const loadStripe = () => (sdk ??= import('stripe').then((module) => module.default));

/**
 * `STRIPE_API_BASE` as the SDK's host/port/protocol. Like the other provider base URLs it may
 * include the `/v1` part; the SDK adds `/v1/...` to every path itself, so any other path is an error.
 */
export function parseApiBase(base: string): { host: string; port: number; protocol: 'http' | 'https' } {
  const url = new URL(base);
  if (url.protocol !== 'http:' && url.protocol !== 'https:') throw new Error(`STRIPE_API_BASE: unsupported protocol ${url.protocol}`);
  if (!['', '/', '/v1', '/v1/'].includes(url.pathname)) {
    throw new Error('STRIPE_API_BASE: must be scheme://host[:port], optionally ending in /v1');
  }
  const protocol = url.protocol === 'http:' ? 'http' : 'https';
  return { host: url.hostname, port: url.port ? Number(url.port) : protocol === 'http' ? 80 : 443, protocol };
}

/** The provider client from configuration; null when STRIPE_SECRET_KEY is unset (billing actions answer 503). */
export function createPaymentProvider(config: Pick<Config, 'STRIPE_SECRET_KEY' | 'STRIPE_API_BASE'>): PaymentProvider | null {
  const secretKey = config.STRIPE_SECRET_KEY;
  if (!secretKey) return null;
  // Checked now, so a malformed STRIPE_API_BASE still fails at start-up.
  const base = config.STRIPE_API_BASE ? parseApiBase(config.STRIPE_API_BASE) : {};
  let client: Promise<Stripe> | undefined;
  const connect = () =>
    (client ??= loadStripe().then(
      (StripeSdk) =>
        new StripeSdk(secretKey, {
          ...base,
          // One retry covers a dropped connection; more would keep the user waiting on a button.
          maxNetworkRetries: 1,
          timeout: REQUEST_TIMEOUT_MS,
          telemetry: false,
        }),
    ));

  async function call<T>(what: string, fn: (stripe: Stripe) => Promise<T>): Promise<T> {
    const stripe = await connect();
    try {
      return await fn(stripe);
    } catch (error) {
      throw new PaymentProviderError(`${what} failed: ${error instanceof Error ? error.message : String(error)}`, {
        cause: error,
      });
    }
  }

  return {
    async createCustomer({ email, name, userId, idempotencyKey }) {
      const customer = await call('create customer', (stripe) =>
        stripe.customers.create({ email, name, metadata: { user_id: String(userId) } }, { idempotencyKey }),
      );
      return { id: customer.id };
    },

    async createCheckoutSession({ customerId, priceId, workspaceId, userId, successUrl, cancelUrl }) {
      const session = await call('create checkout session', (stripe) =>
        stripe.checkout.sessions.create({
          mode: 'subscription',
          customer: customerId,
          line_items: [{ price: priceId, quantity: 1 }],
          client_reference_id: workspaceId,
          // The session's metadata identifies the checkout; the subscription's metadata is what
          // the webhook reads to attach the subscription to the workspace.
          metadata: { workspace_id: workspaceId, user_id: String(userId) },
          subscription_data: { metadata: { workspace_id: workspaceId } },
          success_url: successUrl,
          cancel_url: cancelUrl,
        }),
      );
      if (!session.url) throw new PaymentProviderError('checkout session has no url');
      return { id: session.id, url: session.url };
    },

    async createPortalSession({ customerId, returnUrl }) {
      const session = await call('create billing portal session', (stripe) =>
        stripe.billingPortal.sessions.create({ customer: customerId, return_url: returnUrl }),
      );
      return { url: session.url };
    },
  };
}

/**
 * Verifies a `Payment-Signature` header (`t=<unix>,v1=<hex HMAC-SHA256 of "t.body">`) over the raw
 * body with the SDK's check (constant-time, any of several v1 values may match, at most
 * `SIGNATURE_TOLERANCE_SECONDS` old). The SDK does not refuse timestamps in the future; a
 * signature dated more than the tolerance ahead is refused here too, so a captured header cannot
 * be pre-dated to extend its replay window.
 */
export async function verifyWebhookSignature(
  payload: Buffer,
  header: string | undefined,
  secret: string,
  nowMs = Date.now(),
): Promise<boolean> {
  if (!header || payload.length === 0) return false;
  const StripeSdk = await loadStripe();
  try {
    StripeSdk.webhooks.signature!.verifyHeader(payload, header, secret, SIGNATURE_TOLERANCE_SECONDS, undefined, nowMs);
  } catch {
    return false;
  }
  // Same parsing as the SDK: the last `t=` wins.
  let timestamp = Number.NaN;
  for (const part of header.split(',')) {
    const [key, value] = part.split('=');
    if (key === 't') timestamp = Number.parseInt(value ?? '', 10);
  }
  return Number.isFinite(timestamp) && timestamp - Math.floor(nowMs / 1000) <= SIGNATURE_TOLERANCE_SECONDS;
}
