import type { FastifyInstance, FastifyRequest } from 'fastify';
import { NotAuthenticatedError } from './errors.js';

/** The authenticated caller, as the rest of the service sees it. */
export interface AuthUser {
  id: number;
  email: string;
  name: string;
  /**
   * The token the request used (to log out or keep it on password change). For a request made
   * with an API key it is the key's id, which no session token has.
   */
  tokenId: string;
  /** Set when the request was authenticated with a personal API key: what the key restricts. */
  apiKey?: ApiKeyRestriction;
}

/** What a personal API key limits (see src/modules/auth/api-keys.policy.ts for the rules). */
export interface ApiKeyRestriction {
  id: string;
  /** The only workspace the key reaches; null: every workspace of its user. */
  workspaceId: string | null;
  /** Only GET, HEAD and OPTIONS. */
  readOnly: boolean;
}

/**
 * Which callers a route accepts:
 * - `user` (default inside the API): a valid token is required;
 * - `optional`: anonymous callers are allowed, a token that is sent must still be valid;
 * - `none`: credentials are not read at all (webhooks, health checks).
 */
export type RouteAuth = 'user' | 'optional' | 'none';

declare module 'fastify' {
  interface FastifyContextConfig {
    auth?: RouteAuth;
  }
  interface FastifyRequest {
    user: AuthUser | null;
  }
}

export type TokenVerifier = (token: string) => Promise<AuthUser | null>;

/** A credential as its store knows it: whom it authenticates, until when, and when its use was last recorded. */
export interface VerifiedCredential {
  user: AuthUser;
  /** When it stops working; null: never (an API key without expiry). */
  expiresAt: Date | null;
  /** `last_used_at` as stored; null: never recorded. */
  lastUsedAt: Date | null;
}

/**
 * Runs once a credential has been verified, before anything else of the route: throws to refuse
 * the request (the API-key rules live behind this, in one place).
 */
export type CredentialGuard = (user: AuthUser, request: FastifyRequest) => void;

/** Reads `Authorization: Bearer <token>` or the DRF-style `Token <token>`. */
export function readToken(header: string | undefined): string | null | 'malformed' {
  if (!header) return null;
  const match = /^(Bearer|Token)\s+(\S+)\s*$/i.exec(header);
  return match?.[2] ?? 'malformed';
}

/**
 * Installs authentication on an encapsulated context: every route registered inside it
 * requires a user unless its `config.auth` says otherwise.
 */
export function registerAuthentication(app: FastifyInstance, verify: TokenVerifier, guard?: CredentialGuard): void {
  app.decorateRequest('user', null);
  app.addHook('onRequest', async (request) => {
    const mode = request.routeOptions.config.auth ?? 'user';
    if (mode === 'none') return;
    const token = readToken(request.headers.authorization);
    if (token === 'malformed') {
      throw new NotAuthenticatedError('Invalid Authorization header.', 'authentication_failed');
    }
    if (token) {
      const user = await verify(token);
      if (!user) throw new NotAuthenticatedError('Invalid or expired token.', 'authentication_failed');
      guard?.(user, request);
      request.user = user;
    }
    if (mode === 'user' && !request.user) throw new NotAuthenticatedError();
  });
}

/** The caller of a route that requires a user (narrows the type). */
export function currentUser(request: FastifyRequest): AuthUser {
  if (!request.user) throw new NotAuthenticatedError();
  return request.user;
}
