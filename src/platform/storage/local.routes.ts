import type { Readable } from 'node:stream';
import type { FastifyInstance } from 'fastify';
import { AppError, PayloadTooLargeError } from '../errors.js';
import { attachmentDisposition } from './keys.js';
import { DOWNLOAD_PATH, type LocalStorage, UPLOAD_PATH } from './local.js';

interface Options {
  storage: LocalStorage;
}

type Wildcard = { Params: { '*': string }; Querystring: Record<string, string> };

/**
 * The HTTP side of local storage: the app itself plays S3 for the URLs that
 * `createUploadUrl` / `createDownloadUrl` sign. The signature is the credential
 * (`auth: 'none'`). Register this plugin in its own encapsulated context: it replaces the
 * body parsers so the upload streams to disk instead of being buffered.
 */
export async function localStorageRoutes(app: FastifyInstance, { storage }: Options): Promise<void> {
  app.removeAllContentTypeParsers();
  // Hand the raw body stream to the handler, whatever its type; size is enforced while writing.
  app.addContentTypeParser('*', (_request, payload, done) => done(null, payload));

  app.put<Wildcard>(
    `${UPLOAD_PATH}*`,
    { config: { auth: 'none' }, schema: { tags: ['files'] } },
    async (request, reply) => {
      const key = request.params['*'];
      const grant = storage.verifyUpload(key, request.query, request.headers['content-type']);
      const declared = Number(request.headers['content-length']);
      if (Number.isFinite(declared) && declared > grant.maxBytes) {
        throw new PayloadTooLargeError(`The upload is larger than the allowed ${grant.maxBytes} bytes.`);
      }
      try {
        // The parser above passes the stream through; with an empty body Fastify may not call it.
        const body = (request.body as Readable | undefined) ?? request.raw;
        // Single use: an object already stored under the key (or its placeholder) is never replaced.
        await storage.write(key, body, { contentType: grant.contentType, maxBytes: grant.maxBytes, once: true });
      } catch (error) {
        // The rest of the body was not read: close the connection rather than drain it.
        if (error instanceof PayloadTooLargeError || (error instanceof AppError && error.status === 409)) reply.header('connection', 'close');
        throw error;
      }
      return reply.code(200).send();
    },
  );

  app.get<Wildcard>(
    `${DOWNLOAD_PATH}*`,
    { config: { auth: 'none' }, schema: { tags: ['files'] } },
    async (request, reply) => {
      const key = request.params['*'];
      const grant = storage.verifyDownload(key, request.query);
      const { stream, info } = await storage.open(key);
      return reply
        .header('content-type', grant.contentType ?? info.contentType ?? 'application/octet-stream')
        .header('content-length', info.size)
        .header('content-disposition', attachmentDisposition(grant.filename))
        .header('x-content-type-options', 'nosniff')
        .header('cache-control', 'private, no-store')
        .send(stream);
    },
  );
}
