import { Injectable, Logger } from '@nestjs/common';
import {
  CacheHint,
  JSONRPCRequest,
  CallToolResult,
  classifyInboundRequest,
  createMcpHandler,
  InboundModernRoute,
  isJSONRPCRequest,
  JSONRPCMessage,
  McpHttpHandler,
  parseJSONRPCMessage,
  ProtocolError,
  ProtocolErrorCode,
  RequestId,
  ResourceNotFoundError,
  Server,
  Tool,
  UnsupportedProtocolVersionError,
} from '@modelcontextprotocol/server';
import { AjvJsonSchemaValidator } from '@modelcontextprotocol/server/validators/ajv';
import type { FastifyRequest } from 'fastify';
import type { Principal } from '../common/access/principal';
import { APP_MIME_TYPE, appViewHtml, appViewList } from '../apps/app-views';
import { ApiError } from '../common/errors/api-error';
import { databaseErrorCode, databaseUnavailable, databaseUnavailableKind } from '../common/errors/database-unavailable';
import { isJsonRequest } from '../common/http/body';
import { IdempotencyService } from '../idempotency/idempotency.service';
import { VERSION } from '../index/index.controller';
import { ToolCallService } from '../tools/tool-call.service';
import { ToolRegistry } from '../tools/tool-registry.service';
import { observeMcpToolCall } from '../observability/http-observer';
import { extraContent } from './mcp-content';
import { McpReply, McpRouter, ModernMcpRouter } from './mcp-router';
import { JobsService } from '../jobs/jobs.service';
import { McpTasks, TASKS_EXTENSION } from './mcp-tasks';

/** The protocol versions of the 2025 era this connector speaks; initialize settles on one of them. */
export const MCP_PROTOCOL_VERSIONS = ['2025-11-25', '2025-06-18'];
/** The protocol versions of the stateless era (no initialize; each request names its version in _meta). */
export const MCP_MODERN_PROTOCOL_VERSIONS = ['2026-07-28'];
/** Every version served, newest first (what an unsupported version is told). */
const ALL_PROTOCOL_VERSIONS = [...MCP_MODERN_PROTOCOL_VERSIONS, ...MCP_PROTOCOL_VERSIONS];

const SCHEMA_VALIDATOR = new AjvJsonSchemaValidator();

/** The MCP Apps extension's id (EXTENSION_ID of ext-apps' server entry, which is ESM only). */
export const UI_EXTENSION = 'io.modelcontextprotocol/ui';

/**
 * The caching hint of tools/list on 2026-07-28. The list is the credential's (the tools it may
 * call: scope, plan and role), so only the client that asked may keep it: 'private'. Five minutes,
 * so a deploy that adds or changes a tool, or a plan or role changed, reaches clients soon after.
 */
export const TOOLS_LIST_CACHE: Required<CacheHint> = { ttlMs: 300_000, cacheScope: 'private' };

const INSTRUCTIONS =
  "Formwork is a form builder's back end: forms made of blocks, and their responses. Every tool acts in the workspace of the credential. " +
  'Read a form with get_form before changing it, and send the version you read to update_form. A tool that refuses answers with isError and a JSON error whose code, hint and details say what to change. ' +
  'tools/list shows only the tools this credential may call; more exist: writes need a Pro workspace, the editor role (deleting a form, webhooks: admin) and a :write scope (forms, responses, webhooks), reads a :read scope. For more, authorize again asking for the scope, or ask a workspace admin.';

/** What the HTTP answer of one POST /mcp is: status, headers and the JSON-RPC text (empty for 202). */
export interface McpAnswer {
  status: number;
  headers: Record<string, string>;
  body: string;
}

/** Per HTTP request: who calls, and what its tool call found out for the HTTP answer. */
interface CallContext {
  principal: Principal;
  requestId: string;
  idempotencyKey: string | string[] | undefined;
  replayed: boolean;
  /** The text content of a success: its structuredContent as JSON (see answerJson). */
  successTexts: Set<string>;
}

