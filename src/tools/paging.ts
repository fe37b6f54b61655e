/** What every list tool pages with: `limit` and `offset` in, `total`, `offset` and `count` out. */
import { Type } from '@sinclair/typebox';

/** The `limit` (1 to `max`, `byDefault` when left out) and `offset` arguments of a list tool. */
export function pageArguments(max: number, byDefault: number) {
  return {
    limit: Type.Optional(Type.Integer({ minimum: 1, maximum: max, default: byDefault })),
    offset: Type.Optional(
      Type.Integer({
        minimum: 0,
        maximum: 1_000_000_000,
        default: 0,
        description: "Start position; add the previous page's count for the next page.",
      }),
    ),
  };
}

/** The paging members every list tool answers with. */
export const pageFields = {
  total: Type.Integer({ minimum: 0 }),
  offset: Type.Integer({ minimum: 0 }),
  count: Type.Integer({ minimum: 0 }),
};
