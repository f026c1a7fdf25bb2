/** What the policy knows about a knowledge base and the caller. */
export interface KbFacts {
  createdBy: number | null;
  isSharedWithWorkspace: boolean;
}

export interface KbViewer {
  userId: number;
  /** Workspace owner or admin. */
  isOwnerOrAdmin: boolean;
  /** The strongest team rule the caller holds on this knowledge base, through any of their teams. */
  teamPermission: 'read' | 'write' | null;
}

/** Read: creator, owner/admins, everyone when shared with the workspace, teams with a rule. */
export const canReadKb = (kb: KbFacts, viewer: KbViewer) =>
  viewer.isOwnerOrAdmin || kb.createdBy === viewer.userId || kb.isSharedWithWorkspace || viewer.teamPermission !== null;

/** Write (update, add/remove documents): creator, owner/admins, teams with a `write` rule. */
export const canWriteKb = (kb: KbFacts, viewer: KbViewer) =>
  viewer.isOwnerOrAdmin || kb.createdBy === viewer.userId || viewer.teamPermission === 'write';

/** Delete and team-access rules: the creator and the workspace owner/admins. */
export const canManageKb = (kb: KbFacts, viewer: KbViewer) => viewer.isOwnerOrAdmin || kb.createdBy === viewer.userId;

/** A document is visible to its uploader, owner/admins, and readers of a knowledge base holding it. */
export const canSeeDocument = (doc: { uploadedBy: number | null }, viewer: { userId: number; isOwnerOrAdmin: boolean }, inReadableKb: boolean) =>
  viewer.isOwnerOrAdmin || doc.uploadedBy === viewer.userId || inReadableKb;
