/**
 * Public API of the invitations module: what other modules may use. The live invitation behind a
 * token digest (auth's registration receives it through its factory in src/deps.ts); the rest is HTTP.
 */
export { findLiveInvitationByTokenHash } from './invitations.repo.js';
