import type { ReceiptSetting } from './entities/form.entity';
import { Type } from '@sinclair/typebox';
import { StringEnum } from '../common/validation/schema-validator';
import { BLOCK_TYPES } from './blocks';
import { ConditionSchema } from './conditions';
import {
  CalculateSchema,
  CorrectSchema,
  EndingsSchema,
  PointsSchema,
  ThankYouSchema,
  VariablesSchema,
} from './compute';
import { MAX_HIDDEN_FIELDS, MAX_JUMPS, REF_PATTERN } from './form-logic';
import { MAX_QUOTAS } from './limits';
import { FORM_STATUSES } from './entities/form.entity';

/** JSON Schemas of forms and blocks, shared by the form tools' inputs and outputs. */
export const PublicId = Type.String({ minLength: 1, maxLength: 64 });

/**
 * A block as tools return it: its id, type and title; the rest (ref, description, choices with
 * their ids, settings, rules) comes back as create_form takes it, and is not written out again in
 * every form tool's output schema (the tool list's size budget).
 */
export const BlockSchema = Type.Object(
  { id: Type.String(), type: Type.String(), title: Type.Optional(Type.String()) },
  { description: "The rest as create_form's; choices as { id, label }." },
);

export const FormStatusSchema = StringEnum(FORM_STATUSES);
const Timestamp = Type.String({ format: 'date-time' });

const formFields = {
  publicId: Type.String(),
  url: Type.String({
    format: 'uri',
    description: 'Share link; takes answers while published.',
  }),
  title: Type.String(),
  description: Type.Union([Type.String(), Type.Null()]),
  status: FormStatusSchema,
  version: Type.Integer(),
  createdAt: Timestamp,
  updatedAt: Timestamp,
  publishedAt: Type.Union([Timestamp, Type.Null()]),
  closedAt: Type.Union([Timestamp, Type.Null()]),
};

export const FormSummarySchema = Type.Object(
  {
    ...formFields,
    responseCount: Type.Integer({ minimum: 0, description: 'How many responses the form has now.' }),
    lastResponseAt: Type.Union([Timestamp, Type.Null()], {
      description: 'When its latest response was submitted; null before the first.',
    }),
  },
  { additionalProperties: false },
);
/** Who may answer (issue 47), as create_form and update_form take it. */
export const AccessSetting = Type.Unsafe<'public' | 'invite'>({ enum: ['public', 'invite'] });

export const FormSchema = Type.Object(
  {
    ...formFields,
    hiddenFields: Type.Optional(Type.Array(Type.String())),
    partialResponses: Type.Optional(Type.Boolean()),
    opensAt: Type.Optional(Type.Union([Timestamp, Type.Null()])),
    closesAt: Type.Optional(Type.Union([Timestamp, Type.Null()])),
    access: Type.Optional(Type.Unsafe<string>({})),
    maxResponses: Type.Optional(Type.Union([Type.Integer(), Type.Null()])),
    quotas: Type.Optional(Type.Unsafe<unknown>({})),
    spamProtection: Type.Optional(Type.String()),
    receipt: Type.Optional(Type.Unsafe<unknown>({})),
    // Issue 51: the form's languages (get_form with a language adds language and missingTexts).
    languages: Type.Optional(Type.Unsafe<string[]>({})),
    language: Type.Optional(Type.Unsafe<string>({})),
    missingTexts: Type.Optional(Type.Unsafe<string[]>({})),
    blocks: Type.Array(BlockSchema),
    // As create_form takes them (issue 46); written out once, in its input.
    variables: Type.Optional(Type.Unsafe<unknown>({})),
    endings: Type.Optional(Type.Unsafe<unknown>({})),
    thankYou: Type.Optional(Type.Unsafe<unknown>({})),
    maxScore: Type.Optional(Type.Number()),
    dryRun: Type.Optional(
      Type.Object(
        {
          warnings: Type.Array(Type.Object({ path: Type.String(), message: Type.String() })),
          answerLoss: Type.Array(Type.Object({ path: Type.String(), message: Type.String() })),
        },
        { description: 'dryRun only. answerLoss: answers the update discards (needs acceptAnswerLoss).' },
      ),
    ),
  },
  { additionalProperties: false },
);

