import { Type } from '@sinclair/typebox';
import {
  closestKnownArgument,
  createAjv,
  editDistance,
  nestingDepthDetails,
  StringEnum,
  toDetails,
} from './schema-validator';

/** A tool input schema in the style the tools declare theirs. */
const input = Type.Object(
  {
    publicId: Type.String({ minLength: 1 }),
    limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 200, default: 50 })),
    order: Type.Optional(StringEnum(['oldest', 'newest'] as const)),
    filter: Type.Optional(
      Type.Object({ since: Type.String({ format: 'date-time' }) }, { additionalProperties: false }),
    ),
  },
  { additionalProperties: false },
);

const validate = createAjv().compile(input);

/** Validates `args` and returns the envelope details. */
function detailsFor(args: unknown) {
  const ok = validate(args);
  return { ok, details: toDetails(validate.errors) };
}

describe('toDetails', () => {
  it('points a missing argument at its own path, "is required"', () => {
    expect(detailsFor({})).toEqual({ ok: false, details: [{ path: '/publicId', message: 'is required' }] });
  });

  it('points an unknown argument at its own path, "is not a known argument"', () => {
    expect(detailsFor({ publicId: 'abc', colour: 'red' }).details).toEqual([
      { path: '/colour', message: 'is not a known argument' },
    ]);
  });

  it('suggests the argument that was meant: a synonym of publicId, another case, a typo', () => {
    for (const [wrong, meant] of [
      ['id', 'publicId'],
      ['formId', 'publicId'],
      ['form_id', 'publicId'],
      ['public_id', 'publicId'],
      ['PUBLICID', 'publicId'],
      ['limt', 'limit'],
      ['ordre', 'order'],
    ]) {
      const args = wrong.toLowerCase().includes('id') ? { [wrong]: 'abc' } : { publicId: 'abc', [wrong]: 1 };
      expect(detailsFor(args).details).toContainEqual({
        path: `/${wrong}`,
        message: `is not a known argument; did you mean \`${meant}\`?`,
      });
    }
  });

  it('suggests nothing for a name unlike any argument, or for one already given', () => {
    expect(detailsFor({ publicId: 'abc', colour: 'red' }).details).toEqual([
      { path: '/colour', message: 'is not a known argument' },
    ]);
    expect(detailsFor({ publicId: 'abc', id: 'abc' }).details).toEqual([
      { path: '/id', message: 'is not a known argument' },
    ]);
    expect(detailsFor({ publicId: 'abc', filter: { snce: 'x' } }).details).toContainEqual({
      path: '/filter/snce',
      message: 'is not a known argument; did you mean `since`?',
    });
  });

  it('closestKnownArgument: id means the one ...Id argument of a tool without publicId; long names are not compared', () => {
    expect(closestKnownArgument('id', ['webhookId', 'limit'])).toBe('webhookId');
    expect(closestKnownArgument('id', ['webhookId', 'eventId'])).toBeUndefined();
    expect(closestKnownArgument('x'.repeat(100), ['x'.repeat(99)])).toBeUndefined();
    expect(editDistance('titel', 'title')).toBe(1);
    expect(editDistance('kitten', 'sitting')).toBe(3);
  });

  it('escapes ~ and / in argument names, as JSON Pointer requires', () => {
    expect(detailsFor({ publicId: 'abc', 'a/b~c': 1 }).details).toEqual([
      { path: '/a~1b~0c', message: 'is not a known argument' },
    ]);
  });

  it('names missing and unknown fields inside nested objects by their full path', () => {
    expect(detailsFor({ publicId: 'abc', filter: { until: 'x' } }).details).toEqual([
      { path: '/filter/since', message: 'is required' },
      { path: '/filter/until', message: 'is not a known argument' },
    ]);
  });

  it("keeps the instance path and Ajv's message for a value over its maximum", () => {
    expect(detailsFor({ publicId: 'abc', limit: 500 }).details).toEqual([
      { path: '/limit', message: 'must be <= 200' },
    ]);
  });

  it('lists the allowed values of an enum', () => {
    expect(detailsFor({ publicId: 'abc', order: 'random' }).details).toEqual([
      { path: '/order', message: 'must be one of "oldest", "newest"' },
    ]);
  });

  it('reports every problem at once', () => {
    const { details } = detailsFor({ limit: 0, extra: true, order: 'x' });
    expect(details.map((d) => d.path).sort()).toEqual(['/extra', '/limit', '/order', '/publicId']);
  });

  it('reports a wrong type and a bad format at the field', () => {
    expect(detailsFor({ publicId: 42 }).details).toEqual([{ path: '/publicId', message: 'must be string' }]);
    expect(detailsFor({ publicId: 'abc', filter: { since: 'yesterday' } }).details).toEqual([
      { path: '/filter/since', message: 'must match format "date-time"' },
    ]);
  });

  it('drops repeated details for the same path and message', () => {
    const error = {
      instancePath: '',
      schemaPath: '#/required',
      keyword: 'required',
      params: { missingProperty: 'publicId' },
      message: 'x',
    };
    expect(toDetails([error, { ...error }])).toEqual([{ path: '/publicId', message: 'is required' }]);
  });

  it('gives no details when there are no errors', () => {
    expect(toDetails(null)).toEqual([]);
    expect(toDetails(undefined)).toEqual([]);
    expect(detailsFor({ publicId: 'abc' })).toEqual({ ok: true, details: [] });
  });
});

describe('createAjv', () => {
  it('fills in defaults and does not coerce types', () => {
    const args: Record<string, unknown> = { publicId: 'abc' };
    expect(validate(args)).toBe(true);
    expect(args.limit).toBe(50);
    expect(validate({ publicId: 'abc', limit: '5' })).toBe(false);
  });

  it('is strict: a schema with an unknown keyword does not compile', () => {
    expect(() => createAjv().compile({ type: 'string', colour: 'red' })).toThrow();
  });
});

describe('StringEnum', () => {
  it('is a plain JSON Schema string enum', () => {
    expect(JSON.parse(JSON.stringify(StringEnum(['a', 'b'] as const, { description: 'd' })))).toEqual({
      type: 'string',
      enum: ['a', 'b'],
      description: 'd',
    });
  });
});

describe('nestingDepthDetails', () => {
  const nested = (depth: number): unknown => JSON.parse('['.repeat(depth) + ']'.repeat(depth));

  it('names the top-level argument that nests too deep, without overflowing the stack itself', () => {
    expect(nestingDepthDetails({ ok: [1, { a: 'b' }], deep: nested(1_000_000) })).toEqual([
      { path: '/deep', message: 'nests objects and arrays more than 64 levels deep' },
    ]);
  });

  it('takes 64 levels, the body counted as the first', () => {
    expect(nestingDepthDetails({ a: nested(63) })).toEqual([]);
    expect(nestingDepthDetails({ a: nested(64) })).toHaveLength(1);
    expect(nestingDepthDetails('text')).toEqual([]);
  });
});
