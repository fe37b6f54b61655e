/** A body read up to a byte limit, for both adapters' write. */
import { Readable, Transform } from 'node:stream';
import { FileTooLargeError } from './file-storage';

/**
 * `body` through a counter that fails with FileTooLargeError past `maxBytes` (or with an error when
 * the body breaks off before its end). The body itself is never destroyed, only unpiped and left
 * unread: a caller reading an HTTP request can still answer it (413) afterwards.
 */
export function limitedBody(
  body: NodeJS.ReadableStream,
  maxBytes: number,
): { stream: Readable; bytes: () => number; release: () => void } {
  let bytes = 0;
  let ended = false;
  const counter = new Transform({
    transform(chunk: Buffer, _encoding, done) {
      bytes += chunk.length;
      done(bytes > maxBytes ? new FileTooLargeError(maxBytes) : null, chunk);
    },
  });
  const onError = (e: Error) => counter.destroy(e);
  const onEnd = () => (ended = true);
  const onClose = () => ended || counter.destroy(new Error('the body broke off before its end'));
  body.on('error', onError);
  body.once('end', onEnd);
  body.once('close', onClose);
  body.pipe(counter);
  const release = () => {
    body.unpipe(counter);
    body.off('error', onError);
    body.off('end', onEnd);
    body.off('close', onClose);
    if (!ended) body.pause();
  };
  return { stream: counter, bytes: () => bytes, release };
}
