import type { Db } from '../../db/client.js';
import type { AuthUser, VerifiedCredential } from '../../platform/auth.js';
import { accessTags, type CacheInvalidator } from '../../platform/cache/shared-cache.js';
import { TOUCH_INTERVAL_SECONDS } from './credentials.js';
import { AppError } from '../../platform/errors.js';
import { isUuid } from '../../platform/ids.js';
import type { PageQuery, PageResult } from '../../platform/pagination.js';
import { randomToken, sha256Hex } from '../../platform/secrets.js';
import { requireMember } from '../workspaces/index.js';
import { apiKeyErrors, apiKeyRefusalErrors } from './api-keys.errors.js';
import * as repo from './api-keys.repo.js';
import type { ApiKeyOut, CreateApiKeyInput, CreatedApiKeyOut } from './api-keys.schemas.js';

/** Every key starts with this, so scanners (and people) recognise a leaked one. */
export const API_KEY_PREFIX = 'wsai_';
// 32 random bytes in base64url: 43 characters, 256 bits.
const SECRET_LENGTH = 43;
/** Characters of the key kept (in clear) to recognise it in lists: the prefix and 8 of the secret. */
const SHOWN_PREFIX_LENGTH = API_KEY_PREFIX.length + 8;
/** Live keys per user. */
export const MAX_LIVE_API_KEYS = 100;

/** True for strings shaped like an API key (session tokens are 43 characters with no prefix). */
export function isApiKey(token: string): boolean {
  return token.length === API_KEY_PREFIX.length + SECRET_LENGTH && token.startsWith(API_KEY_PREFIX);
}

function toApiKeyOut(row: repo.ApiKeyRow): ApiKeyOut {
  return {
    id: row.id,
    name: row.name,
    prefix: row.prefix,
    created_at: row.createdAt.toISOString(),
    last_used_at: row.lastUsedAt?.toISOString() ?? null,
    expires_at: row.expiresAt?.toISOString() ?? null,
    workspace: row.workspaceId,
    read_only: row.readOnly,
  };
}

/**
 * Personal API keys: made and revoked by a signed-in user (never with a key), shown once,
 * stored as a SHA-256, accepted by the authentication hook like session tokens. What a key may
 * do is decided by api-keys.policy.ts.
 */
/** `invalidate` drops a revoked key from every process's credential cache. */
export function createApiKeysService({ db, invalidate }: { db: Db; invalidate: CacheInvalidator }) {
  function refuseKeys(caller: AuthUser): void {
    // The authentication guard already refuses /auth/* to keys; this keeps the service safe on its own.
    if (caller.apiKey) throw apiKeyRefusalErrors.api_key_not_allowed();
  }

  return {
    async create(caller: AuthUser, input: CreateApiKeyInput): Promise<CreatedApiKeyOut> {
      refuseKeys(caller);
      const expiresAt = input.expires_at ? new Date(input.expires_at) : null;
      if (expiresAt && expiresAt.getTime() <= Date.now()) throw apiKeyErrors.expiryNotInFuture();
      if (input.workspace) {
        await requireMember(db, input.workspace, caller.id).catch((error: unknown) => {
          throw error instanceof AppError && error.status === 403 ? apiKeyErrors.invalidWorkspace() : error;
        });
      }
      if ((await repo.countLiveApiKeys(db, caller.id)) >= MAX_LIVE_API_KEYS) throw apiKeyErrors.tooMany(MAX_LIVE_API_KEYS);
      const key = `${API_KEY_PREFIX}${randomToken(32)}`;
      const row = await repo.insertApiKey(db, {
        userId: caller.id,
        name: input.name,
        prefix: key.slice(0, SHOWN_PREFIX_LENGTH),
        keyHash: sha256Hex(key),
        workspaceId: input.workspace?.toLowerCase() ?? null,
        readOnly: input.read_only,
        expiresAt,
      });
      return { ...toApiKeyOut(row), key };
    },

    async list(caller: AuthUser, page: PageQuery): Promise<PageResult<ApiKeyOut>> {
      refuseKeys(caller);
      const { rows, count } = await repo.listApiKeys(db, caller.id, page.limit, page.offset);
      return { count, results: rows.map(toApiKeyOut) };
    },

    /** Revokes at once; another user's key, an unknown or an already revoked one: 404. */
    async revoke(caller: AuthUser, id: string): Promise<void> {
      refuseKeys(caller);
      if (!isUuid(id) || !(await repo.revokeApiKey(db, caller.id, id))) throw apiKeyErrors.notFound();
      await invalidate(accessTags.credential(id.toLowerCase()));
    },

    /**
     * The key behind a secret, with its user and restrictions; null when unknown, revoked,
     * expired or the user is inactive. Reads only: `touch` records the use.
     */
    async lookup(key: string): Promise<VerifiedCredential | null> {
      if (!isApiKey(key)) return null;
      const found = await repo.findLiveApiKey(db, sha256Hex(key));
      if (!found) return null;
      return {
        user: {
          id: found.user.id,
          email: found.user.email,
          name: found.user.name,
          tokenId: found.key.id,
          apiKey: { id: found.key.id, workspaceId: found.key.workspaceId, readOnly: found.key.readOnly },
        },
        expiresAt: found.key.expiresAt,
        lastUsedAt: found.key.lastUsedAt,
      };
    },

    /** Records a use of the key (skipped when one was recorded in the last TOUCH_INTERVAL_SECONDS, by any process). */
    async touch(id: string): Promise<void> {
      await repo.touchApiKey(db, id, TOUCH_INTERVAL_SECONDS);
    },
  };
}

export type ApiKeysService = ReturnType<typeof createApiKeysService>;
