import { eq, sql } from 'drizzle-orm';
import { describe, expect, it } from 'vitest';
import { queryRows } from '../../db/client.js';
import { type TestApp, useTestApp } from '../../../test/support/app.js';
import { createKb, LIFTED_THROTTLES, readyTextDocument } from '../../../test/support/documents.js';
import { newUser, newWorkspace, type TestUser } from '../../../test/support/factories.js';
import { documentChunks, documents } from '../documents/documents.table.js';
import { parseSearchQuery } from './knowledge-search.js';

/*
 * Search languages: each document's language is detected at ingestion, its chunks are indexed
 * with the matching text-search configuration (CJK segmented into words for `simple`), and a
 * query is searched in every configuration among the chat's documents.
 */

const t = useTestApp({ ...LIFTED_THROTTLES });

/**
 * One document per language, and a query in that language that matches it only through the
 * language's stemming or segmentation (checked against the `simple` configuration below).
 */
const LANGUAGES = [
  {
    language: 'eng',
    config: 'english',
    text: 'Customers who cancelled their annual subscriptions receive refunds within thirty days. Monthly plans are not refunded but can be stopped at any time.',
    query: 'cancelling a subscription',
  },
  {
    language: 'deu',
    config: 'german',
    text: 'Die Rückerstattung für Jahresabonnements erfolgt innerhalb von dreißig Tagen. Monatliche Verträge werden nicht erstattet, können aber jederzeit von den Kunden gekündigt werden.',
    query: 'Kunde',
  },
  {
    language: 'fra',
    config: 'french',
    text: 'Les remboursements des abonnements annuels sont effectués dans un délai de trente jours. Les forfaits mensuels ne sont pas remboursés mais peuvent être annulés à tout moment.',
    query: 'remboursement',
  },
  {
    language: 'spa',
    config: 'spanish',
    text: 'Los reembolsos de las suscripciones anuales se realizan en un plazo de treinta días. Los planes mensuales no se reembolsan, pero se pueden cancelar en cualquier momento.',
    query: 'suscripción',
  },
  {
    language: 'rus',
    config: 'russian',
    text: 'Возврат средств за годовые подписки осуществляется в течение тридцати дней. Ежемесячные тарифы не возвращаются, но их можно отменить в любое время.',
    query: 'подписка',
  },
  {
    language: 'cmn',
    config: 'simple',
    text: '我们的退款政策很简单。年度订阅可以在三十天内申请退款，月度订阅不退款，但可以随时取消。',
    query: '如何取消订阅',
  },
  {
    language: 'jpn',
    config: 'simple',
    text: '年間サブスクリプションは三十日以内に返金を申請できます。月額プランは返金されませんが、いつでも解約できます。',
    query: '解約する方法',
  },
] as const;

async function setup(app: TestApp) {
  const owner = await newUser(app);
  const ws = await newWorkspace(app, owner);
  return { owner, ws };
}

async function chatWith(app: TestApp, owner: TestUser, wsId: string, kbIds: string[]) {
  const chat = await app.deps.services.chats.create(owner.id, wsId, { name: 'Chat', system_prompt: '', agent_framework: 'tools', model_parameters: {} });
  const res = await app.post(`/api/workspaces/${wsId}/chats/${chat.id}/knowledge-bases/attach/`, { knowledge_base_ids: kbIds }, owner);
  expect(res.statusCode, res.body).toBe(200);
  return (query: string, limit = 6) => app.deps.services.knowledge.search({ workspaceId: wsId, chatId: chat.id, query, limit });
}

