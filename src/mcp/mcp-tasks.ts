/**
 * MCP's tasks extension (io.modelcontextprotocol/tasks, revision 2026-07-28) over Formwork's jobs
 * (src/jobs/): a tools/call worth a job (jobWorthy), from a client whose request declares the
 * extension in its capabilities, answers a task handle (resultType "task") instead of the result;
 * tasks/get polls it (the tool's result inlined once completed: a refusal as an isError result,
 * as the call would have answered), tasks/cancel stops it. The SDK has no runtime for the
 * extension, so these requests are answered here, before the SDK's server; a client without the
 * extension is answered as before (tools/call) or refused with -32021 (tasks/*).
 */
import { CLIENT_CAPABILITIES_META_KEY, ProtocolErrorCode } from '@modelcontextprotocol/server';
import type { JSONRPCRequest, RequestId } from '@modelcontextprotocol/server';
import type { Principal } from '../common/access/principal';
import { ApiError } from '../common/errors/api-error';
import { Job, JOB_TTL_MS, JobsService, jobWorthy } from '../jobs/jobs.service';
import { ToolCallService } from '../tools/tool-call.service';
import { ToolRegistry } from '../tools/tool-registry.service';

export const TASKS_EXTENSION = 'io.modelcontextprotocol/tasks';
const MISSING_CAPABILITY = -32021;

/** The JSON-RPC reply to one request (a result or an error), under its id. */
export type TaskReply = { jsonrpc: '2.0'; id: RequestId } & ({ result: object } | { error: object });

/** The tasks side of the connector: undefined for a request it leaves to the SDK's server. */
export class McpTasks {
  constructor(
    private readonly jobs: JobsService,
    private readonly registry: ToolRegistry,
    private readonly calls: ToolCallService,
  ) {}

  async handle(request: JSONRPCRequest, principal: Principal, requestId: string): Promise<TaskReply | undefined> {
    const { id, method } = request;
    const params = (request.params ?? {}) as { name?: string; arguments?: unknown; taskId?: unknown; _meta?: unknown };
    const consents = declaresTasks(params);
    if (method === 'tools/call') {
      const tool = typeof params.name === 'string' ? this.registry.get(params.name) : undefined;
      if (!consents || !tool) return undefined;
      let args: unknown;
      try {
        this.calls.authorize(principal, tool, 'mcp');
        args = this.calls.checkArguments(tool, params.arguments ?? {});
      } catch {
        return undefined; // the SDK's server answers the refusal, as for any call
      }
      const working = jobWorthy(tool.definition.name, args);
      if (!working) return undefined;
      const call = { tool, args, principal, requestId };
      try {
        const job = await this.jobs.start(principal, tool.definition.name, working, () => this.calls.run(call));
        return { jsonrpc: '2.0', id, result: { resultType: 'task', ...task(job) } };
      } catch (err) {
        if (err instanceof ApiError) return { jsonrpc: '2.0', id, result: toolResult(err.toJSON(requestId)) };
        throw err;
      }
    }
    if (method !== 'tasks/get' && method !== 'tasks/cancel') return undefined;
    if (!consents) {
      return rpcError(id, MISSING_CAPABILITY, 'Missing required client capability', {
        requiredCapabilities: { extensions: { [TASKS_EXTENSION]: {} } },
      });
    }
    if (typeof params.taskId !== 'string' || !/^job_[0-9a-f]{32}$/.test(params.taskId))
      return rpcError(
        id,
        ProtocolErrorCode.InvalidParams,
        'Invalid params: taskId must be the taskId a tools/call answered.',
      );
    try {
      const workspaceId = principal.workspace.id;
      if (method === 'tasks/cancel') {
        await this.jobs.cancel(workspaceId, params.taskId);
        return { jsonrpc: '2.0', id, result: { resultType: 'complete' } };
      }
      const job = await this.jobs.get(workspaceId, params.taskId);
      return { jsonrpc: '2.0', id, result: { resultType: 'complete', ...task(job), ...outcome(job) } };
    } catch (err) {
      if (err instanceof ApiError && err.code === 'not_found')
        return rpcError(id, ProtocolErrorCode.InvalidParams, `Failed to retrieve task: ${err.message}`);
      throw err;
    }
  }
}

/** Whether the request's own capabilities (2026-07-28 carries them in each request's _meta) declare the extension. */
function declaresTasks(params: { _meta?: unknown }): boolean {
  const meta = params._meta as Record<string, { extensions?: Record<string, unknown> } | undefined> | undefined;
  return !!meta?.[CLIENT_CAPABILITIES_META_KEY]?.extensions?.[TASKS_EXTENSION];
}

function task(job: Job) {
  return {
    taskId: job.jobId,
    status: job.status === 'failed' ? 'completed' : job.status,
    ...(job.statusMessage ? { statusMessage: job.statusMessage } : {}),
    createdAt: job.createdAt,
    lastUpdatedAt: job.updatedAt,
    ttlMs: JOB_TTL_MS,
    pollIntervalMs: job.pollIntervalMs,
  };
}

/** A finished job's tool result: its answer, or its refusal as isError (a tool's refusal is no JSON-RPC failure). */
function outcome(job: Job) {
  if (job.status === 'completed') {
    const text = JSON.stringify(job.result ?? null);
    return { result: { content: [{ type: 'text', text }], structuredContent: job.result } };
  }
  if (job.status === 'failed') return { result: toolResult({ error: job.error }) };
  return {};
}

function toolResult(envelope: object) {
  const text = JSON.stringify(envelope).replaceAll('GET /api/v1/tools', 'tools/list');
  return { isError: true, content: [{ type: 'text', text }] };
}

function rpcError(id: RequestId, code: number, message: string, data?: unknown): TaskReply {
  return { jsonrpc: '2.0', id, error: { code, message, ...(data === undefined ? {} : { data }) } };
}
