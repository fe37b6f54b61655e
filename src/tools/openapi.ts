/** The OpenAPI 3.1 document of the tools API (/openapi.json, /docs) and its examples. */
import { JOB_TOOLS } from '../jobs/jobs.service';
import { INestApplication } from '@nestjs/common';
import { DocumentBuilder, OpenAPIObject, SwaggerModule } from '@nestjs/swagger';
import { ERROR_CATALOG, ErrorCode } from '../common/errors/error-catalog';
import { PLANS, ROLES, SCOPES } from '../common/access/roles';
import type { RequiredPlan } from '../common/access/tool-requirement';
import type { AppConfig } from '../config/config';
import { SCOPE_WORDS } from '../oauth/oauth-config';
import { TOOL_DEFAULTS } from './tool.decorator';
import { ToolRegistry, plainSchema } from './tool-registry.service';

const RATE_LIMIT_HEADERS = {
  'RateLimit-Limit': {
    description: 'Requests allowed in the window of the tighter budget.',
    schema: { type: 'integer' },
  },
  'RateLimit-Remaining': { description: 'Requests left in that window.', schema: { type: 'integer' } },
  'RateLimit-Reset': { description: 'Seconds until that window resets.', schema: { type: 'integer' } },
  'X-RateLimit-Limit': { description: 'Same value as RateLimit-Limit.', schema: { type: 'integer' } },
  'X-RateLimit-Remaining': { description: 'Same value as RateLimit-Remaining.', schema: { type: 'integer' } },
  'X-RateLimit-Reset': {
    description: 'Same value as RateLimit-Reset (seconds, not an epoch time).',
    schema: { type: 'integer' },
  },
  'RateLimit-Policy': {
    description: 'Both budgets, e.g. "ip";q=240;w=60, "cred";q=120;w=60 (IETF draft structured field).',
    schema: { type: 'string' },
  },
  RateLimit: {
    description: 'Both budgets\' state, e.g. "ip";r=239;t=60, "cred";r=119;t=60 (remaining, seconds to reset).',
    schema: { type: 'string' },
  },
  'X-Request-Id': { description: 'Id of this request; quote it when reporting a problem.', schema: { type: 'string' } },
};

/** On the tools whose long calls may run as a background job (issue 49). */
const PREFER_ASYNC = {
  name: 'Prefer',
  in: 'header',
  required: false,
  description:
    '`respond-async`: a long call (summarize_responses with status partial or all, export_responses) answers 202 with a job to poll with get_job.',
  schema: { type: 'string' },
};

/** On tool answers: a retry with the same Idempotency-Key and body gets the first answer again. */
const REPLAY_HEADER = {
  'Idempotency-Replayed': {
    description: '"true" when this answer is the stored answer of an earlier call with the same Idempotency-Key.',
    schema: { type: 'string', enum: ['true'] },
  },
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
          items: {
            type: 'object',
            required: ['path', 'message'],
            properties: {
              path: { type: 'string', description: 'JSON Pointer into the request body.' },
              message: { type: 'string' },
            },
          },
        },
        requestId: { type: 'string' },
      },
    },
  },
};

/** What an error status means on these routes, in words; which codes answer with it is the error catalog's. */
const STATUS_WORDS: Record<number, string> = {
  400: 'Arguments do not match the input schema, or the tool refused',
  401: 'Missing, invalid or expired credential',
  403: 'Not allowed',
  404: 'No such tool, form, block or response',
  408: 'The request did not arrive within 60 s',
  409: 'Conflict',
  413: 'Body over 1 MB',
  415: 'Body is not JSON, or is compressed (any Content-Encoding but identity)',
  422: 'Idempotency-Key reused with another body',
  429: 'Request budget exceeded',
  500: 'The tool failed on the service side; retry later',
};

/** Headers an error status always carries, beyond the rate-limit ones. */
const STATUS_HEADERS: Record<number, Record<string, unknown>> = {
  401: { 'WWW-Authenticate': { schema: { type: 'string' } } },
  429: { 'Retry-After': { description: 'Seconds to wait.', schema: { type: 'integer' } } },
};

