import { ApiError } from '../errors/api-error';
import { assertMayCall, mayCall } from './access';
import type { Principal } from './principal';
import type { Plan, Role, Scope } from './roles';
import type { ToolRequirement } from './tool-requirement';

const METADATA_URL = 'https://forms.example.com/.well-known/oauth-protected-resource';

function principal(role: Role, plan: Plan, scopes: Scope[]): Principal {
  return {
    credential: { kind: 'api_token', id: 'tok_1', name: 'ci' },
    credentialKey: 'tok_1',
    workspace: { id: 'ws_1', name: 'Acme', slug: 'acme', plan },
    role,
    scopes,
  };
}

const createForm: ToolRequirement = { name: 'create_form', scope: 'forms:write', plan: 'pro', minRole: 'editor' };
const listForms: ToolRequirement = { name: 'list_forms', scope: 'forms:read', plan: 'any', minRole: 'viewer' };
const deleteForm: ToolRequirement = { name: 'delete_form', scope: 'forms:write', plan: 'pro', minRole: 'admin' };

/** The ApiError assertMayCall throws (fails the test when it passes). */
function refusal(p: Principal, tool: ToolRequirement): ApiError {
  try {
    assertMayCall(p, tool, METADATA_URL);
  } catch (e) {
    expect(e).toBeInstanceOf(ApiError);
    return e as ApiError;
  }
  throw new Error('assertMayCall let the call through');
}

describe('assertMayCall', () => {
  describe('checks scope, then plan, then role', () => {
    it('a free viewer token without the scope on a write tool gets insufficient_scope first', () => {
      const e = refusal(principal('viewer', 'free', ['forms:read']), createForm);
      expect(e.code).toBe('insufficient_scope');
      expect(e.status).toBe(403);
    });

    it('with the scope but on the free plan, the same viewer gets pro_required', () => {
      const e = refusal(principal('viewer', 'free', ['forms:read', 'forms:write']), createForm);
      expect(e.code).toBe('pro_required');
      expect(e.status).toBe(403);
    });

    it('on the pro plan, the viewer gets forbidden for lack of role', () => {
      const e = refusal(principal('viewer', 'pro', ['forms:write']), createForm);
      expect(e.code).toBe('forbidden');
      expect(e.status).toBe(403);
    });

    it('an editor with the scope on pro passes', () => {
      expect(() => assertMayCall(principal('editor', 'pro', ['forms:write']), createForm, METADATA_URL)).not.toThrow();
    });
  });

  it('names the missing scope in a WWW-Authenticate header, with the resource metadata URL', () => {
    const e = refusal(principal('owner', 'pro', ['forms:read', 'responses:read']), createForm);
    const header = e.headers?.['WWW-Authenticate'];
    expect(header).toMatch(/^Bearer /);
    expect(header).toContain('error="insufficient_scope"');
    expect(header).toContain('scope="forms:write"');
    expect(header).toContain(`resource_metadata="${METADATA_URL}"`);
  });

  it('lets read tools through on the free plan', () => {
    expect(() => assertMayCall(principal('viewer', 'free', ['forms:read']), listForms, METADATA_URL)).not.toThrow();
  });

  it('needs the minimum role or a stronger one', () => {
    expect(refusal(principal('editor', 'pro', ['forms:write']), deleteForm).code).toBe('forbidden');
    expect(() => assertMayCall(principal('admin', 'pro', ['forms:write']), deleteForm, METADATA_URL)).not.toThrow();
    expect(() => assertMayCall(principal('owner', 'pro', ['forms:write']), deleteForm, METADATA_URL)).not.toThrow();
  });

  it('does not count a role as a scope: an owner without the scope is refused', () => {
    expect(refusal(principal('owner', 'pro', []), listForms).code).toBe('insufficient_scope');
  });
});

describe('mayCall', () => {
  const roles: Role[] = ['viewer', 'editor', 'admin', 'owner'];
  const plans: Plan[] = ['free', 'pro'];
  const scopeSets: Scope[][] = [
    [],
    ['forms:read'],
    ['forms:write'],
    ['forms:read', 'forms:write', 'responses:read', 'responses:write'],
  ];
  const tools = [createForm, listForms, deleteForm];

  it('agrees with assertMayCall for every role, plan, scope set and tool', () => {
    for (const role of roles)
      for (const plan of plans)
        for (const scopes of scopeSets)
          for (const tool of tools) {
            const p = principal(role, plan, scopes);
            let passes = true;
            try {
              assertMayCall(p, tool, METADATA_URL);
            } catch {
              passes = false;
            }
            expect({ role, plan, scopes, tool: tool.name, may: mayCall(p, tool) }).toEqual({
              role,
              plan,
              scopes,
              tool: tool.name,
              may: passes,
            });
          }
  });

  it('is false for a free workspace on a write tool and true for the same caller on pro', () => {
    expect(mayCall(principal('owner', 'free', ['forms:write']), createForm)).toBe(false);
    expect(mayCall(principal('owner', 'pro', ['forms:write']), createForm)).toBe(true);
  });
});
