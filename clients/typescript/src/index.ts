export { createClient, FormworkClient } from './client';
export type {
  CallOptions,
  CallResult,
  ClientOptions,
  PageItem,
  PagedTool,
  ToolArgs,
  ToolName,
  ToolResult,
} from './client';
export { FormworkError } from './errors';
export type { ErrorCode, ErrorDetail } from './errors';
export type { components, operations, paths } from './generated/openapi';
