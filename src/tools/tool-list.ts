/**
 * The tool list a credential is sent (GET /api/v1/tools, MCP tools/list): the tools it may call
 * (mayCall, the very check the access guard makes at call time), each said once.
 *
 * An agent reads the list as one text, before every session, so what it repeats costs it on every
 * session. Within one list, read-only tools first then the others (each in the registry's order;
 * the list is sent in the registry's order), "earlier" below meaning earlier in that reading:
 * - a description (of a property, a definition) already said by an earlier tool is written
 *   "As in <tool>." (the condition's grammar, a share link, the paging fields);
 * - a subschema of at least MIN_SHARED characters identical to one an earlier tool sent whole is
 *   sent as `{ type, description: "As in <tool> (<where>)." }` (the condition's $defs, update_form's
 *   block, get_response's answer as list_responses' responses[]); where is the property path,
 *   `x[]` an item of x, `output.` the answer's; the server still checks it in full;
 * - an output schema identical to an earlier tool's is left out, and the first paragraph of the
 *   tool's description ends "Answers as <tool>." (create_form, publish_form ... answer the form as
 *   get_form does; MCP results still carry structuredContent).
 * - a schema is written shorter where that validates the same (tighten): no `type` beside an enum of
 *   strings, an `anyOf` of one-type alternatives of different kinds as one schema listing the types
 *   (each alternative's keywords test only its kind), and `anyOf: [X, { type: "null" }]` as X with
 *   `type: [X's type, "null"]` when X's other keywords test only values of its type (a null passes them);
 * - an annotation equal to MCP's default (readOnlyHint false, destructiveHint true, idempotentHint
 *   false, openWorldHint true) is left out.
 * A schema accepts exactly what it accepted, but where it points to an earlier tool's. Each tool's
 * schemas in full, on their own, are in /openapi.json.
 */
import { mayCall } from '../common/access/access';
import type { Principal } from '../common/access/principal';
import { roleAtLeast } from '../common/access/roles';
import type { ToolRequirement } from '../common/access/tool-requirement';

/** What a tool list publishes per tool. */
export interface ListedTool {
  name: string;
  title: string;
  description: string;
  inputSchema: object;
  outputSchema?: object;
  annotations: object;
}

/** A description shorter than this is not worth a pointer. */
const MIN_REPEATED = 40;
/** Nor a subschema whose JSON is shorter than this. */
const MIN_SHARED = 200;
/** Keywords whose values are data, not schemas. */
const DATA_KEYWORDS = new Set(['enum', 'const', 'default', 'examples', 'required']);

/** Keywords whose value is a schema, a map of schemas, a list of schemas. */
const SCHEMA_VALUES = new Set(['not', 'additionalProperties', 'contains', 'if', 'then', 'else']);
const SCHEMA_MAPS = new Set(['properties', '$defs', 'patternProperties']);
const SCHEMA_LISTS = new Set(['anyOf', 'oneOf', 'allOf', 'prefixItems']);

type JsonObject = Record<string, unknown>;
const isObject = (x: unknown): x is JsonObject => typeof x === 'object' && x !== null && !Array.isArray(x);

/** Keywords that test only a value of the schema's own type, or say nothing that validates: a null passes them. */
const OF_ITS_TYPE = new Set([
  'type',
  'description',
  'minLength',
  'maxLength',
  'pattern',
  'format',
  'minimum',
  'maximum',
  'exclusiveMinimum',
  'exclusiveMaximum',
  'multipleOf',
  'items',
  'minItems',
  'maxItems',
  'uniqueItems',
  'properties',
  'required',
  'additionalProperties',
  'minProperties',
  'maxProperties',
]);
/** MCP's defaults for tool annotations (a client reads a hint left out as this). */
const ANNOTATION_DEFAULTS: JsonObject = {
  readOnlyHint: false,
  destructiveHint: true,
  idempotentHint: false,
  openWorldHint: true,
};