describe('documents in seven languages', () => {
  it.each(LANGUAGES)('$language: stores the language, indexes with $config and finds the document by an inflected or unspaced query', async (lang) => {
    const { owner, ws } = await setup(t);
    const kb = await createKb(t, ws.id, owner);
    const other = await readyTextDocument(t, ws.id, owner, 'Tomatoes need full sun and deep watering twice a week in the summer.', 'garden.txt', [kb.id]);
    const doc = await readyTextDocument(t, ws.id, owner, lang.text, `${lang.language}.txt`, [kb.id]);
    const db = t.deps.database.db;
    const [stored] = await db.select().from(documents).where(eq(documents.id, doc.id));
    expect({ language: stored!.language, searchConfig: stored!.searchConfig }).toEqual({ language: lang.language, searchConfig: lang.config });
    const chunks = await queryRows<{ config: string }>(db, sql`SELECT ts_config::text AS config FROM document_chunks WHERE document_id = ${doc.id}`);
    expect(chunks.map((c) => c.config)).toEqual([lang.config]);

    const search = await chatWith(t, owner, ws.id, [kb.id]);
    const hits = await search(lang.query);
    expect(hits.map((h) => h.document_id)).toEqual([doc.id]);
    expect(hits.map((h) => h.document_id)).not.toContain(other.id);

    // Control: without the language's stemming (or the segmentation) the query would not match.
    const [control] = await queryRows<{ matches: boolean }>(
      db,
      sql`SELECT to_tsvector('simple', ${lang.text}) @@ (${sql.join(
        parseSearchQuery(lang.query).words.map((w) => sql`plainto_tsquery('simple', ${w})`),
        sql` || `,
      )}) AS matches`,
    );
    expect(control!.matches).toBe(false);
  });

  it('finds a Chinese word inside a sentence without spaces, and a phrase of two words', async () => {
    const { owner, ws } = await setup(t);
    const kb = await createKb(t, ws.id, owner);
    const zh = LANGUAGES.find((l) => l.language === 'cmn')!;
    const doc = await readyTextDocument(t, ws.id, owner, zh.text, 'zh.txt', [kb.id]);
    const [chunk] = await t.deps.database.db.select().from(documentChunks).where(eq(documentChunks.documentId, doc.id));
    expect(chunk!.content).toContain('年度订阅可以在三十天内申请退款');
    expect(chunk!.searchText).toContain(' 退款 ');
    const search = await chatWith(t, owner, ws.id, [kb.id]);
    expect((await search('退款')).map((h) => h.document_id)).toEqual([doc.id]);
    expect((await search('"年度 订阅"')).map((h) => h.document_id)).toEqual([doc.id]);
    expect((await search('"订阅 年度"')).map((h) => h.document_id)).toEqual([]);
    expect(await search('股票')).toEqual([]);
  });

  it('a chat with a German and a Russian knowledge base finds documents of both, each with its own stemming', async () => {
    const { owner, ws } = await setup(t);
    const german = await createKb(t, ws.id, owner, { name: 'Deutsch' });
    const russian = await createKb(t, ws.id, owner, { name: 'Русский' });
    const de = await readyTextDocument(t, ws.id, owner, LANGUAGES[1].text, 'de.txt', [german.id]);
    const ru = await readyTextDocument(t, ws.id, owner, LANGUAGES[4].text, 'ru.txt', [russian.id]);
    const search = await chatWith(t, owner, ws.id, [german.id, russian.id]);
    expect((await search('Kunde подписка')).map((h) => h.document_id).sort()).toEqual([de.id, ru.id].sort());
    expect((await search('Kunde')).map((h) => h.document_id)).toEqual([de.id]);
    expect((await search('подписка')).map((h) => h.document_id)).toEqual([ru.id]);
  });
});

