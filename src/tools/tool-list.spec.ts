import type { Principal } from '../common/access/principal';
import { compactToolList, notListedHint } from './tool-list';

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