/** A schema (not its subschemas) written shorter where it validates the same. */
export function tighten(node: JsonObject): JsonObject {
  let out = node;
  if (out.type === 'string' && Array.isArray(out.enum) && out.enum.every((v) => typeof v === 'string')) {
    const { type: _type, ...rest } = out;
    out = rest;
  }
  const merged = mergedTypes(out);
  if (merged) return merged;
  const alternatives = out.anyOf;
  if (Array.isArray(alternatives) && alternatives.length === 2) {
    const nullAt = alternatives.findIndex((a) => isObject(a) && Object.keys(a).length === 1 && a.type === 'null');
    const other: unknown = alternatives[1 - nullAt];
    if (
      nullAt >= 0 &&
      isObject(other) &&
      typeof other.type === 'string' &&
      other.type !== 'null' &&
      Object.keys(other).every((k) => OF_ITS_TYPE.has(k) && !(k in out))
    ) {
      const { anyOf: _anyOf, ...rest } = out;
      out = { ...rest, ...other, type: [other.type, 'null'] };
    }
  }
  return out;
}

/** The keywords that test only values of one kind (JSON Schema ignores them for any other). */
const KIND_KEYWORDS: Record<string, string[]> = {
  string: ['minLength', 'maxLength', 'pattern', 'format'],
  number: ['minimum', 'maximum', 'exclusiveMinimum', 'exclusiveMaximum', 'multipleOf'],
  array: ['items', 'minItems', 'maxItems', 'uniqueItems'],
  object: ['properties', 'required', 'additionalProperties', 'minProperties', 'maxProperties'],
  boolean: [],
  null: [],
};
const kindOf = (type: string) => (type === 'integer' ? 'number' : type);

/**
 * `anyOf` of alternatives that each have one type, of different kinds, and only keywords of their
 * kind, as one schema with the types listed and the keywords side by side: a value of one of the
 * types meets exactly its own alternative's keywords either way. Undefined when it does not apply.
 */
function mergedTypes(node: JsonObject): JsonObject | undefined {
  const alternatives = node.anyOf;
  if (!Array.isArray(alternatives) || alternatives.length < 2) return undefined;
  const kinds = new Set<string>();
  const merged: JsonObject = {};
  for (const a of alternatives) {
    if (!isObject(a) || typeof a.type !== 'string' || !(kindOf(a.type) in KIND_KEYWORDS)) return undefined;
    const kind = kindOf(a.type);
    if (kinds.has(kind)) return undefined;
    kinds.add(kind);
    for (const [key, value] of Object.entries(a)) {
      if (key === 'type') continue;
      if (!KIND_KEYWORDS[kind].includes(key) || key in node) return undefined;
      merged[key] = value;
    }
  }
  const { anyOf: _anyOf, ...rest } = node;
  // null last, as a nullable type is written.
  const types = alternatives
    .map((a) => (a as JsonObject).type)
    .sort((a, b) => Number(a === 'null') - Number(b === 'null'));
  return { ...rest, type: types, ...merged };
}

/**
 * The list as sent, in its order: each tool in full on its own, with what another tool of the same
 * list said first replaced by a pointer. Read-only tools say things first (in list order), then the
 * others: a read-only list is whole in itself, and a schema shared by a reader and a writer (the
 * form get_form answers) is carried by the reader, so the writer with the largest input
 * (create_form) points to it instead of carrying it.
 */