/** The error codes a tool call can answer with. */
const TOOL_CALL_ERRORS: ErrorCode[] = [
  'invalid_arguments',
  'tool_error',
  'unauthorized',
  'insufficient_scope',
  'pro_required',
  'forbidden',
  'not_found',
  'version_conflict',
  'idempotency_key_in_use',
  'form_not_accepting_responses',
  'form_closed',
  'form_not_open',
  'invite_required',
  'invite_invalid',
  'invite_expired',
  'invite_revoked',
  'invite_used',
  'response_limit_reached',
  'quota_full',
  'request_timeout',
  'payload_too_large',
  'unsupported_media_type',
  'idempotency_key_reused',
  'rate_limited',
  'internal_error',
];

/** One OpenAPI response per HTTP status these codes answer with (the catalog's), naming the codes. */
function errorResponses(codes: ErrorCode[]): Record<string, unknown> {
  const byStatus = new Map<number, ErrorCode[]>();
  for (const code of codes) {
    const status = ERROR_CATALOG[code].status;
    byStatus.set(status, [...(byStatus.get(status) ?? []), code]);
  }
  return Object.fromEntries(
    [...byStatus].map(([status, sharing]) => [
      String(status),
      {
        description: `${STATUS_WORDS[status]} (codes: ${sharing.join(', ')})`,
        headers: { ...RATE_LIMIT_HEADERS, ...REPLAY_HEADER, ...STATUS_HEADERS[status] },
        content: { 'application/json': { schema: { $ref: '#/components/schemas/Error' } } },
      },
    ]),
  );
}

/** "a Pro workspace" for a plan a tool needs, "any plan" when it needs none. */
function planWords(plan: RequiredPlan): string {
  return plan === 'any' ? 'any plan' : `a ${plan[0].toUpperCase()}${plan.slice(1)} workspace`;
}

/** Stand-ins for ids the caller must look up: valid arguments, so a tool tried as it is answers 404 with a hint. */
const PUBLIC_ID = 'paste-a-publicId-from-list_forms';
const RESPONSE_ID = 'paste-a-response-id-from-list_responses';
/** Webhook and delivery ids are UUIDs: this one is valid and matches nothing (404 with a hint). */
const WEBHOOK_ID = '00000000-0000-4000-8000-000000000000';
const forAWebhook = (summary: string) => `${summary}: replace webhookId with an id from list_webhooks.`;
const forAForm = (summary: string) => `${summary}: replace publicId with one from list_forms (or create_form).`;

/**
 * The request body Swagger UI puts in "Try it out", one per tool. Without one it builds its own
 * from the schema, with every optional argument and the first value of each enum (list_forms then
 * filtered on "draft"): each of these works as it is, or says which id to paste.
 */
