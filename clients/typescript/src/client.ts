/**
 * The Formwork client: one typed method per concern, every tool reached by its name.
 *
 *   const fw = createClient({ baseUrl: 'http://localhost:3000', token: process.env.FORMWORK_TOKEN! });
 *   const { form } = await fw.call('create_form', { title: 'RSVP', blocks: [...] });
 *   for await (const response of fw.paginate('list_responses', { publicId: form.publicId })) ...
 */
import createFetchClient from 'openapi-fetch';
import type { operations, paths } from './generated/openapi';
import { TOOLS } from './generated/tools';
import { FormworkError } from './errors';
import { exhaustedForMs, retryDelayMs } from './retry';

export type ToolName = keyof typeof TOOLS;
/** A tool's arguments: its input schema. */
export type ToolArgs<N extends ToolName> = NonNullable<operations[N]['requestBody']>['content']['application/json'];
/** A tool's result: its output schema. */
export type ToolResult<N extends ToolName> = operations[N]['responses'][200]['content']['application/json'];

/** The list tools and the member that holds each page's items. */
const PAGED = { list_forms: 'forms', list_responses: 'responses' } as const;
export type PagedTool = keyof typeof PAGED;
export type PageItem<N extends PagedTool> =
  ToolResult<N> extends Record<(typeof PAGED)[N], Array<infer Item>> ? Item : never;

export interface ClientOptions {
  /** The service's address, e.g. http://localhost:3000. */
  baseUrl: string;
  /** An API token (fw_...) or an OAuth access token. */
  token: string;
  /** Attempts after the first, for 429, 503, a key still in use and network errors (default 3). */
  maxRetries?: number;
  /** A wait the service asks for beyond this is not waited: the error is thrown at once (default 60,000 ms). */
  maxRetryDelayMs?: number;
  /** The fetch to send with (default: globalThis.fetch). */
  fetch?: (request: Request) => Promise<Response>;
  /** How to wait between attempts (default: a timer). */
  sleep?: (ms: number) => Promise<void>;
}

export interface CallOptions {
  /** The key of a write (default: a new UUID per call); every retry of the call sends the same one. */
  idempotencyKey?: string;
  signal?: AbortSignal;
  /** This call's attempts after the first (default: the client's). */
  maxRetries?: number;
}

/** A tool's result with what came with it. */
export interface CallResult<N extends ToolName> {
  data: ToolResult<N>;
  response: Response;
  /** Requests sent for this call, retries included. */
  attempts: number;
  /** The key sent with a write (and with a read when given). */
  idempotencyKey: string | undefined;
  /** The service answered with the stored answer of an earlier attempt with this key (`Idempotency-Replayed`). */
  replayed: boolean;
}

/** The arguments are optional when the tool takes none that are required (list_forms). */
type ArgsAndOptions<N extends ToolName> =
  Record<string, never> extends ToolArgs<N>
    ? [args?: ToolArgs<N>, options?: CallOptions]
    : [args: ToolArgs<N>, options?: CallOptions];

/** Retried as the service advises: budgets (429), a database that timed out (503), a key whose first call still runs (409). */
function retryable(status: number, error: FormworkError): boolean {
  return status === 429 || status === 503 || error.code === 'idempotency_key_in_use';
}

const timer = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

export class FormworkClient {
  private readonly api: ReturnType<typeof createFetchClient<paths>>;
  private readonly fetch: (request: Request) => Promise<Response>;
  private readonly sleep: (ms: number) => Promise<void>;
  private readonly maxRetries: number;
  private readonly maxRetryDelayMs: number;
  /** When the last answer showed a spent budget: its reset time (ms), waited for before the next request. */
  private pausedUntil = 0;

  constructor(private readonly options: ClientOptions) {
    this.fetch = options.fetch ?? ((request) => globalThis.fetch(request));
    this.sleep = options.sleep ?? timer;
    this.maxRetries = options.maxRetries ?? 3;
    this.maxRetryDelayMs = options.maxRetryDelayMs ?? 60_000;
    this.api = createFetchClient<paths>({
      baseUrl: options.baseUrl.replace(/\/+$/, ''),
      headers: { Authorization: `Bearer ${options.token}` },
      fetch: (request) => this.fetch(request),
    });
  }

  /** Calls a tool; resolves to its result, or rejects with a FormworkError. */
  async call<N extends ToolName>(name: N, ...rest: ArgsAndOptions<N>): Promise<ToolResult<N>> {
    return (await this.request(name, ...rest)).data;
  }

