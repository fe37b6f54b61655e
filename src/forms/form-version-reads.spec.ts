import type { DataSource } from 'typeorm';
import { transactionPooledClient } from '../database/pooler';
import { FormVersionReads } from './form-version-reads';
import type { FormKey, FormsRepository, FormVersion } from './forms.repository';
import { versionKey } from './forms.repository';

/** A repository whose statements the test answers one by one. */
function fakeRepository() {
  const statements: Array<{
    keys: Array<Required<FormKey>>;
    answer: (versions: Record<string, number>) => void;
    fail: (err: Error) => void;
  }> = [];
  const repo = {
    findVersions: (_manager: unknown, keys: Array<Required<FormKey>>) =>
      new Promise<Map<string, FormVersion>>((resolve, reject) =>
        statements.push({
          keys,
          answer: (versions) =>
            resolve(
              new Map(
                keys
                  .filter((k) => versions[k.publicId] !== undefined)
                  .map((k) => [versionKey(k), { id: `id-${k.publicId}`, version: versions[k.publicId] }]),
              ),
            ),
          fail: reject,
        }),
      ),
  };
  return { repo: repo as unknown as FormsRepository, statements };
}

const key = (publicId: string): Required<FormKey> => ({ workspaceId: 'w1', publicId });
/** A DataSource as FormVersionReads sees it: a direct connection, or behind a transaction pooler. */
const direct = () => ({ manager: {}, options: { url: 'postgres://db/formwork' } }) as unknown as DataSource;
const pooled = () =>
  ({
    manager: {},
    options: { url: 'postgres://pooler/formwork', extra: { Client: transactionPooledClient() } },
  }) as unknown as DataSource;
const tick = () => new Promise((r) => setImmediate(r));

describe('FormVersionReads', () => {
  it('starts a read at once, and reads that arrive while two run go together in the next statement', async () => {
    const { repo, statements } = fakeRepository();
    const reads = new FormVersionReads(direct(), repo);
    const a = reads.read(key('a'));
    const b = reads.read(key('b'));
    const waiting = [reads.read(key('c')), reads.read(key('d')), reads.read(key('c'))];
    await tick();
    expect(statements.map((s) => s.keys.map((k) => k.publicId))).toEqual([['a'], ['b']]);

    // The first statement also "sees" c at version 1: c asked after it started, so it is not answered from it.
    statements[0].answer({ a: 3, c: 1 });
    await expect(a).resolves.toEqual({ id: 'id-a', version: 3 });
    await tick();
    expect(statements.map((s) => s.keys.map((k) => k.publicId))).toEqual([['a'], ['b'], ['c', 'd']]);
    statements[2].answer({ c: 2 });
    await expect(Promise.all(waiting)).resolves.toEqual([
      { id: 'id-c', version: 2 },
      undefined,
      { id: 'id-c', version: 2 },
    ]);
    statements[1].answer({ b: 1 });
    await expect(b).resolves.toEqual({ id: 'id-b', version: 1 });
  });

  it("gives a failed statement's error to every read it held, and the next reads a statement of their own", async () => {
    const { repo, statements } = fakeRepository();
    const reads = new FormVersionReads(direct(), repo);
    const held = [reads.read(key('a')), reads.read(key('b')), reads.read(key('c'))];
    await tick();
    statements[1].fail(new Error('Connection terminated unexpectedly'));
    await expect(held[1]).rejects.toThrow('Connection terminated unexpectedly');
    await tick();
    statements[2].fail(new Error('Connection terminated unexpectedly'));
    await expect(held[2]).rejects.toThrow('Connection terminated unexpectedly');
    const later = reads.read(key('a'));
    await tick();
    expect(statements).toHaveLength(4);
    statements[3].answer({ a: 5 });
    statements[0].answer({ a: 5 });
    await expect(Promise.all([held[0], later])).resolves.toEqual([
      { id: 'id-a', version: 5 },
      { id: 'id-a', version: 5 },
    ]);
  });

  it('behind a transaction pooler runs one statement at a time: every read that arrives meanwhile goes in the next', async () => {
    const { repo, statements } = fakeRepository();
    const reads = new FormVersionReads(pooled(), repo);
    const a = reads.read(key('a'));
    const waiting = [reads.read(key('b')), reads.read(key('c'))];
    await tick();
    expect(statements.map((s) => s.keys.map((k) => k.publicId))).toEqual([['a']]);

    // b and c asked after a's statement started: they are not answered from it.
    statements[0].answer({ a: 1, b: 1 });
    await expect(a).resolves.toEqual({ id: 'id-a', version: 1 });
    await tick();
    expect(statements.map((s) => s.keys.map((k) => k.publicId))).toEqual([['a'], ['b', 'c']]);
    statements[1].answer({ b: 2, c: 1 });
    await expect(Promise.all(waiting)).resolves.toEqual([
      { id: 'id-b', version: 2 },
      { id: 'id-c', version: 1 },
    ]);
  });
});
