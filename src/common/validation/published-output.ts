/**
 * A tool's output schema as the tool lists publish it (GET /api/v1/tools, MCP tools/list), which
 * an agent pays for before every session: what a result holds, without what only a validator or
 * a code generator uses (/openapi.json keeps the declared schema in full, and the tests check
 * every result against it).
 * - dropped: `additionalProperties: false` beside `properties`, `minimum` (no stray field, no
 *   negative count: the server's promises to itself) and `format` (a timestamp shows itself);
 * - `anyOf` of plain types (`[X, { type: 'null' }]`, `[{ type: 'number' }, { type: 'string' }]`)
 *   becomes one `type: [...]` (the same values).
 */
type JsonObject = Record<string, unknown>;

const isObject = (x: unknown): x is JsonObject => typeof x === 'object' && x !== null && !Array.isArray(x);

/** Keywords whose values are data, not schemas. */
const DATA_KEYWORDS = new Set(['enum', 'const', 'default', 'examples', 'required']);

export function publishedOutput(schema: JsonObject): JsonObject {
  return walk(schema) as JsonObject;
}

function walk(node: unknown): unknown {
  if (Array.isArray(node)) return node.map(walk);
  if (!isObject(node)) return node;
  const out: JsonObject = {};
  for (const [key, value] of Object.entries(node)) {
    if (key === 'additionalProperties' && value === false && 'properties' in node) continue;
    if ((key === 'minimum' && typeof value === 'number') || (key === 'format' && typeof value === 'string')) continue;
    out[key] = DATA_KEYWORDS.has(key) ? value : walk(value);
  }
  return foldTypes(out);
}

/** Keywords that apply to one type only, so a member of a union may keep them once the union is one `type` list. */
const TYPE_SPECIFIC = new Set(['minLength', 'maxLength', 'pattern', 'maximum']);

/** { anyOf: [{ type: A, ...only A's keywords }, { type: B }], ...rest } as { type: [A, B], ...A's keywords, ...rest }. */
function foldTypes(node: JsonObject): JsonObject {
  const { anyOf, ...rest } = node;
  if (!Array.isArray(anyOf) || Object.keys(rest).some((k) => k !== 'description')) return node;
  const types: string[] = [];
  const kept: JsonObject = {};
  for (const member of anyOf as unknown[]) {
    if (!isObject(member) || typeof member.type !== 'string' || ['object', 'array'].includes(member.type)) return node;
    if (types.includes(member.type)) return node;
    types.push(member.type);
    for (const [k, v] of Object.entries(member)) {
      if (k === 'type') continue;
      if (!TYPE_SPECIFIC.has(k) || k in kept) return node;
      kept[k] = v;
    }
  }
  return { type: types, ...kept, ...rest };
}
