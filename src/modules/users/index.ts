/**
 * Public API of the users module: what other modules may use.
 * - User shapes for responses (`userOut`, `accountOut`) and their mappers (`toUserOut`, `toAccountOut`).
 * - Field rules shared by every form that takes a user's address or name (`email`, `userName`).
 * - User lookups (by id, by address) and the user store the auth module builds the account on.
 * users is the lowest module: it imports no other. The caller's profile (/api/users/me/, which lists
 * their workspaces) is auth's (profile.*.ts), above workspaces.
 */
export { accountOut, type AccountOut, email, userName, userOut, type UserOut } from './users.shapes.js';
export { toAccountOut, toUserOut } from './users.mapper.js';
/** Looking a user up by address (chats' share form, invitations) and the one address normalisation. */
export { findUserByEmail, findUserById, findUserSummary, markEmailVerified, normalizeEmail } from './users.repo.js';
/**
 * The user store (users, sessions, password resets, email tokens) for the auth module, which owns
 * sign-up, sign-in and the account flows on top of the users table.
 */
export * as userStore from './users.repo.js';