/**
 * The MCP connector (Streamable HTTP, stateless, answering each POST with one JSON body), on the
 * SDK's v2 line (@modelcontextprotocol/server), serving both eras from the one endpoint:
 * - 2025-06-18 and 2025-11-25 (the initialize handshake): the SDK's own server, built once and
 *   connected to McpRouter, which hands it the JSON-RPC request of each HTTP request and gives the
 *   reply back. The HTTP side is the Streamable HTTP transport's, for a server that does not stream:
 *   the checks of the SDK's transport (Accept, Content-Type, JSON, JSON-RPC shape,
 *   MCP-Protocol-Version), with its statuses, codes and messages, and no JSON-RPC batch (the protocol
 *   versions served have none; the SDK's transport still takes them), made here on the body Fastify
 *   already read, without the Web Request/Response round trip that cost more than the tool call.
 * - 2026-07-28 (stateless: each request carries its version and the client's capabilities in
 *   `_meta`): tools/list and tools/call whose headers are in order go to one long-lived server bound
 *   to that revision (ModernMcpRouter); everything else, refusals included, goes through the SDK's
 *   own entry (createMcpHandler, a server per request), which owns what the revision asks of a
 *   server (server/discover, the Mcp-Method and Mcp-Name checks, the methods it removed,
 *   unsupported versions). Both encode results the revision's way (resultType, serverInfo, the
 *   caching hints of tools/list). The SDK's entry alone cost about 1 ms of CPU more per call than
 *   REST on the development machine (bench:mcp): the long-lived server costs what REST does.
 * Which era a request belongs to is the SDK's classifier's word (classifyInboundRequest), on the
 * body already parsed. Nothing is kept between HTTP requests, so any instance answers any request.
 * Both eras serve the registry's tools, and a call runs the very steps of POST /api/v1/tools/{name}
 * through ToolCallService and IdempotencyService. Authentication and both budgets ran before, in the
 * global guards, as on every route (one spend per HTTP request); the scope check is made here before
 * the server runs, so that a missing scope is an HTTP 403 with its challenge (MCP's step-up
 * signal), not a tool result.
 */
@Injectable()
export class McpService {
  private readonly logger = new Logger('Errors');
  private readonly debugLogger = new Logger('Mcp');
  /** The MCP entry of each listed tool (ToolRegistry.listFor keeps its lists, so an entry is made once). */
  private readonly tools = new WeakMap<object, Tool>();
  private readonly router = new McpRouter<CallContext>();
  private readonly legacyServer: Server;
  private readonly modern: McpHttpHandler;
  private readonly modernRouter = new ModernMcpRouter<CallContext>(MCP_MODERN_PROTOCOL_VERSIONS[0]);
  private readonly modernServer: Server;
  private readonly tasks: McpTasks;

  constructor(
    private readonly registry: ToolRegistry,
    private readonly calls: ToolCallService,
    private readonly idempotency: IdempotencyService,
    jobs: JobsService,
  ) {
    this.tasks = new McpTasks(jobs, registry, calls);
    this.legacyServer = this.server(MCP_PROTOCOL_VERSIONS, (extra) => this.router.contextOf(extra)!);
    // The router's start() does nothing: the server is connected once this returns. It is never
    // closed: it holds no socket or timer, and closing it would drop the replies of calls still
    // running while the HTTP server drains at shutdown.
    void this.legacyServer.connect(this.router);
    // The hot path of 2026-07-28 (tools/list and tools/call whose headers are in order): one
    // long-lived server bound to that revision, like the 2025 one (see handle()).
    this.modernServer = this.modernEraServer(() => (id) => this.modernRouter.contextOf(id)!);
    void this.modernServer.connect(this.modernRouter);
    this.modern = createMcpHandler(
      ({ authInfo }) => this.modernEraServer(() => () => (authInfo?.extra as { call: CallContext }).call),
      {
        legacy: 'reject',
        onerror: (err) => this.debugLogger.debug({ msg: 'MCP request refused', reason: err.message }),
      },
    );
  }

  /** A server of 2026-07-28: the tools, and empty lists of what a client may list besides. */
  private modernEraServer(context: () => (id: RequestId) => CallContext): Server {
    const server = this.server(ALL_PROTOCOL_VERSIONS, context(), TOOLS_LIST_CACHE);
    // What a client of 2026-07-28 may list besides tools and resources, answered as empty lists
    // (with their caching hints) rather than errors: this server has no prompts or templates.
    server.setRequestHandler('prompts/list', () => ({ prompts: [] }));
    server.setRequestHandler('resources/templates/list', () => ({ resourceTemplates: [] }));
    return server;
  }

