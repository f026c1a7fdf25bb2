import { hash, verify } from '@node-rs/argon2';
import type { Logger } from 'pino';
import type { z } from 'zod';
import type { Config } from '../../config/env.js';
import type { Db } from '../../db/client.js';
import { isUniqueViolation } from '../../db/errors.js';
import type { AuthUser, VerifiedCredential } from '../../platform/auth.js';
import { accessTags, type CacheInvalidator } from '../../platform/cache/shared-cache.js';
import { TOUCH_INTERVAL_SECONDS } from './credentials.js';
import { fieldError, NotFoundError } from '../../platform/errors.js';
import type { Mailer } from '../../platform/mail/port.js';
import type { RateLimiter } from '../../platform/ratelimit/port.js';
import { throttle } from '../../platform/ratelimit/rates.js';
import { randomToken, sha256Hex } from '../../platform/secrets.js';
import { userStore as usersRepo } from '../users/index.js';
import { revokeUserApiKeys } from './api-keys.repo.js';
import { authErrors } from './auth.errors.js';
import { activationMail, emailChangeConfirmMail, emailChangeNoticeMail } from './auth.mail.js';
import { password as passwordSchema } from './auth.schemas.js';
import { type AccountOut, email as emailSchema, toAccountOut, toUserOut, type UserOut, userName } from '../users/index.js';

export interface AuthServiceDeps {
  db: Db;
  config: Pick<
    Config,
    | 'ALLOW_SIGNUP'
    | 'AUTH_TOKEN_TTL'
    | 'PASSWORD_RESET_TTL_SECONDS'
    | 'REQUIRE_EMAIL_VERIFICATION'
    | 'EMAIL_TOKEN_TTL_SECONDS'
    | 'THROTTLE_LOGIN'
    | 'publicBaseUrl'
  >;
  mailer: Mailer;
  limiter: RateLimiter;
  log: Logger;
  /** The live invitation with this token digest, if any: a registration through it needs no activation (invitations; src/deps.ts). */
  findLiveInvitation: (db: Db, tokenHash: string) => Promise<{ email: string } | undefined>;
  /** How many workspaces a user owns: an owner cannot delete their account (workspaces; src/deps.ts). */
  countOwnedWorkspaces: (db: Db, userId: number) => Promise<number>;
  /** Drops cached credentials (logout, password change, account changes) in every process, after commit. */
  invalidate: CacheInvalidator;
}

// argon2id with the library's defaults (19 MiB, t=2, p=1: OWASP's recommended minimum).
const hashPassword = (plain: string) => hash(plain);

/** 24 random characters (144 bits), for passwords an operator hands over once. */
const generatePassword = () => randomToken(18);

/** Validates one operator-given field with the API's own rule; 400 naming the field otherwise. */
function parseField<T extends z.ZodType>(field: string, schema: T, value: unknown): z.output<T> {
  const parsed = schema.safeParse(value);
  if (!parsed.success) throw fieldError(field, parsed.error.issues[0]?.message ?? 'Invalid value.');
  return parsed.data;
}

// Verifying against this hash when the email is unknown keeps login timing uniform.
let dummyHash: Promise<string> | undefined;


/** Endpoints where someone may guess a password or flood an inbox: throttled per address and per client IP. */
type GuardedAction = 'login' | 'reset_password' | 'resend_activation' | 'set_email';