/** create_form's and update_form's check-only flag (the answer's dryRun says what it found). */
export const DryRunArgument = Type.Optional(Type.Boolean({ description: 'Validate only; stores nothing.' }));

/** The arguments of the tools that act on one form. */
export const FormRef = Type.Object({ publicId: PublicId }, { additionalProperties: false });

/** A block as callers send it: choices as labels or { id?, label }; an id only for a block the form has. */
export const BlockInputSchema = Type.Object(
  {
    id: Type.Optional(
      Type.String({
        minLength: 1,
        maxLength: 64,
        description: "An existing block's id, to keep it and its answers.",
      }),
    ),
    ref: Type.Optional(
      Type.Union([Type.String({ pattern: REF_PATTERN, maxLength: 64 }), Type.Null()], {
        description: 'Your key for the block (unique, not b_...): for rules and answers.',
      }),
    ),
    type: StringEnum(BLOCK_TYPES, {
      description: 'statement: text only; page_break: starts a page; file_upload: see create_upload.',
    }),
    title: Type.Optional(
      Type.String({ minLength: 1, maxLength: 1000, description: 'Required except on a page_break.' }),
    ),
    description: Type.Optional(Type.Union([Type.String({ maxLength: 5000 }), Type.Null()])),
    required: Type.Optional(Type.Boolean({ default: false })),
    choices: Type.Optional(
      Type.Array(
        Type.Union([
          Type.String({ minLength: 1, maxLength: 500 }),
          Type.Object(
            {
              id: Type.Optional(Type.String({ minLength: 1, maxLength: 64 })),
              label: Type.String({ minLength: 1, maxLength: 500 }),
            },
            { additionalProperties: false },
          ),
        ]),
        {
          maxItems: 200,
          description: 'multiple_choice, checkboxes, dropdown, ranking: labels, or { id, label } to keep/rename one.',
        },
      ),
    ),
    min: Type.Optional(Type.Number({ description: 'number, linear_scale (0 or 1)' })),
    max: Type.Optional(Type.Number({ description: 'number, rating (3..10; 5), linear_scale (2..10)' })),
    minLabel: Type.Optional(
      Type.String({
        minLength: 1,
        maxLength: 100,
        description: 'rating, linear_scale, nps: low end',
      }),
    ),
    maxLabel: Type.Optional(
      Type.String({
        minLength: 1,
        maxLength: 100,
        description: 'high end',
      }),
    ),
    rankTop: Type.Optional(Type.Integer({ description: 'ranking: top N only' })),
    rows: Type.Optional(
      Type.Array(Type.String(), { maxItems: 20, description: 'matrix: 1..20 labels, as columns; multiple: >1 a row' }),
    ),
    columns: Type.Optional(Type.Array(Type.String(), { maxItems: 20 })),
    multiple: Type.Optional(Type.Boolean()),
    maxFiles: Type.Optional(Type.Integer({ description: 'file_upload: 1..10 (1)' })),
    maxSizeMb: Type.Optional(Type.Integer({ description: 'file_upload: MB per file (10; Pro: up to 100)' })),
    accept: Type.Optional(
      Type.Array(Type.String({ maxLength: 200 }), {
        maxItems: 50,
        description: 'file_upload: e.g. "application/pdf", "image/*", ".docx" (any)',
      }),
    ),
    showIf: Type.Optional(ConditionSchema('Shown only when this holds (a page_break: its page); earlier blocks only.')),
    jumps: Type.Optional(
      Type.Array(
        Type.Object(
          {
            if: ConditionSchema('Names only blocks before this page_break.'),
            to: Type.String({
              minLength: 1,
              maxLength: 64,
              description: 'A later page_break\'s ref or id, "end", or "ending:REF".',
            }),
          },
          { additionalProperties: false },
        ),
        {
          maxItems: MAX_JUMPS,
          description: 'page_break only: on leaving its page, the first whose if holds is taken.',
        },
      ),
    ),
    calculate: Type.Optional(CalculateSchema),
    points: Type.Optional(PointsSchema),
    correct: Type.Optional(CorrectSchema),
  },
  { additionalProperties: false },
);

