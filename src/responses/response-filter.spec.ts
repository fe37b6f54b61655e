import { Condition } from '../forms/conditions';
import { conditionSql } from '../forms/conditions/sql';
import {
  checkResponseFilter,
  MAX_FILTER_BYTES,
  MAX_FILTER_LEAVES,
  ResponseFilter,
  responseFilterSql,
  segmentOf,
} from './response-filter';
import { BLOCKS, rowCases } from '../../test/utils/condition-cases';

// That the SQL agrees with the evaluator is tested against PostgreSQL, on the same cases
// (test/e2e/response-filters.e2e-spec.ts); this spec checks how the SQL is written.
const form = { blocks: BLOCKS, hiddenFields: ['source'] };

describe('the condition language as SQL', () => {
  it('binds every value and name as a parameter, numbered after those already there', () => {
    const hostile = "x'); DROP TABLE responses; --";
    const params: unknown[] = ['form-id'];
    const sql = responseFilterSql(
      form,
      {
        where: {
          any: [
            { block: 'short', op: 'contains', value: hostile },
            { hidden: 'source', op: 'in', value: [hostile] },
            { block: 'short', op: 'equals', value: hostile },
          ],
        },
        since: '2026-01-01T00:00:00Z',
      },
      params,
    );
    expect(sql).not.toContain('DROP');
    expect(sql).not.toContain('b_short');
    expect(sql).not.toContain('2026');
    expect(params[0]).toBe('form-id');
    expect(params).toContain(hostile);
    // Every placeholder refers to a pushed parameter, from $2 on.
    const used = [...sql.matchAll(/\$(\d+)/g)].map((m) => Number(m[1]));
    expect(Math.min(...used)).toBe(2);
    expect(Math.max(...used)).toBe(params.length);
  });

  it('is TRUE without a filter, and joins since, until and where with AND', () => {
    expect(responseFilterSql(form, {}, [])).toBe('TRUE');
    const params: unknown[] = [];
    const sql = responseFilterSql(
      form,
      { since: '2026-01-01T00:00:00Z', until: '2026-02-01T00:00:00Z', where: { block: 'agree', op: 'answered' } },
      params,
      'x',
    );
    expect(sql).toMatch(/^x\.submitted_at >= \$1::timestamptz AND x\.submitted_at < \$2::timestamptz AND \(/);
    expect(params.slice(0, 2)).toEqual(['2026-01-01T00:00:00Z', '2026-02-01T00:00:00Z']);
  });

  it('translates every case of the language to one parenthesised expression', () => {
    for (const c of rowCases()) {
      const where = responseFilterSql(form, { where: c.where as Condition }, []);
      expect(where.startsWith('(') || where === 'false').toBe(true);
    }
    // "" is no answer: equal to nothing.
    expect(conditionSql({ block: 'b_short', op: 'equals', value: '' }, [])).toBe('false');
  });

  it('refuses to translate a condition that does not fit the form (checked again, whoever calls)', () => {
    expect(() =>
      responseFilterSql(form, { where: { block: 'rating', op: 'contains', value: 'x' } as Condition }, []),
    ).toThrow(expect.objectContaining({ code: 'invalid_arguments' }));
  });

  describe('the size bound', () => {
    const leaf = (i: number) => ({ block: 'short', op: 'contains', value: `v${i}` });
    const refused = (where: unknown) => {
      try {
        responseFilterSql(form, { where: where as Condition }, []);
      } catch (e) {
        return e as { code: string; hint: string; details: Array<{ path: string; message: string }> };
      }
      throw new Error('accepted');
    };

    it(`refuses more than ${MAX_FILTER_LEAVES} conditions with 400 invalid_arguments, naming the limit`, () => {
      const err = refused({ any: Array.from({ length: MAX_FILTER_LEAVES + 1 }, (_, i) => leaf(i)) });
      expect(err.code).toBe('invalid_arguments');
      expect(err.hint).toContain(`at most ${MAX_FILTER_LEAVES} conditions`);
      expect(err.details).toEqual([{ path: '/where', message: expect.stringContaining(`${MAX_FILTER_LEAVES + 1}`) }]);
      // Leaves under not and in nested lists count too.
      const nested = {
        all: [
          { any: Array.from({ length: MAX_FILTER_LEAVES - 5 }, (_, i) => leaf(i)) },
          { not: { any: Array.from({ length: 6 }, (_, i) => leaf(i)) } },
        ],
      };
      expect(refused(nested).code).toBe('invalid_arguments');
    });

    it(`refuses more than ${MAX_FILTER_BYTES} bytes of JSON, counted as UTF-8`, () => {
      const long = Array.from({ length: 5 }, (_, i) => `${i}`.padEnd(1000, 'é')); // 2 bytes a character
      const err = refused({ hidden: 'source', op: 'in', value: long });
      expect(err.code).toBe('invalid_arguments');
      expect(err.hint).toContain(`${MAX_FILTER_BYTES} bytes`);
      expect(() =>
        responseFilterSql(form, { where: { hidden: 'source', op: 'in', value: long.slice(0, 4) } }, []),
      ).not.toThrow();
    });

    it('keeps the largest accepted filter to at most 3 parameters a condition, whatever its lists hold', () => {
      // Every kind of leaf, as many as a filter takes, lists at their longest.
      const kinds = rowCases()
        .map((c) => c.where)
        .filter((w) => 'block' in w || 'hidden' in w);
      const where = { any: Array.from({ length: MAX_FILTER_LEAVES }, (_, i) => kinds[i % kinds.length]) };
      const params: unknown[] = ['form-id'];
      responseFilterSql(
        form,
        { where: where as Condition, since: '2026-01-01T00:00:00Z', until: '2027-01-01T00:00:00Z' },
        params,
      );
      expect(params.length).toBeLessThanOrEqual(1 + 2 + 3 * MAX_FILTER_LEAVES);
      for (const w of kinds) {
        const p: unknown[] = [];
        responseFilterSql(form, { where: w as Condition }, p);
        expect(p.length).toBeLessThanOrEqual(3);
      }
      // A list is one array parameter, however long.
      const p: unknown[] = [];
      responseFilterSql(
        form,
        { where: { hidden: 'source', op: 'in', value: Array.from({ length: 200 }, (_, i) => `${i}`) } },
        p,
      );
      expect(p.length).toBeLessThanOrEqual(3);
    });
  });
});

describe('the segment a filter selects (segmentOf)', () => {
  /** segmentOf of the filter as checked (blocks by ref and choices by label, as a caller sends them). */
  const segment = (filter: ResponseFilter) => segmentOf(form, checkResponseFilter(form, filter));

  it('maps one value of a hidden field, a choice, yes/no or a ticked checkbox to what the row contains', () => {
    expect(segment({ where: { hidden: 'source', op: 'equals', value: 'spring' } })).toEqual({
      kind: 'hidden',
      match: { source: 'spring' },
    });
    expect(segment({ where: { hidden: 'source', op: 'in', value: ['spring'] } })).toEqual({
      kind: 'hidden',
      match: { source: 'spring' },
    });
    expect(segment({ where: { block: 'colour', op: 'equals', value: 'Blue' } })).toEqual({
      kind: 'answers',
      match: { b_mc: 'c_blue' },
    });
    expect(segment({ where: { block: 'b_dd', op: 'equals', value: 'c_l' } })).toEqual({
      kind: 'answers',
      match: { b_dd: 'c_l' },
    });
    expect(segment({ where: { block: 'agree', op: 'equals', value: false } })).toEqual({
      kind: 'answers',
      match: { b_yn: false },
    });
    expect(segment({ where: { block: 'pets', op: 'contains', value: 'Dog' } })).toEqual({
      kind: 'answers',
      match: { b_cb: ['c_dog'] },
    });
  });

  it('leaves every other filter to the scan: since/until, more conditions, other operators, lists, ""', () => {
    const others: ResponseFilter[] = [
      { where: { hidden: 'source', op: 'equals', value: 'spring' }, since: '2026-01-01T00:00:00Z' },
      { where: { block: 'colour', op: 'equals', value: 'Red' }, until: '2026-01-01T00:00:00Z' },
      { since: '2026-01-01T00:00:00Z' },
      { where: { all: [{ hidden: 'source', op: 'equals', value: 'spring' }] } },
      { where: { not: { block: 'colour', op: 'equals', value: 'Red' } } },
      { where: { hidden: 'source', op: 'in', value: ['spring', 'pilot'] } },
      { where: { hidden: 'source', op: 'equals', value: '' } },
      { where: { hidden: 'source', op: 'contains', value: 'spr' } },
      { where: { hidden: 'source', op: 'not_equals', value: 'spring' } },
      { where: { hidden: 'source', op: 'answered' } },
      { where: { block: 'colour', op: 'in', value: ['Red'] } },
      { where: { block: 'colour', op: 'not_equals', value: 'Red' } },
      { where: { block: 'pets', op: 'equals', value: ['Dog'] } }, // the exact set ticked
      { where: { block: 'pets', op: 'not_contains', value: 'Dog' } },
      { where: { block: 'pets', op: 'in', value: ['Dog'] } },
      { where: { block: 'short', op: 'equals', value: 'Hello' } },
      { where: { block: 'rating', op: 'equals', value: 3 } },
      { where: { block: 'date', op: 'equals', value: '2026-01-01' } },
      { where: { block: 'colour', op: 'answered' } },
    ];
    for (const filter of others) expect({ filter, segment: segment(filter) }).toEqual({ filter, segment: undefined });
    expect(segmentOf(form, {})).toBeUndefined();
  });
});
