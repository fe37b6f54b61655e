import { readFileSync } from 'node:fs';
// Its types by file: the package's exports map is not read under this tsconfig's moduleResolution.
import type { AppBridge as AppBridgeType } from '@modelcontextprotocol/ext-apps/dist/src/app-bridge';

/**
 * The SDK's AppBridge (@modelcontextprotocol/ext-apps/app-bridge) for a jest spec. The package is
 * ESM only, which jest's CommonJS runtime cannot import; its three imports (@modelcontextprotocol
 * client and core, zod) all ship CommonJS, so the module is loaded as it is with each
 * `import{a as b}from"x"` read as `const {a:b}=require("x")` and its export list as module.exports.
 */
export function loadAppBridge(): { AppBridge: typeof AppBridgeType } {
  const file = require.resolve('@modelcontextprotocol/ext-apps/app-bridge');
  let code = readFileSync(file, 'utf8');
  const pairs = (list: string, sep: string) =>
    list
      .split(',')
      .map((p) => p.trim().split(/\s+as\s+/))
      .map(([a, b]) => (sep === ':' ? `${a}:${b ?? a}` : `${b ?? a}:${a}`))
      .join(',');
  code = code.replace(/import\{([^}]*)\}from"([^"]+)";?/g, (_, list: string, from: string) => {
    return `const {${pairs(list, ':')}}=require(${JSON.stringify(from)});`;
  });
  code = code.replace(/export\{([^}]*)\};?\s*$/, (_, list: string) => `module.exports={${pairs(list, 'exports')}};`);
  if (/\bimport\s*[{*"]|\bexport\s*\{/.test(code))
    throw new Error(`${file}: an import or export this loader does not read`);
  const module = { exports: {} as Record<string, unknown> };
  new Function('module', 'exports', 'require', code)(module, module.exports, require);
  return module.exports as { AppBridge: typeof AppBridgeType };
}
