import { Injectable, Logger } from '@nestjs/common';
import { Server } from '@modelcontextprotocol/sdk/server/index.js';
import { WebStandardStreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/webStandardStreamableHttp.js';
import { AjvJsonSchemaValidator } from '@modelcontextprotocol/sdk/validation/ajv-provider.js';
import {
  CallToolRequestSchema,
  CallToolResult,
  ErrorCode,
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

/**
 * One JSON Schema validator for every SDK server: by default each server builds an Ajv instance of
 * its own, which cost more than the rest of a request (the server validates nothing with it here).
 */
const VALIDATOR = new AjvJsonSchemaValidator();

/** Per HTTP request: who calls, and what the tool calls in it found out for the HTTP answer. */
interface CallContext {
  principal: Principal;
  requestId: string;
  idempotencyKey: string | string[] | undefined;
  replayed: boolean;
}

/**
 * The MCP connector (Streamable HTTP, stateless): the SDK's own server and transport, built afresh
 * for each HTTP request, so that no state lives between requests and any instance answers any
 * request. Its tools are the registry's, and a call runs the very steps of POST /api/v1/tools/{name}
 * through ToolCallService and IdempotencyService. Authentication and both budgets ran before, in
 * the global guards, as on every route; the scope check is made here before the server runs, so
 * that a missing scope is an HTTP 403 with its challenge (MCP's step-up signal), not a tool result.
 */
@Injectable()
export class McpService {
  private readonly logger = new Logger('Errors');
  private tools?: Tool[];

  constructor(
    private readonly registry: ToolRegistry,
    private readonly calls: ToolCallService,
    private readonly idempotency: IdempotencyService,
  ) {}

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
    const principal = req.principal!;
    const parsed = parseBody(req);
    if (parsed.ok) {
      const refused = this.beforeServer(parsed.value, principal, req.headers['mcp-protocol-version']);
      if (refused) return refused;
    }
    const ctx: CallContext = {
      principal,
      requestId: req.id,
      idempotencyKey: req.headers['idempotency-key'],
      replayed: false,
    };
    const server = new Server(
      { name: 'formwork', title: 'Formwork', version: VERSION },
      { capabilities: { tools: { listChanged: false } }, instructions: INSTRUCTIONS, jsonSchemaValidator: VALIDATOR },
    );
    server.setRequestHandler(ListToolsRequestSchema, () => ({ tools: this.toolList() }));
    server.setRequestHandler(CallToolRequestSchema, (request) =>
      this.callTool(request.params.name, request.params.arguments, ctx),
    );
    const transport = new WebStandardStreamableHTTPServerTransport({
      sessionIdGenerator: undefined,
      enableJsonResponse: true,
    });
    // The JSON-RPC answers as the server hands them to the transport: the answer's JSON is written
    // from them, since reading it back from the transport's Web Response (a stream) costs more
    // than a tool call's whole MCP handling.
    const sent: unknown[] = [];
    const send = transport.send.bind(transport);
    transport.send = (message, options) => {
      sent.push(message);
      return send(message, options);
    };
    await server.connect(transport);
    try {
      const response = await transport.handleRequest(
        webRequest(req, parsed.ok ? undefined : parsed.raw),
        parsed.ok ? { parsedBody: parsed.value } : undefined,
      );
      const headers: Record<string, string> = {};
      const type = response.headers.get('content-type');
      if (type) headers['Content-Type'] = type;
      if (ctx.replayed) headers['Idempotency-Replayed'] = 'true';
      // The answer to one request is that one response, as the transport writes it (a batch is read back).
      const single =
        response.status === 200 &&
        type?.startsWith('application/json') &&
        sent.length === 1 &&
        parsed.ok &&
        !Array.isArray(parsed.value);
      const body = single ? JSON.stringify(sent[0]) : await response.text();
      return { status: response.status, headers, body };
    } finally {
      await server.close();
    }
  }

  /**
   * Checks made before the SDK server runs: the scope of every tools/call (HTTP 403 with the
   * challenge, thrown to the error filter), and the protocol version: initialize settles on one
   * of MCP_PROTOCOL_VERSIONS (a client asking for another gets the latest), and a later request
   * naming an unsupported version is refused as the transport refuses one.
   */
  private beforeServer(
    body: unknown,
    principal: Principal,
    versionHeader: string | string[] | undefined,
  ): McpAnswer | undefined {
    for (const message of Array.isArray(body) ? body : [body]) {
      if (!message || typeof message !== 'object') continue;
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
      const message = `Bad Request: Unsupported protocol version: ${String(versionHeader)} (supported versions: ${MCP_PROTOCOL_VERSIONS.join(', ')})`;
      return {
        status: 400,
        headers: { 'Content-Type': 'application/json' },
        body: JSON.stringify({ jsonrpc: '2.0', error: { code: -32000, message }, id: null }),
      };
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
        return success(result, JSON.stringify(result ?? null));
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
      return outcome.status < 300 ? success(JSON.parse(outcome.body), outcome.body) : refusal(outcome.body);
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

function success(result: unknown, text: string): CallToolResult {
  return { structuredContent: result as Record<string, unknown>, content: [{ type: 'text', text }] };
}

/** No structuredContent: clients check it against the output schema, which an error does not match. */
function refusal(envelope: string): CallToolResult {
  return { isError: true, content: [{ type: 'text', text: envelope }] };
}

/** The body as JSON when it is JSON; otherwise the raw body, for the transport to refuse (415, or -32700 for bad JSON). */
function parseBody(
  req: FastifyRequest,
): { ok: true; value: unknown } | { ok: false; raw: string | Buffer | undefined } {
  const raw = req.body as string | Buffer | undefined;
  if (typeof raw !== 'string' || !isJsonRequest(req)) return { ok: false, raw };
  try {
    return { ok: true, value: JSON.parse(raw) };
  } catch {
    return { ok: false, raw };
  }
}

/** The headers the transport reads, on a Web Request it can handle (the body is passed parsed when it is JSON). */
const TRANSPORT_HEADERS = ['accept', 'content-type', 'mcp-protocol-version', 'mcp-session-id', 'last-event-id'];

function webRequest(req: FastifyRequest, body: string | Buffer | undefined): Request {
  const headers = new Headers();
  for (const name of TRANSPORT_HEADERS) {
    const value = req.headers[name];
    if (value !== undefined) headers.set(name, Array.isArray(value) ? value.join(', ') : value);
  }
  return new Request('http://localhost/mcp', {
    method: 'POST',
    headers,
    body: body === undefined ? undefined : typeof body === 'string' ? body : new Uint8Array(body),
  });
}
