import { Injectable, Logger } from '@nestjs/common';
import { Server } from '@modelcontextprotocol/sdk/server/index.js';
import { AjvJsonSchemaValidator } from '@modelcontextprotocol/sdk/validation/ajv-provider.js';
import {
  CallToolRequestSchema,
  CallToolResult,
  ErrorCode,
  isJSONRPCRequest,
  JSONRPCMessage,
  JSONRPCMessageSchema,
  ListToolsRequestSchema,
  McpError,
  RequestId,
  Tool,
} from '@modelcontextprotocol/sdk/types.js';
import type { FastifyRequest } from 'fastify';
import type { Principal } from '../common/access/principal';
import { ApiError } from '../common/errors/api-error';
import { databaseErrorCode, databaseUnavailable, databaseUnavailableKind } from '../common/errors/database-unavailable';
import { isJsonRequest } from '../common/http/body';
import { IdempotencyService } from '../idempotency/idempotency.service';
import { VERSION } from '../index/index.controller';
import { ToolCallService } from '../tools/tool-call.service';
import { ToolRegistry } from '../tools/tool-registry.service';
import { McpReply, McpRouter } from './mcp-router';

/** The protocol versions this connector speaks; initialize settles on one of them. */
export const MCP_PROTOCOL_VERSIONS = ['2025-11-25', '2025-06-18'];

