import { z } from 'zod';
import { email, userName } from '../users/index.js';


/** Password rules: long enough, not absurdly long (argon2 input bound), not all digits. */
export const password = z
  .string()
  .min(8, 'This password is too short. It must contain at least 8 characters.')
  .max(128, 'This password is too long.')
  .refine((v) => !/^\d+$/.test(v), 'This password is entirely numeric.');


/** A user id as mailed links carry it (string or number). */
const uid = z.union([z.string().max(32), z.number().int()]).transform(String);
/** A secret from a mailed link. */
const mailedToken = z.string().min(1).max(128);

export const registerBody = z.object({
  email,
  password,
  name: userName.default(''),
  /** The token of an invitation mailed to `email`: the account starts verified. */
  invitation_token: mailedToken.optional(),
});
export const loginBody = z.object({ email: z.string().max(254), password: z.string().max(128) });
export const tokenOut = z.object({ auth_token: z.string() });
export const updateMeBody = z.object({ email: email.optional(), name: userName.optional() });
export const deleteMeBody = z.object({ current_password: z.string().max(128) });
export const setPasswordBody = z.object({ current_password: z.string().max(128), new_password: password });
export const resetPasswordBody = z.object({ email: z.string().max(254) });
export const resetPasswordConfirmBody = z.object({
  uid,
  token: mailedToken,
  new_password: password,
});
export const activationBody = z.object({ uid, token: mailedToken });
export const setEmailBody = z.object({ current_password: z.string().max(128), new_email: email });
export const setEmailConfirmBody = z.object({ uid, token: mailedToken });
export const resendActivationBody = z.object({ email: z.string().max(254) });