/** A form's hidden fields as callers send them. */
export const HiddenFieldsSchema = (description?: string) =>
  Type.Array(Type.String({ pattern: REF_PATTERN, maxLength: 64 }), {
    maxItems: MAX_HIDDEN_FIELDS,
    description: description ?? "Names of values from the share link (?campaign=x) or create_response's hidden.",
  });

export const FormTitle = Type.String({ minLength: 1, maxLength: 500 });
export const FormDescription = Type.Union([Type.String({ maxLength: 5000 }), Type.Null()]);

/** create_form's computing arguments (issue 46); update_form's say "as in create_form". */
export const computeArguments = {
  variables: Type.Optional(VariablesSchema()),
  endings: Type.Optional(EndingsSchema()),
  thankYou: Type.Optional(ThankYouSchema()),
};
export const computeUpdateArguments = {
  variables: Type.Optional(VariablesSchema('As in create_form.')),
  endings: Type.Optional(EndingsSchema('As in create_form.')),
  thankYou: Type.Optional(ThankYouSchema('As in create_form.')),
};
/** A form's schedule (and access) as create_form and update_form take them (issue 47). */
export const ScheduleFields = {
  access: Type.Optional(AccessSetting),
  opensAt: Type.Optional(Type.Union([Timestamp, Type.Null()], { description: 'Opens then.' })),
  closesAt: Type.Optional(
    Type.Union([Timestamp, Type.Null()], {
      description: 'Closes then.',
    }),
  ),
};

/**
 * A form's cap and quotas as create_form and update_form take them (issue 47): terse (the tool
 * list's size budget); checkQuotas checks each quota's fields, at their paths.
 */
const limitFields = (maxResponses: string, quotas: string) => ({
  maxResponses: Type.Optional(
    Type.Union([Type.Integer({ minimum: 1, maximum: 1e9 }), Type.Null()], { description: maxResponses }),
  ),
  quotas: Type.Optional(
    Type.Array(Type.Unsafe<{ name: string; limit: number; when: unknown; onFull?: string }>({ type: 'object' }), {
      maxItems: MAX_QUOTAS,
      description: quotas,
    }),
  ),
});
export const LimitFields = limitFields(
  'Cap on completed responses.',
  '[{ name, limit, when (as showIf), onFull?: "end"|"ending:REF" }]',
);
export const LimitUpdateFields = limitFields('As in create_form; null clears.', 'As in create_form.');

/**
 * The receipt (issue 48), as create_form and update_form take it: its shape is checked by the
 * service (forms/receipt.ts), so the tool list carries one line of it.
 */
export const ReceiptField = {
  receipt: Type.Optional(
    Type.Unsafe<ReceiptSetting>({
      type: 'object',
      description: 'Mail respondents their answers: {to: email block ref, subject?, message?} (recall works).',
    }),
  ),
};
export const ReceiptUpdateField = {
  receipt: Type.Optional(Type.Unsafe<ReceiptSetting | null>({ description: 'As in create_form; null: none.' })),
};

/** A form's languages (issue 51), as create_form and update_form take them. */
export const LanguagesField = {
  languages: Type.Optional(Type.Array(Type.String(), { description: 'BCP 47 tags, first = default.' })),
};

/** The page's spam defence (issue 47), as create_form and update_form take it. */
export const SpamProtectionField = {
  spamProtection: Type.Optional(StringEnum(['off', 'auto', 'always'] as const)),
};
