/** The MCP Apps views (app-views.ts), by the ui:// URI tools name them with (`ui.resourceUri` of @Tool). */
export const APP_VIEWS = { formPreview: 'ui://formwork/form-preview', results: 'ui://formwork/results' } as const;
export type AppView = (typeof APP_VIEWS)[keyof typeof APP_VIEWS];