  /** An SDK server of the connector: the registry's tools, for the versions given. */
  private server(versions: string[], context: (id: RequestId) => CallContext, cache?: CacheHint): Server {
    const modern = versions !== MCP_PROTOCOL_VERSIONS;
    const server = new Server(
      { name: 'formwork', title: 'Formwork', version: VERSION },
      {
        // resources: the MCP Apps views (src/apps/), under the ui extension they belong to.
        capabilities: {
          tools: { listChanged: false },
          ...(modern ? { prompts: { listChanged: false } } : {}),
          resources: { listChanged: false },
          extensions: { [UI_EXTENSION]: { mimeTypes: [APP_MIME_TYPE] }, ...(modern ? { [TASKS_EXTENSION]: {} } : {}) },
        },
        instructions: INSTRUCTIONS,
        // One validator for every server (an Ajv instance costs more to build than a request).
        jsonSchemaValidator: SCHEMA_VALIDATOR,
        supportedProtocolVersions: versions,
        ...(cache ? { cacheHints: { 'tools/list': cache } } : {}),
      },
    );
    server.setRequestHandler('tools/list', (_request, extra) => ({
      tools: this.toolList(context(extra.mcpReq.id).principal),
    }));
    server.setRequestHandler('resources/list', () => ({ resources: appViewList() }));
    server.setRequestHandler('resources/read', (request) => {
      const { uri } = request.params;
      const text = appViewHtml(uri);
      if (text === undefined)
        throw new ResourceNotFoundError(uri, `No resource "${uri}"; resources/list lists the views there are.`);
      return { contents: [{ uri, mimeType: APP_MIME_TYPE, text, _meta: { ui: { prefersBorder: true } } }] };
    });
    server.setRequestHandler('tools/call', (request, extra) =>
      observeMcpToolCall(this.registry.get(request.params.name) ? request.params.name : 'unknown', () =>
        this.callTool(request.params.name, request.params.arguments, context(extra.mcpReq.id)),
      ),
    );
    return server;
  }

  /**
   * tools/list: the entries of GET /api/v1/tools for the same credential (the tools it may call),
   * in the registry's order, with the MCP Apps view a tool opens (`_meta.ui`, and the flat key
   * older hosts read). Each tool's entry is made once; a list is the credential's subset.
   */
  private toolList(principal: Principal): Tool[] {
    return this.registry.listFor(principal).map((listed) => {
      let tool = this.tools.get(listed);
      if (!tool) {
        const { name, title, description, inputSchema, outputSchema, annotations } = listed;
        const ui = this.registry.get(name)?.definition.ui;
        tool = {
          name,
          title,
          description,
          inputSchema: inputSchema as Tool['inputSchema'],
          ...(outputSchema ? { outputSchema: outputSchema as Tool['outputSchema'] } : {}),
          annotations,
          ...(ui ? { _meta: { ui, ...(ui.resourceUri ? { 'ui/resourceUri': ui.resourceUri } : {}) } } : {}),
        };
        this.tools.set(listed, tool);
      }
      return tool;
    });
  }

