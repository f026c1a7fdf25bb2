import { eq, sql } from 'drizzle-orm';
import { describe, expect, it } from 'vitest';
import { useTestApp } from '../../../../test/support/app.js';
import { recordUsage, subscribe } from '../../../../test/support/billing.js';
import { newUser, newWorkspace } from '../../../../test/support/factories.js';
import { openDatabase, queryRows } from '../../../db/client.js';
import { creditBalances, creditReservations, creditUsage } from '../billing.table.js';
import { holdValues, reserve } from './credit.repo.js';

const t = useTestApp();
const credit = () => t.deps.services.credit;
const FREE_CREDIT = 1; // builtInPlans.free.ai_credit

async function freeWorkspace() {
  const owner = await newUser(t);
  const ws = await newWorkspace(t, owner);
  return { owner, ws, workspace: { id: ws.id, ownerId: owner.id } };
}

describe('reserve and settle', () => {
  it('charges the catalog price once per reference id', async () => {
    const { ws, owner, workspace } = await freeWorkspace();
    const reservation = await credit().reserve(ws.id, 0.01);
    const usage = {
      kind: 'chat' as const,
      model: 'gpt-4.1-mini',
      userId: owner.id,
      inputTokens: 1000,
      outputTokens: 500,
      referenceId: 'call-1',
    };
    // 1000 × 0.40/M + 500 × 1.60/M
    expect(await credit().settle(reservation, usage)).toBeCloseTo(0.0012, 10);
    expect(await credit().settle(reservation, usage)).toBe(0);
    const rows = await t.deps.database.db.select().from(creditUsage).where(eq(creditUsage.workspaceId, ws.id));
    expect(rows).toHaveLength(1);
    expect(rows[0]).toMatchObject({ kind: 'chat', model: 'gpt-4.1-mini', inputTokens: 1000, outputTokens: 500, userId: owner.id });
    expect(await credit().summary(workspace)).toEqual({
      credit_limit: FREE_CREDIT,
      total_cost_used: 0.0012,
      percentage_used: 0.12,
    });
  });

  it('prices transcription per minute and embeddings per input token', async () => {
    expect(credit().costOf({ kind: 'transcription', model: 'whisper-1', seconds: 90, referenceId: 'x' })).toBeCloseTo(0.009, 10);
    expect(
      credit().costOf({ kind: 'embedding', model: 'text-embedding-3-small', inputTokens: 2_000_000, referenceId: 'y' }),
    ).toBeCloseTo(0.04, 10);
  });

  it('refuses with 402 credit_exhausted once the period is used up', async () => {
    const { ws } = await freeWorkspace();
    await recordUsage(t, ws.id, FREE_CREDIT);
    await expect(credit().reserve(ws.id, 0.01)).rejects.toMatchObject({ status: 402, code: 'credit_exhausted' });
  });

  it('counts open reservations as used, and frees them on release', async () => {
    const { ws } = await freeWorkspace();
    await recordUsage(t, ws.id, FREE_CREDIT - 0.1);
    const held = await credit().reserve(ws.id, 0.1);
    await expect(credit().reserve(ws.id, 0.1)).rejects.toMatchObject({ code: 'credit_exhausted' });
    await credit().release(held);
    await expect(credit().reserve(ws.id, 0.1)).resolves.toMatchObject({ workspaceId: ws.id });
  });

  it('ignores reservations that expired (a crashed call)', async () => {
    const { ws } = await freeWorkspace();
    await recordUsage(t, ws.id, FREE_CREDIT - 0.1);
    await credit().reserve(ws.id, 0.5);
    await t.deps.database.db.update(creditReservations).set({ expiresAt: new Date(Date.now() - 1000) });
    await expect(credit().reserve(ws.id, 0.1)).resolves.toBeDefined();
  });

  it('with credit for one call left, lets exactly one of 50 parallel reservations through', async () => {
    const { ws } = await freeWorkspace();
    await recordUsage(t, ws.id, FREE_CREDIT - 0.05);
    const results = await Promise.allSettled(Array.from({ length: 50 }, () => credit().reserve(ws.id, 0.05)));
    expect(results.filter((r) => r.status === 'fulfilled')).toHaveLength(1);
    const refused = results.filter((r): r is PromiseRejectedResult => r.status === 'rejected');
    expect(refused).toHaveLength(49);
    for (const r of refused) expect(r.reason).toMatchObject({ code: 'credit_exhausted' });
  });
});

