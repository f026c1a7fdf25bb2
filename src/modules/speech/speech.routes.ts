import type { FastifyRequest } from 'fastify';
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { currentUser } from '../../platform/auth.js';
import { formParts, registerMultipart } from '../../platform/multipart.js';
import { MAX_AUDIO_BYTES, MULTIPART_OVERHEAD_BYTES } from './audio.js';
import { speechErrors } from './speech.errors.js';
import { transcriptionOut, translateBody, translatePathParams, translationOut } from './speech.schemas.js';
import type { SpeechService } from './speech.service.js';

const tags = ['speech'];

/**
 * After a refusal part-way through the body, the rest is read and dropped (never buffered) so
 * the reply goes out at once and the connection stays usable.
 */
function discardUnread(request: FastifyRequest): void {
  const raw = request.raw;
  if (raw.readableEnded) return;
  raw.unpipe();
  raw.resume();
}

export const speechRoutes: FastifyPluginAsyncZod<{ speech: SpeechService }> = async (app, { speech }) => {
  // fileSize is exactly the limit: the parser cuts a larger file and marks it truncated (413).
  // Parts pass the input gate as they arrive (platform/multipart.ts).
  await registerMultipart(app, { files: 1, fileSize: MAX_AUDIO_BYTES, fields: 10, fieldSize: 1024, parts: 12 });

  app.post(
    '/api/transcribe-audio/',
    {
      schema: {
        tags,
        consumes: ['multipart/form-data'],
        response: { 200: transcriptionOut },
      },
    },
    async (request) => {
      const declared = Number(request.headers['content-length']);
      // Refused before a byte is read: no 25 MB file fits in this body.
      if (declared > MAX_AUDIO_BYTES + MULTIPART_OVERHEAD_BYTES) throw speechErrors.audioTooLarge();
      if (!request.isMultipart()) throw speechErrors.notMultipart();
      try {
        return await speech.transcribe(currentUser(request).id, {
          parts: formParts(request),
          ...(Number.isFinite(declared) && declared > 0 ? { declaredBytes: declared } : {}),
        });
      } catch (error) {
        discardUnread(request);
        throw error;
      }
    },
  );

  app.post(
    '/api/workspaces/:ws/translate/',
    { schema: { tags, params: translatePathParams, body: translateBody, response: { 200: translationOut } } },
    async (request) => speech.translate(currentUser(request).id, request.params.ws, request.body),
  );
};