  async handle(req: FastifyRequest): Promise<McpAnswer> {
    const accept = req.headers.accept;
    if (!accept?.includes('application/json') || !accept.includes('text/event-stream')) {
      return jsonRpcError(
        406,
        -32000,
        'Not Acceptable: Client must accept both application/json and text/event-stream',
      );
    }
    if (!isJsonRequest(req) || typeof req.body !== 'string') {
      return jsonRpcError(415, -32000, 'Unsupported Media Type: Content-Type must be application/json');
    }
    let body: unknown;
    try {
      body = JSON.parse(req.body);
    } catch {
      return jsonRpcError(400, ProtocolErrorCode.ParseError, 'Parse error: Invalid JSON');
    }
    // No protocol version served has JSON-RPC batching (2025-06-18 removed it): a batch would
    // also run up to 100 calls for the price of one request against both budgets.
    if (Array.isArray(body)) {
      return jsonRpcError(
        400,
        ProtocolErrorCode.InvalidRequest,
        `Invalid Request: JSON-RPC batches are not supported (MCP ${ALL_PROTOCOL_VERSIONS.join(', ')} have no batching); send one message per request`,
      );
    }
    let message: JSONRPCMessage;
    try {
      message = parseJSONRPCMessage(body);
    } catch {
      return jsonRpcError(400, ProtocolErrorCode.ParseError, 'Parse error: Invalid JSON-RPC message');
    }
    const route = classifyInboundRequest({
      httpMethod: 'POST',
      protocolVersionHeader: header(req, 'mcp-protocol-version'),
      mcpMethodHeader: header(req, 'mcp-method'),
      mcpNameHeader: header(req, 'mcp-name'),
      body,
    });
    if (route.kind === 'reject') {
      return jsonRpcError(route.httpStatus, route.code, route.message, route.data, requestIdOf(body));
    }
    const refused = this.beforeServer(
      message,
      req.principal!,
      route.kind === 'legacy' ? header(req, 'mcp-protocol-version') : undefined,
      Buffer.byteLength(req.body),
    );
    if (refused) return refused;
    const ctx: CallContext = {
      principal: req.principal!,
      requestId: req.id,
      idempotencyKey: req.headers['idempotency-key'],
      replayed: false,
      successTexts: new Set(),
    };
    if (route.kind === 'modern') {
      // The tasks extension (mcp-tasks.ts): a long call from a client that declares it, tasks/get and tasks/cancel.
      const task =
        route.messageKind === 'request' && (await this.tasks.handle(route.message, ctx.principal, ctx.requestId));
      if (task) return { status: 200, headers: answerHeaders(ctx), body: JSON.stringify(task) };
      if (!onHotPath(req, route)) return this.serveModern(req, route, ctx);
      const reply = await this.modernRouter.exchange(route.message as JSONRPCRequest, ctx);
      return { status: 200, headers: answerHeaders(ctx), body: JSON.stringify(reply) };
    }
    // Notifications (and replies) from the client are accepted and dropped: what they refer to
    // (an initialized connection, a request to cancel, progress) lives in no stateless server.
    if (!isJSONRPCRequest(message)) return { status: 202, headers: {}, body: '' };
    const reply = await this.router.exchange(message, ctx);
    return { status: 200, headers: answerHeaders(ctx), body: answerJson(reply, ctx.successTexts) };
  }

  /** A request of 2026-07-28, through the SDK's entry for it (a server per request). */
  private async serveModern(req: FastifyRequest, route: InboundModernRoute, ctx: CallContext): Promise<McpAnswer> {
    // What the SDK's entry reads of the request: its media type and the protocol headers.
    const headers = new Headers();
    for (const name of ['content-type', 'mcp-protocol-version', 'mcp-method', 'mcp-name']) {
      const value = header(req, name);
      if (value !== undefined) headers.set(name, value);
    }
    const response = await this.modern.fetch(new Request('http://formwork.invalid/mcp', { method: 'POST', headers }), {
      parsedBody: route.message,
      authInfo: { token: '', clientId: '', scopes: [], extra: { call: ctx } },
    });
    const answer = answerHeaders(ctx);
    const type = response.headers.get('content-type');
    if (type) answer['Content-Type'] = type;
    const allow = response.headers.get('allow');
    if (allow) answer.Allow = allow;
    return { status: response.status, headers: answer, body: await response.text() };
  }

  /**
   * Checks made before the SDK server runs: the shape of a tools/call's params (a caller's mistake
   * is -32602 Invalid params with a readable message, where the SDK would answer with its schema
   * dump), the scope of its tool (HTTP 403 with the challenge, thrown to the error filter), and,
   * on the 2025 era, the protocol version: initialize settles on one of MCP_PROTOCOL_VERSIONS (the
   * SDK server counter-offers the latest to a client asking for another), and a later request
   * naming an unsupported version is refused with the versions there are.
   */
  private beforeServer(
    message: JSONRPCMessage,
    principal: Principal,
    versionHeader: string | undefined,
    bodyBytes: number,
  ): McpAnswer | undefined {
    const { id, method, params } = message as { id?: RequestId; method?: unknown; params?: unknown };
    const called =
      method === 'tools/call' && id !== undefined && !toolsCallProblem(params)
        ? this.registry.get((params as { name: string }).name)
        : undefined;
    // The body limit of the tool called (1 MB for any other message), as HTTP 413 like the REST route's.
    this.calls.checkBodySize(called, bodyBytes);
    if (method === 'tools/call' && id !== undefined) {
      const invalid = toolsCallProblem(params);
      if (invalid) return jsonRpcReplyError(id, ProtocolErrorCode.InvalidParams, `Invalid params: ${invalid}`);
      if (called) this.calls.authorizeScope(principal, called, 'mcp');
    }
    if (versionHeader !== undefined && !MCP_PROTOCOL_VERSIONS.includes(versionHeader)) {
      const error = new UnsupportedProtocolVersionError({ supported: ALL_PROTOCOL_VERSIONS, requested: versionHeader });
      return jsonRpcError(400, error.code, `Bad Request: ${error.message}`, error.data, id ?? null);
    }
    return undefined;
  }

