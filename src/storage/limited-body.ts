/** A body read up to a byte limit and an idle bound, for both adapters' write. */
import { Readable, Transform } from 'node:stream';
import { FileTooLargeError, UploadIdleError } from './file-storage';

export interface BodyLimits {
  maxBytes: number;
  /** No byte for this long (while the store keeps up) fails the write with UploadIdleError; 0: no bound. */
  idleMs?: number;
  /** How many first bytes to keep (a copy) for the type check. */
  startBytes?: number;
}

/**
 * `body` through a counter that fails with FileTooLargeError past `maxBytes`, with UploadIdleError
 * when the sender stops sending, or with an error when the body breaks off before its end. The
 * body itself is never destroyed, only unpiped and left unread: a caller reading an HTTP request
 * can still answer it (413, 408) afterwards.
 */
export function limitedBody(
  body: NodeJS.ReadableStream,
  limits: BodyLimits,
): { stream: Readable; bytes: () => number; start: () => Buffer; release: () => void } {
  const { maxBytes, idleMs = 0, startBytes = 0 } = limits;
  let bytes = 0;
  let ended = false;
  const start: Buffer[] = [];
  let kept = 0;
  let timer: NodeJS.Timeout | undefined;
  let stopped = false;
  // Refreshed on every chunk (cheaper than a new timer each time).
  const arm = () => {
    if (idleMs > 0 && !stopped) timer = timer ? timer.refresh() : setTimeout(idle, idleMs);
  };
  const stop = () => {
    stopped = true;
    clearTimeout(timer);
  };
  const idle = () => {
    // Waiting for the store (the counter is full), not for the sender: no fault of the sender.
    if (counter.writableNeedDrain) return arm();
    counter.destroy(new UploadIdleError(idleMs));
  };
  const counter = new Transform({
    transform(chunk: Buffer, _encoding, done) {
      bytes += chunk.length;
      if (bytes > maxBytes) return done(new FileTooLargeError(maxBytes));
      if (kept < startBytes) {
        const part = chunk.subarray(0, startBytes - kept);
        start.push(Buffer.from(part));
        kept += part.length;
      }
      arm();
      done(null, chunk);
    },
  });
  const onError = (e: Error) => counter.destroy(e);
  const onEnd = () => {
    ended = true;
    stop();
  };
  const onClose = () => ended || counter.destroy(new Error('the body broke off before its end'));
  counter.once('close', stop);
  body.on('error', onError);
  body.once('end', onEnd);
  body.once('close', onClose);
  body.pipe(counter);
  arm();
  const release = () => {
    stop();
    body.unpipe(counter);
    body.off('error', onError);
    body.off('end', onEnd);
    body.off('close', onClose);
    if (!ended) body.pause();
  };
  return { stream: counter, bytes: () => bytes, start: () => Buffer.concat(start), release };
}
