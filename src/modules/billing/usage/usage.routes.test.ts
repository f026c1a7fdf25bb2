import { eq } from 'drizzle-orm';
import { describe, expect, it } from 'vitest';
import { useTestApp } from '../../../../test/support/app.js';
import { addMember, newUser, newWorkspace, type TestUser } from '../../../../test/support/factories.js';
import { randomToken } from '../../../platform/secrets.js';
import { users } from '../../users/users.table.js';
import { creditUsage, type UsageKind } from '../billing.table.js';

const t = useTestApp();

interface Call {
  user: TestUser | null;
  kind?: UsageKind;
  model?: string;
  input?: number;
  output?: number;
  cost: number;
  at: string;
}

/** Ledger rows as the credit service writes them (the daily totals follow by trigger). */
async function ledger(workspaceId: string, calls: Call[]) {
  await t.deps.database.db.insert(creditUsage).values(
    calls.map((call) => ({
      workspaceId,
      userId: call.user?.id ?? null,
      kind: call.kind ?? 'chat',
      model: call.model ?? 'gpt-4.1-mini',
      inputTokens: call.input ?? 0,
      outputTokens: call.output ?? 0,
      costUsd: call.cost,
      referenceId: `ref_${randomToken(8)}`,
      createdAt: new Date(call.at),
    })),
  );
}

async function setup() {
  const owner = await newUser(t, { name: 'Olive' });
  const admin = await newUser(t, { name: 'Adam' });
  const member = await newUser(t, { name: '=HYPERLINK("x")' });
  const outsider = await newUser(t);
  const ws = await newWorkspace(t, owner);
  await addMember(t, ws, admin, 'admin');
  await addMember(t, ws, member, 'member');
  // Nov 1 (partial and whole), Nov 2, Nov 3 (partial); one row outside the range, one in another workspace.
  await ledger(ws.id, [
    { user: owner, model: 'gpt-4.1', input: 100, output: 10, cost: 0.5, at: '2026-11-01T08:00:00Z' },
    { user: member, model: 'gpt-4.1-mini', input: 50, output: 5, cost: 0.01, at: '2026-11-01T20:00:00Z' },
    { user: member, model: 'gpt-4.1-mini', input: 70, output: 7, cost: 0.02, at: '2026-11-02T10:00:00Z' },
    { user: admin, kind: 'transcription', model: 'whisper-1', cost: 0.006, at: '2026-11-02T11:00:00Z' },
    { user: null, kind: 'embedding', model: 'text-embedding-3-small', input: 1000, cost: 0.00002, at: '2026-11-03T01:00:00Z' },
    { user: owner, model: 'gpt-4.1', input: 1, output: 1, cost: 9, at: '2026-10-15T00:00:00Z' },
  ]);
  const other = await newWorkspace(t, outsider);
  await ledger(other.id, [{ user: outsider, cost: 3, at: '2026-11-02T00:00:00Z' }]);
  const url = (query: string) => `/api/workspaces/${ws.id}/usage/?${query}`;
  return { owner, admin, member, outsider, ws, url };
}

const novRange = 'from=2026-11-01&to=2026-11-30';

