/** Update, delete and reprocess a document: its uploader or the workspace owner/admins. */
export const canChangeDocument = (doc: { uploadedBy: number | null }, viewer: { userId: number; isOwnerOrAdmin: boolean }) =>
  viewer.isOwnerOrAdmin || doc.uploadedBy === viewer.userId;
