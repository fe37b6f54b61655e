/**
 * The Node HTTP server's own settings and its shutdown, apart from any web framework: they act on
 * sockets and requests as Node sees them.
 */
import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import { Server as NetServer, type Socket } from 'node:net';
import type { Duplex } from 'node:stream';
import { ApiError } from './errors/api-error';

/** Let keep-alive connections from a load balancer outlive its idle timeout (no resets mid-request). */
export const KEEP_ALIVE_TIMEOUT_MS = 65_000;
/** A client sends its request headers at once; Node's default is 60 s. */
export const HEADERS_TIMEOUT_MS = 20_000;
/**
 * Time to receive a whole request, body included, once its headers are in (Node's default is 5
 * minutes): a body over 1 MB is refused anyway. Checked every quarter of the bound, so a late
 * request is cut 60 to 75 s after its headers, with a 408 request_timeout.
 */
export const REQUEST_TIMEOUT_MS = 60_000;
/**
 * The same bound for an upload (isUploadRequest): 100 MB in an hour is 28 KB/s. The guard against
 * a sender that stalls is the storage's idle bound (UPLOAD_IDLE_TIMEOUT_MS, 408 after 30 s without
 * a byte); this one only ends a sender that trickles for ever.
 */
export const UPLOAD_REQUEST_TIMEOUT_MS = 60 * 60_000;
/**
 * When stopping, how long a request may still take to arrive (its body trickling in) before its
 * connection is closed: requests already received are answered, within the shutdown grace. Idle
 * keep-alive connections are left to their client for as long: a load balancer that closes its
 * idle connections sooner (docker/nginx.conf: 4 s) never sends a request on one the instance is
 * closing, which it could not pass on to another instance (a POST may have arrived).
 */
export const DRAIN_RECEIVE_GRACE_MS = 5_000;

const netClose = NetServer.prototype.close;

export interface ConnectionTracker {
  /**
   * Stops accepting connections and resolves once every connection has closed. A connection
   * closes as soon as its answer is sent (`Connection: close`); one its client leaves idle is
   * closed after `receiveGraceMs`, as is one still receiving a request (headers or body) then
   * (`onCut` is told how many of those, when there are any).
   */
  drain(receiveGraceMs?: number, onCut?: (count: number) => void): Promise<void>;
}

/** How long a request's body may take to arrive, by kind of request. */
export interface RequestBounds {
  /** Every request but an upload (REQUEST_TIMEOUT_MS). */
  requestMs: number;
  /** An upload (UPLOAD_REQUEST_TIMEOUT_MS). */
  uploadMs: number;
}

/**
 * The requests that carry a file's bytes: a PUT to the disk adapter's upload URL
 * (src/storage/disk-upload.route.ts), and the respondent page's multipart post to /f/{publicId}.
 */
export function isUploadRequest(req: IncomingMessage): boolean {
  const url = req.url ?? '';
  if (req.method === 'PUT') return url.startsWith('/api/v1/uploads/');
  return (
    req.method === 'POST' && url.startsWith('/f/') && /^multipart\/form-data/i.test(req.headers['content-type'] ?? '')
  );
}

/**
 * Sets the server's timeouts and its answer to a late request, and tracks connections for drain().
 * The request timeout is this function's, not Node's (whose `requestTimeout` is one bound for every
 * request): each request gets its bound when its headers are in, by kind (`bounds`).
 */
