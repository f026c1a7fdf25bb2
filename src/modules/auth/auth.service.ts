import { hash, verify } from '@node-rs/argon2';
import type { Logger } from 'pino';
import type { Config } from '../../config/env.js';
import type { Db } from '../../db/client.js';
import type { AuthUser } from '../../platform/auth.js';
import type { Mailer } from '../../platform/mail/port.js';
import { randomToken, sha256Hex } from '../../platform/secrets.js';
import * as usersRepo from '../users/users.repo.js';
import { countOwnedWorkspaces } from '../workspaces/workspaces.repo.js';
import { revokeUserApiKeys } from './api-keys.repo.js';
import { authErrors } from './auth.errors.js';
import type { UserOut } from './auth.schemas.js';

export interface AuthServiceDeps {
  db: Db;
  config: Pick<Config, 'ALLOW_SIGNUP' | 'AUTH_TOKEN_TTL' | 'PASSWORD_RESET_TTL_SECONDS' | 'publicBaseUrl'>;
  mailer: Mailer;
  log: Logger;
}

// argon2id with the library's defaults (19 MiB, t=2, p=1: OWASP's recommended minimum).
const hashPassword = (plain: string) => hash(plain);

// Verifying against this hash when the email is unknown keeps login timing uniform.
let dummyHash: Promise<string> | undefined;

// Writing last_used_at on every request would turn each read into a write; once a minute is enough.
const TOUCH_INTERVAL_MS = 60_000;

export function toUserOut(user: { id: number; email: string; name: string }): UserOut {
  return { id: user.id, email: user.email, name: user.name };
}

export function createAuthService({ db, config, mailer, log }: AuthServiceDeps) {
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

  return {
    async register(input: { email: string; password: string; name: string }): Promise<UserOut> {
      if (!config.ALLOW_SIGNUP) throw authErrors.signupDisabled();
      if (await usersRepo.findUserByEmail(db, input.email)) throw authErrors.emailTaken();
      const user = await usersRepo.insertUser(db, {
        email: input.email,
        name: input.name,
        passwordHash: await hashPassword(input.password),
      });
      // A concurrent registration of the same email wins the unique index.
      if (!user) throw authErrors.emailTaken();
      return toUserOut(user);
    },

    async login(email: string, password: string): Promise<{ auth_token: string }> {
      const user = await usersRepo.findUserByEmail(db, email);
      if (!(await checkPassword(user, password)) || !user?.isActive) throw authErrors.invalidCredentials();
      return { auth_token: await issueToken(user.id) };
    },

    async logout(caller: AuthUser): Promise<void> {
      await usersRepo.deleteToken(db, caller.tokenId);
    },

    /** Resolves a bearer token to its user; null when unknown, expired or the user is inactive. */
    async verifyToken(token: string): Promise<AuthUser | null> {
      if (token.length > 256) return null;
      const found = await usersRepo.findActiveToken(db, sha256Hex(token));
      if (!found) return null;
      const lastUsed = found.token.lastUsedAt?.getTime() ?? 0;
      if (Date.now() - lastUsed > TOUCH_INTERVAL_MS) await usersRepo.touchToken(db, found.token.id);
      return { id: found.user.id, email: found.user.email, name: found.user.name, tokenId: found.token.id };
    },

    async getMe(caller: AuthUser): Promise<UserOut> {
      const user = await usersRepo.findUserById(db, caller.id);
      if (!user) throw authErrors.invalidCredentials();
      return toUserOut(user);
    },

    async updateMe(caller: AuthUser, input: { email?: string; name?: string }): Promise<UserOut> {
      if (input.email !== undefined) {
        const other = await usersRepo.findUserByEmail(db, input.email);
        if (other && other.id !== caller.id) throw authErrors.emailTaken();
      }
      const user = await usersRepo.updateUser(db, caller.id, input).catch((error: unknown) => {
        if ((error as { cause?: { code?: string } }).cause?.code === '23505') throw authErrors.emailTaken();
        throw error;
      });
      return toUserOut(user!);
    },

    async deleteMe(caller: AuthUser, currentPassword: string): Promise<void> {
      const user = await usersRepo.findUserById(db, caller.id);
      if (!(await checkPassword(user, currentPassword))) throw authErrors.wrongCurrentPassword();
      if ((await countOwnedWorkspaces(db, caller.id)) > 0) throw authErrors.ownsWorkspaces();
      await usersRepo.deleteUser(db, caller.id);
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
    },

    /** Always succeeds, so the endpoint does not reveal which emails have accounts. */
    async requestPasswordReset(email: string): Promise<void> {
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

    /** Sets a new password from a mailed secret; the secret works once and every session ends. */
    async confirmPasswordReset(uid: string, token: string, newPassword: string): Promise<void> {
      const userId = Number(uid);
      const passwordHash = await hashPassword(newPassword);
      await db.transaction(async (tx) => {
        const owner = await usersRepo.consumePasswordReset(tx, sha256Hex(token));
        if (owner === undefined || owner !== userId) throw authErrors.invalidResetToken();
        await usersRepo.updateUser(tx, owner, { passwordHash });
        await usersRepo.deleteUserTokens(tx, owner);
        await revokeUserApiKeys(tx, owner);
      });
    },
  };
}

export type AuthService = ReturnType<typeof createAuthService>;
