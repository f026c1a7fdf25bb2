/**
 * Public API of the users module: what other modules may use.
 * - User shapes for responses (`userOut`, `accountOut`) and their mappers (`toUserOut`, `toAccountOut`).
 * - Field rules shared by every form that takes a user's address or name (`email`, `userName`).
 * Rows and queries stay inside; other modules receive user lookups through their factories in src/deps.ts.
 */
export { accountOut, type AccountOut, email, userName, userOut, type UserOut } from './users.shapes.js';
export { toAccountOut, toUserOut } from './users.mapper.js';
