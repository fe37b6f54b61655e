import { inBatches, MAX_BATCHES } from './in-batches';

describe('inBatches', () => {
  const steps = (counts: number[]) => {
    const calls: number[] = [];
    const step = async () => {
      const n = counts[calls.length] ?? 0;
      calls.push(n);
      return n;
    };
    return { step, calls };
  };

  it('runs until a batch comes back short, and adds up what each changed', async () => {
    const { step, calls } = steps([10, 10, 3, 10]);
    expect(await inBatches(step, 10)).toBe(23);
    expect(calls).toEqual([10, 10, 3]);
  });

  it('stops after MAX_BATCHES full batches (the next run goes on)', async () => {
    const { step, calls } = steps(Array(MAX_BATCHES + 5).fill(10));
    expect(await inBatches(step, 10)).toBe(10 * MAX_BATCHES);
    expect(calls).toHaveLength(MAX_BATCHES);
  });

  it('stops before the next batch once asked to', async () => {
    const { step, calls } = steps([10, 10, 10]);
    expect(await inBatches(step, 10, () => calls.length === 2)).toBe(20);
    expect(calls).toHaveLength(2);
  });
});
