import { ApiError } from '../common/errors/api-error';
import type { AnswerWording } from '../forms/blocks';
import type { CheckedResponse } from '../forms/form-logic';

/** Where the fix of an answer is: the form (its blocks), not the tool's schema. */
const ANSWERS_HINT =
  "Fix the answers named in details: get_form shows the form's blocks with their type, choices, limits and refs.";

/**
 * Why a submission is refused: 400 invalid_arguments with a detail per answer (or hidden value)
 * that does not fit, or that answers a block its path did not show; undefined when it is taken.
 * create_response throws it; check_response answers it without storing anything.
 */
export function responseRefusal(checked: CheckedResponse, wording: AnswerWording = 'api'): ApiError | undefined {
  const { details } = checked;
  if (!details.length) return undefined;
  return new ApiError(
    'invalid_arguments',
    wording === 'person'
      ? {
          message: 'Some answers need a change before the form can be sent.',
          hint: 'Each entry in details names a question (by its block id) and says what to enter.',
          details,
        }
      : {
          message: 'Some answers are not valid.',
          ...(checked.hint
            ? { hint: checked.hint }
            : checked.notShown
              ? {
                  hint: `Leave out answers to blocks these answers do not show (or change the answers that decide it): ${checked.notShown}.`,
                }
              : { hint: ANSWERS_HINT }),
          details,
        },
  );
}
