import { INestApplication } from '@nestjs/common';
import { DocumentBuilder, OpenAPIObject, SwaggerModule } from '@nestjs/swagger';
import { ERROR_CATALOG } from '../common/errors/error-catalog';
import { SCOPES } from '../common/access/roles';
import type { AppConfig } from '../config/config';
import { ToolRegistry, plainSchema } from './tool-registry.service';

const RATE_LIMIT_HEADERS = {
  'RateLimit-Limit': { description: 'Requests allowed in the window of the tighter budget.', schema: { type: 'integer' } },
  'RateLimit-Remaining': { description: 'Requests left in that window.', schema: { type: 'integer' } },
  'RateLimit-Reset': { description: 'Seconds until that window resets.', schema: { type: 'integer' } },
  'X-RateLimit-Limit': { description: 'Same value as RateLimit-Limit.', schema: { type: 'integer' } },
  'X-RateLimit-Remaining': { description: 'Same value as RateLimit-Remaining.', schema: { type: 'integer' } },
  'X-RateLimit-Reset': { description: 'Same value as RateLimit-Reset (seconds, not an epoch time).', schema: { type: 'integer' } },
  'RateLimit-Policy': { description: 'Both budgets, e.g. "ip";q=240;w=60, "cred";q=120;w=60 (IETF draft structured field).', schema: { type: 'string' } },
  RateLimit: { description: 'Both budgets\' state, e.g. "ip";r=239;t=60, "cred";r=119;t=60 (remaining, seconds to reset).', schema: { type: 'string' } },
  'X-Request-Id': { description: 'Id of this request; quote it when reporting a problem.', schema: { type: 'string' } },
};

/** On tool answers: a retry with the same Idempotency-Key and body gets the first answer again. */
const REPLAY_HEADER = {
  'Idempotency-Replayed': { description: '"true" when this answer is the stored answer of an earlier call with the same Idempotency-Key.', schema: { type: 'string', enum: ['true'] } },
};

const ERROR_SCHEMA = {
  type: 'object',
  required: ['error'],
  properties: {
    error: {
      type: 'object',
      required: ['code', 'message', 'hint'],
      properties: {
        code: { type: 'string', enum: Object.keys(ERROR_CATALOG), description: 'Stable error code.' },
        message: { type: 'string', description: 'What went wrong.' },
        hint: { type: 'string', description: 'What to do next.' },
        details: {
          type: 'array',
          items: { type: 'object', required: ['path', 'message'], properties: { path: { type: 'string', description: 'JSON Pointer into the request body.' }, message: { type: 'string' } } },
        },
        requestId: { type: 'string' },
      },
    },
  },
};

function errorResponse(description: string, codes: string[], extraHeaders: Record<string, unknown> = {}) {
  return {
    description: `${description} (codes: ${codes.join(', ')})`,
    headers: { ...RATE_LIMIT_HEADERS, ...REPLAY_HEADER, ...extraHeaders },
    content: { 'application/json': { schema: { $ref: '#/components/schemas/Error' } } },
  };
}

/**
 * The OpenAPI 3.1 document: the routes Nest knows through @nestjs/swagger, plus one operation per
 * tool at its literal path, whose request and 200 schemas are the tool's own input and output schemas.
 */
