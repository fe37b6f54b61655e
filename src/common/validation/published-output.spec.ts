import { publishedOutput } from './published-output';

describe('publishedOutput', () => {
  it('drops additionalProperties: false, minimum and format, and folds unions of plain types into one type list', () => {
    expect(
      publishedOutput({
        type: 'object',
        additionalProperties: false,
        required: ['at', 'n'],
        properties: {
          at: { description: 'when', anyOf: [{ type: 'string', format: 'date-time' }, { type: 'null' }] },
          n: { type: 'integer', minimum: 0 },
          v: { anyOf: [{ type: 'number' }, { type: 'string' }, { type: 'null' }] },
        },
      }),
    ).toEqual({
      type: 'object',
      required: ['at', 'n'],
      properties: {
        at: { type: ['string', 'null'], description: 'when' },
        n: { type: 'integer' },
        v: { type: ['number', 'string', 'null'] },
      },
    });
  });

  it('leaves unions it cannot fold as they are: an enum, an object, a repeated type, other keywords beside anyOf', () => {
    const kept = [
      { anyOf: [{ type: 'string', enum: ['a'] }, { type: 'null' }] },
      { anyOf: [{ type: 'object', properties: {} }, { type: 'null' }] },
      {
        anyOf: [
          { type: 'string', maxLength: 2 },
          { type: 'string', pattern: '^a' },
        ],
      },
      { anyOf: [{ type: 'string' }, { type: 'null' }], default: null },
      { type: 'object', additionalProperties: false },
    ];
    for (const schema of kept) expect(publishedOutput(schema)).toEqual(schema);
  });
});
