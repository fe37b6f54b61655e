/** The disk adapter's upload endpoint: PUT {PUBLIC_URL}/api/v1/uploads/<key>?exp&size&type&sig. */
import type { FastifyPluginAsync, FastifyReply, FastifyRequest } from 'fastify';
import { ApiError } from '../common/errors/api-error';
import { sendError } from '../common/errors/api-exception.filter';
import { DiskFileStorage } from './disk-file-storage';
import { FileTooLargeError, ObjectExistsError, UploadIdleError } from './file-storage';

const NEW_URL =
  'Ask for a new upload URL (create_upload) and send the bytes to it unchanged, with the headers it gave.';

/**
 * Public (the URL is the credential), spending the IP budget like every public route. Refuses an
 * altered or expired URL and a Content-Type other than the one signed (403), and a body larger
 * than the signed size (413: at once when Content-Length says so, else where it passes the size,
 * keeping nothing), a second body for a key that has its bytes (403: they never change once
 * stored), and a sender that stops sending (408 after UPLOAD_IDLE_TIMEOUT_MS, nothing kept).
 * The uploads service (the listener) refuses, before a byte is read, a URL whose upload is gone
 * (deleted with its response or form: 404) or already has its bytes, and checks the bytes once
 * stored (size, type, markup: 422 file_refused naming the file, the bytes deleted).
 * Registered in a plugin of its own so that its catch-all body parser, which
 * hands the request over as a stream of any type, applies to this route alone.
 */
export function diskUploadRoute(storage: DiskFileStorage): FastifyPluginAsync {
  return async (instance) => {
    instance.removeAllContentTypeParsers();
    instance.addContentTypeParser('*', (_req, payload, done) => done(null, payload));
    instance.put('/api/v1/uploads/*', (req, reply) => receive(storage, req, reply));
  };
}

async function receive(storage: DiskFileStorage, req: FastifyRequest, reply: FastifyReply) {
  const key = (req.params as Record<string, string>)['*'];
  const grant = await storage.signer.verify(key, req.query as Record<string, unknown>);
  if (!grant) {
    return refuse(req, reply, 'forbidden', 'This upload URL is not valid: it was altered or not made by this service.');
  }
  if (grant.expiresAt.getTime() <= Date.now()) {
    return refuse(req, reply, 'forbidden', `This upload URL expired at ${grant.expiresAt.toISOString()}.`);
  }
  const type = req.headers['content-type']?.trim();
  if (type?.toLowerCase() !== grant.contentType.toLowerCase()) {
    return refuse(
      req,
      reply,
      'forbidden',
      `This upload URL takes Content-Type: ${grant.contentType} only (got ${type ? type.slice(0, 100) : 'none'}).`,
      `Send the header exactly as create_upload gave it: Content-Type: ${grant.contentType}.`,
    );
  }
  const tooLarge = () =>
    refuse(
      req,
      reply,
      'payload_too_large',
      `This upload URL takes at most ${grant.size} bytes: the size declared for it.`,
      'Ask for a new upload URL with the file’s exact size in bytes.',
    );
  const declared = Number(req.headers['content-length']);
  if (declared > grant.size) return tooLarge();
  const stored = () =>
    refuse(
      req,
      reply,
      'forbidden',
      'This upload already has its bytes: an upload URL takes one file, once.',
      'To send another file, ask for a new upload URL (create_upload).',
    );
  if (await storage.head(key)) return stored();
  const listener = storage.listener;
  const unwelcome = await listener?.admit(key);
  if (unwelcome) return send(req, reply, unwelcome);
  try {
    const written = await storage.write(key, req.raw, {
      contentType: grant.contentType,
      maxBytes: grant.size,
      startBytes: listener?.startBytes,
    });
    const refused = await listener?.received(key, written);
    if (refused) return send(req, reply, refused);
    return { size: written.size };
  } catch (e) {
    if (e instanceof FileTooLargeError) return tooLarge();
    if (e instanceof ObjectExistsError) return stored();
    if (e instanceof UploadIdleError)
      return refuse(
        req,
        reply,
        'request_timeout',
        `No bytes arrived for ${e.idleMs / 1000} s: the upload was cut and nothing kept.`,
        'Send the file again to the same URL, without pausing, before it expires.',
      );
    throw e;
  }
}

function refuse(
  req: FastifyRequest,
  reply: FastifyReply,
  code: 'forbidden' | 'payload_too_large' | 'request_timeout',
  message: string,
  hint = NEW_URL,
) {
  return send(req, reply, new ApiError(code, { message, hint }));
}

function send(req: FastifyRequest, reply: FastifyReply, error: ApiError) {
  // The rest of the body may be unread: the connection closes after the answer.
  reply.header('Connection', 'close');
  sendError(reply, error, req.id);
  return reply;
}