export function buildOpenApiDocument(app: INestApplication, config: AppConfig): OpenAPIObject {
  const base = new DocumentBuilder()
    .setOpenAPIVersion('3.1.0')
    .setTitle('Formwork tools API')
    .setDescription(
      'Every capability is one tool: POST /api/v1/tools/{name} with a JSON object of arguments. Authenticate with "Authorization: Bearer <token>". Every error is JSON: { "error": { "code", "message", "hint" } }.',
    )
    .setVersion('1')
    .addServer(config.publicUrl)
    .addBearerAuth({ type: 'http', scheme: 'bearer', description: `Workspace API token (fw_...) or OAuth access token. Scopes: ${SCOPES.join(', ')}.` }, 'bearer')
    .build();
  const document = SwaggerModule.createDocument(app, base);
  const registry = app.get(ToolRegistry);
  document.components = document.components ?? {};
  document.components.schemas = { ...(document.components.schemas ?? {}), Error: ERROR_SCHEMA as never };

  for (const tool of registry.all()) {
    const d = tool.definition;
    document.paths[`/api/v1/tools/${d.name}`] = {
      post: {
        operationId: d.name,
        summary: d.title,
        description: `${d.description}\n\nNeeds scope \`${d.scope}\` and role ${d.minRole} or higher${d.write ? '; a Pro workspace' : ''}. Send \`Idempotency-Key\` to retry safely.`,
        tags: [d.write ? 'write tools' : 'read tools'],
        security: [{ bearer: [d.scope] }],
        parameters: [
          {
            name: 'Idempotency-Key',
            in: 'header',
            required: false,
            description: 'Any unique string (a UUID); a retry with the same key and body returns the first result.',
            schema: { type: 'string', maxLength: 255 },
          },
        ],
        requestBody: { required: false, content: { 'application/json': { schema: plainSchema(d.input) as never } } },
        responses: {
          '200': { description: 'The tool result.', headers: { ...RATE_LIMIT_HEADERS, ...REPLAY_HEADER }, content: { 'application/json': { schema: plainSchema(d.output) as never } } },
          '400': errorResponse('Arguments do not match the input schema, or the tool refused', ['invalid_arguments', 'tool_error']),
          '401': errorResponse('Missing, invalid or expired credential', ['unauthorized'], { 'WWW-Authenticate': { schema: { type: 'string' } } }),
          '403': errorResponse('Not allowed', ['insufficient_scope', 'pro_required', 'forbidden']),
          '404': errorResponse('No such tool, form, block or response', ['not_found']),
          '409': errorResponse('Conflict', ['version_conflict', 'idempotency_key_in_use', 'form_not_accepting_responses']),
          '413': errorResponse('Body too large', ['payload_too_large']),
          '415': errorResponse('Body is not JSON', ['unsupported_media_type']),
          '422': errorResponse('Idempotency-Key reused with another body', ['idempotency_key_reused']),
          '429': errorResponse('Request budget exceeded', ['rate_limited'], { 'Retry-After': { description: 'Seconds to wait.', schema: { type: 'integer' } } }),
          '500': errorResponse('The tool failed on the service side; retry later', ['internal_error']),
        },
      },
    } as never;
  }

  document.paths['/api/v1'] = {
    get: {
      operationId: 'get_workspace',
      summary: 'The workspace this credential acts on, its role, scopes and the tools it may call',
      tags: ['discovery'],
      security: [{ bearer: [] }],
      responses: {
        '200': {
          description: 'Workspace and access',
          headers: RATE_LIMIT_HEADERS,
          content: {
            'application/json': {
              schema: {
                type: 'object',
                properties: {
                  workspace: { type: 'object', properties: { id: { type: 'string' }, name: { type: 'string' }, slug: { type: 'string' }, plan: { type: 'string', enum: ['free', 'pro'] } } },
                  role: { type: 'string', enum: ['viewer', 'editor', 'admin', 'owner'] },
                  scopes: { type: 'array', items: { type: 'string', enum: [...SCOPES] } },
                  credential: { type: 'object', properties: { type: { type: 'string' }, id: { type: 'string' }, name: { type: 'string' } } },
                  tools: { type: 'array', items: { type: 'string' } },
                },
              },
            },
          },
        },
        '401': errorResponse('Missing, invalid or expired credential', ['unauthorized'], { 'WWW-Authenticate': { schema: { type: 'string' } } }),
        '429': errorResponse('Request budget exceeded', ['rate_limited']),
      },
    },
  } as never;
  document.paths['/api/v1/tools'] = {
    get: {
      operationId: 'list_tools',
      summary: 'Every tool with the JSON Schema (2020-12) of its input and output',
      tags: ['discovery'],
      security: [],
      responses: { '200': { description: '{ "tools": [{ "name", "title", "description", "inputSchema", "outputSchema", "annotations" }] }', headers: RATE_LIMIT_HEADERS } },
    },
  } as never;
  return document;
}
