/**
 * Public API of the auth module: what other modules may import (dependency-cruiser's no-reach-in
 * rule allows nothing else). Whether an API key's scope reaches a workspace (`requestReaches`, `assertRequestReaches`).
 * Accounts, tokens and keys themselves are reached over HTTP only.
 */
export { assertRequestReaches, requestReaches } from './api-keys.guard.js';