export function compactToolList<T extends ListedTool>(tools: T[]): T[] {
  const readOnly = (tool: T) => (tool.annotations as JsonObject).readOnlyHint === true;
  const order = [...tools.filter(readOnly), ...tools.filter((t) => !readOnly(t))];
  const said = new Map<string, string>();
  const sent = new Map<string, string>();
  const outputs = new Map<string, string>();
  const compacted = new Map<T, T>();
  for (const tool of order) compacted.set(tool, compactOne(tool));
  return tools.map((tool) => compacted.get(tool) as T);

  function compactOne(tool: T): T {
    /** A node with its descriptions compacted; a schema (path: where it sits) may be a pointer to an earlier tool's. */
    const walk = (node: unknown, path?: string): unknown => {
      if (Array.isArray(node)) return node.map((item) => walk(item));
      if (!isObject(node)) return node;
      // Any subschema but an input's root (a tool's arguments are always listed).
      if (path) {
        const json = JSON.stringify(node);
        const first = json.length >= MIN_SHARED ? sent.get(json) : undefined;
        if (first !== undefined) return { ...(node.type ? { type: node.type } : {}), description: `As in ${first}.` };
        if (json.length >= MIN_SHARED) sent.set(json, `${tool.name} (${path})`);
      }
      const out: JsonObject = {};
      for (const [key, value] of Object.entries(path === undefined ? node : tighten(node))) {
        if (key === 'description' && typeof value === 'string' && value.length >= MIN_REPEATED) {
          const firstSaid = said.get(value);
          if (firstSaid === undefined) said.set(value, tool.name);
          else if (firstSaid !== tool.name) {
            out[key] = `As in ${firstSaid}.`;
            continue;
          }
        }
        out[key] = DATA_KEYWORDS.has(key) ? value : path === undefined ? walk(value) : walkKeyword(key, value, path);
      }
      return out;
    };
    /** A schema keyword's value: subschemas walked with their paths (a property by name, an item as x[]). */
    const walkKeyword = (key: string, value: unknown, path: string): unknown => {
      const at = (name: string) => (path ? `${path}.${name}` : name);
      if (SCHEMA_MAPS.has(key) && isObject(value))
        return Object.fromEntries(
          Object.entries(value).map(([name, v]) => [
            name,
            walk(v, key === 'properties' ? at(name) : at(`${key}.${name}`)),
          ]),
        );
      if (SCHEMA_LISTS.has(key) && Array.isArray(value)) return value.map((v, i) => walk(v, at(`${key}.${i}`)));
      if (key === 'items') return walk(value, `${path}[]`);
      return walk(value, SCHEMA_VALUES.has(key) ? at(key) : undefined);
    };
    const annotations = Object.fromEntries(
      Object.entries(tool.annotations).filter(([hint, value]) => ANNOTATION_DEFAULTS[hint] !== value),
    );
    const listed: T = { ...tool, inputSchema: walk(tool.inputSchema, '') as object, annotations };
    if (tool.outputSchema === undefined) return listed;
    const key = JSON.stringify(tool.outputSchema);
    const sameAs = outputs.get(key);
    if (sameAs === undefined) {
      outputs.set(key, tool.name);
      return { ...listed, outputSchema: walk(tool.outputSchema, 'output') as object };
    }
    delete listed.outputSchema;
    // Said at the end of the first paragraph, so an example that ends a description stays at its end.
    return { ...listed, description: tool.description.replace(/(\n\n|$)/, ` Answers as ${sameAs}.$1`) };
  }
}

/**
 * What the tools a credential may not call would take, in one sentence (the REST listing's
 * `notListed.hint`), or undefined when it may call them all. Scope first, then plan, then role,
 * as the access checks refuse.
 */
export function notListedHint(principal: Principal, hidden: ToolRequirement[]): string | undefined {
  if (!hidden.length) return undefined;
  const scopes = [...new Set(hidden.filter((t) => !principal.scopes.includes(t.scope)).map((t) => t.scope))];
  const pro = hidden.some((t) => t.plan === 'pro' && principal.workspace.plan !== 'pro');
  const roles = [...new Set(hidden.filter((t) => !roleAtLeast(principal.role, t.minRole)).map((t) => t.minRole))];
  const needs = [
    ...(scopes.length
      ? [`the scope ${scopes.join(', ')} (a token granted it, or OAuth authorized again asking for it)`]
      : []),
    ...(pro ? ['a Pro workspace (write tools)'] : []),
    ...(roles.length ? [`the role ${roles.join(' or ')} or higher (ask a workspace admin)`] : []),
  ];
  const more = hidden.length === 1 ? '1 more tool is' : `${hidden.length} more tools are`;
  return `${more} not listed; they need ${needs.join('; ')}.`;
}

/** The tools of `all` a principal may call (all of them for none: the public listing). */
export function callableBy<T extends { requirement: ToolRequirement }>(
  all: T[],
  principal: Principal | undefined,
): T[] {
  return principal ? all.filter((t) => mayCall(principal, t.requirement)) : all;
}
