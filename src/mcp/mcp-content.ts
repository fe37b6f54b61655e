/**
 * The one hook for a tool whose MCP result carries more than its one text content (the design's
 * mapping): a tool handler with an `mcpContent(result)` method adds the items it returns after the
 * text content, e.g. export_responses' resource_link to the file it made. REST answers are not
 * touched: there, the result itself says it all.
 */
import type { CallToolResult } from '@modelcontextprotocol/server';

export type McpContentItem = CallToolResult['content'][number];

/** What a tool handler implements to add content items to its MCP results. */
export interface McpContentHook {
  mcpContent(result: unknown): McpContentItem[];
}

/** The items a tool's handler adds to its result (none for most tools). */
export function extraContent(handler: unknown, result: unknown): McpContentItem[] {
  const hook = (handler as Partial<McpContentHook> | undefined)?.mcpContent;
  return typeof hook === 'function' ? hook.call(handler, result) : [];
}
