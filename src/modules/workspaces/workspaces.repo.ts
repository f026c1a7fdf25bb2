import { count, eq } from 'drizzle-orm';
import type { DbOrTx } from '../../db/client.js';
import { workspaces } from './workspaces.table.js';

export async function countOwnedWorkspaces(db: DbOrTx, userId: number): Promise<number> {
  const [row] = await db.select({ n: count() }).from(workspaces).where(eq(workspaces.ownerId, userId));
  return row?.n ?? 0;
}
