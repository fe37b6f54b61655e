/**
 * The MCP Apps views (io.modelcontextprotocol/ui): two self-contained HTML documents a host shows
 * in a sandboxed iframe beside a tool's result. Each holds its whole script and style inline, with
 * the view's side of the App bridge (view-bridge.ts: a few KB, where ext-apps' bundle is 530 KB),
 * and reaches nothing over the network: every datum comes through the
 * host's bridge (tools/call with the person's own credential), so the host's default CSP
 * (connect-src 'none') fits, and the document's own CSP says the same.
 */
import { APP_VIEWS, AppView } from './view-uris';
import { FORM_PREVIEW_JS } from './form-preview.view';
import { RESULTS_JS } from './results.view';
import { VIEW_BRIDGE_JS } from './view-bridge';
import { VIEW_CSS } from './view-style';

/** The MIME type of an MCP App view (RESOURCE_MIME_TYPE of ext-apps, whose server entry is ESM only). */
export const APP_MIME_TYPE = 'text/html;profile=mcp-app';

/** The document's own policy: inline script and style only, no network of any kind. */
export const VIEW_CSP =
  "default-src 'none'; script-src 'unsafe-inline'; style-src 'unsafe-inline'; img-src data:; connect-src 'none'; form-action 'none'; base-uri 'none'";

interface ViewSource {
  uri: AppView;
  name: string;
  title: string;
  description: string;
  script: string;
}

const VIEWS: ViewSource[] = [
  {
    uri: APP_VIEWS.formPreview,
    name: 'form-preview',
    title: 'Form preview',
    description: 'The form as respondents see it, page by page, answerable as a dry run (check_response).',
    script: FORM_PREVIEW_JS,
  },
  {
    uri: APP_VIEWS.results,
    name: 'results',
    title: 'Results',
    description: "A form's summary charts and newest responses, with a filter and a download.",
    script: RESULTS_JS,
  },
];

/** resources/list's entries. */
export function appViewList() {
  return VIEWS.map(({ uri, name, title, description }) => ({ uri, name, title, description, mimeType: APP_MIME_TYPE }));
}

const documents = new Map<string, string>();

/** The HTML of one view, built once; undefined for a URI that names none. */
export function appViewHtml(uri: string): string | undefined {
  const view = VIEWS.find((v) => v.uri === uri);
  if (!view) return undefined;
  let html = documents.get(uri);
  if (html === undefined) {
    html = viewDocument(view);
    documents.set(uri, html);
  }
  return html;
}

/** `</script` can not close the script early (the bundle and views are trusted, but its strings are many). */
const inScript = (js: string) => js.replace(/<\/(script)/gi, '<\\/$1');

function viewDocument(view: ViewSource): string {
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta http-equiv="Content-Security-Policy" content="${VIEW_CSP}">
<title>${view.title}</title>
<style>${VIEW_CSS}</style>
</head>
<body>
<main id="app" aria-live="polite"><p role="status">Loading…</p></main>
<script type="module">${VIEW_BRIDGE_JS}
{
${inScript(view.script)}
}</script>
</body>
</html>
`;
}