describe('languages indexed with `simple`', () => {
  it('Korean: routed to `simple`, found by a query of its words (particles stay attached: a prefix finds the stem)', async () => {
    const { owner, ws } = await setup(t);
    const kb = await createKb(t, ws.id, owner);
    const text = '연간 구독은 삼십 일 이내에 환불을 신청할 수 있습니다. 월간 요금제는 환불되지 않지만 언제든지 해지할 수 있습니다.';
    const other = await readyTextDocument(t, ws.id, owner, 'Tomatoes need full sun and deep watering twice a week in the summer.', 'garden.txt', [kb.id]);
    const doc = await readyTextDocument(t, ws.id, owner, text, 'ko.txt', [kb.id]);
    const db = t.deps.database.db;
    const [stored] = await db.select().from(documents).where(eq(documents.id, doc.id));
    expect({ language: stored!.language, searchConfig: stored!.searchConfig }).toEqual({ language: 'kor', searchConfig: 'simple' });
    const [chunk] = await queryRows<{ config: string; search_text: string | null }>(
      db,
      sql`SELECT ts_config::text AS config, search_text FROM document_chunks WHERE document_id = ${doc.id}`,
    );
    expect(chunk!.config).toBe('simple');
    expect(chunk!.search_text).toContain('해지할 수 있습니다');
    const search = await chatWith(t, owner, ws.id, [kb.id]);
    expect((await search('언제든지 해지할 수 있나요')).map((h) => h.document_id)).toEqual([doc.id]);
    expect((await search('환불*')).map((h) => h.document_id)).toEqual([doc.id]);
    expect(await search('주식 투자')).toEqual([]);
    expect((await search('tomatoes')).map((h) => h.document_id)).toEqual([other.id]);
  });

  it('a language without a PostgreSQL configuration (Polish) falls back to `simple` and is still searchable', async () => {
    const { owner, ws } = await setup(t);
    const kb = await createKb(t, ws.id, owner);
    const text = 'Zwrot pieniędzy za roczne subskrypcje następuje w ciągu trzydziestu dni. Miesięczne plany nie podlegają zwrotowi, ale można je anulować w dowolnym momencie.';
    const doc = await readyTextDocument(t, ws.id, owner, text, 'pl.txt', [kb.id]);
    const db = t.deps.database.db;
    const [stored] = await db.select().from(documents).where(eq(documents.id, doc.id));
    expect({ language: stored!.language, searchConfig: stored!.searchConfig }).toEqual({ language: 'pol', searchConfig: 'simple' });
    const chunks = await queryRows<{ config: string; search_text: string | null }>(
      db,
      sql`SELECT ts_config::text AS config, search_text FROM document_chunks WHERE document_id = ${doc.id}`,
    );
    expect(chunks).toEqual([{ config: 'simple', search_text: null }]);
    const search = await chatWith(t, owner, ws.id, [kb.id]);
    // Words as written (lower-cased), no stemming: another inflection needs a prefix.
    expect((await search('Subskrypcje roczne')).map((h) => h.document_id)).toEqual([doc.id]);
    expect((await search('"roczne subskrypcje"')).map((h) => h.document_id)).toEqual([doc.id]);
    expect(await search('subskrypcja')).toEqual([]);
    expect((await search('subskrypc*')).map((h) => h.document_id)).toEqual([doc.id]);
  });
});

describe('the document API', () => {
  it('reports the language detected at ingestion (GET, the list and a knowledge base\'s documents)', async () => {
    const { owner, ws } = await setup(t);
    const kb = await createKb(t, ws.id, owner);
    const de = LANGUAGES.find((l) => l.language === 'deu')!;
    const doc = await readyTextDocument(t, ws.id, owner, de.text, 'vertrag.txt', [kb.id]);
    const base = `/api/workspaces/${ws.id}/documents/`;
    const got = await t.get(`${base}${doc.id}/`, owner);
    expect(got.statusCode, got.body).toBe(200);
    expect(got.json()).toMatchObject({ id: doc.id, processing_status: 'ready', language: 'deu' });
    expect((await t.get(base, owner)).json().results).toEqual([expect.objectContaining({ id: doc.id, language: 'deu' })]);
    const inKb = (await t.get(`/api/workspaces/${ws.id}/knowledge-bases/${kb.id}/documents/`, owner)).json().results;
    expect(inKb).toEqual([expect.objectContaining({ id: doc.id, language: 'deu' })]);
  });
});

