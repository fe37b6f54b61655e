import { ApiError } from '../common/errors/api-error';
import { LONG_READ_RETRY_AFTER_S, LongReads } from './long-reads';

describe('LongReads', () => {
  const refusal = (fn: () => unknown) => {
    try {
      fn();
    } catch (err) {
      return err as ApiError;
    }
    throw new Error('not refused');
  };

  it('lets each workspace run its cap at once, refuses the next with 429 and Retry-After, and counts workspaces apart', () => {
    const reads = new LongReads({ longReadsPerWorkspace: 2, databasePoolSize: 10 });
    const a1 = reads.take('a');
    reads.take('a');
    const err = refusal(() => reads.take('a'));
    expect(err.status).toBe(429);
    expect(err.code).toBe('rate_limited');
    expect(err.headers).toEqual({ 'Retry-After': String(LONG_READ_RETRY_AFTER_S) });
    expect(reads.runningFor('a')).toBe(2); // the refused one took nothing
    reads.take('b');
    reads.take('b');
    expect(reads.runningFor('b')).toBe(2);
    a1();
    expect(reads.runningFor('a')).toBe(1);
    reads.take('a');
    expect(reads.runningFor('a')).toBe(2);
  });

  it('gives a slot back once, however often its giver is called', () => {
    const reads = new LongReads({ longReadsPerWorkspace: 2, databasePoolSize: 10 });
    const first = reads.take('a');
    reads.take('a');
    first();
    first();
    first();
    expect(reads.runningFor('a')).toBe(1);
  });

  it('run gives the slot back when the read fails, and refuses before starting the read when full', async () => {
    const reads = new LongReads({ longReadsPerWorkspace: 1, databasePoolSize: 10 });
    await expect(reads.run('a', () => Promise.reject(new Error('statement timeout')))).rejects.toThrow(
      'statement timeout',
    );
    expect(reads.runningFor('a')).toBe(0);
    let release!: () => void;
    const running = reads.run('a', () => new Promise<void>((r) => (release = r)));
    const started = jest.fn();
    await expect(reads.run('a', async () => started())).rejects.toMatchObject({ code: 'rate_limited' });
    expect(started).not.toHaveBeenCalled();
    release();
    await running;
    expect(reads.runningFor('a')).toBe(0);
  });

  it('keeps two connections of the pool for other calls: the instance runs at most the pool size less 2 (at least 1)', () => {
    const reads = new LongReads({ longReadsPerWorkspace: 2, databasePoolSize: 5 });
    expect(reads.perInstance).toBe(3);
    const first = reads.take('a');
    reads.take('a');
    reads.take('b');
    const err = refusal(() => reads.take('c')); // c has run none, but the instance is full
    expect(err.status).toBe(429);
    expect(err.code).toBe('rate_limited');
    expect(err.message).toMatch(/This server already runs 3/);
    expect(err.headers).toEqual({ 'Retry-After': String(LONG_READ_RETRY_AFTER_S) });
    expect(reads.runningFor('c')).toBe(0);
    first();
    reads.take('c');
    expect(reads.runningFor('c')).toBe(1);
    // A pool of 1 or 2 still runs one long read at a time.
    expect(new LongReads({ longReadsPerWorkspace: 2, databasePoolSize: 1 }).perInstance).toBe(1);
  });

  it("within a job's slot, the job's own long reads take no other; another workspace's and work outside it still count", async () => {
    const reads = new LongReads({ longReadsPerWorkspace: 1, databasePoolSize: 10 });
    const giveBack = reads.take('a');
    await reads.within('a', async () => {
      await Promise.resolve();
      reads.take('a')(); // the held slot: no refusal, nothing counted
      expect(reads.runningFor('a')).toBe(1);
      reads.take('b');
      expect(reads.runningFor('b')).toBe(1);
    });
    expect(refusal(() => reads.take('a')).status).toBe(429);
    giveBack();
    expect(reads.runningFor('a')).toBe(0);
  });
});