export const TOOL_EXAMPLES: Record<string, { summary: string; value: Record<string, unknown> }> = {
  list_forms: { summary: 'Every form in the workspace, first page', value: {} },
  create_form: {
    summary: 'A draft form with three questions',
    value: {
      title: 'Team lunch',
      blocks: [
        { type: 'short_text', title: 'Your name', required: true },
        { type: 'multiple_choice', title: 'Main course', required: true, choices: ['Pasta', 'Curry', 'Salad'] },
        { type: 'rating', title: 'How hungry are you?', max: 5 },
      ],
    },
  },
  get_form: { summary: forAForm('One form with its blocks'), value: { publicId: PUBLIC_ID } },
  update_form: {
    summary: forAForm('Rename a form (blocks unchanged)'),
    value: { publicId: PUBLIC_ID, title: 'Team lunch (Friday)' },
  },
  duplicate_form: {
    summary: forAForm('A draft copy of a form to try changes on'),
    value: { publicId: PUBLIC_ID, title: 'Team lunch (draft 2)' },
  },
  publish_form: { summary: forAForm('Open a form for responses'), value: { publicId: PUBLIC_ID } },
  close_form: { summary: forAForm('Stop a form taking responses'), value: { publicId: PUBLIC_ID } },
  delete_form: { summary: forAForm('Delete a form and its responses'), value: { publicId: PUBLIC_ID } },
  set_translation: {
    summary: forAForm("Give a form's French texts in one call (update_form lists fr in languages first)"),
    value: {
      publicId: PUBLIC_ID,
      language: 'fr',
      texts: { title: 'Déjeuner d’équipe', description: 'Choisissez un plat' },
    },
  },
  create_response: {
    summary: 'Answer a published form: replace publicId, and use its block ids (from get_form) as the keys of answers',
    value: { publicId: PUBLIC_ID, answers: { 'paste-a-block-id-from-get_form': 'Ada' } },
  },
  update_response: {
    summary: 'Change a partial response and complete it: replace publicId, responseId and the block ids',
    value: {
      publicId: PUBLIC_ID,
      responseId: RESPONSE_ID,
      answers: { 'paste-a-block-id-from-get_form': 'Ada' },
      complete: true,
    },
  },
  check_response: {
    summary: 'Dry run: the path these answers take and what create_response would refuse, storing nothing',
    value: { publicId: PUBLIC_ID, answers: { 'paste-a-block-id-from-get_form': 'Ada' } },
  },
  create_upload: {
    summary: forAForm('Where to PUT a 2 MB PDF for a file_upload block (its id or ref)'),
    value: { publicId: PUBLIC_ID, block: 'cv', filename: 'cv.pdf', contentType: 'application/pdf', size: 2_000_000 },
  },
  list_responses: {
    summary: forAForm('The newest responses of a form'),
    value: { publicId: PUBLIC_ID, order: 'newest', limit: 20 },
  },
  get_response: {
    summary: 'One response: replace publicId, and responseId with an id from list_responses',
    value: { publicId: PUBLIC_ID, responseId: RESPONSE_ID },
  },
  delete_response: {
    summary: 'Delete one response: replace publicId, and responseId with an id from list_responses',
    value: { publicId: PUBLIC_ID, responseId: RESPONSE_ID },
  },
  summarize_responses: { summary: forAForm('Counts and averages of every block'), value: { publicId: PUBLIC_ID } },
  export_responses: {
    summary: forAForm('A CSV of every response since the start of 2026; GET the url it answers within 15 minutes'),
    value: { publicId: PUBLIC_ID, format: 'csv', since: '2026-01-01T00:00:00Z' },
  },
  create_webhook: {
    summary: 'Send new responses to your receiver (an https URL of yours); keep the secret it answers',
    value: {
      url: 'https://hooks.example.com/formwork',
      events: ['response.created'],
      description: 'New answers to the CRM',
    },
  },
  create_invites: { summary: forAForm('Ten single-use links'), value: { publicId: PUBLIC_ID, count: 10 } },
  list_invites: { summary: forAForm('Invitations and their state'), value: { publicId: PUBLIC_ID } },
  revoke_invites: {
    summary: forAForm('End an invitation: replace the id with one from list_invites'),
    value: { publicId: PUBLIC_ID, ids: [WEBHOOK_ID] },
  },
  get_job: {
    summary: 'Poll a background job (the 202 of a call sent with Prefer: respond-async)',
    value: { jobId: 'job_5f0c6a1e9b2d4c7f8a3e1d0b6c9f2a47' },
  },
  list_webhooks: { summary: 'Every webhook endpoint of the workspace', value: {} },
  update_webhook: { summary: forAWebhook('Pause an endpoint'), value: { webhookId: WEBHOOK_ID, enabled: false } },
  delete_webhook: { summary: forAWebhook('Delete an endpoint'), value: { webhookId: WEBHOOK_ID } },
  rotate_webhook_secret: {
    summary: forAWebhook('A new signing secret; the old one signs too for 24 hours'),
    value: { webhookId: WEBHOOK_ID },
  },
  list_webhook_deliveries: {
    summary: 'The latest failed deliveries of every endpoint',
    value: { status: 'failed', limit: 20 },
  },
  redeliver_webhook: {
    summary: 'Send a delivery again: replace deliveryId with an id from list_webhook_deliveries',
    value: { deliveryId: WEBHOOK_ID },
  },
  send_test_webhook: {
    summary: forAWebhook('A test response.created event from your latest form'),
    value: { webhookId: WEBHOOK_ID },
  },
};