describe('query syntax', () => {
  const ANNUAL = 'Annual subscriptions are refunded within thirty days of the purchase.';
  const MONTHLY = 'Monthly subscriptions are never refunded, but they can be cancelled.';

  async function twoDocuments() {
    const { owner, ws } = await setup(t);
    const kb = await createKb(t, ws.id, owner);
    const annual = await readyTextDocument(t, ws.id, owner, ANNUAL, 'annual.txt', [kb.id]);
    const monthly = await readyTextDocument(t, ws.id, owner, MONTHLY, 'monthly.txt', [kb.id]);
    return { annual, monthly, search: await chatWith(t, owner, ws.id, [kb.id]) };
  }
  const ids = (hits: Array<{ document_id: string }>) => hits.map((h) => h.document_id).sort();

  it('plain words are OR-ed, and a row with all of them ranks first', async () => {
    const { annual, monthly, search } = await twoDocuments();
    expect(ids(await search('refund subscriptions'))).toEqual([annual.id, monthly.id].sort());
    const hits = await search('annual refund purchase');
    expect(hits[0]!.document_id).toBe(annual.id);
  });

  it('"quoted phrases" must appear as written', async () => {
    const { annual, search } = await twoDocuments();
    expect(ids(await search('"annual subscriptions"'))).toEqual([annual.id]);
    expect(await search('"subscriptions annual"')).toEqual([]);
    expect(ids(await search('refunded "thirty days"'))).toEqual([annual.id]);
  });

  it('-word excludes rows that contain it', async () => {
    const { annual, monthly, search } = await twoDocuments();
    expect(ids(await search('subscriptions -monthly'))).toEqual([annual.id]);
    expect(ids(await search('subscriptions -annual'))).toEqual([monthly.id]);
    expect(await search('-subscriptions')).toEqual([]);
  });

  it('word* matches words that start with it', async () => {
    const { annual, monthly, search } = await twoDocuments();
    expect(ids(await search('subscr*'))).toEqual([annual.id, monthly.id].sort());
    expect(await search('subscr')).toEqual([]);
    expect(ids(await search('purch*'))).toEqual([annual.id]);
    expect(ids(await search('cancel* -annual'))).toEqual([monthly.id]);
  });

  it('hostile query text never errors and never injects', async () => {
    const { annual, search } = await twoDocuments();
    const hostile = [
      '"',
      '""',
      '"unclosed phrase',
      "'; DROP TABLE documents; --",
      '\\\\\\" \\\' \\',
      '& | ! : * ( ) <-> <2> :* !! ||',
      'subscr*:* & !annual',
      "annual' | 'x':*",
      '-',
      '--',
      '*',
      '-*',
      'a*b* -"x y" "-z" or OR',
      ')(*&^%$#@!',
      '\u0000 nul',
      '退款* -退 "年度',
      'x'.repeat(5000),
      Array.from({ length: 200 }, (_, i) => `w${i}`).join(' '),
    ];
    for (const query of hostile) {
      await expect(search(query), query).resolves.toEqual(expect.any(Array));
    }
    expect(ids(await search("annual' | 'x':*"))).toEqual([annual.id]);
    const [count] = await queryRows<{ n: number }>(t.deps.database.db, sql`SELECT count(*)::int AS n FROM documents WHERE id = ${annual.id}`);
    expect(count!.n).toBe(1);
  });

  it('parses websearch syntax into words, prefixes, phrases and exclusions', () => {
    expect(parseSearchQuery('refund "annual plan" -monthly subscr* or 退款政策')).toEqual({
      words: ['refund', '退款', '政策'],
      prefixes: ['subscr'],
      phrases: ['annual plan'],
      excluded: ['monthly'],
    });
    expect(parseSearchQuery('a*b* -"x y" * -')).toEqual({ words: ['a*b'], prefixes: [], phrases: ['x y'], excluded: [] });
  });
});