  /** Calls a tool; resolves to its result with the answer, the attempts and whether it was replayed. */
  async request<N extends ToolName>(name: N, ...[args, options = {}]: ArgsAndOptions<N>): Promise<CallResult<N>> {
    // Every write gets a key, so that any retry of it (a dropped connection included) runs it at most once.
    const idempotencyKey = options.idempotencyKey ?? (TOOLS[name].write ? crypto.randomUUID() : undefined);
    const maxRetries = options.maxRetries ?? this.maxRetries;
    for (let attempt = 1; ; attempt++) {
      await this.waitForBudget();
      options.signal?.throwIfAborted(); // aborted while waiting: nothing more is sent
      let outcome: { data?: unknown; error?: unknown; response: Response };
      try {
        // The path is one of the generated ones; openapi-fetch cannot narrow a path chosen at run time.
        const post = this.api.POST as unknown as (
          path: string,
          init: { body?: unknown; headers: Record<string, string>; signal?: AbortSignal },
        ) => Promise<typeof outcome>;
        outcome = await post(`/api/v1/tools/${name}`, {
          body: args ?? {},
          headers: idempotencyKey ? { 'Idempotency-Key': idempotencyKey } : {},
          signal: options.signal,
        });
      } catch (err) {
        // No answer (a refused or dropped connection): safe to send again, a write with its key.
        if (options.signal?.aborted || attempt > maxRetries) throw err;
        await this.sleep(retryDelayMs(undefined, attempt));
        continue;
      }
      const { response } = outcome;
      const exhausted = exhaustedForMs(response.headers);
      this.pausedUntil = exhausted === undefined ? 0 : Date.now() + exhausted;
      if (response.ok) {
        return {
          data: outcome.data as ToolResult<N>,
          response,
          attempts: attempt,
          idempotencyKey,
          replayed: response.headers.get('idempotency-replayed') === 'true',
        };
      }
      const error = FormworkError.fromResponse(response, outcome.error);
      const wait = retryDelayMs(response.headers, attempt);
      if (!retryable(response.status, error) || attempt > maxRetries || wait > this.maxRetryDelayMs) throw error;
      await this.sleep(wait);
    }
  }

  /** Every page of a list tool, from `offset` (default 0) on: each page adds its `count` to the offset, until `total`. */
  async *pages<N extends PagedTool>(name: N, ...[args, options]: ArgsAndOptions<N>): AsyncGenerator<ToolResult<N>> {
    let offset = args?.offset ?? 0;
    for (;;) {
      const page = (await this.call(name as PagedTool, { ...args, offset }, options)) as ToolResult<N>;
      yield page;
      offset += page.count;
      if (page.count === 0 || offset >= page.total) return;
    }
  }

  /** Every item of a list tool (forms, responses), fetching the pages as the loop needs them. */
  async *paginate<N extends PagedTool>(name: N, ...rest: ArgsAndOptions<N>): AsyncGenerator<PageItem<N>> {
    for await (const page of this.pages(name, ...rest))
      yield* (page as Record<string, unknown>)[PAGED[name]] as Array<PageItem<N>>;
  }

  /**
   * A file for a file_upload block: create_upload, then its bytes sent to the answered URL with
   * the answered method and headers. Resolves to the value that answers the block in
   * create_response (the uploadId).
   */
  async upload(
    args: Omit<ToolArgs<'create_upload'>, 'size'> & { data: Uint8Array | ArrayBuffer | Blob },
    options?: CallOptions,
  ): Promise<string> {
    const { data, ...rest } = args;
    const size = data instanceof Blob ? data.size : data.byteLength;
    const upload = await this.call('create_upload', { ...rest, size } as ToolArgs<'create_upload'>, options);
    // No URL: the service stored the bytes already (the arguments carried contentBase64).
    if (!upload.url) return upload.uploadId;
    // The URL takes one body, once: not retried (a failed send needs a new create_upload).
    const response = await this.fetch(
      new Request(upload.url, {
        method: upload.method,
        headers: upload.headers,
        body: data as BodyInit,
        signal: options?.signal,
      }),
    );
    if (!response.ok) {
      const text = await response.text();
      let body: unknown = text;
      try {
        body = JSON.parse(text);
      } catch {
        // an object store's XML error: FormworkError says it is not Formwork's envelope
      }
      throw FormworkError.fromResponse(response, body);
    }
    return upload.uploadId;
  }

  /** When the last answer showed a spent budget, waits for its reset (when within maxRetryDelayMs). */
  private async waitForBudget(): Promise<void> {
    const wait = this.pausedUntil - Date.now();
    if (wait > 0 && wait <= this.maxRetryDelayMs) await this.sleep(wait);
  }
}

export function createClient(options: ClientOptions): FormworkClient {
  return new FormworkClient(options);
}
