/**
 * The views' one stylesheet: the host's theme (light or dark, set on <html data-theme> by the
 * bridge's applyDocumentTheme) through CSS variables, the host's own variables where it gives
 * them, one column that fits 390 px, visible focus.
 */
export const VIEW_CSS = `
:root { color-scheme: light dark; --bg: var(--color-background-primary, #fff); --fg: var(--color-text-primary, #1a1a1a);
  --muted: var(--color-text-secondary, #555); --line: var(--color-border-primary, #c8c8c8); --accent: #0b57d0; --bad: #b3261e;
  --soft: #eef2f8; --font: var(--font-sans, system-ui, -apple-system, "Segoe UI", sans-serif); }
[data-theme="dark"] { --bg: var(--color-background-primary, #1e1f22); --fg: var(--color-text-primary, #ececec);
  --muted: var(--color-text-secondary, #b4b4b4); --line: var(--color-border-primary, #55585e); --accent: #8ab4f8; --bad: #f2b8b5; --soft: #2b2f36; }
* { box-sizing: border-box; }
body { margin: 0; background: var(--bg); color: var(--fg); font: 16px/1.45 var(--font); }
main { max-width: 44rem; margin: 0 auto; padding: 1rem; }
h1 { font-size: 1.35rem; margin: 0 0 .25rem; overflow-wrap: break-word; }
h2 { font-size: 1.1rem; margin: 1.25rem 0 .5rem; overflow-wrap: break-word; }
p, li, legend, label, span { overflow-wrap: break-word; }
.muted { color: var(--muted); }
.note { border-left: 4px solid var(--accent); background: var(--soft); padding: .5rem .75rem; margin: .75rem 0; }
.problem { border-left: 4px solid var(--bad); padding: .5rem .75rem; margin: .75rem 0; background: var(--soft); }
.problem strong, .err { color: var(--bad); }
fieldset { border: 1px solid var(--line); border-radius: 8px; margin: 0 0 .9rem; padding: .6rem .8rem .8rem; min-width: 0; }
legend { font-weight: 600; padding: 0 .25rem; }
.opt { display: flex; gap: .5rem; align-items: center; margin: .3rem 0; min-height: 44px; }
input[type=text], input[type=number], input[type=date], input[type=email], input[type=url], input[type=tel], textarea, select {
  width: 100%; font: inherit; color: var(--fg); background: var(--bg); border: 1px solid var(--line); border-radius: 6px; padding: .55rem; }
input[type=radio], input[type=checkbox] { width: 1.2rem; height: 1.2rem; accent-color: var(--accent); }
button { font: inherit; border-radius: 6px; padding: .6rem 1rem; min-height: 44px; cursor: pointer;
  border: 1px solid var(--accent); background: var(--accent); color: var(--bg); }
button.secondary { background: transparent; color: var(--accent); }
button:disabled { opacity: .55; cursor: default; }
:focus-visible { outline: 3px solid var(--accent); outline-offset: 2px; }
.row { display: flex; flex-wrap: wrap; gap: .5rem; align-items: center; margin: .75rem 0; }
.bars { list-style: none; padding: 0; margin: 0; }
.bars li { display: grid; grid-template-columns: minmax(6rem, 40%) 1fr auto; gap: .5rem; align-items: center; margin: .3rem 0; }
.funnel li { grid-template-columns: 1fr auto; gap: .15rem .5rem; margin: .5rem 0; }
.funnel li > :first-child { grid-column: 1 / -1; }
/* On a phone a bar's label has a row of its own: in a narrow column its long words would break. */
@media (max-width: 480px) { .bars li { grid-template-columns: 1fr auto; gap: .15rem .5rem; } .bars li > :first-child { grid-column: 1 / -1; } }
.bar { height: .9rem; background: var(--soft); border-radius: 4px; overflow: hidden; }
.bar span { display: block; height: 100%; background: var(--accent); }
table { border-collapse: collapse; width: 100%; font-size: .95rem; }
th, td { text-align: left; border-bottom: 1px solid var(--line); padding: .4rem; vertical-align: top; overflow-wrap: normal; min-width: 7rem; }
th.time, td.time { white-space: nowrap; }
.scroll { overflow-x: auto; }
[hidden] { display: none !important; }
`;

/**
 * What both views' scripts start with (after the bridge defines McpApps): DOM building with
 * textContent only (never HTML from data), the App connected to the host with its theme, tool
 * calls that throw the tool's own refusal (code, message, hint), and a refusal shown as an alert.
 */
export const VIEW_COMMON_JS = `
const { App, applyDocumentTheme, applyHostStyleVariables } = McpApps;
const root = document.getElementById('app');
function h(tag, attrs, ...children) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === undefined || v === null || v === false) continue;
    if (k.startsWith('on')) e.addEventListener(k.slice(2), v);
    else if (k === 'class') e.className = v;
    else if (k === 'checked' || k === 'value') e[k] = v;
    else e.setAttribute(k, v === true ? '' : String(v));
  }
  for (const c of children.flat()) {
    if (c === null || c === undefined || c === false) continue;
    e.append(c instanceof Node ? c : document.createTextNode(String(c)));
  }
  return e;
}
function show(...nodes) { root.replaceChildren(...nodes.flat(Infinity).filter((n) => n !== null && n !== undefined && n !== false)); }
function theme(ctx) {
  if (ctx && ctx.theme) applyDocumentTheme(ctx.theme);
  if (ctx && ctx.styles && ctx.styles.variables) applyHostStyleVariables(ctx.styles.variables);
}
function outcome(result) {
  const text = result.content && result.content[0] && result.content[0].text;
  if (result.isError) {
    let error;
    try { error = JSON.parse(text).error; } catch (_) { error = undefined; }
    const e = new Error((error && error.message) || text || 'The tool refused.');
    e.code = error && error.code;
    e.hint = error && error.hint;
    throw e;
  }
  return result.structuredContent || JSON.parse(text);
}
function problem(err) {
  return h('div', { role: 'alert', class: 'problem' }, h('p', {}, h('strong', {}, err.message)), err.hint ? h('p', {}, err.hint) : null);
}
let app;
async function call(name, args) { return outcome(await app.callServerTool({ name, arguments: args })); }
/** Connects; onResult gets the tool's answer (or its refusal, shown), with the arguments it was called with. */
async function start(name, onResult) {
  app = new App({ name, version: '1.0.0' }, {});
  let input = {};
  app.ontoolinput = (p) => { input = (p && p.arguments) || {}; };
  app.ontoolresult = (r) => {
    let value;
    try { value = outcome(r); } catch (e) { show(problem(e)); return; }
    Promise.resolve(onResult(value, input)).catch((e) => show(problem(e)));
  };
  app.onhostcontextchanged = theme;
  await app.connect();
  theme(app.getHostContext());
}
`;
