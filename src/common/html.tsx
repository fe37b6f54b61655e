/**
 * Server-rendered pages: the page shell and its styles.
 *
 * Every page (settings, results, sign-in and consent, the respondent page, the unstorable-text
 * refusal) is a React component rendered on the server (`renderPage`): every value is escaped
 * unless it is given through dangerouslySetInnerHTML, which an ESLint rule allows in this file
 * only (the inline style sheet below).
 */
import type { FastifyReply } from 'fastify';
import type { ReactNode } from 'react';
import { renderToStaticMarkup } from 'react-dom/server';

/**
 * Escapes text for HTML element content and attribute values. Pages never need it (React escapes);
 * it is for HTML a person copies elsewhere, such as the results page's embed snippet.
 */
export function esc(value: unknown): string {
  return String(value ?? '')
    .replace(/&/g, '&amp;')
    .replace(/</g, '&lt;')
    .replace(/>/g, '&gt;')
    .replace(/"/g, '&quot;')
    .replace(/'/g, '&#39;');
}

export const STYLE = `
  body { font: 16px/1.5 system-ui, sans-serif; margin: 0; background: #f6f7f9; color: #1d2330; }
  main { max-width: 40rem; margin: 2rem auto; padding: 2rem; background: #fff; border-radius: 8px; }
  h1 { margin-top: 0; } .desc { color: #4a5263; margin: .25rem 0 .5rem; }
  .field, fieldset { margin: 0 0 1.5rem; border: 0; padding: 0; }
  label, legend { font-weight: 600; display: block; margin-bottom: .25rem; }
  fieldset label { font-weight: 400; display: inline-flex; gap: .4rem; margin-right: 1rem; }
  input[type=text], input[type=email], input[type=url], input[type=tel], input[type=number], input[type=date], input[type=password], textarea, select {
    width: 100%; box-sizing: border-box; padding: .5rem; font: inherit; border: 1px solid #8a93a6; border-radius: 4px; }
  [aria-invalid=true] { border-color: #b00020; outline: 1px solid #b00020; }
  .error { color: #b00020; margin: .25rem 0; } .req { color: #b00020; }
  .summary { border: 2px solid #b00020; padding: 1rem; margin-bottom: 1.5rem; border-radius: 4px; }
  .summary > :first-child, .notice > :first-child { margin-top: 0; } .summary > :last-child, .notice > :last-child { margin-bottom: 0; }
  legend { padding: 0; } .muted { color: #4a5263; }
  fieldset label.option { display: flex; align-items: center; gap: .5rem; margin: 0 0 .5rem; } label.option input { margin: 0; flex: none; }
  .decide { display: grid; grid-template-columns: max-content max-content; gap: 0 .75rem; } .decide > form:first-child { display: contents; } .decide fieldset { grid-column: 1 / -1; }
  .summary li { margin-bottom: .5rem; } .summary .question { font-weight: 600; } .summary .problem { display: block; }
  .scale { display: grid; grid-template-columns: repeat(auto-fill, minmax(2.75rem, 1fr)); gap: .5rem; }
  fieldset .scale label { margin: 0; flex-direction: column; align-items: center; gap: .1rem; padding: .3rem 0; border: 1px solid #d5d9e2; border-radius: 4px; }
  @media (min-width: 640px) { .scale { grid-template-columns: none; grid-auto-flow: column; grid-auto-columns: minmax(0, 1fr); } }
  .matrix .mrow { display: block; margin: 0 0 1rem; } .matrix .mrow > .rowlabel { display: block; font-weight: 600; margin-bottom: .25rem; } .matrix .mhead { display: none; }
  fieldset .matrix .mrow label { display: flex; margin: 0 0 .4rem; }
  @media (min-width: 640px) {
    .matrix .mhead, .matrix .mrow { display: grid; grid-template-columns: minmax(8rem, 2fr); grid-auto-flow: column; grid-auto-columns: minmax(0, 1fr); gap: .25rem; align-items: center; margin: 0; padding: .35rem 0; border-bottom: 1px solid #e6e8ee; }
    .matrix .mhead span { text-align: center; font-size: .9rem; color: #4a5263; } .matrix .mrow > .rowlabel { font-weight: 400; margin: 0; }
    fieldset .matrix .mrow label { justify-content: center; margin: 0; } .matrix .mrow .clabel { position: absolute; width: 1px; height: 1px; overflow: hidden; clip: rect(0 0 0 0); white-space: nowrap; } }
  button { font: inherit; padding: .6rem 1.4rem; border: 0; border-radius: 4px; background: #2b59c3; color: #fff; cursor: pointer; }
  .statement { font-size: 1.1rem; }
  .secondary { background: #e6e8ee; color: #1d2330; } .actions { display: flex; gap: .75rem; } form.inline { display: inline; }
  .visually-hidden { position: absolute; width: 1px; height: 1px; overflow: hidden; clip: rect(0 0 0 0); white-space: nowrap; }
  main.wide { max-width: 64rem; } .actions a.cancel { align-self: center; } .danger { background: #b00020; }
  nav.top { display: flex; flex-wrap: wrap; gap: .25rem 1rem; align-items: center; border-bottom: 1px solid #e6e8ee; padding-bottom: .75rem; margin-bottom: 1.5rem; }
  nav.top .who { margin-left: auto; color: #4a5263; } nav.top a[aria-current=page] { font-weight: 700; text-decoration: none; color: #1d2330; }
  table { border-collapse: collapse; width: 100%; margin-bottom: 1.5rem; font-size: .95rem; } th, td { text-align: left; padding: .4rem .5rem; border-bottom: 1px solid #e6e8ee; vertical-align: top; }
  th { font-weight: 600; } td select { width: auto; } td button { padding: .3rem .8rem; } code, .secret { font-family: ui-monospace, monospace; word-break: break-all; }
  .secret { display: block; background: #f0f3fa; padding: .75rem; border-radius: 4px; margin: .5rem 0; }
  .notice { border: 2px solid #2b7a3d; padding: 1rem; margin-bottom: 1.5rem; border-radius: 4px; }
  a:focus, button:focus, input:focus, select:focus, textarea:focus, .summary:focus { outline: 3px solid #2b59c3; outline-offset: 2px; }`;

/**
 * The shell of a component page: the page head (inline styles only, and at most one
 * script file of this origin, `script`). `style` adds rules after the shared ones.
 */
export function Document(props: {
  title: string;
  children: ReactNode;
  script?: string;
  wide?: boolean;
  style?: string;
  /** The shared styles as a file of this origin (the respondent pages: page-assets.ts) instead of inline. */
  stylesheet?: string;
  /** The page's language (BCP 47) and direction; English, left to right, unless said. */
  lang?: string;
  dir?: 'ltr' | 'rtl';
}) {
  return (
    <html lang={props.lang ?? 'en'} dir={props.dir}>
      <head>
        <meta charSet="utf-8" />
        <meta name="viewport" content="width=device-width, initial-scale=1" />
        <title>{props.title}</title>
        <link rel="icon" href="/favicon.ico" type="image/svg+xml" />
        {/* Our own constant CSS: the one raw HTML of the pages. */}
        {props.stylesheet ? <link rel="stylesheet" href={props.stylesheet} /> : null}
        {props.stylesheet && !props.style ? null : (
          <style dangerouslySetInnerHTML={{ __html: (props.stylesheet ? '' : STYLE) + (props.style ?? '') }} />
        )}
        {props.script ? <script src={props.script} defer /> : null}
      </head>
      <body>{props.children}</body>
    </html>
  );
}

/** Renders a whole page (a `Document`) to the HTML sent: escaped throughout. */
export function renderPage(document: ReactNode): string {
  return `<!doctype html>\n${renderToStaticMarkup(document)}`;
}

/** Sends a page's script file (the pages' CSP allows script only from the service's own origin). */
export function sendScript(res: FastifyReply, script: string): void {
  res
    .status(200)
    .headers({
      'Content-Type': 'text/javascript; charset=utf-8',
      'Cache-Control': 'public, max-age=3600',
      'X-Content-Type-Options': 'nosniff',
    })
    .send(script);
}
