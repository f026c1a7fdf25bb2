import { and, asc, count, desc, eq, getTableColumns, inArray, type SQL, sql } from 'drizzle-orm';
import { newId } from '../../db/columns.js';
import { commitWithoutFlushWait, type DbOrTx, preparedStatement, type StatementParam } from '../../db/client.js';
import { holdCtes, type HoldValues } from '../billing/index.js';
import { agentTasks, messages } from './messages.table.js';

export type MessageRow = typeof messages.$inferSelect;
export type NewMessage = typeof messages.$inferInsert;
export type AgentTaskRow = typeof agentTasks.$inferSelect;

/** Every message of a chat, oldest first (the whole tree, all branches). */
export async function listMessagesOfChat(db: DbOrTx, chatId: string): Promise<MessageRow[]> {
  return db.select().from(messages).where(eq(messages.sessionId, chatId)).orderBy(asc(messages.createdAt), asc(messages.id));
}

export async function listMessagesPage(db: DbOrTx, chatId: string, limit: number, offset: number) {
  const where = eq(messages.sessionId, chatId);
  const [rows, [total]] = await Promise.all([
    db.select().from(messages).where(where).orderBy(asc(messages.createdAt), asc(messages.id)).limit(limit).offset(offset),
    db.select({ n: count() }).from(messages).where(where),
  ]);
  return { rows, count: total?.n ?? 0 };
}

export async function findMessage(db: DbOrTx, chatId: string, messageId: string): Promise<MessageRow | undefined> {
  const [row] = await db
    .select()
    .from(messages)
    .where(and(eq(messages.sessionId, chatId), eq(messages.id, messageId)));
  return row;
}

/** The newest saved reply of a stream (a stream id may be reused: the latest use). */
export async function findReplyOfStream(db: DbOrTx, chatId: string, streamId: string): Promise<MessageRow | undefined> {
  const [row] = await db
    .select()
    .from(messages)
    .where(and(eq(messages.sessionId, chatId), eq(messages.streamId, streamId), eq(messages.role, 'assistant')))
    .orderBy(desc(messages.createdAt), desc(messages.id))
    .limit(1);
  return row;
}

/** The chat's newest reply, under which a new user message hangs (a scalar subquery). */
const newestReplyOf = (chatId: SQL) => sql`(SELECT id FROM ${messages} WHERE ${messages.sessionId} = ${chatId} AND ${messages.role} = 'assistant'
    ORDER BY ${messages.createdAt} DESC, ${messages.id} DESC LIMIT 1)`;

const messageColumns = Object.entries(getTableColumns(messages));
/**
 * Every column of `messages` by name, for the raw statements' RETURNING: a prepared statement
 * that returned `*` would fail ("cached plan must not change result type") in a running process
 * once a migration added a column, until its connection was replaced.
 */
const messageColumnList = (prefix = '') => sql.raw(messageColumns.map(([, column]) => `${prefix}"${column.name}"`).join(', '));

/** A message as drizzle maps it, from a raw statement's row (column names, driver values). */
function messageOfRaw(raw: Record<string, unknown>): MessageRow {
  const row: Record<string, unknown> = {};
  for (const [key, column] of messageColumns) {
    const value = raw[column.name];
    row[key] = value === null || value === undefined ? null : column.mapFromDriverValue(value);
  }
  return row as MessageRow;
}

/**
 * The CTE `path`: the rows of a message path, each with its `depth` (`depth` for `leaf`, one more
 * per ancestor), walked up from `leaf` by parent. Each step is an index lookup carrying the whole
 * row, so the statement never scans the table (an `id IN (walk)` around it had the planner
 * hash-join the whole table at every step while the table was small).
 */
const pathCte = (leaf: SQL, depth: 0 | 1) => sql`path AS (
      SELECT m.id, m.parent_id, m.role, m.content, m.attachments, ${sql.raw(String(depth))} AS depth FROM messages m WHERE m.id = ${leaf}
      UNION ALL
      SELECT m.id, m.parent_id, m.role, m.content, m.attachments, p.depth + 1 FROM messages m JOIN path p ON m.id = p.parent_id WHERE p.depth < 10000
    )`;

/** A message on a path, as a model call needs it. */
export type PathMessage = Pick<MessageRow, 'id' | 'parentId' | 'role' | 'content' | 'attachments'>;

/**
 * The CTE `path` as one JSON array of PathMessage, the first message first: one value for the
 * driver to parse, instead of a row per message with every column (dates and JSON included).
 */
