import Ajv2020 from 'ajv/dist/2020';
import addFormats from 'ajv-formats';
import type { Principal } from '../common/access/principal';
import { compactToolList, notListedHint, tighten } from './tool-list';

const condition = 'A leaf { "block", "op", "value"? }, or all / any / not of conditions (a long description).';
const form = {
  type: 'object',
  properties: { url: { type: 'string', description: 'Share link; takes answers while published.' } },
};
const tool = (name: string, inputSchema: object, outputSchema: object, description = `${name} does it.`) => ({
  name,
  title: name,
  description,
  inputSchema,
  outputSchema,
  annotations: {},
});

describe('compactToolList', () => {
  const input = {
    type: 'object',
    properties: {
      where: { $ref: '#/$defs/condition' },
      description: { type: 'string', maxLength: 10, description: 'short' },
    },
    required: ['where'],
    $defs: { condition: { type: 'object', description: condition, additionalProperties: false } },
  };
  const [first, second, third] = compactToolList([
    tool('get_form', input, form),
    tool('create_form', input, form, 'Creates.\n\nExample: {"title":"x"}'),
    tool('list_webhooks', { type: 'object' }, { type: 'object', properties: { n: { type: 'integer' } } }),
  ]);

  it('says a long description once, in the first tool of the list, and points to it after', () => {
    expect(first.inputSchema).toEqual(input);
    expect(second.inputSchema).toEqual({
      ...input,
      $defs: { condition: { type: 'object', description: 'As in get_form.', additionalProperties: false } },
    });
  });

  it('leaves out an output schema an earlier tool has, saying so before an example that ends the description', () => {
    expect(first.outputSchema).toEqual(form);
    expect(second.outputSchema).toBeUndefined();
    expect(second.description).toBe('Creates. Answers as get_form.\n\nExample: {"title":"x"}');
    expect(third.outputSchema).toEqual({ type: 'object', properties: { n: { type: 'integer' } } });
  });
});

describe('compactToolList with readers and writers', () => {
  const input = { type: 'object', properties: { note: { type: 'string', description: condition } } };
  const reader = { ...tool('get_form', input, form), annotations: { readOnlyHint: true } };
  const writer = tool('create_form', input, form, 'Creates.\n\nExample: {"title":"x"}');
  const [create, get] = compactToolList([writer, reader]);

  it('lets a read-only tool say a shared thing in full, and a writer listed before it point to it', () => {
    expect(get.outputSchema).toEqual(form);
    expect(get.inputSchema).toEqual(input);
    expect(create.outputSchema).toBeUndefined();
    expect(create.description).toBe('Creates. Answers as get_form.\n\nExample: {"title":"x"}');
    expect((create.inputSchema as { properties: Props }).properties.note).toEqual({
      type: 'string',
      description: 'As in get_form.',
    });
  });

  it('keeps the list in its order, and a read-only list whole in itself', () => {
    expect(compactToolList([writer, reader]).map((t) => t.name)).toEqual(['create_form', 'get_form']);
    const [alone] = compactToolList([reader]);
    expect(JSON.stringify(alone)).not.toContain('As in');
  });
});

/** A listed tool's input properties. */
type Props = Record<string, { items?: unknown }>;
const props = (listed: { inputSchema: object }) => (listed.inputSchema as { properties: Props }).properties;

describe('compactToolList with a subschema an earlier tool sent', () => {
  const block = {
    type: 'object',
    additionalProperties: false,
    required: ['type'],
    properties: { type: { enum: ['short_text', 'long_text', 'number', 'rating'] }, title: { type: 'string' } },
    description: 'A block of the form, with its type and title, in the order shown.',
  };
  const [create, update, small] = compactToolList([
    tool('create_form', { type: 'object', properties: { blocks: { type: 'array', items: block } } }, form),
    tool('update_form', { type: 'object', properties: { list: { type: 'array', maxItems: 5, items: block } } }, {}),
    tool('get_response', { type: 'object', properties: { publicId: { type: 'string', maxLength: 64 } } }, {}),
  ]);

  it('sends it whole once, then points to where it was sent', () => {
    expect(props(create).blocks.items).toEqual(block);
    expect(props(update).list.items).toEqual({
      type: 'object',
      description: 'As in create_form (blocks[]).',
    });
  });

  it('sends a short one again (a pointer would not be shorter)', () => {
    expect(props(small).publicId).toEqual({ type: 'string', maxLength: 64 });
  });

  it('never takes a map of properties for a schema', () => {
    const properties = { a: { type: 'string' }, b: { type: 'string', description: 'x'.repeat(200) } };
    const [, second] = compactToolList([
      tool('one', { type: 'object', properties }, {}),
      tool('two', { type: 'object', properties: { ...properties, c: { type: 'integer' } } }, {}),
    ]);
    expect(Object.keys(props(second))).toEqual(['a', 'b', 'c']);
    expect(props(second).b).toEqual({ type: 'string', description: 'As in one (b).' });
  });
});