describe('a hold (credit_reservations)', () => {
  it.skipIf(!process.env.TEST_DATABASE_URL)('commits without waiting for the WAL flush in its own statement only: the connection keeps synchronous commits', async () => {
    const { ws } = await freeWorkspace();
    await credit().release(await credit().reserve(ws.id, 0.01)); // opens the period's totals
    const [{ periodStart } = { periodStart: new Date(0) }] = await t.deps.database.db
      .select({ periodStart: creditBalances.periodStart })
      .from(creditBalances)
      .where(eq(creditBalances.workspaceId, ws.id));
    const one = await openDatabase({ url: t.database.url, poolSize: 1 });
    try {
      const id = await reserve(one.db, holdValues(ws.id, periodStart, 0.01, FREE_CREDIT, new Date(Date.now() + 60_000)));
      expect(id).toEqual(expect.any(String));
      const [held] = await t.deps.database.db.select().from(creditReservations).where(eq(creditReservations.id, id!));
      expect(held).toMatchObject({ workspaceId: ws.id, closedAt: null });
      // The same (only) connection, next statement: the setting ended with the hold's transaction.
      expect(await queryRows(one.db, sql`SHOW synchronous_commit`)).toEqual([{ synchronous_commit: 'on' }]);
    } finally {
      await one.close();
    }
  });
});

describe('running totals (credit_balances)', () => {
  const balances = async (workspaceId: string) =>
    (await t.deps.database.db.select().from(creditBalances).where(eq(creditBalances.workspaceId, workspaceId))).map((b) => ({
      used: b.usedUsd,
      reserved: b.reservedUsd,
    }));

  it('are opened from the ledger on first use, then follow every ledger insert, hold and release', async () => {
    const { ws, owner } = await freeWorkspace();
    await recordUsage(t, ws.id, 0.2);
    expect(await balances(ws.id)).toEqual([]);
    const held = await credit().reserve(ws.id, 0.1);
    expect(await balances(ws.id)).toEqual([{ used: 0.2, reserved: 0.1 }]);
    // A ledger row written by anything (here straight into the table) reaches the totals.
    await recordUsage(t, ws.id, 0.7);
    expect(await balances(ws.id)).toEqual([{ used: 0.9, reserved: 0.1 }]);
    await expect(credit().reserve(ws.id, 0.01)).rejects.toMatchObject({ code: 'credit_exhausted' });
    await credit().settle(held, { kind: 'chat', model: 'x-unpriced', userId: owner.id, costUsd: 0.05, referenceId: 'totals-1' });
    expect(await balances(ws.id)).toEqual([{ used: 0.95, reserved: 0 }]);
    // Settling again charges nothing and gives back nothing.
    await credit().settle(held, { kind: 'chat', model: 'x-unpriced', userId: owner.id, costUsd: 0.05, referenceId: 'totals-1' });
    expect(await balances(ws.id)).toEqual([{ used: 0.95, reserved: 0 }]);
    const next = await credit().reserve(ws.id, 0.02);
    await credit().release(next);
    await credit().release(next);
    expect(await balances(ws.id)).toEqual([{ used: 0.95, reserved: 0 }]);
  });

  it('with the totals already open and credit for one call, lets exactly one of 50 parallel reservations through', async () => {
    const { ws } = await freeWorkspace();
    await credit().release(await credit().reserve(ws.id, 0.01));
    await recordUsage(t, ws.id, FREE_CREDIT - 0.05);
    const results = await Promise.allSettled(Array.from({ length: 50 }, () => credit().reserve(ws.id, 0.05)));
    expect(results.filter((r) => r.status === 'fulfilled')).toHaveLength(1);
    expect(await balances(ws.id)).toEqual([{ used: FREE_CREDIT - 0.05, reserved: 0.05 }]);
  });

  it('settles of two periods at once (calls in flight across a plan change) neither deadlock nor lose a charge', async () => {
    const { ws, owner } = await freeWorkspace();
    const held = async () => Promise.all(Array.from({ length: 10 }, () => credit().reserve(ws.id, 0.001)));
    const freePeriod = await held();
    const now = new Date();
    await subscribe(t, ws.id, 'pro', { payer: owner, anchor: new Date(Date.UTC(now.getUTCFullYear() - 1, now.getUTCMonth(), 1)) });
    const paidPeriod = await held();
    const charged = await Promise.all(
      [...freePeriod, ...paidPeriod].map((reservation, i) =>
        credit().settle(reservation, { kind: 'chat', model: 'x-unpriced', userId: owner.id, costUsd: 0.01, referenceId: `two-periods-${i}` }),
      ),
    );
    expect(charged).toEqual(Array(20).fill(0.01));
    // Every period's totals: the ledger since its start, nothing held.
    const rows = await t.deps.database.db.select().from(creditBalances).where(eq(creditBalances.workspaceId, ws.id));
    expect(rows).toHaveLength(2);
    for (const row of rows) {
      const ledger = await t.deps.database.db.select().from(creditUsage).where(eq(creditUsage.workspaceId, ws.id));
      const since = ledger.filter((u) => u.createdAt >= row.periodStart).reduce((sum, u) => sum + u.costUsd, 0);
      expect(row.usedUsd).toBeCloseTo(since, 8);
      expect(row.reservedUsd).toBe(0);
    }
  });

  it('open a new period from the ledger since its start when the plan changes', async () => {
    const { ws, owner, workspace } = await freeWorkspace();
    await credit().release(await credit().reserve(ws.id, 0.01));
    await recordUsage(t, ws.id, 0.9, new Date(Date.now() - 40 * 86400_000));
    const now = new Date();
    const anchor = new Date(Date.UTC(now.getUTCFullYear() - 1, now.getUTCMonth(), 1));
    await subscribe(t, ws.id, 'pro', { payer: owner, anchor });
    await recordUsage(t, ws.id, 0.5);
    await credit().release(await credit().reserve(ws.id, 0.01));
    expect((await credit().summary(workspace)).total_cost_used).toBe(0.5);
    // The free period's totals (the whole lifetime) kept counting too.
    expect((await balances(ws.id)).map((b) => b.used).sort()).toEqual([0.5, 1.4]);
  });
});

