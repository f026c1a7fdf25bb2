import { randomUUID } from 'node:crypto';
import { finished, type Readable, Transform } from 'node:stream';
import type { FilePart, ImagePart, TextPart } from 'ai';
import { parseMediaType } from '../../platform/content-type.js';
import { PaymentRequiredError, ValidationError } from '../../platform/errors.js';
import type { FormPart } from '../../platform/multipart.js';
import type { ObjectStorage } from '../../platform/storage/port.js';
import type { MessageAttachment } from './messages.table.js';
import { MAX_FILES_PER_MESSAGE } from './messages.schemas.js';

export const fileTooLarge = (name: string, limit: number) =>
  new PaymentRequiredError(
    `"${name}" is larger than the ${Math.floor(limit / (1024 * 1024))} MB per file that the plan allows.`,
    'file_too_large',
  );

const TEXT_TYPES = /^(text\/|application\/(json|xml|x-ndjson|csv|markdown|x-yaml|yaml))/;
const IMAGE_TYPES = new Set(['image/png', 'image/jpeg', 'image/gif', 'image/webp']);
/** Text of one attachment given to the model, at most (characters). */
const MAX_ATTACHMENT_TEXT = 200_000;

function safeName(filename: string): string {
  const base = filename.split(/[\\/]/).pop() ?? 'file';
  const cleaned = base.replace(/[^\w.\- ()]+/g, '_').slice(0, 150).trim();
  return cleaned || 'file';
}

/** Counts bytes through a file stream and fails it as soon as it passes `limit`. */
function sizeGuard(name: string, limit: number) {
  let size = 0;
  const guard = new Transform({
    transform(chunk: Buffer, _encoding, callback) {
      size += chunk.length;
      if (size > limit) callback(fileTooLarge(name, limit));
      else callback(null, chunk);
    },
  });
  return { guard, size: () => size };
}

/**
 * Stores the files of a multipart send and collects its fields. Files stream straight to object
 * storage; one over the plan's per-file limit aborts the send (stored files are removed).
 */
export async function receiveParts(
  parts: AsyncIterable<FormPart>,
  options: { storage: ObjectStorage; keyPrefix: string; maxFileBytes: number },
): Promise<{ fields: Record<string, string>; attachments: MessageAttachment[] }> {
  const fields: Record<string, string> = {};
  const attachments: MessageAttachment[] = [];
  try {
    for await (const part of parts) {
      if (part.type === 'field') {
        fields[part.name] = part.value;
        continue;
      }
      if (part.field !== 'files') {
        part.stream.resume();
        throw new ValidationError(`Unexpected file field "${part.field}"; send attachments as "files".`, {
          [part.field]: ['Send attachments in the repeated field "files".'],
        });
      }
      if (attachments.length >= MAX_FILES_PER_MESSAGE) {
        part.stream.resume();
        throw new ValidationError(`At most ${MAX_FILES_PER_MESSAGE} files per message.`, {
          files: [`At most ${MAX_FILES_PER_MESSAGE} files per message.`],
        }, 'too_many_files');
      }
      const id = randomUUID();
      const name = safeName(part.filename);
      const contentType = part.mimetype || 'application/octet-stream';
      const key = `${options.keyPrefix}/${id}/${name}`;
      const { guard, size } = sizeGuard(name, options.maxFileBytes);
      // The guard can fail before `put` attaches its own error handling (a large first chunk while
      // put is still preparing): without a listener that 'error' would crash the process. `put`
      // still sees the error (a pipeline over an errored stream rejects with it); the rest of the
      // file is drained so the multipart parser is not left stalled.
      guard.on('error', () => part.stream.resume());
      // `pipe` does not forward errors: a body cut short inside the file (the parser destroys the
      // file stream with its error) would leave the guard, and the upload, waiting for ever.
      // `finished` also reports a stream destroyed before this line ran (on Node 24 the parser
      // does so before the part is handed over; an 'error' listener added now never fires).
      finished(part.stream, (error) => {
        if (error) guard.destroy(error);
      });
      // Tracked before the upload so a failure part-way still removes what was written.
      attachments.push({ id, name, content_type: contentType, size: 0, storage_key: key });
      await options.storage.put(key, part.stream.pipe(guard), { contentType });
      attachments[attachments.length - 1]!.size = size();
    }
  } catch (error) {
    await Promise.allSettled(attachments.map((a) => options.storage.delete(a.storage_key)));
    throw error;
  }
  return { fields, attachments };
}

async function readAll(stream: Readable, limit: number): Promise<Buffer> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of stream) {
    const buffer = Buffer.isBuffer(chunk) ? chunk : Buffer.from(chunk as Uint8Array);
    chunks.push(buffer);
    size += buffer.length;
    if (size > limit) break;
  }
  stream.destroy();
  return Buffer.concat(chunks).subarray(0, limit);
}

/**
 * What the model receives for one attachment: text documents as text, images as image parts
 * when the model accepts images, anything else as a short note naming the file.
 */
export async function attachmentToParts(
  attachment: MessageAttachment,
  options: { storage: ObjectStorage; supportsImages: boolean },
): Promise<Array<TextPart | ImagePart | FilePart>> {
  const type = parseMediaType(attachment.content_type).mime;
  if (TEXT_TYPES.test(type) || /\.(md|markdown|txt|csv|json|ya?ml|xml|log)$/i.test(attachment.name)) {
    const bytes = await readAll(await options.storage.get(attachment.storage_key), MAX_ATTACHMENT_TEXT * 4);
    const text = bytes.toString('utf8').slice(0, MAX_ATTACHMENT_TEXT);
    return [{ type: 'text', text: `Attached file "${attachment.name}":\n${text}` }];
  }
  if (IMAGE_TYPES.has(type) && options.supportsImages) {
    const bytes = await readAll(await options.storage.get(attachment.storage_key), 20 * 1024 * 1024);
    return [{ type: 'image', image: bytes, mediaType: type }];
  }
  return [{ type: 'text', text: `[Attached file "${attachment.name}" (${type}) cannot be shown to this model.]` }];
}

