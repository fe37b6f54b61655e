import { Readable } from 'node:stream';
import { ApiError } from '../common/errors/api-error';
import { FilePart, readMultipartPost } from './multipart-post';

const BOUNDARY = 'formwork-test';
const headers = { 'content-type': `multipart/form-data; boundary=${BOUNDARY}` };
const limits = { bytes: 10_000, fields: 10, files: 3 };

/** The post, one part per chunk, a pause between them (as a network delivers them). */
function body(parts: Array<{ name: string; filename?: string; value: string }>): Readable {
  const chunks = parts.map(
    (p) =>
      `--${BOUNDARY}\r\nContent-Disposition: form-data; name="${p.name}"` +
      (p.filename ? `; filename="${p.filename}"\r\nContent-Type: application/pdf` : '') +
      `\r\n\r\n${p.value}\r\n`,
  );
  return Readable.from(
    (async function* () {
      for (const chunk of [...chunks, `--${BOUNDARY}--\r\n`]) {
        yield Buffer.from(chunk);
        await new Promise((resolve) => setTimeout(resolve, 20));
      }
    })(),
  );
}

/** onFile that keeps each file as `id-<n>`, and fails (413) on a file named big.pdf. */
function files() {
  let n = 0;
  return async (part: FilePart) => {
    for await (const chunk of part.body) void chunk;
    if (part.filename === 'big.pdf') throw new ApiError('payload_too_large', { message: 'too large' });
    return `id-${++n}`;
  };
}

describe('readMultipartPost', () => {
  it('answers the fields and the values onFile kept, discarding nothing', async () => {
    const discard = jest.fn(async () => undefined);
    const raw = await readMultipartPost(
      headers,
      body([
        { name: 'name', value: 'Ada' },
        { name: 'cv', filename: 'a.pdf', value: '%PDF' },
        { name: 'cv', filename: 'b.pdf', value: '%PDF' },
      ]),
      limits,
      files(),
      discard,
    );
    expect(raw).toEqual({ fields: { name: 'Ada', cv: ['id-1', 'id-2'] }, cut: false });
    expect(discard).not.toHaveBeenCalled();
  });

  it('refused as a whole (one file too large among several): the files kept before are discarded at once', async () => {
    const discard = jest.fn(async () => undefined);
    const post = readMultipartPost(
      headers,
      body([
        { name: 'cv', filename: 'a.pdf', value: '%PDF' },
        { name: 'photos', filename: 'p.pdf', value: '%PDF' },
        { name: 'photos', filename: 'big.pdf', value: '%PDF' },
      ]),
      limits,
      files(),
      discard,
    );
    await expect(post).rejects.toMatchObject({ code: 'payload_too_large' });
    expect(discard).toHaveBeenCalledWith(['id-1', 'id-2']);
  });

  it('too many files: the ones read before the limit are discarded', async () => {
    const discard = jest.fn(async () => undefined);
    const post = readMultipartPost(
      headers,
      body([1, 2, 3].map((i) => ({ name: 'photos', filename: `${i}.pdf`, value: '%PDF' }))),
      { ...limits, files: 2 },
      files(),
      discard,
    );
    await expect(post).rejects.toMatchObject({
      code: 'payload_too_large',
      message: expect.stringMatching(/too many files/),
    });
    expect(discard).toHaveBeenCalledWith(['id-1', 'id-2']);
  });

  /** onFile that reads one chunk of big.pdf and leaves the rest (a file over its limit), keeping nothing. */
  const refusesBig = async (part: FilePart) => {
    if (part.filename !== 'big.pdf') {
      for await (const chunk of part.body) void chunk;
      return 'id-small';
    }
    await new Promise<void>((resolve) => part.body.once('readable', resolve));
    part.body.read(10);
    return undefined;
  };
  const withBigFile = () =>
    body([
      { name: 'name', value: 'Ada' },
      { name: 'cv', filename: 'big.pdf', value: 'x'.repeat(5000) },
      { name: 'role', value: 'engineer' },
      { name: 'photo', filename: 'p.pdf', value: '%PDF' },
    ]);

  it('reads past a file left unread (over its limit), so the fields after it are known (issue 45)', async () => {
    const post = await readMultipartPost(headers, withBigFile(), { ...limits, drain: 10_000 }, refusesBig);
    expect(post).toEqual({ fields: { name: 'Ada', role: 'engineer', photo: 'id-small' }, cut: false });
  });

  it('past the drain bound the post is cut there: the fields before it, nothing discarded', async () => {
    const discard = jest.fn(async () => undefined);
    const post = await readMultipartPost(headers, withBigFile(), { ...limits, drain: 1000 }, refusesBig, discard);
    expect(post).toEqual({ fields: { name: 'Ada' }, cut: true });
    expect(discard).not.toHaveBeenCalled();
  });
});