const pathJson = sql`(SELECT coalesce(json_agg(json_build_object('id', p.id, 'parentId', p.parent_id, 'role', p.role,
      'content', p.content, 'attachments', p.attachments) ORDER BY p.depth DESC), '[]') FROM path p)`;

const pathStatement = preparedStatement<{ path: PathMessage[] }>(
  (p) => sql`WITH RECURSIVE ${pathCte(sql`${p('messageId')}::uuid`, 0)} SELECT ${pathJson} AS path`,
);

/** The branch from the first message down to `messageId`, in conversation order (one statement). */
export const findPath = async (db: DbOrTx, messageId: string): Promise<PathMessage[]> => (await pathStatement(db, { messageId }))[0]?.path ?? [];

/**
 * The CTEs `inserted` (a user message under the chat's newest reply, inserted once per row of
 * `from`, or once) and `path` (its ancestors). Its commit does not wait for the WAL flush.
 */
const userMessageCtes = (p: StatementParam, from?: SQL) => sql`inserted AS (
      INSERT INTO messages (id, session_id, role, content, author_id, attachments, parent_id)
      SELECT CASE WHEN ${commitWithoutFlushWait} THEN ${p('id')}::uuid END, ${p('chatId')}::uuid, ${p('role')}, ${p('content')}, ${p('authorId')}::integer, ${p('attachments')}::jsonb,
        ${newestReplyOf(sql`${p('chatId')}::uuid`)}${from ? sql` FROM ${from}` : sql``}
      RETURNING ${messageColumnList()}
    ), ${pathCte(sql`(SELECT parent_id FROM inserted)`, 1)}`;

/**
 * The insert of insertUnderNewestReply and, in the same statement, the inserted message's
 * ancestors (`path`, as JSON). The parent is the newest reply in the statement's own snapshot,
 * so this path is exactly the message's: nothing can land in between (a branch read beside the
 * insert had to be checked against the parent, and was a statement of its own before the model
 * call).
 */
const insertUnderNewestReplyStatement = preparedStatement<Record<string, unknown> & { path: PathMessage[] }>(
  (p) => sql`WITH RECURSIVE ${userMessageCtes(p)}
    SELECT ${messageColumnList('inserted.')}, ${pathJson} AS path FROM inserted`,
);

/**
 * insertUnderNewestReplyStatement with billing's hold of the turn's credit in the same
 * statement: the message is inserted only when the credit was held (the hold's CTE
 * `reservation` has its row), so a refused send leaves nothing, and a send that fails here
 * holds nothing.
 */
const insertHoldingStatement = preparedStatement<Record<string, unknown> & { path: PathMessage[]; hold_id: string }>(
  (p) => sql`WITH RECURSIVE ${holdCtes(p)}, ${userMessageCtes(p, sql`reservation`)}
    SELECT reservation.id AS hold_id, ${messageColumnList('inserted.')}, ${pathJson} AS path FROM inserted, reservation`,
);

export type UserMessageValues = Pick<NewMessage, 'sessionId' | 'role' | 'content' | 'authorId' | 'attachments'>;

const userMessageValues = (values: UserMessageValues) => ({
  id: newId(),
  chatId: values.sessionId,
  role: values.role,
  content: values.content ?? '',
  authorId: values.authorId ?? null,
  attachments: JSON.stringify(values.attachments ?? []),
});

function storedOf(row: Record<string, unknown> & { path: PathMessage[] }): { message: MessageRow; path: PathMessage[] } {
  const message = messageOfRaw(row);
  return { message, path: [...row.path, message] };
}

/**
 * Inserts a user message under the chat's newest reply (the parent is found in the same
 * statement) and returns it with its path: the branch from the first message down to it, in
 * conversation order, the message last. Its commit does not wait for the WAL flush
 * (commitWithoutFlushWait): every way a turn ends commits synchronously before its caller hears
 * the outcome (the reply and `done`, the JSON answer, the credit given back, the queued agent
 * task), which flushes this row too. A database crash (and restart) in the middle of a turn can
 * lose it: the reply then cannot be saved (its parent is gone) and the stream ends with an
 * error, never having told the client the message was stored; other readers may have listed it
 * meanwhile. The wait was ~0.3 ms of a streamed send's time to first delta here.
 */