/**
 * The Content-Security-Policy of /docs (Swagger UI): its own scripts and styles (the page has
 * inline style blocks), images inline (data:), and "Try it out" calls to this origin and to the
 * public URL the document names as its server. Nothing may frame it.
 */
export function docsContentSecurityPolicy(config: AppConfig): string {
  const server = new URL(config.publicUrl).origin;
  return [
    "default-src 'none'",
    "script-src 'self'",
    "style-src 'self' 'unsafe-inline'",
    "img-src 'self' data:",
    `connect-src 'self' ${server}`,
    "base-uri 'none'",
    "form-action 'none'",
    "frame-ancestors 'none'",
  ].join('; ');
}

/**
 * A tool's input schema for the OpenAPI document: its shared definitions ($defs) moved into
 * `schemas` (components/schemas), where the document's own references point, because a `#/...`
 * reference in an OpenAPI document is resolved from the document's root, not the schema's.
 */
function inComponents(input: Record<string, unknown>, schemas: Record<string, unknown>): Record<string, unknown> {
  const { $defs, ...schema } = input as { $defs?: Record<string, unknown> };
  const moved = (x: unknown) =>
    JSON.parse(JSON.stringify(x).replaceAll('"#/$defs/', '"#/components/schemas/')) as Record<string, unknown>;
  for (const [name, definition] of Object.entries($defs ?? {})) schemas[name] = moved(definition);
  return moved(schema);
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
      // No angle brackets: Swagger UI renders descriptions as HTML and would drop "<token>" as a tag.
      'Every capability is one tool: POST /api/v1/tools/{name} with a JSON object of arguments. Authenticate with the header `Authorization: Bearer fw_...` (a workspace API token) or an OAuth access token in its place; in this page, use "Authorize". Every error is JSON: { "error": { "code", "message", "hint" } }.',
    )
    .setVersion('1')
    .addServer(config.publicUrl)
    // Opaque tokens: no bearerFormat (they are not JWTs).
    .addBearerAuth(
      {
        type: 'http',
        scheme: 'bearer',
        description: `Workspace API token (fw_...) or OAuth access token. Scopes: ${SCOPES.join(', ')}.`,
      },
      'bearer',
    )
    .addOAuth2(
      {
        type: 'oauth2',
        description:
          'Sign in through the built-in authorization server (authorization code with PKCE S256). In this page, "Authorize" uses its built-in client.',
        flows: {
          authorizationCode: {
            authorizationUrl: `${config.publicUrl}/oauth/authorize`,
            tokenUrl: `${config.publicUrl}/oauth/token`,
            refreshUrl: `${config.publicUrl}/oauth/token`,
            scopes: Object.fromEntries(SCOPES.map((s) => [s, SCOPE_WORDS[s]])),
          },
        },
      },
      'oauth2',
    )
    .build();
  const document = SwaggerModule.createDocument(app, base);
  document.tags = [
    {
      name: 'read tools',
      description: `Tools that read: ${planWords(TOOL_DEFAULTS.read.plan)}, role ${TOOL_DEFAULTS.read.minRole} or higher unless the tool says otherwise.`,
    },
    {
      name: 'write tools',
      description: `Tools that change data, in one transaction each: ${planWords(TOOL_DEFAULTS.write.plan)}, role ${TOOL_DEFAULTS.write.minRole} or higher unless the tool says otherwise.`,
    },
    { name: 'discovery', description: 'What the credential may do, and the tool list with its schemas.' },
  ];
  const registry = app.get(ToolRegistry);
  document.components = document.components ?? {};
  document.components.schemas = { ...(document.components.schemas ?? {}), Error: ERROR_SCHEMA as never };

  for (const tool of registry.all()) {
    const d = tool.definition;
    const input = inComponents(tool.input, document.components.schemas as Record<string, unknown>);
    // A tool whose long calls may run as a job (src/jobs/): the job's schema is get_job's answer.
    const background = JOB_TOOLS.includes(d.name) ? registry.get('get_job') : undefined;
    document.paths[`/api/v1/tools/${d.name}`] = {
      post: {
        operationId: d.name,
        summary: d.title,
        description: `${d.description}\n\nNeeds scope \`${d.scope}\` and role ${d.minRole} or higher${d.plan === 'any' ? '' : `; ${planWords(d.plan)}`}. Send \`Idempotency-Key\` to retry safely.`,
        tags: [d.write ? 'write tools' : 'read tools'],
        // Scopes are named on the oauth2 scheme (an http scheme takes none); API tokens carry them too (see the description).
        security: [{ bearer: [] }, { oauth2: [d.scope] }],
        // Formwork's access rules, so a caller can tell up front what a tool takes.
        'x-formwork': { scope: d.scope, write: d.write, minRole: d.minRole, plan: d.plan },
        parameters: [
          {
            name: 'Idempotency-Key',
            in: 'header',
            required: false,
            description: 'Any unique string (a UUID); a retry with the same key and body returns the first result.',
            schema: { type: 'string', maxLength: 255 },
          },
          ...(background ? [PREFER_ASYNC] : []),
        ],
        requestBody: {
          required: false,
          content: {
            'application/json': {
              schema: input as never,
              ...(TOOL_EXAMPLES[d.name] ? { examples: { example: TOOL_EXAMPLES[d.name] } } : {}),
            },
          },
        },
        responses: {
          '200': {
            description: 'The tool result.',
            headers: { ...RATE_LIMIT_HEADERS, ...REPLAY_HEADER },
            // The declared output in full (strict, with formats), for code generators; the tool lists publish it shorter.
            content: { 'application/json': { schema: plainSchema(d.output) as never } },
          },
          ...(background
            ? {
                '202': {
                  description: 'With `Prefer: respond-async`, a long call: the job, polled with get_job.',
                  headers: RATE_LIMIT_HEADERS,
                  content: { 'application/json': { schema: plainSchema(background.definition.output) as never } },
                },
              }
            : {}),
          ...errorResponses(TOOL_CALL_ERRORS),
        },
      },
    } as never;
  }

  document.paths['/api/v1'] = {
    get: {
      operationId: 'get_workspace',
      summary: 'The workspace this credential acts on, its role, scopes and the tools it may call',
      description:
        'Who the credential is: its workspace, role, scopes and credential, and the names of the tools it may call (scope, plan and role allowing).',
      tags: ['discovery'],
      security: [{ bearer: [] }, { oauth2: [] }],
      responses: {
        '200': {
          description: 'Workspace and access',
          headers: RATE_LIMIT_HEADERS,
          content: {
            'application/json': {
              schema: {
                type: 'object',
                properties: {
                  workspace: {
                    type: 'object',
                    properties: {
                      id: { type: 'string' },
                      name: { type: 'string' },
                      slug: { type: 'string' },
                      plan: { type: 'string', enum: [...PLANS] },
                    },
                  },
                  role: { type: 'string', enum: [...ROLES] },
                  scopes: { type: 'array', items: { type: 'string', enum: [...SCOPES] } },
                  credential: {
                    type: 'object',
                    properties: { type: { type: 'string' }, id: { type: 'string' }, name: { type: 'string' } },
                  },
                  tools: { type: 'array', items: { type: 'string' } },
                },
              },
            },
          },
        },
        ...errorResponses(['unauthorized', 'rate_limited']),
      },
    },
  } as never;
  document.paths['/api/v1/tools'] = {
    get: {
      operationId: 'list_tools',
      summary: 'Every tool with the JSON Schema (2020-12) of its input and output',
      description:
        'Public: every tool with its title, description, input and output schemas and annotations; its access rules are x-formwork on its operation here. The MCP connector at /mcp lists the same tools.',
      tags: ['discovery'],
      security: [],
      responses: {
        '200': {
          description:
            '{ "tools": [{ "name", "title", "description", "inputSchema", "outputSchema", "annotations" }] }',
          headers: RATE_LIMIT_HEADERS,
        },
      },
    },
  } as never;
  return document;
}
