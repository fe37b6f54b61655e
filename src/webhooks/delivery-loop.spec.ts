import { DeliveryLoop } from './delivery-loop';
import { AttemptRecord, ClaimedDelivery, DeliveryLoopRepository } from './delivery-loop.repository';

type Item = { claimed: ClaimedDelivery; attempt: AttemptRecord };

/** The record of a batch of successes when the database refuses one of its rows. */
describe('DeliveryLoop records a batch of successes', () => {
  const item = (id: string, responseBody: string): Item => ({
    claimed: { id } as ClaimedDelivery,
    attempt: { attemptedAt: new Date(), statusCode: 200, durationMs: 3, error: null, responseBody },
  });

  it('row by row when the batch statement fails, the refused row without its answer and with a note', async () => {
    const recorded: Item[] = [];
    const repository = {
      // As PostgreSQL does with a text it cannot store: the whole statement fails.
      recordDelivered: async (items: Item[]) => {
        if (items.some((i) => i.attempt.responseBody === 'refused')) throw new Error('invalid byte sequence');
        recorded.push(...items);
      },
    } as unknown as DeliveryLoopRepository;
    const warnings: string[] = [];
    const loop = new DeliveryLoop(repository, { allowPrivateUrls: true, retryBaseMs: 100 }, (m) => warnings.push(m));
    const recordBatch = (loop as unknown as { recordBatch: (items: Item[]) => Promise<void> }).recordBatch.bind(loop);

    await recordBatch([item('a', 'ok'), item('b', 'refused'), item('c', 'ok')]);

    expect(recorded.map((i) => i.claimed.id).sort()).toEqual(['a', 'b', 'c']);
    expect(recorded.find((i) => i.claimed.id === 'a')!.attempt).toMatchObject({ statusCode: 200, responseBody: 'ok' });
    expect(recorded.find((i) => i.claimed.id === 'b')!.attempt).toMatchObject({
      statusCode: 200,
      responseBody: null,
      error: 'the answer could not be stored (invalid byte sequence)',
    });
    expect(warnings).toHaveLength(1);
  });
});
