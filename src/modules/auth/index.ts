/**
 * Public API of the auth module: nothing yet (HTTP only: sign-up, sign-in, account flows, the
 * caller's profile, API keys).
 * Whether a request's API key reaches a workspace is the workspaces module's (`requestReaches`).
 */
export {};