describe('credit periods', () => {
  it('counts the whole lifetime on the free plan', async () => {
    const { ws, workspace } = await freeWorkspace();
    await recordUsage(t, ws.id, 0.25, new Date('2020-01-01T00:00:00Z'));
    await recordUsage(t, ws.id, 0.25);
    expect((await credit().summary(workspace)).total_cost_used).toBe(0.5);
  });

  it('counts only the current month from the subscription anchor on a paid plan', async () => {
    const { ws, owner, workspace } = await freeWorkspace();
    const now = new Date();
    const anchor = new Date(Date.UTC(now.getUTCFullYear() - 1, now.getUTCMonth(), 1));
    await subscribe(t, ws.id, 'pro', { payer: owner, anchor });
    const monthStart = new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), 1));
    await recordUsage(t, ws.id, 3, new Date(monthStart.getTime() - 1000));
    await recordUsage(t, ws.id, 2, new Date(monthStart.getTime() + 1000));
    expect(await credit().summary(workspace)).toEqual({ credit_limit: 10, total_cost_used: 2, percentage_used: 20 });
  });

  it('counts the trial while trialing', async () => {
    const { ws, owner, workspace } = await freeWorkspace();
    const trialStart = new Date(Date.now() - 3 * 86400_000);
    await subscribe(t, ws.id, 'team', {
      payer: owner,
      status: 'trialing',
      trialStart,
      trialEnd: new Date(Date.now() + 4 * 86400_000),
    });
    await recordUsage(t, ws.id, 1, new Date(trialStart.getTime() - 1000));
    await recordUsage(t, ws.id, 4);
    expect(await credit().summary(workspace)).toEqual({ credit_limit: 40, total_cost_used: 4, percentage_used: 10 });
  });
});
