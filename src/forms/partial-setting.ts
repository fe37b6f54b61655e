import { Type } from '@sinclair/typebox';

/** The form setting partialResponses (issue 36), as create_form and update_form take it. */
export const PartialResponsesSetting = Type.Boolean({
  description: 'Keep unfinished page answers, resumable (default false).',
});
