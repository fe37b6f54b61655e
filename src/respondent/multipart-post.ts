/** The respondent page's multipart/form-data posts (a form with file questions, without JavaScript). */
import Busboy from '@fastify/busboy';
import type { IncomingHttpHeaders } from 'node:http';
import type { Readable } from 'node:stream';
import { ApiError } from '../common/errors/api-error';
import type { RawAnswers } from './respondent.page';

export interface MultipartLimits {
  /** Bytes of all the text fields together (the form post's limit). */
  bytes: number;
  fields: number;
  files: number;
  /**
   * Bytes of refused files (onFile kept nothing, or stopped reading: over its question's limit)
   * read and dropped, so that the fields after them are known; past it the post is cut there.
   */
  drain?: number;
}

/** A post as read: its fields, and whether it was cut (the drain bound) before its end. */
export interface MultipartPost {
  fields: RawAnswers;
  /** Read only up to a refused file: the fields after it are unknown, the rest of the body unread. */
  cut: boolean;
}

/** A file part: the field it came in, the name and type the browser gave, and its bytes (to be read once). */
export interface FilePart {
  field: string;
  filename: string;
  contentType: string;
  body: Readable;
}

/**
 * Reads a multipart post: the text fields as a form post's (repeated names become lists), and each
 * file part, in order, through `onFile`, which streams it somewhere and answers the value to keep
 * under the part's field name (an upload id), or undefined to drop it. Files are never held in
 * memory: the next part is not read until onFile has read this one. A part without a filename (a
 * file input left empty) is skipped. What onFile left unread of a part (a file refused, or over
 * its limit) is read and dropped, up to `limits.drain` bytes in all, so the fields after it are
 * still known (a page can be shown again with them); past that the post is cut there (`cut`).
 * The first error (onFile's, a limit's, a malformed body) rejects, and nothing more is read; the
 * values onFile kept until then are handed to `discard` (the post is refused as a whole, so no
 * one will name those uploads).
 */
export function readMultipartPost(
  headers: IncomingHttpHeaders,
  body: Readable,
  limits: MultipartLimits,
  onFile: (part: FilePart) => Promise<string | undefined>,
  discard: (values: string[]) => Promise<void> = async () => undefined,
): Promise<MultipartPost> {
  return new Promise((resolve, reject) => {
    const raw: RawAnswers = {};
    const add = (name: string, value: string) => {
      const had = raw[name];
      raw[name] = had === undefined ? value : [...(Array.isArray(had) ? had : [had]), value];
    };
    let textBytes = 0;
    let drained = 0;
    let failed = false;
    let files = Promise.resolve();
    const kept: string[] = [];
    const fail = (err: unknown) => {
      if (failed) return;
      failed = true;
      body.unpipe(parser);
      const error = err instanceof Error ? err : new Error(String(err));
      // After the file being read (if any) is done: its value is kept or not by then.
      void files
        .then(() => discard(kept))
        .then(
          () => reject(error),
          () => reject(error),
        );
    };
    const tooLarge = (message: string) =>
      fail(new ApiError('payload_too_large', { message, hint: 'Send only the fields of the form.' }));

    let parser: ReturnType<typeof Busboy>;
    try {
      parser = Busboy({
        headers: headers as IncomingHttpHeaders & { 'content-type': string },
        limits: { fields: limits.fields, files: limits.files, fieldSize: limits.bytes, fieldNameSize: 200 },
      });
    } catch {
      return reject(malformed());
    }
    parser.on('field', (name, value) => {
      textBytes += Buffer.byteLength(name) + Buffer.byteLength(value);
      if (textBytes > limits.bytes) return tooLarge(`The form post's answers are larger than this page takes.`);
      add(name, value);
    });
    parser.on('file', (field, stream, filename, _encoding, mimeType) => {
      if (failed || !filename) return stream.resume();
      files = files.then(async () => {
        if (failed) return void stream.resume();
        try {
          const value = await onFile({ field, filename, contentType: mimeType, body: stream });
          if (value !== undefined) kept.push(value);
          if (failed) return void stream.resume(); // failed meanwhile: discarded with the others
          if (value !== undefined) add(field, value);
          if (!(await drain(stream))) cut();
        } catch (err) {
          stream.resume();
          fail(err);
        }
      });
    });
    /** Reads and drops what is left of a part, within the drain bound: false when the bound was reached. */
    const drain = (stream: Readable) =>
      new Promise<boolean>((done) => {
        if (stream.readableEnded) return done(true);
        const onData = (chunk: Buffer) => {
          drained += chunk.length;
          if (drained <= (limits.drain ?? 0)) return;
          stream.off('data', onData);
          stream.off('end', onEnd);
          stream.pause();
          done(false);
        };
        const onEnd = () => {
          stream.off('data', onData);
          done(true);
        };
        stream.on('data', onData);
        stream.once('end', onEnd);
        stream.resume();
      });
    /** The drain bound reached: the fields so far, the rest of the body left unread. */
    const cut = () => {
      if (failed) return;
      failed = true;
      body.unpipe(parser);
      resolve({ fields: raw, cut: true });
    };
    parser.on('fieldsLimit', () => tooLarge(`The form post has too many fields (this page takes ${limits.fields}).`));
    parser.on('filesLimit', () => tooLarge(`The form post has too many files (this form takes ${limits.files}).`));
    parser.on('error', () => fail(malformed()));
    parser.on('finish', () => void files.then(() => !failed && resolve({ fields: raw, cut: false })));
    body.on('error', fail);
    body.pipe(parser);
  });
}

function malformed(): ApiError {
  return new ApiError('invalid_arguments', {
    message: 'The form post is not a valid multipart/form-data body.',
    hint: 'Send the form as the page gives it.',
  });
}
