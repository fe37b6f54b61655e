/**
 * The Node HTTP server's own settings and its shutdown, apart from any web framework: they act on
 * sockets and requests as Node sees them.
 */
import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import type { Duplex } from 'node:stream';
import { ApiError } from './errors/api-error';

/** Let keep-alive connections from a load balancer outlive its idle timeout (no resets mid-request). */
export const KEEP_ALIVE_TIMEOUT_MS = 65_000;
/** A client sends its request headers at once; Node's default is 60 s. */
export const HEADERS_TIMEOUT_MS = 20_000;
/**
 * Time to receive a whole request, body included (Node's default is 5 minutes): a body over 1 MB
 * is refused anyway. Node checks every 30 s, so a late request is cut 60 to 90 s after it began,
 * with a 408 request_timeout.
 */
export const REQUEST_TIMEOUT_MS = 60_000;
/**
 * When stopping, how long a request may still take to arrive (its body trickling in) before its
 * connection is closed: requests already received are answered, within the shutdown grace.
 */
export const DRAIN_RECEIVE_GRACE_MS = 5_000;

export interface ConnectionTracker {
  /**
   * Stops accepting connections and resolves once every connection has closed. Idle keep-alive
   * connections close at once, busy ones as soon as their answer is sent; a connection still
   * receiving a request (headers or body) after `receiveGraceMs` is closed then (`onCut` is told
   * how many, when there are any).
   */
  drain(receiveGraceMs?: number, onCut?: (count: number) => void): Promise<void>;
}

/** Sets the server's timeouts and its answer to a late request, and tracks connections for drain(). */
export function configureServer(server: Server): ConnectionTracker {
  server.keepAliveTimeout = KEEP_ALIVE_TIMEOUT_MS;
  server.headersTimeout = HEADERS_TIMEOUT_MS;
  server.requestTimeout = REQUEST_TIMEOUT_MS;
  // The only answer to a refused request: the web framework's own (Fastify answers in its own JSON shape) is replaced.
  server.removeAllListeners('clientError');
  server.on('clientError', (err: NodeJS.ErrnoException, socket: Duplex) => {
    const inFlight = (socket as Socket & { _httpMessage?: ServerResponse })._httpMessage;
    // As Node itself does: answer only where no answer has begun on this connection, then close it.
    if (socket.writable && err.code !== 'ECONNRESET' && !inFlight?.headersSent) socket.write(clientErrorResponse(err));
    socket.destroy();
  });

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
    });
  });
  server.on('request', (req: IncomingMessage, res: ServerResponse) => {
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
        const sweep = setInterval(() => server.closeIdleConnections(), 50);
        const cut = setTimeout(() => {
          // `complete`: the whole request has arrived, so its answer is coming; anything else is a
          // client still sending (headers or a trickled body) that would hold the shutdown up.
          let cut = 0;
          for (const socket of sockets) {
            if (current.get(socket)?.complete) continue;
            socket.destroy();
            cut++;
          }
          if (cut > 0) onCut?.(cut);
        }, receiveGraceMs);
        server.close(() => {
          clearInterval(sweep);
          clearTimeout(cut);
          resolve();
        });
        server.closeIdleConnections();
      });
    },
  };
}

/**
 * The raw HTTP answer to a request Node refused before any handler saw it: the JSON envelope for a
 * request that took too long (408), Node's own bare answers otherwise (431, 413, 400).
 */
export function clientErrorResponse(err: NodeJS.ErrnoException): string {
  switch (err.code) {
    case 'ERR_HTTP_REQUEST_TIMEOUT': {
      const body = JSON.stringify(new ApiError('request_timeout').toJSON());
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
    case 'HPE_HEADER_OVERFLOW':
      return 'HTTP/1.1 431 Request Header Fields Too Large\r\nConnection: close\r\n\r\n';
    case 'HPE_CHUNK_EXTENSIONS_OVERFLOW':
      return 'HTTP/1.1 413 Payload Too Large\r\nConnection: close\r\n\r\n';
    default:
      return 'HTTP/1.1 400 Bad Request\r\nConnection: close\r\n\r\n';
  }
}
