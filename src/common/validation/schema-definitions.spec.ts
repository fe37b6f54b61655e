import { gatherDefinitions, sharedRef } from './schema-definitions';

describe('gatherDefinitions', () => {
  const node = { type: 'object', properties: { next: { $ref: '#/$defs/node' } } };

  it('moves the definitions that travel with their references to the root, once', () => {
    const schema = gatherDefinitions({
      type: 'object',
      properties: {
        a: sharedRef('node', node, { description: 'a' }),
        b: { type: 'array', items: sharedRef('node', node) },
      },
    });
    expect(schema).toEqual({
      type: 'object',
      properties: {
        a: { $ref: '#/$defs/node', description: 'a' },
        b: { type: 'array', items: { $ref: '#/$defs/node' } },
      },
      $defs: { node },
    });
  });

  it('leaves a schema without definitions as it is, and a property or a value named $defs alone', () => {
    const plain = {
      type: 'object',
      properties: { $defs: { type: 'object', default: { $defs: {} } } },
    };
    expect(gatherDefinitions(plain)).toEqual(plain);
  });

  it('refuses two different schemas under one name', () => {
    expect(() =>
      gatherDefinitions({
        type: 'object',
        properties: { a: sharedRef('node', node), b: sharedRef('node', { type: 'string' }) },
      }),
    ).toThrow('Two different schemas are defined as "$defs/node"');
  });
});