const INSTRUCTIONS =
  "Formwork is a form builder's back end: forms made of blocks, and their responses. Every tool acts in the workspace of the credential. " +
  'Read a form with get_form before changing it, and send the version you read to update_form. A tool that refuses answers with isError and a JSON error whose code, hint and details say what to change.';

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
 * The MCP connector (Streamable HTTP, stateless, answering each POST with one JSON body): the
 * SDK's own server, built once and connected to McpRouter, which hands it the JSON-RPC request of
 * each HTTP request and gives the reply back; nothing is kept between HTTP requests, so any
 * instance answers any request. The HTTP side is the Streamable HTTP transport's, for a server that
 * does not stream: the checks of the SDK's transport (Accept, Content-Type, JSON, JSON-RPC shape,
 * MCP-Protocol-Version), with its statuses, codes and messages, and no JSON-RPC batch (the protocol
 * versions served have none; the SDK's transport still takes them),
 * made here on the body Fastify already read, without the Web Request/Response round trip that cost
 * more than the tool call. Its tools are the registry's, and a call runs the very steps of
 * POST /api/v1/tools/{name} through ToolCallService and IdempotencyService. Authentication and both
 * budgets ran before, in the global guards, as on every route; the scope check is made here before
 * the server runs, so that a missing scope is an HTTP 403 with its challenge (MCP's step-up signal),
 * not a tool result.
 */
@Injectable()
export class McpService {
  private readonly logger = new Logger('Errors');
  private tools?: Tool[];
  private readonly router = new McpRouter<CallContext>();
  private readonly server = new Server(
    { name: 'formwork', title: 'Formwork', version: VERSION },
    {
      capabilities: { tools: { listChanged: false } },
      instructions: INSTRUCTIONS,
      jsonSchemaValidator: new AjvJsonSchemaValidator(),
    },
  );

  constructor(
    private readonly registry: ToolRegistry,
    private readonly calls: ToolCallService,
    private readonly idempotency: IdempotencyService,
  ) {
    this.server.setRequestHandler(ListToolsRequestSchema, () => ({ tools: this.toolList() }));
    this.server.setRequestHandler(CallToolRequestSchema, (request, extra) =>
      this.callTool(request.params.name, request.params.arguments, this.router.contextOf(extra.requestId)!),
    );
    // The router's start() does nothing: the server is connected once this returns. It is never
    // closed: it holds no socket or timer, and closing it would drop the replies of calls still
    // running while the HTTP server drains at shutdown.
    void this.server.connect(this.router);
  }

  /** tools/list: GET /api/v1/tools without Formwork's x-formwork extension. */
  private toolList(): Tool[] {
    return (this.tools ??= this.registry
      .describe()
      .map(({ name, title, description, inputSchema, outputSchema, annotations }) => ({
        name,
        title,
        description,
        inputSchema: inputSchema as Tool['inputSchema'],
        outputSchema: outputSchema as Tool['outputSchema'],
        annotations,
      })));
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
      return jsonRpcError(400, ErrorCode.ParseError, 'Parse error: Invalid JSON');
    }
    // Neither protocol version served has JSON-RPC batching (2025-06-18 removed it): a batch would
    // also run up to 100 calls for the price of one request against both budgets.
    if (Array.isArray(body)) {
      return jsonRpcError(
        400,
        ErrorCode.InvalidRequest,
        `Invalid Request: JSON-RPC batches are not supported (MCP ${MCP_PROTOCOL_VERSIONS.join(' and ')} have no batching); send one message per request`,
      );
    }
    let message: JSONRPCMessage;
    try {
      message = JSONRPCMessageSchema.parse(body);
    } catch {
      return jsonRpcError(400, ErrorCode.ParseError, 'Parse error: Invalid JSON-RPC message');
    }
    const refused = this.beforeServer(message, req.principal!, req.headers['mcp-protocol-version']);
    if (refused) return refused;
    // Notifications (and replies) from the client are accepted and dropped: what they refer to
    // (an initialized connection, a request to cancel, progress) lives in no stateless server.
    if (!isJSONRPCRequest(message)) return { status: 202, headers: {}, body: '' };
    const ctx: CallContext = {
      principal: req.principal!,
      requestId: req.id,
      idempotencyKey: req.headers['idempotency-key'],
      replayed: false,
      successTexts: new Set(),
    };
    const reply = await this.router.exchange(message, ctx);
    const headers: Record<string, string> = { 'Content-Type': 'application/json' };
    if (ctx.replayed) headers['Idempotency-Replayed'] = 'true';
    return { status: 200, headers, body: answerJson(reply, ctx.successTexts) };
  }

  /**
   * Checks made before the SDK server runs: the shape of a tools/call's params (a caller's mistake
   * is -32602 Invalid params with a readable message, where the SDK would answer -32603 with its
   * schema dump), the scope of its tool (HTTP 403 with the challenge, thrown to the error filter),
   * and the protocol version: initialize settles on one of MCP_PROTOCOL_VERSIONS (a client asking
   * for another gets the latest), and a later request naming an unsupported version is refused as
   * the transport refuses one.
   */
  private beforeServer(
    message: JSONRPCMessage,
    principal: Principal,
    versionHeader: string | string[] | undefined,
  ): McpAnswer | undefined {
    const { id, method, params } = message as { id?: RequestId; method?: unknown; params?: unknown };
    if (method === 'tools/call' && id !== undefined) {
      const invalid = toolsCallProblem(params);
      if (invalid) return jsonRpcReplyError(id, ErrorCode.InvalidParams, `Invalid params: ${invalid}`);
      const tool = this.registry.get((params as { name: string }).name);
      if (tool) this.calls.authorizeScope(principal, tool, 'mcp');
    } else if (method === 'initialize' && params && typeof params === 'object') {
      const init = params as Record<string, unknown>;
      if (!MCP_PROTOCOL_VERSIONS.includes(init.protocolVersion as string))
        init.protocolVersion = MCP_PROTOCOL_VERSIONS[0];
    }
    if (versionHeader !== undefined && !MCP_PROTOCOL_VERSIONS.includes(String(versionHeader))) {
      return jsonRpcError(
        400,
        -32000,
        `Bad Request: Unsupported protocol version: ${String(versionHeader)} (supported versions: ${MCP_PROTOCOL_VERSIONS.join(', ')})`,
      );
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
      throw new McpError(
        ErrorCode.InvalidParams,
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
        return success(result, JSON.stringify(result ?? null), ctx);
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
      return outcome.status < 300 ? success(JSON.parse(outcome.body), outcome.body, ctx) : refusal(outcome.body);
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

function success(result: unknown, text: string, ctx: CallContext): CallToolResult {
  ctx.successTexts.add(text);
  return { structuredContent: result as Record<string, unknown>, content: [{ type: 'text', text }] };
}

/** No structuredContent: clients check it against the output schema, which an error does not match. */
function refusal(envelope: string): CallToolResult {
  return { isError: true, content: [{ type: 'text', text: envelope }] };
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

/** An HTTP refusal of the transport: a JSON-RPC error without id, as the SDK's transport writes it. */
function jsonRpcError(status: number, code: number, message: string): McpAnswer {
  return {
    status,
    headers: { 'Content-Type': 'application/json' },
    body: JSON.stringify({ jsonrpc: '2.0', error: { code, message }, id: null }),
  };
}
