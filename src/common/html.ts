/** Server-rendered pages (the respondent page, sign-in and consent): escaping and the page shell. */

/** Escapes text for HTML element content and attribute values. */
export function esc(value: unknown): string {
  return String(value ?? '')
    .replace(/&/g, '&amp;')
    .replace(/</g, '&lt;')
    .replace(/>/g, '&gt;')
    .replace(/"/g, '&quot;')
    .replace(/'/g, '&#39;');
}

const STYLE = `
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
  button { font: inherit; padding: .6rem 1.4rem; border: 0; border-radius: 4px; background: #2b59c3; color: #fff; cursor: pointer; }
  .statement { font-size: 1.1rem; }
  .secondary { background: #e6e8ee; color: #1d2330; } .actions { display: flex; gap: .75rem; } form.inline { display: inline; }`;

/** A whole page: inline styles only (the pages send a CSP that allows nothing else). */
export function page(title: string, body: string): string {
  return `<!doctype html>
<html lang="en">
<head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>${esc(title)}</title><style>${STYLE}</style></head>
<body><main>
${body}
</main></body>
</html>`;
}

