import { NestFastifyApplication } from '@nestjs/platform-fastify';
import Ajv2020 from 'ajv/dist/2020';
import addFormats from 'ajv-formats';
import request from 'supertest';
import { DataSource } from 'typeorm';
import { publishedOutput } from '../../src/common/validation/published-output';
import { tighten } from '../../src/tools/tool-list';
import { ToolDescriptor, ToolRegistry, plainSchema } from '../../src/tools/tool-registry.service';
import { createTestApp } from '../utils/create-test-app';

describe('discovery: /api/v1/tools, /openapi.json, /docs', () => {
  let app: NestFastifyApplication;
  beforeAll(async () => {
    app = await createTestApp();
  });
  afterAll(() => app.close());

  it("pins every tool's scope, write flag and minimum role (a diff here is a permission change)", () => {
    const table = app
      .get(ToolRegistry)
      .all()
      .map((t) => ({
        name: t.definition.name,
        scope: t.definition.scope,
        write: t.definition.write,
        minRole: t.definition.minRole,
      }))
      .sort((a, b) => a.name.localeCompare(b.name));
    expect(table).toEqual([
      { name: 'check_response', scope: 'responses:read', write: false, minRole: 'viewer' },
      { name: 'close_form', scope: 'forms:write', write: true, minRole: 'editor' },
      { name: 'create_form', scope: 'forms:write', write: true, minRole: 'editor' },
      { name: 'create_invites', scope: 'forms:write', write: true, minRole: 'editor' },
      { name: 'create_response', scope: 'responses:write', write: true, minRole: 'editor' },
      { name: 'create_upload', scope: 'responses:write', write: true, minRole: 'editor' },
      { name: 'create_webhook', scope: 'webhooks:write', write: true, minRole: 'admin' },
      { name: 'delete_form', scope: 'forms:write', write: true, minRole: 'admin' },
      { name: 'delete_response', scope: 'responses:write', write: true, minRole: 'editor' },
      { name: 'delete_webhook', scope: 'webhooks:write', write: true, minRole: 'admin' },
      { name: 'duplicate_form', scope: 'forms:write', write: true, minRole: 'editor' },
      { name: 'export_responses', scope: 'responses:read', write: false, minRole: 'viewer' },
      { name: 'get_form', scope: 'forms:read', write: false, minRole: 'viewer' },
      { name: 'get_job', scope: 'responses:read', write: false, minRole: 'viewer' },
      { name: 'get_response', scope: 'responses:read', write: false, minRole: 'viewer' },
      { name: 'list_forms', scope: 'forms:read', write: false, minRole: 'viewer' },
      { name: 'list_invites', scope: 'forms:read', write: false, minRole: 'viewer' },
      { name: 'list_responses', scope: 'responses:read', write: false, minRole: 'viewer' },
      { name: 'list_webhook_deliveries', scope: 'webhooks:read', write: false, minRole: 'admin' },
      { name: 'list_webhooks', scope: 'webhooks:read', write: false, minRole: 'admin' },
      { name: 'publish_form', scope: 'forms:write', write: true, minRole: 'editor' },
      { name: 'redeliver_webhook', scope: 'webhooks:write', write: true, minRole: 'admin' },
      { name: 'revoke_invites', scope: 'forms:write', write: true, minRole: 'editor' },
      { name: 'rotate_webhook_secret', scope: 'webhooks:write', write: true, minRole: 'admin' },
      { name: 'send_test_webhook', scope: 'webhooks:write', write: true, minRole: 'admin' },
      { name: 'set_translation', scope: 'forms:write', write: true, minRole: 'editor' },
      { name: 'summarize_responses', scope: 'responses:read', write: false, minRole: 'viewer' },
      { name: 'update_form', scope: 'forms:write', write: true, minRole: 'editor' },
      { name: 'update_response', scope: 'responses:write', write: true, minRole: 'editor' },
      { name: 'update_webhook', scope: 'webhooks:write', write: true, minRole: 'admin' },
    ]);
  });

  it("publishes every tool's plan, role and annotations as derived from its declaration (a diff here is an access or hint change)", async () => {
    const res = await request(app.getHttpServer()).get('/api/v1/tools');
    // The access rules are published once, on each tool's operation in /openapi.json (x-formwork).
    const paths = (await request(app.getHttpServer()).get('/openapi.json')).body.paths;
    // The list leaves out a hint equal to MCP's default (a client reads it so); the table has them all.
    const mcpDefaults = { readOnlyHint: false, destructiveHint: true, idempotentHint: false, openWorldHint: true };
    const declared = new Map(
      app
        .get(ToolRegistry)
        .describe()
        .map((d) => [d.name, d.annotations]),
    );
    const table = (res.body.tools as ToolDescriptor[])
      .map(({ name, title, annotations }) => {
        const access = paths[`/api/v1/tools/${name}`].post['x-formwork'];
        expect(title).toEqual(expect.any(String));
        const all = declared.get(name)!;
        expect(annotations).toEqual(
          Object.fromEntries(
            Object.entries(all).filter(([hint, value]) => mcpDefaults[hint as keyof typeof mcpDefaults] !== value),
          ),
        );
        return { name, plan: access.plan, minRole: access.minRole, annotations: all };
      })
      .sort((a, b) => a.name.localeCompare(b.name));
    expect(table).toEqual([
      {
        name: 'check_response',
        plan: 'any',
        minRole: 'viewer',
        annotations: { readOnlyHint: true, idempotentHint: true, openWorldHint: false },
      },
      {
        name: 'close_form',
        plan: 'pro',
        minRole: 'editor',
        annotations: { readOnlyHint: false, destructiveHint: false, idempotentHint: true, openWorldHint: false },
      },
      {
        name: 'create_form',
        plan: 'pro',
        minRole: 'editor',
        annotations: { readOnlyHint: false, destructiveHint: false, idempotentHint: false, openWorldHint: false },
      },
      {
        name: 'create_invites',
        plan: 'pro',
        minRole: 'editor',
        annotations: { readOnlyHint: false, destructiveHint: false, idempotentHint: false, openWorldHint: false },
      },
      {
        name: 'create_response',
        plan: 'pro',
        minRole: 'editor',
        annotations: { readOnlyHint: false, destructiveHint: false, idempotentHint: false, openWorldHint: false },
      },
      {
        name: 'create_upload',
        plan: 'pro',
        minRole: 'editor',
        annotations: { readOnlyHint: false, destructiveHint: false, idempotentHint: false, openWorldHint: false },
      },
      {
        name: 'create_webhook',
        plan: 'pro',
        minRole: 'admin',
        annotations: { readOnlyHint: false, destructiveHint: false, idempotentHint: false, openWorldHint: true },
      },
      {
        name: 'delete_form',
        plan: 'pro',
        minRole: 'admin',
        annotations: { readOnlyHint: false, destructiveHint: true, idempotentHint: false, openWorldHint: false },
      },
      {
        name: 'delete_response',
        plan: 'pro',
        minRole: 'editor',
        annotations: { readOnlyHint: false, destructiveHint: true, idempotentHint: false, openWorldHint: false },
      },
      {
        name: 'delete_webhook',
        plan: 'pro',
        minRole: 'admin',
        annotations: { readOnlyHint: false, destructiveHint: true, idempotentHint: false, openWorldHint: false },
      },
      {
        name: 'duplicate_form',
        plan: 'pro',
        minRole: 'editor',
        annotations: { readOnlyHint: false, destructiveHint: false, idempotentHint: false, openWorldHint: false },
      },
      {
        name: 'export_responses',
        plan: 'any',
        minRole: 'viewer',
        annotations: { readOnlyHint: true, idempotentHint: true, openWorldHint: false },
      },
      {
        name: 'get_form',
        plan: 'any',
        minRole: 'viewer',
        annotations: { readOnlyHint: true, idempotentHint: true, openWorldHint: false },
      },
      {
        name: 'get_job',
        plan: 'any',
        minRole: 'viewer',
        annotations: { readOnlyHint: true, idempotentHint: true, openWorldHint: false },
      },
      {
        name: 'get_response',
        plan: 'any',
        minRole: 'viewer',
        annotations: { readOnlyHint: true, idempotentHint: true, openWorldHint: false },
      },
      {
        name: 'list_forms',
        plan: 'any',
        minRole: 'viewer',
        annotations: { readOnlyHint: true, idempotentHint: true, openWorldHint: false },
      },
      {
        name: 'list_invites',
        plan: 'any',
        minRole: 'viewer',
        annotations: { readOnlyHint: true, idempotentHint: true, openWorldHint: false },
      },
      {
        name: 'list_responses',
        plan: 'any',
        minRole: 'viewer',
        annotations: { readOnlyHint: true, idempotentHint: true, openWorldHint: false },
      },
      {
        name: 'list_webhook_deliveries',
        plan: 'any',
        minRole: 'admin',
        annotations: { readOnlyHint: true, idempotentHint: true, openWorldHint: false },
      },
      {
        name: 'list_webhooks',
        plan: 'any',
        minRole: 'admin',
        annotations: { readOnlyHint: true, idempotentHint: true, openWorldHint: false },
      },
      {
        name: 'publish_form',
        plan: 'pro',
        minRole: 'editor',
        annotations: { readOnlyHint: false, destructiveHint: false, idempotentHint: true, openWorldHint: false },
      },
      {
        name: 'redeliver_webhook',
        plan: 'pro',
        minRole: 'admin',
        annotations: { readOnlyHint: false, destructiveHint: false, idempotentHint: false, openWorldHint: true },
      },
      {
        name: 'revoke_invites',
        plan: 'pro',
        minRole: 'editor',
        annotations: { readOnlyHint: false, destructiveHint: true, idempotentHint: true, openWorldHint: false },
      },
      {
        name: 'rotate_webhook_secret',
        plan: 'pro',
        minRole: 'admin',
        annotations: { readOnlyHint: false, destructiveHint: false, idempotentHint: false, openWorldHint: false },
      },
      {
        name: 'send_test_webhook',
        plan: 'pro',
        minRole: 'admin',
        annotations: { readOnlyHint: false, destructiveHint: false, idempotentHint: false, openWorldHint: true },
      },
      {
        name: 'set_translation',
        plan: 'pro',
        minRole: 'editor',
        annotations: { readOnlyHint: false, destructiveHint: true, idempotentHint: true, openWorldHint: false },
      },
      {
        name: 'summarize_responses',
        plan: 'any',
        minRole: 'viewer',
        annotations: { readOnlyHint: true, idempotentHint: true, openWorldHint: false },
      },
      {
        name: 'update_form',
        plan: 'pro',
        minRole: 'editor',
        annotations: { readOnlyHint: false, destructiveHint: true, idempotentHint: false, openWorldHint: false },
      },
      {
        name: 'update_response',
        plan: 'pro',
        minRole: 'editor',
        annotations: { readOnlyHint: false, destructiveHint: true, idempotentHint: false, openWorldHint: false },
      },
      {
        name: 'update_webhook',
        plan: 'pro',
        minRole: 'admin',
        annotations: { readOnlyHint: false, destructiveHint: false, idempotentHint: true, openWorldHint: true },
      },
    ]);
  });

  it('lists every tool publicly with JSON Schema 2020-12 input and output schemas', async () => {
    const res = await request(app.getHttpServer()).get('/api/v1/tools');
    expect(res.status).toBe(200);
    const names = res.body.tools.map((t: { name: string }) => t.name);
    expect(names.sort()).toEqual(
      app
        .get(ToolRegistry)
        .all()
        .map((t) => t.definition.name)
        .sort(),
    );
    expect(names).toHaveLength(30);
    const ajv = addFormats(new Ajv2020({ strict: false }));
    for (const tool of res.body.tools) {
      expect(tool).toEqual(
        expect.objectContaining({
          title: expect.any(String),
          description: expect.any(String),
          annotations: expect.any(Object),
        }),
      );
      // JSON Schema 2020-12, MCP's default dialect: no $schema keyword in each schema.
      expect(tool.inputSchema.$schema).toBeUndefined();
      expect(tool.inputSchema.type).toBe('object');
      expect(() => ajv.compile(tool.inputSchema)).not.toThrow();
      if (tool.outputSchema) expect(() => ajv.compile(tool.outputSchema)).not.toThrow();
    }
    // Each thing said once (src/tools/tool-list.ts): the schemas are the tools' own, keyword for
    // keyword, but for a description an earlier tool of the list said ("As in <tool>."), an
    // output schema an earlier tool has ("Answers as <tool>." in the description), and what
    // tighten writes shorter and validates the same (tool-list.spec.ts): the own schema tightened
    // is the listed one.
    const withoutDescriptions = (x: unknown) =>
      JSON.parse(JSON.stringify(x), (k, v: unknown) =>
        k === 'description' && typeof v === 'string'
          ? undefined
          : typeof v === 'object' && v !== null && !Array.isArray(v)
            ? tighten(v as Record<string, unknown>)
            : v,
      );
    const listedAsIs = (x: unknown) =>
      JSON.parse(JSON.stringify(x), (k, v: unknown) => (k === 'description' && typeof v === 'string' ? undefined : v));
    const own = new Map(
      app
        .get(ToolRegistry)
        .describe()
        .map((d) => [d.name, d]),
    );
    const listedBefore: string[] = [];
    // "Earlier" in the list's reading: its read-only tools first, then the others.
    type Listed = { annotations: { readOnlyHint?: boolean } };
    const reading = [
      ...res.body.tools.filter((t: Listed) => t.annotations.readOnlyHint === true),
      ...res.body.tools.filter((t: Listed) => t.annotations.readOnlyHint !== true),
    ];
    for (const tool of reading) {
      const full = own.get(tool.name)!;
      // A subschema an earlier tool sent whole is a pointer to it ("As in <tool> (<where>)."): the
      // schema it points to is this one's own, and the comparison below reads it in its place.
      const resolved = (listed: unknown, mine: unknown): unknown => {
        if (typeof listed !== 'object' || listed === null || typeof mine !== 'object' || mine === null) return listed;
        const pointer = /^As in ([a-z_]+) \((.+)\)\.$/.exec(String((listed as { description?: unknown }).description));
        if (pointer && Object.keys(listed).every((k) => k === 'type' || k === 'description')) {
          expect([...listedBefore, tool.name]).toContain(pointer[1]);
          expect(schemaAt(own.get(pointer[1])!, pointer[2])).toEqual(mine);
          return withoutDescriptions(mine);
        }
        return Array.isArray(listed)
          ? listed.map((x, i) => resolved(x, (mine as unknown[])[i]))
          : Object.fromEntries(
              Object.entries(listed).map(([k, v]) => [k, resolved(v, (mine as Record<string, unknown>)[k])]),
            );
      };
      expect(listedAsIs(resolved(tool.inputSchema, full.inputSchema))).toEqual(withoutDescriptions(full.inputSchema));
      if (tool.outputSchema) {
        expect(listedAsIs(resolved(tool.outputSchema, full.outputSchema))).toEqual(
          withoutDescriptions(full.outputSchema),
        );
      } else {
        const sameAs = /Answers as ([a-z_]+)\./.exec(tool.description)![1];
        expect(listedBefore).toContain(sameAs);
        expect(own.get(sameAs)!.outputSchema).toEqual(full.outputSchema);
      }
      for (const d of JSON.stringify(tool).match(/As in [a-z_]+\./g) ?? [])
        expect(listedBefore).toContain(d.slice(6, -1));
      listedBefore.push(tool.name);
    }
    // The form, answered by get_form, is described once: the tools that answer it too point to it.
    const byName = (name: string) => res.body.tools.find((t: { name: string }) => t.name === name);
    expect(byName('get_form').outputSchema).toBeDefined();
    for (const name of ['create_form', 'update_form', 'publish_form', 'close_form'])
      expect(byName(name).outputSchema).toBeUndefined();
    const listResponses = res.body.tools.find((t: { name: string }) => t.name === 'list_responses');
    expect(listResponses.inputSchema.properties.limit).toMatchObject({ minimum: 1, maximum: 200, default: 50 });
    expect(listResponses.inputSchema.required).toEqual(['publicId']);
  });

  it('serves an OpenAPI 3.1 document with one operation per tool at its literal path', async () => {
    const res = await request(app.getHttpServer()).get('/openapi.json');
    expect(res.status).toBe(200);
    expect(res.body.openapi).toMatch(/^3\.1\./);
    const tools = app.get(ToolRegistry).all();
    for (const tool of tools) {
      const op = res.body.paths[`/api/v1/tools/${tool.definition.name}`]?.post;
      expect(op).toBeDefined();
      expect(op.operationId).toBe(tool.definition.name);
      // Each tool on its own, in full (the lists point from one tool to an earlier one: checked above).
      const published = app
        .get(ToolRegistry)
        .describe()
        .find((t) => t.name === tool.definition.name)!;
      const { $defs, ...input } = published.inputSchema as Record<string, unknown>;
      const output = published.outputSchema;
      // Shared definitions ($defs, such as the condition) live in components/schemas, where the document's references point.
      const inDocument = (x: unknown) => JSON.parse(JSON.stringify(x).replaceAll('#/$defs/', '#/components/schemas/'));
      expect(op.requestBody.content['application/json'].schema).toEqual(inDocument(input));
      for (const [name, definition] of Object.entries($defs ?? {}))
        expect(res.body.components.schemas[name]).toEqual(inDocument(definition));
      // The output in full as declared (the tool lists publish it shorter: publishedOutput).
      expect(op.responses['200'].content['application/json'].schema).toEqual(plainSchema(tool.definition.output));
      expect(output).toEqual(publishedOutput(plainSchema(tool.definition.output)));
      for (const status of ['400', '401', '403', '404', '429', '500']) {
        expect(op.responses[status].content['application/json'].schema).toEqual({ $ref: '#/components/schemas/Error' });
      }
      expect(op.security).toEqual([{ bearer: [] }, { oauth2: [tool.definition.scope] }]);
    }
    const operationIds = Object.values(res.body.paths).flatMap((p) =>
      Object.values(p as object).map((o) => (o as { operationId: string }).operationId),
    );
    expect(new Set(operationIds).size).toBe(operationIds.length);
    expect(res.body.components.securitySchemes.bearer).toMatchObject({ type: 'http', scheme: 'bearer' });
    expect(res.body.components.schemas.Error.properties.error.required).toEqual(['code', 'message', 'hint']);
  });

  it('serves Swagger UI at /docs', async () => {
    const res = await request(app.getHttpServer()).get('/docs').redirects(1);
    expect(res.status).toBe(200);
    expect(res.text).toContain('swagger-ui');
  });

  it('answers /healthz and /readyz for the load balancer', async () => {
    expect((await request(app.getHttpServer()).get('/healthz')).body).toEqual({ status: 'ok' });
    const ready = await request(app.getHttpServer()).get('/readyz');
    expect(ready.status).toBe(200);
    expect(ready.body.checks.database).toBe('ok');
  });

  it('has a schema made only by migrations, matching the entities (a generated migration would be empty)', async () => {
    const ds = app.get(DataSource);
    const pending = await ds.driver.createSchemaBuilder().log();
    expect(pending.upQueries.map((q) => q.query)).toEqual([]);
    expect(await ds.showMigrations()).toBe(false);
    // ...and every table is described by an entity its feature module registered, so the check above covers it.
    const tables: Array<{ tablename: string }> = await ds.query(
      `SELECT tablename FROM pg_tables WHERE schemaname = current_schema() AND tablename <> 'schema_migrations'`,
    );
    expect(ds.entityMetadatas.map((m) => m.tableName).sort()).toEqual(tables.map((t) => t.tablename).sort());
  });
});

/** A tool's subschema at a pointer's where: properties by name, x[] an item of x, output. the answer's, $defs.name. */
function schemaAt(tool: ToolDescriptor, where: string): unknown {
  const [first, ...rest] = where.split('.');
  // eslint-disable-next-line @typescript-eslint/no-explicit-any -- any JSON Schema, walked by keyword
  let node = (first === 'output' ? tool.outputSchema : tool.inputSchema) as Record<string, any>;
  const segments = first === 'output' ? rest : [first, ...rest];
  for (let i = 0; i < segments.length; i++) {
    const [, name, items] = /^(.*?)((?:\[\])*)$/.exec(segments[i])!;
    if (['$defs', 'patternProperties', 'anyOf', 'oneOf', 'allOf', 'prefixItems'].includes(name))
      node = node[name][segments[++i]];
    else if (['not', 'additionalProperties', 'contains', 'if', 'then', 'else'].includes(name)) node = node[name];
    else if (name) node = node.properties[name];
    for (let n = 0; n < items.length / 2; n++) node = node.items;
  }
  return node;
}
