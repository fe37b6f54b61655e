import { Injectable, Logger } from '@nestjs/common';
import { Server } from '@modelcontextprotocol/sdk/server/index.js';
import { MAX_BATCH_SIZE } from '@modelcontextprotocol/sdk/server/requestBody.js';
import { AjvJsonSchemaValidator } from '@modelcontextprotocol/sdk/validation/ajv-provider.js';
import {
  CallToolRequestSchema,
  CallToolResult,
  ErrorCode,
  isInitializeRequest,
  isJSONRPCRequest,
  JSONRPCMessage,
  JSONRPCMessageSchema,
  ListToolsRequestSchema,
  McpError,
  Tool,
} from '@modelcontextprotocol/sdk/types.js';
import type { FastifyRequest } from 'fastify';
import type { Principal } from '../common/access/principal';
import { ApiError } from '../common/errors/api-error';
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

/** Per HTTP request: who calls, and what the tool calls in it found out for the HTTP answer. */
interface CallContext {
  principal: Principal;
  requestId: string;
  idempotencyKey: string | string[] | undefined;
  replayed: boolean;
  /** The text content of each success: its structuredContent as JSON (see answerJson). */
  successTexts: Set<string>;
}

/**
 * The MCP connector (Streamable HTTP, stateless, answering each POST with one JSON body): the
 * SDK's own server, built once and connected to McpRouter, which hands it the JSON-RPC requests of
 * each HTTP request and gives the replies back; nothing is kept between HTTP requests, so any
 * instance answers any request. The HTTP side is the Streamable HTTP transport's, for a server that
 * does not stream: the checks of the SDK's transport (Accept, Content-Type, JSON, JSON-RPC shape,
 * batch size, one initialize alone, MCP-Protocol-Version), with its statuses, codes and messages,
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
    const received: unknown[] = Array.isArray(body) ? body : [body];
    if (received.length > MAX_BATCH_SIZE) {
      return jsonRpcError(
        400,
        ErrorCode.InvalidRequest,
        `Invalid Request: Batch must not exceed ${MAX_BATCH_SIZE} messages`,
      );
    }
    let messages: JSONRPCMessage[];
    try {
      messages = received.map((message) => JSONRPCMessageSchema.parse(message));
    } catch {
      return jsonRpcError(400, ErrorCode.ParseError, 'Parse error: Invalid JSON-RPC message');
    }
    if (messages.length > 1 && messages.some(isInitializeRequest)) {
      return jsonRpcError(400, ErrorCode.InvalidRequest, 'Invalid Request: Only one initialization request is allowed');
    }
    const refused = this.beforeServer(messages, req.principal!, req.headers['mcp-protocol-version']);
    if (refused) return refused;
    // Notifications (and replies) from the client are accepted and dropped: what they refer to
    // (an initialized connection, a request to cancel, progress) lives in no stateless server.
    const requests = messages.filter(isJSONRPCRequest);
    if (requests.length === 0) return { status: 202, headers: {}, body: '' };
    const ctx: CallContext = {
      principal: req.principal!,
      requestId: req.id,
      idempotencyKey: req.headers['idempotency-key'],
      replayed: false,
      successTexts: new Set(),
    };
    const replies = await this.router.exchange(requests, ctx);
    const headers: Record<string, string> = { 'Content-Type': 'application/json' };
    if (ctx.replayed) headers['Idempotency-Replayed'] = 'true';
    const json = replies.map((reply) => answerJson(reply, ctx.successTexts));
    return { status: 200, headers, body: Array.isArray(body) ? `[${json.join(',')}]` : json[0] };
  }

  /**
   * Checks made before the SDK server runs: the scope of every tools/call (HTTP 403 with the
   * challenge, thrown to the error filter), and the protocol version: initialize settles on one
   * of MCP_PROTOCOL_VERSIONS (a client asking for another gets the latest), and a later request
   * naming an unsupported version is refused as the transport refuses one.
   */
  private beforeServer(
    messages: JSONRPCMessage[],
    principal: Principal,
    versionHeader: string | string[] | undefined,
  ): McpAnswer | undefined {
    for (const message of messages) {
      const { method, params } = message as { method?: unknown; params?: Record<string, unknown> };
      if (!params || typeof params !== 'object') continue;
      if (method === 'tools/call' && typeof params.name === 'string') {
        const tool = this.registry.get(params.name);
        if (tool) this.calls.authorizeScope(principal, tool, 'mcp');
      } else if (method === 'initialize' && !MCP_PROTOCOL_VERSIONS.includes(params.protocolVersion as string)) {
        params.protocolVersion = MCP_PROTOCOL_VERSIONS[0];
      }
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

/** An HTTP refusal of the transport: a JSON-RPC error without id, as the SDK's transport writes it. */
function jsonRpcError(status: number, code: number, message: string): McpAnswer {
  return {
    status,
    headers: { 'Content-Type': 'application/json' },
    body: JSON.stringify({ jsonrpc: '2.0', error: { code, message }, id: null }),
  };
}