describe('tighten', () => {
  const ajv = addFormats(new Ajv2020({ strict: false }));
  /** The verdicts of a schema on values: tightened, it must give the same. */
  const verdicts = (schema: object, values: unknown[]) => values.map((v) => ajv.validate(schema, v));
  const values = [null, 'ok', 'Bad', 'x'.repeat(11), '2026-01-01T00:00:00Z', 'not a date', 0, 1.5, true, [], {}, ['a']];

  it.each([
    [
      'a nullable string with its length and pattern',
      { anyOf: [{ type: 'string', maxLength: 10, pattern: '^[a-z]+$' }, { type: 'null' }] },
      { maxLength: 10, pattern: '^[a-z]+$', type: ['string', 'null'] },
    ],
    [
      'a nullable date-time, described',
      { description: 'd', anyOf: [{ format: 'date-time', type: 'string' }, { type: 'null' }] },
      { description: 'd', format: 'date-time', type: ['string', 'null'] },
    ],
    [
      'a nullable integer with bounds',
      { anyOf: [{ type: 'null' }, { type: 'integer', minimum: 1 }] },
      { type: ['integer', 'null'], minimum: 1 },
    ],
    ['an enum of strings', { type: 'string', enum: ['ok', 'Bad'] }, { enum: ['ok', 'Bad'] }],
    [
      'alternatives of different kinds',
      {
        anyOf: [
          { type: 'string', maxLength: 10 },
          { type: 'number' },
          { type: 'boolean' },
          { type: 'array', items: { type: 'string' }, minItems: 1 },
        ],
      },
      { type: ['string', 'number', 'boolean', 'array'], maxLength: 10, items: { type: 'string' }, minItems: 1 },
    ],
    [
      'a label or an object with one',
      {
        anyOf: [
          { type: 'string', minLength: 1 },
          { type: 'object', required: ['label'], additionalProperties: false },
        ],
      },
      { type: ['string', 'object'], minLength: 1, required: ['label'], additionalProperties: false },
    ],
  ])('writes %s shorter, accepting exactly what it accepted', (_, schema, shorter) => {
    expect(tighten(schema)).toEqual(shorter);
    expect(verdicts(tighten(schema), values)).toEqual(verdicts(schema, values));
  });

  it.each([
    ['an enum that is not all strings', { type: 'string', enum: ['ok', 0] }],
    ['a nullable enum (null fails the enum)', { anyOf: [{ type: 'string', enum: ['ok'] }, { type: 'null' }] }],
    ['a nullable reference', { anyOf: [{ $ref: '#/$defs/x' }, { type: 'null' }] }],
    ['a keyword on both sides', { maxLength: 3, anyOf: [{ type: 'string', maxLength: 10 }, { type: 'null' }] }],
    [
      'two alternatives of one kind',
      {
        anyOf: [
          { type: 'integer', minimum: 5 },
          { type: 'number', maximum: 1 },
        ],
      },
    ],
    ['an alternative with a keyword of another kind', { anyOf: [{ type: 'string', minimum: 1 }, { type: 'number' }] }],
    ['an alternative without one type', { anyOf: [{ type: 'string' }, { enum: [1, 2] }] }],
  ])('leaves %s as it is', (_, schema) => {
    expect(tighten(schema)).toEqual(schema);
  });

  it('leaves out annotations equal to MCP defaults, in the list only', () => {
    const declared = { readOnlyHint: false, destructiveHint: false, idempotentHint: false, openWorldHint: true };
    const [listed] = compactToolList([{ ...tool('create_form', { type: 'object' }, form), annotations: declared }]);
    expect(listed.annotations).toEqual({ destructiveHint: false });
    const [read] = compactToolList([
      { ...tool('get_form', { type: 'object' }, form), annotations: { readOnlyHint: true, destructiveHint: true } },
    ]);
    expect(read.annotations).toEqual({ readOnlyHint: true });
  });
});

describe('notListedHint', () => {
  const principal = (plan: 'free' | 'pro', role: Principal['role'], scopes: Principal['scopes']): Principal => ({
    credential: { kind: 'api_token', id: 'tok_1' },
    credentialKey: 'tok_1',
    workspace: { id: 'ws_1', name: 'Acme', slug: 'acme', plan },
    role,
    scopes,
  });
  const createForm = { name: 'create_form', scope: 'forms:write', plan: 'pro', minRole: 'editor' } as const;

  it('names what the tools left out would take: scope, plan, role', () => {
    expect(notListedHint(principal('free', 'viewer', ['forms:read']), [createForm])).toBe(
      '1 more tool is not listed; they need the scope forms:write (a token granted it, or OAuth authorized again asking for it); a Pro workspace (write tools); the role editor or higher (ask a workspace admin).',
    );
    expect(notListedHint(principal('free', 'owner', ['forms:write']), [createForm])).toBe(
      '1 more tool is not listed; they need a Pro workspace (write tools).',
    );
    expect(notListedHint(principal('pro', 'owner', ['forms:write']), [])).toBeUndefined();
  });
});
