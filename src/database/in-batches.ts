/** At most this many statements per run of a batched purge or sweep; the next run goes on. */
export const MAX_BATCHES = 20;

/**
 * Runs `step` (one statement over at most `batchSize` rows; how many rows it changed) until a
 * batch comes back short, MAX_BATCHES ran, or `stop()` says so; the total. The purges of expired
 * rows work this way: short statements, so no lock is held long, and no run without an end.
 */
export async function inBatches(
  step: () => Promise<number>,
  batchSize: number,
  stop: () => boolean = () => false,
): Promise<number> {
  let total = 0;
  for (let i = 0; i < MAX_BATCHES && !stop(); i++) {
    const count = await step();
    total += count;
    if (count < batchSize) break;
  }
  return total;
}
