/**
 * The results view's script (browser JavaScript; run after VIEW_COMMON_JS): summarize_responses'
 * answer as bars (HTML and CSS), the ten newest responses (list_responses), a filter on one
 * choice question or hidden field (the tools' `where`), Refresh, and Download, which asks the host
 * to open the link export_responses answers (ui/open-link: the view itself fetches nothing).
 */
import { VIEW_COMMON_JS } from './view-style';

export const RESULTS_JS = `${VIEW_COMMON_JS}
let publicId, summary, newest, form, where, failure, busy = false;

start('formwork-results', async (value, input) => {
  // The summary the agent asked for (with its filter, if any), or, when the view opens without one, a fresh one.
  publicId = value.publicId || input.publicId;
  where = input.where;
  form = await call('get_form', { publicId });
  if (!value.blocks) return refresh();
  summary = value;
  await loadNewest();
  render();
});

const filterArgs = () => (where ? { where } : {});

async function loadNewest() {
  newest = (await call('list_responses', { publicId, order: 'newest', limit: 10, ...filterArgs() })).responses;
}

async function refresh() {
  busy = true;
  render();
  try {
    summary = await call('summarize_responses', { publicId, ...filterArgs() });
    await loadNewest();
    failure = undefined;
  } catch (e) {
    failure = e;
  }
  busy = false;
  render();
}

async function download() {
  try {
    const link = await call('export_responses', { publicId, format: 'csv', ...filterArgs() });
    const opened = await app.openLink({ url: link.url });
    failure = opened && opened.isError ? new Error('The host did not open the download link.') : undefined;
  } catch (e) {
    failure = e;
  }
  render();
}

/** What a filter may name: the choice questions (by choice) and hidden fields (by value). */
function filterBox() {
  const choiceBlocks = form.blocks.filter((b) => b.choices && b.choices.length);
  const subjects = [
    ...choiceBlocks.map((b) => ({ key: 'b:' + b.id, label: b.title || b.id, values: b.choices.map((c) => ({ v: c.id, label: c.label })) })),
    ...(form.hiddenFields || []).map((n) => ({ key: 'h:' + n, label: 'Hidden field ' + n })),
  ];
  if (!subjects.length) return null;
  const subject = h('select', { id: 'f-subject' }, h('option', { value: '' }, 'All responses'), subjects.map((s) => h('option', { value: s.key }, s.label)));
  const valueBox = h('span', {});
  const valueControl = () => {
    const s = subjects.find((x) => x.key === subject.value);
    if (!s) return valueBox.replaceChildren();
    valueBox.replaceChildren(h('label', { for: 'f-value' }, ' is '),
      s.values ? h('select', { id: 'f-value' }, s.values.map((x) => h('option', { value: x.v }, x.label))) : h('input', { id: 'f-value', type: 'text' }));
  };
  subject.addEventListener('change', valueControl);
  // The filter applied stays chosen when the view is drawn again.
  if (where) {
    subject.value = where.block ? 'b:' + where.block : 'h:' + where.hidden;
    valueControl();
    valueBox.querySelector('#f-value').value = where.value;
  }
  const apply = () => {
    const s = subjects.find((x) => x.key === subject.value);
    const value = document.getElementById('f-value');
    if (!s || !value) where = undefined;
    else if (s.values) where = { block: s.key.slice(2), op: form.blocks.find((b) => b.id === s.key.slice(2)).type === 'checkboxes' ? 'contains' : 'equals', value: value.value };
    else where = { hidden: s.key.slice(2), op: 'equals', value: value.value };
    refresh();
  };
  return h('div', { class: 'row', role: 'group', 'aria-label': 'Filter responses' }, h('label', { for: 'f-subject' }, 'Filter'), subject, valueBox,
    h('button', { type: 'button', class: 'secondary', onclick: apply }, 'Apply'));
}

function bars(items, total) {
  return h('ul', { class: 'bars' }, items.map((it) => {
    const pct = total ? Math.round((it.count / total) * 100) : 0;
    return h('li', {}, h('span', {}, it.label), h('span', { class: 'bar', role: 'img', 'aria-label': pct + '%' }, h('span', { style: 'width:' + pct + '%' })),
      h('span', {}, it.count + ' (' + pct + '%)'));
  }));
}

function blockSummary(b) {
  let body;
  if (b.choices) body = bars(b.choices.map((c) => ({ label: c.label, count: c.count })), b.answered);
  else if (b.yes !== undefined) body = bars([{ label: 'Yes', count: b.yes }, { label: 'No', count: b.no }], b.answered);
  else if (b.distribution) body = bars(b.distribution.map((d) => ({ label: String(d.value), count: d.count })), b.answered);
  else if (b.mean !== undefined && b.mean !== null) body = h('p', {}, 'Mean ' + Math.round(b.mean * 100) / 100 + ', from ' + b.min + ' to ' + b.max);
  else if (b.latest) body = h('ul', {}, b.latest.map((x) => h('li', {}, answerText(x && typeof x === 'object' && 'value' in x ? x.value : x))));
  return h('section', { 'aria-label': b.title || b.blockId }, h('h2', {}, b.title || b.blockId),
    h('p', { class: 'muted' }, b.answered + ' answered, ' + b.skipped + ' skipped'), body || null);
}

function answerText(v) {
  if (v === null || v === undefined) return '';
  if (Array.isArray(v)) return v.map(answerText).join(', ');
  if (typeof v === 'object') return v.label !== undefined ? String(v.label) : v.name !== undefined ? String(v.name) : JSON.stringify(v);
  return String(v);
}

function table() {
  if (!newest || !newest.length) return h('p', { class: 'muted' }, 'No responses yet.');
  const cols = form.blocks.filter((b) => b.type !== 'page_break' && b.type !== 'statement').slice(0, 6);
  return h('div', { class: 'scroll' }, h('table', {},
    h('caption', { class: 'muted' }, 'Newest responses'),
    h('thead', {}, h('tr', {}, h('th', { scope: 'col' }, 'Submitted'), cols.map((b) => h('th', { scope: 'col' }, b.title || b.id)))),
    h('tbody', {}, newest.map((r) => h('tr', {}, h('td', {}, r.submittedAt.slice(0, 16).replace('T', ' ')),
      cols.map((b) => h('td', {}, answerText(r.answers[b.id]))))))));
}

function render() {
  const focused = document.activeElement && document.activeElement.id;
  show(
    h('h1', {}, (form && form.title) || 'Results'),
    summary ? h('p', { role: 'status' }, summary.total + (where ? ' responses match the filter' : ' responses')) : null,
    form ? filterBox() : null,
    h('div', { class: 'row' },
      h('button', { type: 'button', id: 'refresh', disabled: busy, onclick: refresh }, busy ? 'Refreshing…' : 'Refresh'),
      h('button', { type: 'button', id: 'download', class: 'secondary', onclick: download }, 'Download CSV')),
    failure ? problem(failure) : null,
    summary ? summary.blocks.map(blockSummary) : null,
    h('h2', {}, 'Newest responses'),
    table(),
  );
  const again = focused && document.getElementById(focused);
  if (again) again.focus();
}
`;
