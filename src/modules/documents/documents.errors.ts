import { ConflictError, NotFoundError, PaymentRequiredError, PermissionDeniedError, ValidationError } from '../../platform/errors.js';

const MB = 1024 * 1024;

export const documentErrors = {
  notFound: () => new NotFoundError('Document not found.'),
  notUploader: () =>
    new PermissionDeniedError('Only the uploader or a workspace owner or admin can change this document.', 'permission_denied'),
  fileTooLarge: (limit: number) =>
    new PaymentRequiredError(`The file is larger than the ${Math.floor(limit / MB)} MB per file that the plan allows.`, 'file_too_large'),
  documentLimit: (limit: number) =>
    new PaymentRequiredError(`The plan allows at most ${limit} documents in a workspace.`, 'document_limit'),
  storageLimit: (limit: number) =>
    new PaymentRequiredError(`The plan's storage of ${Math.floor(limit / MB)} MB would be exceeded.`, 'storage_limit'),
  uploadMissing: () =>
    new ValidationError('No uploaded file was found; PUT the file to the upload URL first.', { upload: ['No uploaded file was found.'] }, 'upload_missing'),
  sizeMismatch: (declared: number, stored: number) =>
    new ValidationError(
      `The uploaded file has ${stored} bytes, not the ${declared} declared; it was discarded, PUT the right file again.`,
      { size: [`Declared ${declared} bytes, received ${stored}.`] },
      'upload_size_mismatch',
    ),
  checksumMismatch: () =>
    new ValidationError(
      'The uploaded file does not match checksum_sha256; it was discarded, PUT the right file again.',
      { checksum_sha256: ['The uploaded file does not match this checksum.'] },
      'checksum_mismatch',
    ),
  notAnUpload: () => new ConflictError('This document was not uploaded through a presigned URL.', 'not_an_upload'),
  notStored: () => new ConflictError('The document has no stored file yet.', 'file_not_available'),
  unknownKbs: (ids: string[]) =>
    new ValidationError(
      'Some knowledge bases do not exist in this workspace or you may not add documents to them.',
      { knowledge_base_ids: [`Unknown or read-only knowledge bases: ${ids.join(', ')}`] },
      'invalid_knowledge_bases',
    ),
};
