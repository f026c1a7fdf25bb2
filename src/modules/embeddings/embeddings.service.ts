import { createHash, randomUUID } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { sql } from 'drizzle-orm';
import type { Logger } from 'pino';
import type { Config } from '../../config/env.js';
import type { Db, DbOrTx } from '../../db/client.js';
import { AppError } from '../../platform/errors.js';
import { type ServiceMetrics, timeModelCall } from '../../platform/metrics.js';
import type { JobContext } from '../../platform/queue/port.js';
import type { CreditService } from '../billing/index.js';
import { aiSdk, type ModelRegistry } from '../models/index.js';
import * as repo from './embeddings.repo.js';
import type { Generation } from './embeddings.repo.js';
import type { VectorIndexStorage } from './embeddings.table.js';

/** Texts per provider request (OpenAI takes up to 2,048 inputs; smaller requests fail smaller). */
const EMBED_BATCH = 96;
/** How long a process trusts its view of the generations (a switch reaches every process within it). */
const GENERATIONS_TTL_MS = 2_000;
/** A backfill run works this long, then continues in a new job (resumable: progress is the data). */
const BACKFILL_SLICE_MS = 5 * 60_000;
/** How long after a failed backfill check (count, queueing, removal of retired vectors) it is tried again. */
const BACKGROUND_RETRY_MS = 60_000;

/** Why an embedding call produced no vectors (the caller chooses the user's message). */
export class EmbeddingError extends Error {
  constructor(
    readonly code: 'embedding_failed' | 'embedding_dimensions',
    message: string,
    options?: { cause?: unknown },
  ) {
    super(message, options);
  }
}

export interface EmbeddingsServiceDeps {
  db: Db;
  config: Pick<Config, 'EMBEDDING_MODEL'>;
  credit: CreditService;
  modelRegistry: ModelRegistry;
  /** Queues the backfill job of a generation (`jobId` makes recording it idempotent). */
  enqueueBackfill(generation: number, jobId?: string): Promise<void>;
  log: Logger;
  metrics: Pick<ServiceMetrics, 'modelCall'>;
  /**
   * What a new generation's HNSW index stores (embeddings.table.ts `indexStorage`): `vector` on
   * the embedded profile (for up to 2,000 dimensions), `halfvec` otherwise (the default).
   */
  vectorIndexStorage?: VectorIndexStorage;
  /** How long retired vectors stay after a switch, for processes still searching them (default 3× the view's TTL). */
  retireGraceMs?: number;
}

/** One generation's vectors of some texts, charged to a workspace. */
export interface MeteredEmbedding {
  workspaceId: string;
  generation: Generation;
  texts: string[];
  /** The ledger's reference: a charge per reference, however often the caller runs. */
  referenceId: string;
  userId: number | null;
  signal?: AbortSignal;
}