export function configureServer(
  server: Server,
  bounds: RequestBounds = { requestMs: REQUEST_TIMEOUT_MS, uploadMs: UPLOAD_REQUEST_TIMEOUT_MS },
): ConnectionTracker {
  server.keepAliveTimeout = KEEP_ALIVE_TIMEOUT_MS;
  server.headersTimeout = HEADERS_TIMEOUT_MS;
  server.requestTimeout = 0; // bounded below, per request
  /** As Node itself does: answer only where no answer has begun on this connection, then close it. */
  const refuse = (socket: Duplex, answer: string) => {
    const inFlight = (socket as Socket & { _httpMessage?: ServerResponse })._httpMessage;
    if (socket.writable && !inFlight?.headersSent) socket.write(answer);
    socket.destroy();
  };
  // The only answer to a refused request: the web framework's own (Fastify answers in its own JSON shape) is replaced.
  server.removeAllListeners('clientError');
  server.on('clientError', (err: NodeJS.ErrnoException, socket: Duplex) =>
    err.code === 'ECONNRESET' ? socket.destroy() : refuse(socket, clientErrorResponse(err)),
  );

  /** Each connection's request whose body may still be arriving, and when it must have arrived. */
  const receiving = new Map<Socket, { req: IncomingMessage; deadline: number; boundMs: number }>();
  const check = setInterval(
    () => {
      const now = Date.now();
      for (const [socket, r] of receiving) {
        if (r.req.complete) receiving.delete(socket);
        else if (now >= r.deadline) {
          receiving.delete(socket);
          refuse(socket, requestTimeoutResponse(r.boundMs));
        }
      }
    },
    Math.max(10, Math.min(bounds.requestMs, bounds.uploadMs) / 4),
  ).unref();
  server.once('close', () => clearInterval(check));

  const sockets = new Set<Socket>();
  /** The request each connection is answering; none between requests. */
  const current = new Map<Socket, IncomingMessage>();
  const answers = new Map<IncomingMessage, ServerResponse>();
  let draining = false;
  /**
   * While draining, an answer closes its connection (`Connection: close`): a load balancer's
   * keep-alive connection is not reused for a request the stopping instance would then drop.
   */
  const closeAfter = (res: ServerResponse) => {
    if (!res.headersSent) res.setHeader('Connection', 'close');
  };
  server.on('connection', (socket: Socket) => {
    sockets.add(socket);
    socket.once('close', () => {
      sockets.delete(socket);
      current.delete(socket);
      receiving.delete(socket);
    });
  });
  server.on('request', (req: IncomingMessage, res: ServerResponse) => {
    const boundMs = isUploadRequest(req) ? bounds.uploadMs : bounds.requestMs;
    receiving.set(req.socket, { req, deadline: Date.now() + boundMs, boundMs });
    current.set(req.socket, req);
    answers.set(req, res);
    if (draining) closeAfter(res);
    res.once('close', () => answers.delete(req));
    res.once('finish', () => {
      if (current.get(req.socket) === req) current.delete(req.socket);
    });
  });

  return {
    drain(receiveGraceMs = DRAIN_RECEIVE_GRACE_MS, onCut) {
      draining = true;
      for (const res of answers.values()) closeAfter(res);
      return new Promise<void>((resolve) => {
        let sweep: NodeJS.Timeout | undefined;
        const cut = setTimeout(() => {
          server.closeIdleConnections();
          sweep = setInterval(() => server.closeIdleConnections(), 50);
          // `complete`: the whole request has arrived, so its answer is coming; anything else is a
          // client still sending (headers or a trickled body) that would hold the shutdown up.
          let cut = 0;
          for (const socket of sockets) {
            if (socket.destroyed || current.get(socket)?.complete) continue;
            socket.destroy();
            cut++;
          }
          if (cut > 0) onCut?.(cut);
        }, receiveGraceMs);
        // net.Server's close: stops listening and keeps the connections (http.Server's would close
        // the idle ones at once, racing a load balancer that is sending a request on one).
        netClose.call(server, () => {
          clearInterval(sweep);
          clearTimeout(cut);
          resolve();
        });
      });
    },
  };
}

/** The raw 408 request_timeout envelope for a request whose body did not arrive within `boundMs`. */
export function requestTimeoutResponse(boundMs: number): string {
  const hint = `Send the whole request, body included, within ${boundMs / 1000} seconds; retry on a new connection.`;
  const body = JSON.stringify(new ApiError('request_timeout', { hint }).toJSON());
  return [
    'HTTP/1.1 408 Request Timeout',
    'Content-Type: application/json; charset=utf-8',
    `Content-Length: ${Buffer.byteLength(body)}`,
    'X-Content-Type-Options: nosniff',
    'Connection: close',
    '',
    body,
  ].join('\r\n');
}

/**
 * The raw HTTP answer to a request Node refused before any handler saw it: the JSON envelope for
 * headers that took too long (408), Node's own bare answers otherwise (431, 413, 400).
 */
export function clientErrorResponse(err: NodeJS.ErrnoException): string {
  switch (err.code) {
    case 'ERR_HTTP_REQUEST_TIMEOUT':
      return requestTimeoutResponse(REQUEST_TIMEOUT_MS);
    case 'HPE_HEADER_OVERFLOW':
      return 'HTTP/1.1 431 Request Header Fields Too Large\r\nConnection: close\r\n\r\n';
    case 'HPE_CHUNK_EXTENSIONS_OVERFLOW':
      return 'HTTP/1.1 413 Payload Too Large\r\nConnection: close\r\n\r\n';
    default:
      return 'HTTP/1.1 400 Bad Request\r\nConnection: close\r\n\r\n';
  }
}