  /**
   * tools/call: the steps of the REST route in its order (plan and role, arguments, Idempotency-Key,
   * run), then the REST answer as MCP content. Any refusal is a tool result with isError and the
   * REST error envelope as its text; an unknown tool is a JSON-RPC error (-32602).
   */
  private async callTool(name: string, args: unknown, ctx: CallContext): Promise<CallToolResult> {
    const tool = this.registry.get(name);
    if (!tool) {
      throw new ProtocolError(
        ProtocolErrorCode.InvalidParams,
        `There is no tool named "${name}"; tools/list lists the tools: ${this.registry
          .all()
          .map((t) => t.definition.name)
          .join(', ')}.`,
      );
    }
    try {
      this.calls.authorize(ctx.principal, tool, 'mcp');
      const checked = this.calls.checkArguments(tool, args ?? {});
      const key = IdempotencyService.parseKey(ctx.idempotencyKey);
      const call = { tool, args: checked, principal: ctx.principal, requestId: ctx.requestId };
      if (key === undefined) {
        const result = await this.calls.run(call);
        return success(result, JSON.stringify(result ?? null), ctx, tool.handler);
      }
      const outcome = await this.idempotency.run(
        {
          principal: ctx.principal,
          tool: tool.definition.name,
          write: tool.definition.write,
          key,
          args: checked,
          requestId: ctx.requestId,
        },
        () => this.calls.run(call),
      );
      ctx.replayed ||= outcome.replayed;
      // A stored refusal is replayed as the refusal it was.
      return outcome.status < 300
        ? success(JSON.parse(outcome.body), outcome.body, ctx, tool.handler)
        : refusal(outcome.body);
    } catch (err) {
      if (err instanceof ApiError) return refusal(JSON.stringify(err.toJSON(ctx.requestId)));
      // The database away or a bounded wait run out: the REST route's 503 service_unavailable.
      const unavailable = databaseUnavailableKind(err);
      if (unavailable) {
        this.logger.warn({
          msg: 'database unavailable',
          requestId: ctx.requestId,
          tool: name,
          kind: unavailable,
          sqlState: databaseErrorCode(err),
        });
        return refusal(JSON.stringify(databaseUnavailable(unavailable).toJSON(ctx.requestId)));
      }
      this.logger.error(
        { msg: 'MCP tool call failed', requestId: ctx.requestId, tool: name },
        err instanceof Error ? err.stack : String(err),
      );
      return refusal(JSON.stringify(new ApiError('internal_error').toJSON(ctx.requestId)));
    }
  }
}

/**
 * Whether a request of 2026-07-28 takes the long-lived server: tools/list or tools/call of a
 * revision served, whose MCP-Protocol-Version, Mcp-Method and (for tools/call) Mcp-Name headers are
 * present and agree with the body (Mcp-Name compared after the spaces around it, as sent). Anything
 * else, refusals included, goes through the SDK's entry, which answers it as the revision says
 * (header errors -32020, Base64-encoded Mcp-Name values, server/discover, removed methods...).
 * The classifier already checked the body's envelope and that MCP-Protocol-Version and Mcp-Method,
 * when present, match it.
 */
function onHotPath(req: FastifyRequest, route: InboundModernRoute): boolean {
  if (route.messageKind !== 'request') return false;
  const { method, params } = route.message;
  if (method !== 'tools/list' && method !== 'tools/call') return false;
  if (!MCP_MODERN_PROTOCOL_VERSIONS.includes(route.classification.revision ?? '')) return false;
  if (header(req, 'mcp-protocol-version') === undefined || header(req, 'mcp-method') === undefined) return false;
  if (method === 'tools/list') return true;
  const name = header(req, 'mcp-name')?.replace(/^[ \t]+|[ \t]+$/g, '');
  return name !== undefined && !name.startsWith('=?') && name === (params as { name?: unknown } | undefined)?.name;
}

/** One header of the request as one string (undefined when absent). */
function header(req: FastifyRequest, name: string): string | undefined {
  const value = req.headers[name];
  return Array.isArray(value) ? value.join(', ') : value;
}

