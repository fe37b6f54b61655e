import { Type } from '@sinclair/typebox';
import { defineTool, TOOL_METADATA, Tool, ToolDeclaration } from './tool.decorator';

const base: Omit<ToolDeclaration, 'write' | 'scope'> = {
  name: 'some_tool',
  title: 'Some tool',
  description: 'Does something.',
  input: Type.Object({}),
  output: Type.Object({}),
};

describe('defineTool: what follows from a tool being a write', () => {
  it('a write needs Pro and the editor role, and is hinted as changing data without destroying it', () => {
    const d = defineTool({ ...base, scope: 'forms:write', write: true });
    expect(d.plan).toBe('pro');
    expect(d.minRole).toBe('editor');
    expect(d.annotations).toEqual({
      readOnlyHint: false,
      destructiveHint: false,
      idempotentHint: false,
      openWorldHint: false,
    });
  });

  it('a read works on any plan for a viewer, and is hinted as read-only and idempotent', () => {
    const d = defineTool({ ...base, scope: 'forms:read', write: false });
    expect(d.plan).toBe('any');
    expect(d.minRole).toBe('viewer');
    expect(d.annotations).toEqual({ readOnlyHint: true, idempotentHint: true, openWorldHint: false });
  });

  it('keeps a declared role and hints over the defaults, but the plan and readOnlyHint follow `write` alone', () => {
    const d = defineTool({
      ...base,
      scope: 'forms:write',
      write: true,
      minRole: 'admin',
      annotations: { destructiveHint: true, openWorldHint: true },
    });
    expect(d.minRole).toBe('admin');
    expect(d.plan).toBe('pro');
    expect(d.annotations).toEqual({
      readOnlyHint: false,
      destructiveHint: true,
      idempotentHint: false,
      openWorldHint: true,
    });
  });

  it('@Tool stores the derived definition for the registry', () => {
    @Tool({ ...base, scope: 'responses:read', write: false, minRole: 'admin' })
    class SomeTool {}
    expect(Reflect.getMetadata(TOOL_METADATA, SomeTool)).toMatchObject({ plan: 'any', minRole: 'admin' });
  });
});
