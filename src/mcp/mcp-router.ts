import { PerRequestHTTPServerTransport } from '@modelcontextprotocol/server';
import type {
  JSONRPCMessage,
  JSONRPCRequest,
  MessageClassification,
  RequestId,
  Transport,
} from '@modelcontextprotocol/server';

/** The reply the server sent to one request: a result or a JSON-RPC error, under the client's own id. */
export type McpReply = JSONRPCMessage & { id: RequestId };

interface Waiting<C> {
  clientId: RequestId;
  context: C;
  settle: (reply: McpReply) => void;
}

/**
 * The one transport of the connector's one SDK server of the 2025 era (initialize handshake,
 * 2025-06-18 and 2025-11-25), connected at startup: it carries the
 * request of every HTTP request to that server and its reply back to the HTTP request that
 * asked. Building a server per HTTP request, connecting it and closing it cost more than the tool
 * call itself; one server serves them all, since the router keeps the requests apart: each is handed
 * over under an id of the router's own (clients all count from 1) and its reply is given back under
 * the client's id. Nothing outlives the HTTP request that brought it: the router holds only the
 * requests in flight, and the server no session (stateless, so any instance answers any request).
 * `C` is what the tool handlers need to know of the HTTP request (McpService's CallContext).
 */
export class McpRouter<C> implements Transport {
  onmessage?: Transport['onmessage'];
  onclose?: () => void;
  onerror?: (error: Error) => void;

  private lastId = 0;
  private readonly waiting = new Map<RequestId, Waiting<C>>();

  async start(): Promise<void> {}

  async close(): Promise<void> {
    this.onclose?.();
  }

  /**
   * A reply of the server. (It sends nothing else: no request or notification of its own, being
   * stateless.) Told apart by its keys, not by the SDK's type guards, which would check the whole
   * result against a schema again: the server made it.
   */
  async send(message: JSONRPCMessage): Promise<void> {
    if (!('result' in message || 'error' in message) || message.id === undefined) return;
    const waiting = this.waiting.get(message.id);
    if (!waiting) return;
    this.waiting.delete(message.id);
    waiting.settle({ ...message, id: waiting.clientId });
  }

  /** What the HTTP request of the request the server handles under `id` (the router's id) said of itself. */
  contextOf(id: RequestId): C | undefined {
    return this.waiting.get(id)?.context;
  }

  /**
   * Hands the request of one HTTP request to the server, and resolves with its reply. The server
   * answers every request it is handed (a result or an error): it is never handed a cancellation,
   * the only thing that would make it drop one.
   */
  exchange(request: JSONRPCRequest, context: C): Promise<McpReply> {
    const deliver = this.onmessage;
    if (!deliver) throw new Error('The MCP server is not connected');
    return new Promise<McpReply>((settle) => {
      const id = ++this.lastId;
      this.waiting.set(id, { clientId: request.id, context, settle });
      deliver({ ...request, id });
    });
  }
}

/**
 * The router of the connector's one long-lived server of 2026-07-28. The SDK binds a server to that
 * revision when it connects to its per-request transport, so this router is one (it classifies
 * nothing itself: McpService sends it only requests the SDK's classifier put on 2026-07-28 and whose
 * headers passed), carrying many requests instead of one, as McpRouter does for the 2025 era.
 */
export class ModernMcpRouter<C> extends PerRequestHTTPServerTransport {
  private readonly inner = new McpRouter<C>();
  private readonly classification: MessageClassification;

  constructor(revision: string) {
    super({ classification: { era: 'modern', revision }, responseMode: 'json' });
    this.classification = { era: 'modern', revision };
  }

  override async start(): Promise<void> {}

  override async close(): Promise<void> {
    this.onclose?.();
  }

  override async send(message: JSONRPCMessage): Promise<void> {
    await this.inner.send(message);
  }

  contextOf(id: RequestId): C | undefined {
    return this.inner.contextOf(id);
  }

  exchange(request: JSONRPCRequest, context: C): Promise<McpReply> {
    const deliver = this.onmessage;
    if (!deliver) throw new Error('The MCP server is not connected');
    this.inner.onmessage = (message) => deliver(message, { classification: this.classification });
    return this.inner.exchange(request, context);
  }
}
