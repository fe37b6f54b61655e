import { Injectable } from '@nestjs/common';
import { assertMayCall } from '../common/access/access';
import type { Principal } from '../common/access/principal';
import { roleAtLeast, SCOPES } from '../common/access/roles';
import { ApiError } from '../common/errors/api-error';
import { ExportFormat } from '../exports/export-link';
import { ExportResponsesTool } from '../exports/export-responses.tool';
import { ExportsService } from '../exports/exports.service';
import { CloseFormTool } from '../forms/close-form.tool';
import { DeleteFormTool } from '../forms/delete-form.tool';
import { FormRecord, FormsService, FormUpdate } from '../forms/forms.service';
import { GetFormTool } from '../forms/get-form.tool';
import { ListFormsTool } from '../forms/list-forms.tool';
import { PublishFormTool } from '../forms/publish-form.tool';
import { UpdateFormTool } from '../forms/update-form.tool';
import { DeleteResponseTool } from '../responses/delete-response.tool';
import { readerOf } from '../files/file-links';
import { GetResponseTool } from '../responses/get-response.tool';
import { ListResponsesTool } from '../responses/list-responses.tool';
import { ResponseFilter } from '../responses/response-filter';
import { ResponsesService, ResponseStatus } from '../responses/responses.service';
import { PartialResponsesService } from '../responses/partial-responses.service';
import { SummarizeResponsesTool } from '../summaries/summarize-responses.tool';
import { PageError, notFound } from '../settings/settings.service';
import type { Access } from '../settings/settings.service';
import { TOOL_METADATA, ToolDefinition } from '../tools/tool.decorator';

/** The tools whose rules (scope, plan, role) the results pages follow, by what the page does. */
const TOOLS = {
  listForms: ListFormsTool,
  getForm: GetFormTool,
  summarize: SummarizeResponsesTool,
  listResponses: ListResponsesTool,
  getResponse: GetResponseTool,
  export: ExportResponsesTool,
  publish: PublishFormTool,
  close: CloseFormTool,
  update: UpdateFormTool,
  deleteForm: DeleteFormTool,
  deleteResponse: DeleteResponseTool,
} as const;
export type ToolKey = keyof typeof TOOLS;

/** A tool's declared requirement, read from its @Tool metadata: the page cannot drift from the tool. */
const requirement = (key: ToolKey): ToolDefinition => Reflect.getMetadata(TOOL_METADATA, TOOLS[key]);

/** The role a tool needs, as its page's minimum. */
export const minRoleOf = (key: ToolKey) => requirement(key).minRole;

/** The tools these pages may show as actions (Publish, Close, Delete) to this person: role-wise. */
export const mayShow = (a: Access, key: ToolKey) => roleAtLeast(a.role, requirement(key).minRole);

/** The signed-in person as a principal of the workspace (a session has every scope; its role decides). */
function principalOf(a: Access): Principal {
  const w = a.workspace;
  return {
    credential: { kind: 'session', id: a.session.userId },
    credentialKey: `session:${a.session.userId}`,
    workspace: { id: w.id, name: w.name, slug: w.slug, plan: w.plan },
    role: a.role,
    scopes: SCOPES,
    userId: a.session.userId,
  };
}

/**
 * What the results pages do, each through the service method the matching tool calls, after the
 * tool's own checks (plan, role) for the signed-in person: the same rules, audit records and
 * webhook events as over the API. Refusals become pages: 404 (another workspace's form, an unknown
 * response), 403 (role, plan), 400 (the tool refused: its message and hint). A filter that does
 * not fit the form is left as the ApiError, for the page to show beside its fields.
 */
@Injectable()
export class ResultsService {
  constructor(
    private readonly forms: FormsService,
    private readonly responses: ResponsesService,
    private readonly exports: ExportsService,
    private readonly partials: PartialResponsesService,
  ) {}

