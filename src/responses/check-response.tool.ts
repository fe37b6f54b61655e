import { Static, Type } from '@sinclair/typebox';
import { InjectDataSource } from '@nestjs/typeorm';
import { DataSource } from 'typeorm';
import type { ApiError } from '../common/errors/api-error';
import { currentManager } from '../database/transaction';
import type { Block } from '../forms/blocks';
import { evaluate } from '../forms/conditions/evaluate';
import { PublicId } from '../forms/form.schemas';
import { CheckedResponse, validateResponse } from '../forms/form-logic';
import { FormsService } from '../forms/forms.service';
import { Tool, ToolContext, ToolHandler } from '../tools/tool.decorator';
import { UploadsService } from '../uploads/uploads.service';
import { responseRefusal } from './response-refusal';
import { outcomeFields } from './response.schemas';
import { ENDING_PREFIX, type FormCompute } from '../forms/compute';

const input = Type.Object(
  {
    publicId: PublicId,
    answers: Type.Unsafe<Record<string, unknown>>({ type: 'object', description: 'As create_response takes them.' }),
    hidden: Type.Optional(
      Type.Unsafe<Record<string, string>>({
        type: 'object',
        additionalProperties: { type: 'string', maxLength: 1000 },
      }),
    ),
  },
  { additionalProperties: false },
);
const output = Type.Object(
  {
    ok: Type.Boolean({ description: 'Whether create_response would store it.' }),
    shown: Type.Array(Type.String(), { description: 'Ids of the blocks shown, in order.' }),
    pages: Type.Array(Type.Integer(), { description: 'Pages visited (1 = first).' }),
    endedBy: Type.Optional(Type.String({ description: 'The page_break whose jump ended the form.' })),
    ...outcomeFields,
    problems: Type.Optional(
      Type.Array(Type.Object({ path: Type.String(), message: Type.String() }), {
        description: 'Calculations not applied (division by zero).',
      }),
    ),
    errors: Type.Array(
      Type.Object({ code: Type.String(), path: Type.String(), message: Type.String(), hint: Type.String() }),
    ),
  },
  { additionalProperties: false },
);
type Output = Static<typeof output>;

@Tool({
  name: 'check_response',
  title: 'Check a response (dry run)',
  description:
    'Dry run of create_response: the path the answers take, what they compute (variables, ending) and every error it would give (same codes and paths). Stores nothing. Share links take hidden fields as query parameters: {url}?src=ad.',
  scope: 'responses:read',
  write: false,
  input,
  output,
})
export class CheckResponseTool implements ToolHandler<typeof input, typeof output> {
  constructor(
    private readonly forms: FormsService,
    private readonly uploads: UploadsService,
    @InjectDataSource() private readonly db: DataSource,
  ) {}

  async run(args: Static<typeof input>, ctx: ToolContext): Promise<Output> {
    const form = await this.forms.get(ctx.principal.workspace.id, args.publicId);
    // The uploads named are looked at (read only) once the answers fit, as create_response does.
    const files = (checked: CheckedResponse) =>
      this.uploads.refusal(currentManager(this.db), {
        workspaceId: form.workspaceId,
        formId: form.id,
        blocks: form.blocks,
        files: namedUploads(form.blocks, args.answers, checked.answers),
      });
    return checkResponse(form, args.answers, args.hidden, files);
  }
}

/** Per file_upload block answered: the key the caller used (error paths) and the upload ids as validated. */
function namedUploads(blocks: Block[], answers: Record<string, unknown>, stored: Record<string, unknown>) {
  return blocks.flatMap((b) => {
    const value = stored[b.id];
    if (b.type !== 'file_upload' || value === undefined || value === null || value === '') return [];
    const key = b.id in answers || !b.ref || !(b.ref in answers) ? b.id : b.ref;
    return [{ blockId: b.id, key, uploadIds: (Array.isArray(value) ? value : [value]) as string[] }];
  });
}

/** What create_response would make of these answers: validated by the same function, worded by the same refusal. */
export async function checkResponse(
  form: { blocks: Block[]; hiddenFields?: string[]; compute?: FormCompute | null },
  answers: Record<string, unknown>,
  hidden?: Record<string, string>,
  files?: (checked: CheckedResponse) => Promise<ApiError | undefined>,
): Promise<Output> {
  const checked = validateResponse(form, answers, hidden, { wording: 'api', source: 'api' });
  const refused = responseRefusal(checked) ?? (await files?.(checked));
  const shown = checked.shown ?? form.blocks.map((b) => b.id);
  const { pages, endedBy } = route(form.blocks, new Set(shown), checked);
  return {
    ok: !refused,
    shown,
    pages,
    ...(endedBy ? { endedBy } : {}),
    ...outcomeOf(checked),
    errors: (refused?.details ?? []).map((d) => ({
      code: refused!.code,
      path: d.path,
      message: d.message,
      hint: refused!.hint,
    })),
  };
}

/**
 * The pages a path visits (a page is visited when its page_break is shown; the first always is),
 * and the page_break whose jump to "end" closed the last page visited, if one did: the first of
 * its jumps that holds on the answers shown (walk() tries them in that order).
 */
function route(blocks: Block[], shown: Set<string>, checked: CheckedResponse): { pages: number[]; endedBy?: string } {
  const breaks = blocks.filter((b) => b.type === 'page_break');
  const pages = [1, ...breaks.flatMap((b, k) => (shown.has(b.id) ? [k + 2] : []))];
  // The break right after the last page visited closes it (the pages after it were all skipped).
  const closing = breaks[pages.at(-1)! - 1];
  if (!closing) return { pages };
  const facts = {
    answer: (id: string) => (shown.has(id) ? checked.answers[id] : undefined),
    hidden: (name: string) => checked.hidden[name],
    variable: (name: string) => checked.outcome?.variables[name],
  };
  const jump = (closing.jumps ?? []).find((j) => evaluate(j.if, facts));
  // A jump to "end" or to an ending (issue 46) ends the form.
  return jump && (jump.to === 'end' || jump.to.startsWith(ENDING_PREFIX)) ? { pages, endedBy: closing.id } : { pages };
}

/** What the answers compute (issue 46): variables, ending and the calculations that could not apply. */
function outcomeOf(checked: CheckedResponse): Pick<Output, 'variables' | 'ending' | 'problems'> {
  const o = checked.outcome;
  if (!o) return {};
  return { variables: o.variables, ending: o.ending, ...(o.problems.length ? { problems: o.problems } : {}) };
}
