import type { EntityManager } from 'typeorm';
import type { Block } from '../forms/blocks';
import { ResponseStatsRepository } from './response-stats.repository';
import { countedValues } from './summarize';

// That a filtered summary counts exactly what a recount does is tested against PostgreSQL and the
// embedded database (test/e2e/response-filters.e2e-spec.ts, summaries.e2e-spec.ts); this spec checks
// how often its one statement evaluates the filter.
describe('ResponseStatsRepository.readFilteredSummary', () => {
  it('writes the filter into its statement twice, however many text questions the form has', async () => {
    const filter = { sql: '(r.answers @> $2::jsonb /* the filter */)', params: ['form-id', '{}'] };
    for (const texts of [1, 12]) {
      const blocks: Block[] = [
        ...Array.from({ length: texts }, (_, i) => ({
          id: `b_t${i}`,
          type: 'short_text' as const,
          title: `T${i}`,
          required: false,
        })),
        { id: 'b_r', type: 'rating', title: 'R', required: false, max: 5 },
      ];
      const statements: string[] = [];
      const manager = {
        query: async (sql: string) => {
          statements.push(sql);
          return [{ total: 0, recorded: 0, first: null, last: null, aggregates: [] }];
        },
      } as unknown as EntityManager;
      await new ResponseStatsRepository().readFilteredSummary(manager, filter, blocks, countedValues);
      // JIT off for the transaction (withoutJit), then the read: one statement.
      expect(statements).toHaveLength(2);
      expect(statements[0]).toContain(`set_config('jit', 'off', true)`);
      // Once in the scan that takes the aggregates, once in the walk the latest answers share.
      expect(statements[1].split('/* the filter */')).toHaveLength(3);
    }
  });
});