/** The id of a JSON-RPC request (null for anything else), for an error reply to it. */
function requestIdOf(body: unknown): RequestId | null {
  const { id, method } = (body ?? {}) as { id?: unknown; method?: unknown };
  return typeof method === 'string' && (typeof id === 'string' || typeof id === 'number') ? id : null;
}

function answerHeaders(ctx: CallContext): Record<string, string> {
  const headers: Record<string, string> = { 'Content-Type': 'application/json' };
  if (ctx.replayed) headers['Idempotency-Replayed'] = 'true';
  return headers;
}

/** A success: its structuredContent, its one text content, and what its tool adds (see mcp-content.ts). */
function success(result: unknown, text: string, ctx: CallContext, handler: unknown): CallToolResult {
  ctx.successTexts.add(text);
  return {
    structuredContent: result as Record<string, unknown>,
    content: [{ type: 'text', text }, ...extraContent(handler, result)],
  };
}

/**
 * No structuredContent: clients check it against the output schema, which an error does not match.
 * Its hint names MCP's way where the REST one names a route (tools/list, not GET /api/v1/tools).
 */
function refusal(envelope: string): CallToolResult {
  return { isError: true, content: [{ type: 'text', text: envelope.replaceAll('GET /api/v1/tools', 'tools/list') }] };
}

/**
 * The JSON of one reply. A tool's success holds its answer twice, as structuredContent and as the
 * JSON text of its one text content, which callTool made from it: that text is written as the
 * structuredContent too, instead of serialising the answer a second time (about 0.03 ms of CPU
 * for a 2 KB form on the development machine). Any other reply is serialised as it is.
 */
function answerJson(reply: McpReply, successTexts: Set<string>): string {
  const result = (reply as { result?: CallToolResult }).result;
  const content = result?.content;
  const text = content?.length === 1 && content[0].type === 'text' ? content[0].text : undefined;
  if (
    text === undefined ||
    !successTexts.has(text) ||
    typeof result!.structuredContent !== 'object' ||
    result!.structuredContent === null ||
    Object.keys(result!).length !== 2
  ) {
    return JSON.stringify(reply);
  }
  return `{"jsonrpc":"2.0","id":${JSON.stringify(reply.id)},"result":{"content":[{"type":"text","text":${JSON.stringify(text)}}],"structuredContent":${text}}}`;
}

/** Why a tools/call's params are not { name: string, arguments?: object }, in words; undefined when they are. */
function toolsCallProblem(params: unknown): string | undefined {
  if (!params || typeof params !== 'object' || Array.isArray(params))
    return `tools/call takes params {"name": "<tool>", "arguments": {...}}, not ${jsonKind(params)}.`;
  const { name, arguments: args } = params as { name?: unknown; arguments?: unknown };
  if (typeof name !== 'string')
    return `params.name must be the name of a tool (a string; tools/list lists them), not ${jsonKind(name)}.`;
  if (args !== undefined && (args === null || typeof args !== 'object' || Array.isArray(args))) {
    return `params.arguments must be an object of the tool's arguments by name, e.g. {"publicId": "..."}, not ${jsonKind(args)}; send {} (or leave it out) for a tool without arguments.`;
  }
  return undefined;
}

/** What a JSON value is, for a message: "null", "an array", "a string"... */
function jsonKind(value: unknown): string {
  if (value === undefined) return 'nothing';
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'an array';
  return typeof value === 'object' ? 'an object' : `a ${typeof value}`;
}

/** A JSON-RPC error reply to one request (under its id), in an answer of 200 like the server's own. */
function jsonRpcReplyError(id: RequestId, code: number, message: string): McpAnswer {
  return {
    status: 200,
    headers: { 'Content-Type': 'application/json' },
    body: JSON.stringify({ jsonrpc: '2.0', id, error: { code, message } }),
  };
}

/**
 * An HTTP refusal of the transport: a JSON-RPC error, as the SDK's transport writes it (without id
 * when the message is not read yet).
 */
function jsonRpcError(
  status: number,
  code: number,
  message: string,
  data?: unknown,
  id: RequestId | null = null,
): McpAnswer {
  return {
    status,
    headers: { 'Content-Type': 'application/json' },
    body: JSON.stringify({ jsonrpc: '2.0', error: { code, message, ...(data === undefined ? {} : { data }) }, id }),
  };
}