  listForms(a: Access, page: number, perPage: number) {
    return this.as(a, 'listForms', (p) =>
      this.forms.list(p.workspace.id, { limit: perPage, offset: (page - 1) * perPage }),
    );
  }

  form(a: Access, publicId: string) {
    return this.as(a, 'getForm', (p) => this.forms.get(p.workspace.id, publicId));
  }

  summary(a: Access, publicId: string, filter: ResponseFilter = {}) {
    return this.as(a, 'summarize', (p) => this.responses.summarize(p.workspace.id, publicId, filter));
  }

  /**
   * Completed and in-progress counts and the drop-off by page (as summarize_responses' funnel), on
   * a form that saves partial responses or still holds some; undefined on any other.
   */
  progress(a: Access, form: FormRecord) {
    return this.as(a, 'summarize', async () => {
      const counts = await this.partials.countsByStatus(form.id);
      if (!form.partialResponses && !counts.partial) return undefined;
      return { ...counts, funnel: await this.partials.funnel(form) };
    });
  }

  /** A page of responses, newest first, under the filter; completed ones, in-progress ones or both (`status`). */
  page(
    a: Access,
    publicId: string,
    opts: { offset: number; limit: number; filter: ResponseFilter; status?: ResponseStatus },
  ) {
    return this.as(a, 'listResponses', (p) =>
      this.responses.list(p.workspace.id, publicId, { ...opts, order: 'newest', reader: readerOf(p) }),
    );
  }

  response(a: Access, publicId: string, responseId: string) {
    // File answers link to downloads bound to the signed-in person (re-checked on use, as export links are).
    return this.as(a, 'getResponse', (p) =>
      this.responses.get(p.workspace.id, publicId, responseId, 'id', readerOf(p)),
    );
  }

  /** CSV columns headed by titles, as the pages show them; NDJSON answers keyed by ref where blocks have one. */
  exportLink(a: Access, publicId: string, format: ExportFormat, filter: ResponseFilter, status?: ResponseStatus) {
    const answersBy = format === 'ndjson' ? 'ref' : 'id';
    return this.as(a, 'export', (p) => this.exports.createLink(p, publicId, { format, answersBy, filter, status }));
  }

  transition(a: Access, publicId: string, to: 'published' | 'closed') {
    return this.as(a, to === 'published' ? 'publish' : 'close', (p) => this.forms.transition(p, publicId, to));
  }

  /** The form's settings (issue 47) through update_form's rules; its refusal of a value stays, for the field. */
  updateSettings(a: Access, input: FormUpdate) {
    return this.as(a, 'update', (p) => this.forms.update(p, input));
  }

  removeForm(a: Access, publicId: string) {
    return this.as(a, 'deleteForm', (p) => this.forms.remove(p, publicId));
  }

  removeResponse(a: Access, publicId: string, responseId: string) {
    return this.as(a, 'deleteResponse', (p) => this.responses.removeAs(p, publicId, responseId));
  }

  private async as<T>(a: Access, key: ToolKey, run: (p: Principal) => Promise<T>): Promise<T> {
    const principal = principalOf(a);
    try {
      // The scope check passes (a session has every scope), so no resource metadata is named.
      assertMayCall(principal, requirement(key), '');
      return await run(principal);
    } catch (err) {
      throw asPageError(err);
    }
  }
}

/**
 * A tool's refusal as a page: 404, 403 with its message, 429 (the workspace's long reads are all
 * running) and 400 with its message and hint; a filter's 400 stays.
 */
function asPageError(err: unknown): unknown {
  if (!(err instanceof ApiError) || err.code === 'invalid_arguments') return err;
  if (err.code === 'not_found') return notFound();
  if (err.code === 'rate_limited')
    return new PageError(429, 'Busy: try again shortly', `${err.message} ${err.hint}`, err.headers ?? {});
  return err.status === 403
    ? new PageError(403, 'Not allowed', err.message)
    : new PageError(400, 'Not done', `${err.message} ${err.hint}`);
}
