import { describe, expect, it } from 'vitest';
import { ConfigError, loadConfig } from './env.js';

describe('loadConfig', () => {
  it('defaults to the embedded profile', () => {
    const config = loadConfig({});
    expect(config).toMatchObject({
      PORT: 8000,
      HOST: '127.0.0.1',
      DATA_DIR: './data',
      STORAGE_BACKEND: 'local',
      THROTTLE_CHAT_MESSAGES: '20/minute',
      THROTTLE_DOCUMENT_UPLOADS: '30/hour',
      AGENT_ASYNC_ENABLED: false,
      ALLOW_SIGNUP: true,
      INVITATION_TTL_SECONDS: 604800,
      URL_FETCH_ALLOWED_PRIVATE_HOSTS: [],
      publicBaseUrl: 'http://127.0.0.1:8000',
      runWorkerInProcess: true,
    });
    expect(config.DATABASE_URL).toBeUndefined();
  });

  it('parses booleans, lists and numbers', () => {
    const config = loadConfig({
      AGENT_ASYNC_ENABLED: 'True',
      ALLOW_SIGNUP: '0',
      URL_FETCH_ALLOWED_PRIVATE_HOSTS: 'intranet.local, 10.0.0.0/8',
      PORT: '9000',
      HOST: '0.0.0.0',
      REDIS_URL: 'redis://127.0.0.1:6379',
    });
    expect(config.AGENT_ASYNC_ENABLED).toBe(true);
    expect(config.ALLOW_SIGNUP).toBe(false);
    expect(config.URL_FETCH_ALLOWED_PRIVATE_HOSTS).toEqual(['intranet.local', '10.0.0.0/8']);
    expect(config.publicBaseUrl).toBe('http://localhost:9000');
    expect(config.runWorkerInProcess).toBe(false);
  });

  it('treats empty strings as unset', () => {
    expect(loadConfig({ DATABASE_URL: '', REDIS_URL: ' ' }).DATABASE_URL).toBeUndefined();
  });

  it.each([
    [{ PORT: 'abc' }, 'PORT'],
    [{ THROTTLE_CHAT_MESSAGES: '20 per minute' }, 'THROTTLE_CHAT_MESSAGES'],
    [{ EMBEDDING_MODEL: 'text-embedding-3-small' }, 'EMBEDDING_MODEL'],
    [{ STORAGE_BACKEND: 's3' }, 'S3_BUCKET'],
    [{ SECRET_KEY: 'short' }, 'SECRET_KEY'],
    [{ RERANK_MODEL: 'openai:rerank' }, 'RERANK_MODEL'],
    [{ RERANK_MODEL: 'tei:BAAI/bge-reranker-base' }, 'RERANK_BASE_URL'],
    [{ REQUEST_TIMEOUT_SECONDS: '-1' }, 'REQUEST_TIMEOUT_SECONDS'],
    [{ REQUEST_TIMEOUT_SECONDS: 'soon' }, 'REQUEST_TIMEOUT_SECONDS'],
  ])('refuses %j naming %s', (env, name) => {
    expect(() => loadConfig(env)).toThrow(ConfigError);
    expect(() => loadConfig(env)).toThrow(name);
  });

  it('accepts a reranker: a hosted one alone, vllm and tei with their base URL', () => {
    expect(loadConfig({ RERANK_MODEL: 'cohere:rerank-v3.5' }).RERANK_MODEL).toBe('cohere:rerank-v3.5');
    expect(loadConfig({ RERANK_MODEL: 'vllm:BAAI/bge-reranker-v2-m3', RERANK_BASE_URL: 'http://vllm:8000/v1' }).RERANK_BASE_URL).toBe('http://vllm:8000/v1');
    expect(loadConfig({}).RERANK_MODEL).toBeUndefined();
  });
});
