import { afterAll, beforeAll } from 'vitest';
import type { TestOverrides } from './app.js';
import { type ChatTestApp, useChatTestApp } from './chat.js';
import { freePort } from './redis-server.js';

export interface ListeningChatApp extends ChatTestApp {
  /** `http://127.0.0.1:PORT`: where the app listens, and its PUBLIC_BASE_URL (so signed upload URLs point at it). */
  readonly baseUrl: string;
}

/**
 * useChatTestApp, listening on a real port that is also its PUBLIC_BASE_URL: clients that follow
 * the URLs the API hands out (the signed upload URL) reach this very app, as they would a deployment.
 */
export function useListeningChatApp(env: Record<string, string> = {}, overrides: TestOverrides = {}): ListeningChatApp {
  const appEnv: Record<string, string> = { ...env };
  let baseUrl = '';
  // Registered before useChatTestApp's hooks, so the env is complete when the app is built.
  beforeAll(async () => {
    baseUrl = `http://127.0.0.1:${await freePort()}`;
    appEnv.PUBLIC_BASE_URL = baseUrl;
  });
  const chat = useChatTestApp(appEnv, overrides);
  beforeAll(async () => {
    await chat.t.app.listen({ port: Number(new URL(baseUrl).port), host: '127.0.0.1' });
  });
  // Runs before the app closes (after-hooks run in reverse order). A keep-alive connection whose
  // last response finished just after close() began is not closed by it, and would hold the
  // server open until keepAliveTimeout (72 s): the file's tests are over, so end every connection.
  afterAll(() => {
    chat.t.app.server.closeAllConnections();
  });
  return {
    ...chat,
    get baseUrl() {
      return baseUrl;
    },
  };
}