describe('GET usage/', () => {
  it('groups by model for the owner: calls, tokens and cost, most expensive first', async () => {
    const { owner, url } = await setup();
    const res = await t.get(url(`group_by=model&${novRange}`), owner);
    expect(res.statusCode, res.body).toBe(200);
    expect(res.json()).toEqual({
      count: 4,
      next: null,
      previous: null,
      group_by: 'model',
      from: '2026-11-01T00:00:00.000Z',
      to: '2026-12-01T00:00:00.000Z',
      results: [
        { key: 'gpt-4.1', calls: 1, input_tokens: 100, output_tokens: 10, cost: 0.5 },
        { key: 'gpt-4.1-mini', calls: 2, input_tokens: 120, output_tokens: 12, cost: 0.03 },
        { key: 'whisper-1', calls: 1, input_tokens: 0, output_tokens: 0, cost: 0.006 },
        { key: 'text-embedding-3-small', calls: 1, input_tokens: 1000, output_tokens: 0, cost: 0.00002 },
      ],
    });
  });

  it('groups by day, kind and user (with who the user is; 0 is no user)', async () => {
    const { admin, owner, member, url } = await setup();
    const days = (await t.get(url(`group_by=day&${novRange}`), admin)).json();
    expect(days.results.map((r: { key: string; calls: number }) => [r.key, r.calls])).toEqual([
      ['2026-11-01', 2],
      ['2026-11-02', 2],
      ['2026-11-03', 1],
    ]);
    const kinds = (await t.get(url(`group_by=kind&${novRange}`), admin)).json();
    expect(kinds.results.map((r: { key: string }) => r.key)).toEqual(['chat', 'transcription', 'embedding']);
    const users = (await t.get(url(`group_by=user&${novRange}`), admin)).json();
    expect(users.results).toEqual([
      { key: String(owner.id), user: { id: owner.id, email: owner.email, name: 'Olive' }, calls: 1, input_tokens: 100, output_tokens: 10, cost: 0.5 },
      { key: String(member.id), user: { id: member.id, email: member.email, name: '=HYPERLINK("x")' }, calls: 2, input_tokens: 120, output_tokens: 12, cost: 0.03 },
      { key: String(admin.id), user: { id: admin.id, email: admin.email, name: 'Adam' }, calls: 1, input_tokens: 0, output_tokens: 0, cost: 0.006 },
      { key: '0', user: null, calls: 1, input_tokens: 1000, output_tokens: 0, cost: 0.00002 },
    ]);
  });

  it('counts partial days at either edge exactly (instants as bounds)', async () => {
    const { owner, url } = await setup();
    const res = await t.get(url('group_by=day&from=2026-11-01T12:00:00Z&to=2026-11-02T10:30:00%2B00:00'), owner);
    expect(res.json().results).toEqual([
      { key: '2026-11-01', calls: 1, input_tokens: 50, output_tokens: 5, cost: 0.01 },
      { key: '2026-11-02', calls: 1, input_tokens: 70, output_tokens: 7, cost: 0.02 },
    ]);
  });

  it('counts a deleted user’s calls as no user, whole days and partial ones alike', async () => {
    const { owner, member, url } = await setup();
    await t.deps.database.db.delete(users).where(eq(users.id, member.id));
    // Nov 1 12:00 to Nov 3: the member's Nov 1 call comes from the ledger, the Nov 2 one from the daily totals.
    const res = (await t.get(url('group_by=user&from=2026-11-01T12:00:00Z&to=2026-11-03'), owner)).json();
    expect(res.results.find((r: { key: string }) => r.key === String(member.id))).toBeUndefined();
    expect(res.results.find((r: { key: string }) => r.key === '0')).toEqual({
      key: '0',
      user: null,
      calls: 3,
      input_tokens: 1120,
      output_tokens: 12,
      cost: 0.03002,
    });
  });

  it('shows a member only their own calls', async () => {
    const { member, url } = await setup();
    const res = (await t.get(url(`group_by=user&${novRange}`), member)).json();
    expect(res.count).toBe(1);
    expect(res.results[0]).toMatchObject({ key: String(member.id), calls: 2, cost: 0.03 });
    const models = (await t.get(url(`group_by=model&${novRange}`), member)).json();
    expect(models.results.map((r: { key: string }) => r.key)).toEqual(['gpt-4.1-mini']);
  });

  it('refuses outsiders and anonymous callers with 403', async () => {
    const { outsider, url } = await setup();
    expect((await t.get(url('group_by=day'), outsider)).statusCode).toBe(403);
    expect((await t.get(url('group_by=day'), null)).statusCode).toBe(403);
  });

  it('paginates with limit and offset', async () => {
    const { owner, url } = await setup();
    const first = (await t.get(url(`group_by=model&${novRange}&limit=3`), owner)).json();
    expect(first.count).toBe(4);
    expect(first.results).toHaveLength(3);
    expect(first.next).toContain('offset=3');
    const last = (await t.get(url(`group_by=model&${novRange}&limit=3&offset=3`), owner)).json();
    expect(last.results.map((r: { key: string }) => r.key)).toEqual(['text-embedding-3-small']);
    expect(last.next).toBeNull();
    const beyond = (await t.get(url(`group_by=model&${novRange}&limit=3&offset=9`), owner)).json();
    expect(beyond).toMatchObject({ count: 4, results: [] });
  });

  it('answers ?format=csv with a header row, every group, and a file name', async () => {
    const { admin, owner, member, url } = await setup();
    const res = await t.get(url(`group_by=user&${novRange}&format=csv&limit=1`), admin);
    expect(res.statusCode).toBe(200);
    expect(res.headers['content-type']).toBe('text/csv; charset=utf-8');
    expect(res.headers['content-disposition']).toContain('usage-user-2026-11-01-2026-12-01.csv');
    expect(res.body.split('\r\n')).toEqual([
      'user_id,email,name,calls,input_tokens,output_tokens,cost',
      `${owner.id},${owner.email},Olive,1,100,10,0.50000000`,
      // A name a spreadsheet would run as a formula is neutralised and quoted.
      `${member.id},${member.email},"'=HYPERLINK(""x"")",2,120,12,0.03000000`,
      `${admin.id},${admin.email},Adam,1,0,0,0.00600000`,
      '0,,,1,1000,0,0.00002000',
      '',
    ]);
    const days = await t.get(url(`group_by=day&${novRange}&format=csv`), owner);
    expect(days.body.split('\r\n')[0]).toBe('day,calls,input_tokens,output_tokens,cost');
  });

  it.each([
    ['group_by=month', 'validation_error'],
    ['from=yesterday', 'validation_error'],
    ['format=xml', 'validation_error'],
    ['from=2026-11-10&to=2026-11-01', 'invalid_range'],
    ['from=2025-01-01&to=2026-11-01', 'range_too_long'],
  ])('refuses %s with 400 %s', async (query, code) => {
    const { owner, url } = await setup();
    const res = await t.get(url(query), owner);
    expect(res.statusCode).toBe(400);
    expect(res.json()).toMatchObject({ detail: expect.any(String), code });
  });

  it('defaults to the last 30 days by day', async () => {
    const owner = await newUser(t);
    const ws = await newWorkspace(t, owner);
    await ledger(ws.id, [
      { user: owner, cost: 0.1, at: new Date(Date.now() - 3600_000).toISOString() },
      { user: owner, cost: 0.1, at: new Date(Date.now() - 31 * 86_400_000).toISOString() },
    ]);
    const res = (await t.get(`/api/workspaces/${ws.id}/usage/`, owner)).json();
    expect(res.group_by).toBe('day');
    expect(Date.parse(res.to) - Date.parse(res.from)).toBe(30 * 86_400_000);
    expect(res.results.reduce((sum: number, r: { calls: number }) => sum + r.calls, 0)).toBe(1);
  });
});