export async function insertUnderNewestReply(db: DbOrTx, values: UserMessageValues): Promise<{ message: MessageRow; path: PathMessage[] }> {
  const [row] = await insertUnderNewestReplyStatement(db, userMessageValues(values));
  return storedOf(row!);
}

/**
 * insertUnderNewestReply and billing's hold (`hold`, CreditService.admitWith's values) in one
 * statement: the message, its path and the hold's id; undefined, with nothing written, when
 * the hold was refused.
 */
export async function insertUnderNewestReplyHolding(db: DbOrTx, hold: HoldValues, values: UserMessageValues) {
  const [row] = await insertHoldingStatement(db, [hold, userMessageValues(values)]);
  return row && { holdId: row.hold_id, ...storedOf(row) };
}

export async function insertMessage(db: DbOrTx, values: NewMessage): Promise<MessageRow> {
  const [row] = await db.insert(messages).values(values).returning();
  return row!;
}

/** A reply as runTurn saves it. */
export type ReplyValues = Required<Pick<NewMessage, 'id' | 'sessionId' | 'role' | 'content' | 'parentId' | 'stopped' | 'usage' | 'aiModel' | 'sources' | 'streamId'>>;

/** A reply's insert, once per id (a run repeated after a crash finds the saved one). */
const insertReplyOnceStatement = preparedStatement<Record<string, unknown>>(
  (p) => sql`INSERT INTO messages (id, session_id, role, content, parent_id, stopped, usage, ai_model, sources, stream_id)
    VALUES (${p('id')}::uuid, ${p('sessionId')}::uuid, ${p('role')}, ${p('content')}, ${p('parentId')}::uuid, ${p('stopped')}::boolean,
      ${p('usage')}::jsonb, ${p('aiModel')}, ${p('sources')}::jsonb, ${p('streamId')})
    ON CONFLICT (id) DO NOTHING RETURNING ${messageColumnList()}`,
);

/** Inserts a message whose id is fixed in advance; a second insert of that id returns the first. */
export async function insertMessageOnce(db: DbOrTx, values: ReplyValues): Promise<MessageRow> {
  const [row] = await insertReplyOnceStatement(db, {
    ...values,
    usage: values.usage === null ? null : JSON.stringify(values.usage),
    sources: JSON.stringify(values.sources),
  });
  if (row) return messageOfRaw(row);
  const [existing] = await db.select().from(messages).where(eq(messages.id, values.id));
  return existing!;
}

export async function updateMessage(db: DbOrTx, messageId: string, values: Partial<NewMessage>): Promise<MessageRow> {
  const [row] = await db
    .update(messages)
    .set({ ...values, updatedAt: new Date() })
    .where(eq(messages.id, messageId))
    .returning();
  return row!;
}

/** Deletes the message; its replies (the subtree) go with it through the parent foreign key. */
export async function deleteMessage(db: DbOrTx, messageId: string): Promise<void> {
  await db.delete(messages).where(eq(messages.id, messageId));
}

// --- agent tasks --------------------------------------------------------------------------------

export async function insertAgentTask(db: DbOrTx, values: typeof agentTasks.$inferInsert): Promise<AgentTaskRow> {
  const [row] = await db.insert(agentTasks).values(values).returning();
  return row!;
}

export async function findAgentTask(db: DbOrTx, taskId: string): Promise<AgentTaskRow | undefined> {
  const [row] = await db.select().from(agentTasks).where(eq(agentTasks.id, taskId));
  return row;
}

export async function updateAgentTask(db: DbOrTx, taskId: string, values: Partial<typeof agentTasks.$inferInsert>) {
  await db
    .update(agentTasks)
    .set({ ...values, updatedAt: new Date() })
    .where(eq(agentTasks.id, taskId));
}

/** A FAILURE agent task back to PENDING (an operator's re-drive). */
export async function reopenFailedAgentTask(db: DbOrTx, taskId: string) {
  await db
    .update(agentTasks)
    .set({ status: 'PENDING', error: null, updatedAt: new Date() })
    .where(and(eq(agentTasks.id, taskId), eq(agentTasks.status, 'FAILURE')));
}

/** Updates an agent task that has not finished; nothing happens to a finished one. */
export async function updateOpenAgentTask(db: DbOrTx, taskId: string, values: Partial<typeof agentTasks.$inferInsert>) {
  await db
    .update(agentTasks)
    .set({ ...values, updatedAt: new Date() })
    .where(and(eq(agentTasks.id, taskId), inArray(agentTasks.status, ['PENDING', 'STARTED'])));
}
