import type { Logger } from 'pino';
import type { AuthUser, TokenVerifier, VerifiedCredential } from '../../platform/auth.js';
import { accessTags, type SharedCache } from '../../platform/cache/shared-cache.js';
import { faultLogFields } from '../../platform/faults.js';
import { sha256Hex } from '../../platform/secrets.js';

/** `last_used_at` of a token or key is written at most this often: otherwise every read would be a write. */
export const TOUCH_INTERVAL_SECONDS = 60;

interface CachedCredential {
  user: AuthUser;
  /** When this process last recorded (or read) a use, epoch ms; shared by every hit of the entry. */
  lastUsedAt: number;
}

export interface CredentialSources {
  /** Session tokens (auth.service.ts). */
  lookupToken(token: string): Promise<VerifiedCredential | null>;
  touchToken(tokenId: string): Promise<void>;
  /** Personal API keys (api-keys.service.ts); `isApiKey` tells them apart. */
  lookupKey(key: string): Promise<VerifiedCredential | null>;
  touchKey(id: string): Promise<void>;
  isApiKey(token: string): boolean;
}

/**
 * The authentication hook's verifier: session tokens and API keys, answered from the shared
 * cache (docs/decisions.md, "Auth and membership cache").
 * - Key: the SHA-256 of the credential, never the credential itself.
 * - Value: the AuthUser (with the API key's restriction), tagged with its user and credential id
 *   so that logout, revocation, password and account changes drop it in every process.
 * - An entry never outlives the credential: it expires at the token's or key's own expiry.
 * - Unknown, expired and revoked credentials are not cached: each one costs a query, as before.
 * - `last_used_at` is recorded at most once per TOUCH_INTERVAL_SECONDS per credential and process
 *   (the UPDATE's own condition keeps it to once across processes); a failed write is logged and
 *   the request goes on.
 */
export function createCredentialVerifier({ sources, cache, log }: { sources: CredentialSources; cache: SharedCache; log: Logger }): TokenVerifier {
  const credentials = cache.region<CachedCredential>('credentials');
  const intervalMs = TOUCH_INTERVAL_SECONDS * 1000;

  async function load(token: string) {
    const found = sources.isApiKey(token) ? await sources.lookupKey(token) : await sources.lookupToken(token);
    if (!found) return undefined;
    // Shared by every request the entry answers: nobody may change it.
    if (found.user.apiKey) Object.freeze(found.user.apiKey);
    return {
      value: { user: Object.freeze(found.user), lastUsedAt: found.lastUsedAt?.getTime() ?? 0 },
      tags: [accessTags.user(found.user.id), accessTags.credential(found.user.tokenId)],
      ...(found.expiresAt ? { expiresAt: found.expiresAt.getTime() } : {}),
    };
  }

  /**
   * Awaited, but at most once per interval per credential and process: one request a minute
   * pays for the write, and its answer already shows the new `last_used_at`.
   */
  async function recordUse(entry: CachedCredential) {
    const now = Date.now();
    if (now - entry.lastUsedAt <= intervalMs) return;
    entry.lastUsedAt = now;
    const { user } = entry;
    try {
      await (user.apiKey ? sources.touchKey(user.apiKey.id) : sources.touchToken(user.tokenId));
    } catch (error) {
      // Bookkeeping only: the request goes on.
      log.warn({ ...faultLogFields(error), userId: user.id }, 'could not record a credential use');
    }
  }

  return async (token) => {
    // Longer than any credential we issue: not worth hashing (session tokens are 43 characters).
    if (token.length > 256) return null;
    const entry = await credentials.through(sha256Hex(token), () => load(token));
    if (!entry) return null;
    await recordUse(entry);
    return entry.user;
  };
}