/** The job id of a generation's backfill: one job per generation and amount left, whoever records it. */
function backfillJobId(generation: number, lacking: number): string {
  const hex = createHash('sha256').update(`embeddings.backfill:${generation}:${lacking}`).digest('hex');
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-4${hex.slice(13, 16)}-8${hex.slice(17, 20)}-${hex.slice(20, 32)}`;
}

/**
 * Embedding generations (embeddings.table.ts): which model's vectors are searched, which are being
 * made, the metered provider calls that make them, and the background backfill that re-embeds
 * every chunk when EMBEDDING_MODEL changes while search keeps using the previous vectors.
 */
export function createEmbeddingsService(deps: EmbeddingsServiceDeps) {
  const { db, config, credit, modelRegistry, enqueueBackfill, log, metrics } = deps;
  const retireGraceMs = deps.retireGraceMs ?? GENERATIONS_TTL_MS * 3;
  let view: { at: number; rows: Promise<repo.GenerationRow[]> } | null = null;

  function generations(): Promise<repo.GenerationRow[]> {
    if (!view || performance.now() - view.at > GENERATIONS_TTL_MS) {
      const rows = repo.listGenerations(db);
      view = { at: performance.now(), rows };
      rows.catch(() => {
        view = null;
      });
    }
    return view.rows;
  }

  const generationOf = (row: repo.GenerationRow): Generation => ({
    id: row.id,
    model: row.model,
    dimensions: row.dimensions,
    indexStorage: row.indexStorage,
  });
  const indexStorageFor = (dimensions: number): VectorIndexStorage =>
    deps.vectorIndexStorage === 'vector' && dimensions <= repo.VECTOR_INDEX_MAX_DIMENSIONS ? 'vector' : 'halfvec';

  /** This process's reconciliation of the generations (see ready); null until it has succeeded or while retrying. */
  let synced: Promise<Generation | null> | null = null;
  /** The background part (see ready) while it runs; done once it has succeeded; not retried before `retryAt`. */
  let background: Promise<void> | null = null;
  let backgroundDone = false;
  let backgroundRetryAt = 0;

  /**
   * Brings the generations in line with EMBEDDING_MODEL once per process (server.ts starts it at
   * boot; every search and ingestion awaits it). It resolves once the generations agree; the
   * rest (counting the chunks that lack vectors, which reads every chunk, queueing the backfill,
   * removing retired vectors) goes on in the background, so on PostgreSQL the first search
   * after a restart does not wait for it (PGlite runs one statement at a time: there it only
   * comes first). A failed sync is tried again at the next call; a failed background part at the
   * first call a minute later.
   */
  async function ready(): Promise<void> {
    if (!synced) {
      const attempt = syncGenerations();
      synced = attempt;
      attempt.catch(() => {
        if (synced === attempt) synced = null;
      });
    }
    const target = await synced;
    if (backgroundDone || background || Date.now() < backgroundRetryAt) return;
    background = queueMissingWork(target).then(
      () => {
        backgroundDone = true;
        background = null;
      },
      (error: unknown) => {
        backgroundRetryAt = Date.now() + BACKGROUND_RETRY_MS;
        background = null;
        log.warn({ err: error }, 'embedding backfill check or retired generation removal failed; tried again in a minute');
      },
    );
  }

  /** The generation search reads: the active one, when its model is known. */
  async function searched(): Promise<Generation | null> {
    await ready();
    const active = (await generations()).find((g) => g.state === 'active');
    return active?.model ? generationOf(active) : null;
  }

  /**
   * The generations a new chunk needs vectors in: the one being built (the configured model) and
   * the active one while it is still searched, so nothing ingested during a switch is unfindable.
   */
  async function writeTargets(): Promise<Generation[]> {
    await ready();
    const rows = await generations();
    return ['building', 'active']
      .map((state) => rows.find((g) => g.state === state))
      .filter((g): g is repo.GenerationRow => Boolean(g?.model))
      .map(generationOf);
  }

  /** Admit, call the provider in batches, settle: the one metered embedding call (ingestion, backfill, search). */
  async function embedMetered(call: MeteredEmbedding): Promise<number[][]> {
    const { generation, texts } = call;
    if (!generation.model) throw new EmbeddingError('embedding_failed', 'This generation has no known model.');
    const { model, entry } = modelRegistry.embeddingModel(generation.model);
    const estimate = (texts.reduce((n, t) => n + t.length, 0) / 4) * (entry.input_price_per_million / 1_000_000);
    const reservation = await credit.admit({ workspace: call.workspaceId, estimate });
    const record = timeModelCall(metrics, { kind: 'embedding', provider: entry.provider, model: entry.id });
    const dims = generation.dimensions;
    let tokens = 0;
    const vectors: number[][] = [];
    try {
      const { embedMany } = await aiSdk();
      for (let i = 0; i < texts.length; i += EMBED_BATCH) {
        const result = await embedMany({
          model,
          values: texts.slice(i, i + EMBED_BATCH),
          // Providers that can shorten vectors are asked for the generation's size.
          providerOptions: { openai: { dimensions: dims }, openaiCompatible: { dimensions: dims }, google: { outputDimensionality: dims } },
          maxRetries: 2,
          ...(call.signal ? { abortSignal: call.signal } : {}),
        });
        tokens += result.usage.tokens;
        vectors.push(...result.embeddings);
      }
    } catch (error) {
      record('error', { inputTokens: tokens });
      await credit.release(reservation);
      throw new EmbeddingError('embedding_failed', 'The embedding provider failed.', { cause: error });
    }
    const usage = { kind: 'embedding' as const, model: entry.id, userId: call.userId, inputTokens: tokens, referenceId: call.referenceId };
    record('ok', { inputTokens: tokens, costUsd: credit.costOf(usage) });
    await credit.settle(reservation, usage);
    if (vectors.some((v) => v.length !== dims)) {
      throw new EmbeddingError('embedding_dimensions', `The embedding model returned vectors of another size than ${dims}.`);
    }
    return vectors;
  }

  /** The query's vector in the searched generation, or null (no model, no credit, provider down: full text only). */
  async function queryVector(workspaceId: string, query: string): Promise<{ generation: Generation; vector: number[] } | null> {
    try {
      const generation = await searched();
      if (!generation) return null;
      const [vector] = await embedMetered({ workspaceId, generation, texts: [query], referenceId: `search:${randomUUID()}`, userId: null });
      return vector ? { generation, vector } : null;
    } catch (error) {
      // Search still answers from full text: a missing vector only lowers recall.
      log.warn({ err: error }, 'query embedding failed; searching full text only');
      return null;
    }
  }

  /** Serialises changes to the generations across processes (inside the caller's transaction). */
  const lockGenerations = (tx: DbOrTx) => tx.execute(sql`SELECT pg_advisory_xact_lock(hashtext('embedding_generations'))`);

  /**
   * Brings the generations in line with EMBEDDING_MODEL (safe in every process at once): legacy
   * vectors of the same size are adopted as the model's; a new model gets a generation (active at
   * once when there is none to search, otherwise building) and its index, and a building
   * generation of another model is retired. Returns the configured model's generation (null
   * without one).
   */
  async function syncGenerations(): Promise<Generation | null> {
    const spec = config.EMBEDDING_MODEL;
    if (!spec) return null;
    const { entry } = modelRegistry.embeddingModel(spec);
    const target = await db.transaction(async (tx) => {
      await lockGenerations(tx);
      const rows = await repo.listGenerations(tx);
      const active = rows.find((g) => g.state === 'active');
      const building = rows.find((g) => g.state === 'building');
      if (active && active.model === null && active.dimensions === entry.dimensions) {
        await repo.adoptLegacyGeneration(tx, active.id, spec);
        active.model = spec;
      }
      // A building generation of another model is left alone when ours is the active one: a
      // process of the previous configuration restarting during a rollout must not stop it.
      if (active?.model === spec) return generationOf(active);
      if (building?.model === spec) return generationOf(building);
      const created = generationOf(
        await repo.createGeneration(tx, {
          model: spec,
          dimensions: entry.dimensions,
          state: active ? 'building' : 'active',
          indexStorage: indexStorageFor(entry.dimensions),
        }),
      );
      await repo.retireGenerations(tx, building ? [building.id] : []);
      await repo.ensureHnswIndex(tx, created);
      return created;
    });
    view = null;
    return target;
  }

  /** Queues the target's backfill when chunks lack its vectors or it is still building; removes retired generations. */
  async function queueMissingWork(target: Generation | null): Promise<void> {
    if (target) {
      const lacking = await repo.countLackingVectors(db, target.id);
      const isBuilding = (await generations()).some((g) => g.id === target.id && g.state === 'building');
      if (lacking > 0 || isBuilding) {
        await enqueueBackfill(target.id, backfillJobId(target.id, lacking));
        log.info({ generation: target.id, model: target.model, lacking }, 'embedding backfill queued');
      }
    }
    await removeRetired();
  }

  async function removeRetired(): Promise<void> {
    for (const row of await repo.listGenerations(db)) {
      if (row.state !== 'retired') continue;
      while ((await repo.deleteGenerationVectors(db, row.id, 5_000)) > 0);
      await repo.dropHnswIndex(db, row.id);
      await repo.deleteGeneration(db, row.id);
      log.info({ generation: row.id, model: row.model }, 'retired embedding generation removed');
    }
  }

  /**
   * The backfill job: embeds every chunk of a ready document that lacks a vector in the
   * generation, in id order, charged per workspace and batch; a workspace the billing gate refuses
   * is left out (its documents are found by full text only until it has credit and a later run
   * fills them). Runs BACKFILL_SLICE_MS, then continues in a new job. When nothing is left the
   * generation becomes the searched one and the previous one's vectors are deleted after a grace.
   */
  async function backfill(generationId: number, context: Pick<JobContext, 'signal'>): Promise<void> {
    const row = (await repo.listGenerations(db)).find((g) => g.id === generationId);
    if (!row || row.state === 'retired' || !row.model) return;
    const generation = generationOf(row);
    const started = performance.now();
    const skipped = new Set<string>();
    let after: string | null = null;
    let done = 0;
    for (;;) {
      context.signal.throwIfAborted();
      if (performance.now() - started > BACKFILL_SLICE_MS) {
        await enqueueBackfill(generationId);
        log.info({ generation: generationId, done }, 'embedding backfill continues in a new job');
        return;
      }
      const batch = await repo.chunksLackingVectors(db, generationId, { after, limit: EMBED_BATCH, skip: [...skipped] });
      if (batch.length === 0) {
        // A second pass from the start catches chunks stored behind the cursor meanwhile.
        if (after === null) break;
        after = null;
        continue;
      }
      after = batch.at(-1)!.id;
      const byWorkspace = new Map<string, repo.ChunkToEmbed[]>();
      for (const chunk of batch) byWorkspace.set(chunk.workspaceId, [...(byWorkspace.get(chunk.workspaceId) ?? []), chunk]);
      for (const [workspaceId, chunks] of byWorkspace) {
        try {
          const texts = chunks.map((c) => c.content);
          const vectors = await embedMetered({
            workspaceId,
            generation,
            texts,
            referenceId: `reembed:${generationId}:${chunks[0]!.id}`,
            userId: null,
            signal: context.signal,
          });
          await repo.storeVectors(db, generationId, chunks.map((c, i) => ({ chunkId: c.id, vector: vectors[i]! })));
          done += chunks.length;
        } catch (error) {
          if (!(error instanceof AppError) || error.status >= 500) throw error;
          skipped.add(workspaceId);
          log.warn({ generation: generationId, workspaceId, code: error.code }, 'embedding backfill skips a workspace the billing gate refused');
        }
      }
    }
    if (row.state === 'building') await activate(generationId, skipped.size);
    log.info({ generation: generationId, done, skippedWorkspaces: skipped.size }, 'embedding backfill finished');
  }

  async function activate(generationId: number, skippedWorkspaces: number): Promise<void> {
    const activated = await db.transaction(async (tx) => {
      await lockGenerations(tx);
      const current = (await repo.listGenerations(tx)).find((g) => g.id === generationId);
      // EMBEDDING_MODEL changed again meanwhile: this generation was retired; nothing to switch.
      if (current?.state !== 'building') return false;
      await repo.activateGeneration(tx, generationId);
      return true;
    });
    if (!activated) return;
    view = null;
    log.info({ generation: generationId, skippedWorkspaces }, 'embedding generation activated');
    // Processes that read the generations just before the switch search the old vectors a little longer.
    await sleep(retireGraceMs);
    await removeRetired();
  }

  return {
    writeTargets,
    embedMetered,
    queryVector,
    /** Stores a generation's vectors of chunks (inside the caller's transaction when it has one). */
    store: (tx: DbOrTx, generation: number, rows: Array<{ chunkId: string; vector: number[] }>) => repo.storeVectors(tx, generation, rows),
    /** Brings the generations in line with EMBEDDING_MODEL once per process (see ready). */
    ready,
    /** Waits for the background part of `ready` (deps.close(): nothing of it runs on after the database closes). */
    async settled(): Promise<void> {
      await background;
    },
    backfill,
    /** Drops this process's view of the generations (tests, after emptying the tables). */
    forget() {
      view = null;
      synced = null;
      backgroundDone = false;
      backgroundRetryAt = 0;
    },
  };
}

export type EmbeddingsService = ReturnType<typeof createEmbeddingsService>;
