import type { AccountOut, UserOut } from './users.shapes.js';
import type { UserRow } from './users.repo.js';

export function toUserOut(user: { id: number; email: string; name: string }): UserOut {
  return { id: user.id, email: user.email, name: user.name };
}

/** The caller's own account, with whether its current address is proven. */
export function toAccountOut(user: Pick<UserRow, 'id' | 'email' | 'name' | 'emailVerifiedAt'>): AccountOut {
  return { ...toUserOut(user), email_verified: user.emailVerifiedAt !== null };
}
