/**
 * Shared definitions in a tool's JSON Schema. A part used in several places (the condition) is
 * declared once as `{ $ref: '#/$defs/<name>', $defs: { <name>: ... } }` where it is used; before a
 * tool's schema is compiled or published, every such `$defs` is gathered at the schema's root,
 * where `#/$defs/<name>` points, so the definition is written out once per tool.
 */
import { isDeepStrictEqual } from 'node:util';

type Json = unknown;
type JsonObject = Record<string, Json>;

const isObject = (x: Json): x is JsonObject => typeof x === 'object' && x !== null && !Array.isArray(x);

/** Keywords whose values are data, not schemas: nothing under them is a definition. */
const DATA_KEYWORDS = new Set(['enum', 'const', 'default', 'examples']);
/** Keywords whose values map names (of properties, of definitions) to schemas. */
const SCHEMA_MAPS = new Set(['properties', 'patternProperties', 'dependentSchemas']);

/** A reference to the shared definition `name`, which travels with it until gatherDefinitions. */
export function sharedRef(name: string, definition: object, options: Record<string, unknown> = {}): JsonObject {
  return { $ref: `#/$defs/${name}`, ...options, $defs: { [name]: definition } };
}

/**
 * A plain JSON schema with every nested `$defs` moved to its root (the same name must define the
 * same schema wherever it appears; a conflict is a programming error, thrown at boot).
 */
export function gatherDefinitions(schema: JsonObject): JsonObject {
  const definitions: JsonObject = {};
  const add = (name: string, definition: Json) => {
    const gathered = walk(definition);
    if (name in definitions && !isDeepStrictEqual(definitions[name], gathered))
      throw new Error(`Two different schemas are defined as "$defs/${name}"`);
    definitions[name] = gathered;
  };
  const walk = (node: Json): Json => {
    if (Array.isArray(node)) return node.map(walk);
    if (!isObject(node)) return node;
    const out: JsonObject = {};
    for (const [key, value] of Object.entries(node)) {
      if (key === '$defs' && isObject(value)) Object.entries(value).forEach(([name, d]) => add(name, d));
      else if (DATA_KEYWORDS.has(key)) out[key] = value;
      else if (SCHEMA_MAPS.has(key) && isObject(value))
        out[key] = Object.fromEntries(Object.entries(value).map(([name, s]) => [name, walk(s)]));
      else out[key] = walk(value);
    }
    return out;
  };
  const root = walk(schema) as JsonObject;
  return Object.keys(definitions).length ? { ...root, $defs: definitions } : root;
}