export function createAuthService({ db, config, mailer, limiter, log, findLiveInvitation, countOwnedWorkspaces, invalidate }: AuthServiceDeps) {
  /**
   * Counts one attempt of `action` from `clientIp` and for each address (THROTTLE_LOGIN each);
   * 429 with Retry-After beyond it, before any password is checked or mail sent. The IP is
   * counted first, so one client over its limit no longer uses up the addresses' allowance.
   * Addresses are keyed by a digest (no plain addresses in Redis keys).
   */
  async function throttleAttempt(action: GuardedAction, clientIp: string, ...addresses: string[]): Promise<void> {
    await throttle(limiter, `${action}:ip`, clientIp, config.THROTTLE_LOGIN);
    for (const address of new Set(addresses.map(usersRepo.normalizeEmail))) {
      await throttle(limiter, `${action}:email`, sha256Hex(address).slice(0, 32), config.THROTTLE_LOGIN);
    }
  }

  async function issueToken(userId: number): Promise<string> {
    const token = randomToken();
    await usersRepo.insertToken(db, userId, sha256Hex(token), new Date(Date.now() + config.AUTH_TOKEN_TTL * 1000));
    return token;
  }

  async function checkPassword(user: usersRepo.UserRow | undefined, plain: string): Promise<boolean> {
    if (!user) {
      dummyHash ??= hashPassword(randomToken());
      await verify(await dummyHash, plain).catch(() => false);
      return false;
    }
    return verify(user.passwordHash, plain).catch(() => false);
  }

  const emailTokenExpiry = () => new Date(Date.now() + config.EMAIL_TOKEN_TTL_SECONDS * 1000);

  /** Mails a new activation link (superseding older ones); a mail failure is logged, not thrown. */
  async function sendActivation(user: usersRepo.UserRow): Promise<void> {
    const token = randomToken();
    const expiresAt = emailTokenExpiry();
    await usersRepo.replaceEmailToken(db, { userId: user.id, purpose: 'activation', tokenHash: sha256Hex(token), expiresAt });
    try {
      await mailer.send(
        activationMail({ to: user.email, uid: user.id, token, expiresAt, publicBaseUrl: config.publicBaseUrl }),
      );
    } catch (error) {
      // The account stands; resend_activation/ mails a new link. The outbox keeps the failure.
      log.error({ err: error, userId: user.id }, 'activation mail could not be sent');
    }
  }

  return {
    /**
     * Registers an account. With `invitation_token` (from an invitation mailed to this address)
     * the address is proven at once, even when sign-up is otherwise closed; without, the account
     * starts unverified and an activation link is mailed.
     */
    async register(input: { email: string; password: string; name: string; invitation_token?: string }): Promise<UserOut> {
      let verified = false;
      if (input.invitation_token !== undefined) {
        const invitation = await findLiveInvitation(db, sha256Hex(input.invitation_token));
        if (invitation?.email !== usersRepo.normalizeEmail(input.email)) throw authErrors.invalidInvitationToken();
        verified = true;
      } else if (!config.ALLOW_SIGNUP) {
        throw authErrors.signupDisabled();
      }
      if (await usersRepo.findUserByEmail(db, input.email)) throw authErrors.emailTaken();
      const user = await usersRepo.insertUser(db, {
        email: input.email,
        name: input.name,
        passwordHash: await hashPassword(input.password),
        emailVerifiedAt: verified ? new Date() : null,
      });
      // A concurrent registration of the same email wins the unique index.
      if (!user) throw authErrors.emailTaken();
      if (!verified) await sendActivation(user);
      return toUserOut(user);
    },

    async login(email: string, password: string, clientIp: string): Promise<{ auth_token: string }> {
      await throttleAttempt('login', clientIp, email);
      const user = await usersRepo.findUserByEmail(db, email);
      if (!(await checkPassword(user, password)) || !user?.isActive) throw authErrors.invalidCredentials();
      // Only after the password check, so the answer tells nothing to someone without it.
      if (config.REQUIRE_EMAIL_VERIFICATION && user.emailVerifiedAt === null) throw authErrors.emailNotVerified();
      return { auth_token: await issueToken(user.id) };
    },

    async logout(caller: AuthUser): Promise<void> {
      await usersRepo.deleteToken(db, caller.tokenId);
      await invalidate(accessTags.credential(caller.tokenId));
    },

    /**
     * The session behind a bearer token; null when unknown, expired or the user is inactive.
     * Reads only: `touchToken` records the use (credentials.ts decides how often).
     */
    async lookupToken(token: string): Promise<VerifiedCredential | null> {
      if (token.length > 256) return null;
      const found = await usersRepo.findActiveToken(db, sha256Hex(token));
      if (!found) return null;
      return {
        user: { id: found.user.id, email: found.user.email, name: found.user.name, tokenId: found.token.id },
        expiresAt: found.token.expiresAt,
        lastUsedAt: found.token.lastUsedAt,
      };
    },

    /** Records a use of the token (skipped when another process recorded one in the last TOUCH_INTERVAL_SECONDS). */
    async touchToken(tokenId: string): Promise<void> {
      await usersRepo.touchToken(db, tokenId, TOUCH_INTERVAL_SECONDS);
    },

    async getMe(caller: AuthUser): Promise<AccountOut> {
      const user = await usersRepo.findUserById(db, caller.id);
      if (!user) throw authErrors.invalidCredentials();
      return toAccountOut(user);
    },

    /**
     * Updates the name. The email is not changed here (an unproven address could claim someone
     * else's invitations): a different one is refused, the current one (any case) is accepted as is.
     */
    async updateMe(caller: AuthUser, input: { email?: string; name?: string }): Promise<AccountOut> {
      if (input.email !== undefined) {
        const current = await usersRepo.findUserById(db, caller.id);
        if (usersRepo.normalizeEmail(input.email) !== current?.email) throw authErrors.emailChangeRequiresConfirmation();
      }
      const user = await usersRepo.updateUser(db, caller.id, input.name === undefined ? {} : { name: input.name });
      if (!user) throw authErrors.invalidCredentials();
      // Cached credentials carry the name.
      if (input.name !== undefined) await invalidate(accessTags.user(caller.id));
      return toAccountOut(user);
    },

    /**
     * Starts an email change: mails a confirmation link to the new address and a notice to the
     * current one. Nothing changes until the link is used (`confirmEmailChange`).
     */
    async requestEmailChange(caller: AuthUser, currentPassword: string, newEmail: string, clientIp: string): Promise<void> {
      // The account's address (its password is what a stolen session would guess) and the target inbox.
      await throttleAttempt('set_email', clientIp, caller.email, newEmail);
      const user = await usersRepo.findUserById(db, caller.id);
      if (!user || !(await checkPassword(user, currentPassword))) throw authErrors.wrongCurrentPassword();
      const target = usersRepo.normalizeEmail(newEmail);
      if (target === user.email) throw authErrors.emailUnchanged();
      if (await usersRepo.findUserByEmail(db, target)) throw authErrors.emailTaken('new_email');
      const token = randomToken();
      const expiresAt = emailTokenExpiry();
      await usersRepo.replaceEmailToken(db, {
        userId: user.id,
        purpose: 'email_change',
        newEmail: target,
        tokenHash: sha256Hex(token),
        expiresAt,
      });
      // A failure here fails the request: without this mail the change cannot happen.
      await mailer.send(
        emailChangeConfirmMail({ to: target, uid: user.id, token, expiresAt, publicBaseUrl: config.publicBaseUrl }),
      );
      try {
        await mailer.send(emailChangeNoticeMail({ to: user.email, newEmail: target }));
      } catch (error) {
        log.error({ err: error, userId: user.id }, 'email change notice could not be sent');
      }
    },

    /**
     * Makes a requested email change with the secret mailed to the new address, which proves it:
     * the account is verified afterwards. The address must still be free. Secrets mailed to the
     * old address (activation, password reset, other changes) stop working.
     */
    async confirmEmailChange(uid: string, token: string): Promise<void> {
      const userId = Number(uid);
      await db.transaction(async (tx) => {
        const found = await usersRepo.consumeEmailToken(tx, sha256Hex(token), 'email_change');
        if (!found || found.userId !== userId || !found.newEmail) throw authErrors.invalidEmailChangeToken();
        const holder = await usersRepo.findUserByEmail(tx, found.newEmail);
        if (holder && holder.id !== userId) throw authErrors.emailTaken('new_email');
        await usersRepo.setVerifiedEmail(tx, userId, found.newEmail).catch((error: unknown) => {
          // A registration of the same address that committed after the check above.
          if (isUniqueViolation(error)) throw authErrors.emailTaken('new_email');
          throw error;
        });
        await usersRepo.deleteEmailTokens(tx, userId);
        await usersRepo.deletePasswordResets(tx, userId);
      });
      // Cached credentials carry the address.
      await invalidate(accessTags.user(userId));
    },

    async deleteMe(caller: AuthUser, currentPassword: string): Promise<void> {
      const user = await usersRepo.findUserById(db, caller.id);
      if (!(await checkPassword(user, currentPassword))) throw authErrors.wrongCurrentPassword();
      if ((await countOwnedWorkspaces(db, caller.id)) > 0) throw authErrors.ownsWorkspaces();
      await usersRepo.deleteUser(db, caller.id);
      await invalidate(accessTags.user(caller.id));
    },

    /** Changes the password, signs out every other session (token) of the user and revokes their API keys. */
    async setPassword(caller: AuthUser, currentPassword: string, newPassword: string): Promise<void> {
      const user = await usersRepo.findUserById(db, caller.id);
      if (!(await checkPassword(user, currentPassword))) throw authErrors.wrongCurrentPassword();
      const passwordHash = await hashPassword(newPassword);
      await db.transaction(async (tx) => {
        await usersRepo.updateUser(tx, caller.id, { passwordHash });
        await usersRepo.deleteUserTokens(tx, caller.id, caller.tokenId);
        await revokeUserApiKeys(tx, caller.id);
      });
      // Every credential of the user (the kept session is simply read again).
      await invalidate(accessTags.user(caller.id));
    },

    /** Always succeeds, so the endpoint does not reveal which emails have accounts. */
    async requestPasswordReset(email: string, clientIp: string): Promise<void> {
      await throttleAttempt('reset_password', clientIp, email);
      const user = await usersRepo.findUserByEmail(db, email);
      if (!user?.isActive) {
        log.info('password reset requested for an unknown email');
        return;
      }
      const token = randomToken();
      const ttl = config.PASSWORD_RESET_TTL_SECONDS;
      await usersRepo.insertPasswordReset(db, user.id, sha256Hex(token), new Date(Date.now() + ttl * 1000));
      const link = `${config.publicBaseUrl}/password/reset/confirm/${user.id}/${token}`;
      await mailer.send({
        to: user.email,
        subject: 'Reset your password',
        text:
          `Someone asked to reset the password of your account.\n\n` +
          `To choose a new password, open ${link}\n` +
          `or send uid=${user.id} and token=${token} to POST /auth/users/reset_password_confirm/.\n\n` +
          `The link expires in ${Math.round(ttl / 60)} minutes. If you did not ask for this, ignore this mail.`,
      });
    },

    /**
     * Sets a new password from a mailed secret; the secret works once and every session ends.
     * The secret was mailed to the account's address, so using it also proves that address.
     */
    async confirmPasswordReset(uid: string, token: string, newPassword: string): Promise<void> {
      const userId = Number(uid);
      const passwordHash = await hashPassword(newPassword);
      await db.transaction(async (tx) => {
        const owner = await usersRepo.consumePasswordReset(tx, sha256Hex(token));
        if (owner === undefined || owner !== userId) throw authErrors.invalidResetToken();
        await usersRepo.updateUser(tx, owner, { passwordHash });
        await usersRepo.markEmailVerified(tx, owner);
        await usersRepo.deleteUserTokens(tx, owner);
        await revokeUserApiKeys(tx, owner);
      });
      await invalidate(accessTags.user(userId));
    },

    // --- operators (admin CLI) ------------------------------------------------------------------

    /**
     * Creates an account whose address counts as proven (no activation mail), whatever
     * ALLOW_SIGNUP says. Without a password one is generated; it is returned once, never stored.
     */
    async createVerifiedUser(input: { email: string; name?: string; password?: string }): Promise<{ user: UserOut; password: string; generated: boolean }> {
      const address = parseField('email', emailSchema, input.email);
      const plain = input.password ?? generatePassword();
      parseField('password', passwordSchema, plain);
      if (await usersRepo.findUserByEmail(db, address)) throw authErrors.emailTaken();
      const user = await usersRepo.insertUser(db, {
        email: address,
        name: parseField('name', userName, input.name ?? ''),
        passwordHash: await hashPassword(plain),
        emailVerifiedAt: new Date(),
      });
      if (!user) throw authErrors.emailTaken();
      return { user: toUserOut(user), password: plain, generated: input.password === undefined };
    },

    /**
     * Sets a user's password as a confirmed reset does: every session (token) ends, API keys and
     * pending reset links are revoked. Without a password one is generated and returned once.
     */
    async resetPasswordAsOperator(emailOrId: string, newPassword?: string): Promise<{ user: UserOut; password: string; generated: boolean }> {
      const user = /^\d+$/.test(emailOrId)
        ? await usersRepo.findUserById(db, Number(emailOrId))
        : await usersRepo.findUserByEmail(db, emailOrId);
      if (!user) throw new NotFoundError(`No user with email or id ${emailOrId}.`, 'user_not_found');
      const plain = newPassword ?? generatePassword();
      parseField('password', passwordSchema, plain);
      const passwordHash = await hashPassword(plain);
      await db.transaction(async (tx) => {
        await usersRepo.updateUser(tx, user.id, { passwordHash });
        await usersRepo.deleteUserTokens(tx, user.id);
        await usersRepo.deletePasswordResets(tx, user.id);
        await revokeUserApiKeys(tx, user.id);
      });
      await invalidate(accessTags.user(user.id));
      return { user: toUserOut(user), password: plain, generated: newPassword === undefined };
    },

    /** Proves the account's address with the mailed activation secret (single-use, expiring). */
    async activate(uid: string, token: string): Promise<void> {
      const userId = Number(uid);
      await db.transaction(async (tx) => {
        const found = await usersRepo.consumeEmailToken(tx, sha256Hex(token), 'activation');
        if (!found || found.userId !== userId) throw authErrors.invalidActivationToken();
        await usersRepo.markEmailVerified(tx, userId);
      });
    },

    /**
     * Mails a new activation link to an account whose address is not proven yet. Always
     * succeeds, so the endpoint does not reveal which emails have accounts or are verified.
     */
    async resendActivation(email: string, clientIp: string): Promise<void> {
      await throttleAttempt('resend_activation', clientIp, email);
      const user = await usersRepo.findUserByEmail(db, email);
      if (!user?.isActive || user.emailVerifiedAt !== null) {
        log.info('activation resend requested for an unknown or already verified email');
        return;
      }
      await sendActivation(user);
    },
  };
}

export type AuthService = ReturnType<typeof createAuthService>;
