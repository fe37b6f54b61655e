/**
 * The results view's script (browser JavaScript; run after VIEW_COMMON_JS): summarize_responses'
 * answer as bars (HTML and CSS), numbers' mean, min and max, the drop-off by page (its funnel, on
 * forms that save partial responses), the ten newest responses and the five responses in progress
 * last saved (list_responses, status partial), a filter on one choice question or hidden field
 * (the tools' `where`), the endings reached and the variables (issue 46), Refresh, and Download, which asks the host to open the link
 * export_responses answers (ui/open-link: the view itself fetches nothing).
 */
import { VIEW_COMMON_JS } from './view-style';

export const RESULTS_JS = `${VIEW_COMMON_JS}
let publicId, summary, newest, partials, form, where, failure, busy = false;

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
  const [done, started] = await Promise.all([
    call('list_responses', { publicId, order: 'newest', limit: 10, ...filterArgs() }),
    call('list_responses', { publicId, status: 'partial', order: 'newest', limit: 5, ...filterArgs() }),
  ]);
  newest = done.responses;
  partials = started;
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
  // Numbers, ratings and scales: mean, min and max (when answered), then a rating's or scale's bars.
  const stats = b.mean !== undefined && b.mean !== null
    ? h('p', {}, (b.nps !== undefined ? 'NPS ' + b.nps + ' · ' + b.promoters + ' promoters, ' + b.passives + ' passives, ' + b.detractors + ' detractors · ' : '') +
      'Mean ' + Math.round(b.mean * 100) / 100 + ' · min ' + b.min + ' · max ' + b.max)
    : null;
  if (b.type === 'matrix') body = b.rows.map((r) => h('div', {}, h('h3', {}, r.label), bars(r.columns.map((c) => ({ label: c.label, count: c.count })), b.answered)));
  else if (b.type === 'ranking') body = h('ul', {}, b.choices.map((c) => h('li', {}, c.label + ': mean place ' + (c.meanRank ?? '–') + ', first ' + c.first + ' time' + (c.first === 1 ? '' : 's'))));
  else if (b.choices) body = bars(b.choices.map((c) => ({ label: c.label, count: c.count })), b.answered);
  else if (b.yes !== undefined) body = bars([{ label: 'Yes', count: b.yes }, { label: 'No', count: b.no }], b.answered);
  else if (b.distribution) body = bars(b.distribution.map((d) => ({ label: String(d.value), count: d.count })), b.answered);
  else if (b.min !== undefined && b.min !== null && b.mean === undefined) body = h('p', {}, 'From ' + b.min + ' to ' + b.max);
  else if (b.latest) body = h('ul', {}, b.latest.map((x) => h('li', {}, answerText(x && typeof x === 'object' && 'value' in x ? x.value : x))));
  return h('section', { 'aria-label': b.title || b.blockId }, h('h2', {}, b.title || b.blockId),
    h('p', { class: 'muted' }, b.answered + ' answered, ' + b.skipped + ' skipped'), stats, body || null);
}

/** What the responses computed (issue 46): the endings reached as bars, each variable as a number or text question is shown. */
function computed() {
  const ends = summary.endings || [];
  const reached = ends.reduce((n, e) => n + e.count, 0);
  return [
    ends.length ? h('section', { 'aria-label': 'Endings reached' }, h('h2', {}, 'Endings reached'),
      bars(ends.map((e) => ({ label: e.title, count: e.count })), reached)) : null,
    (summary.variables || []).map((v) => blockSummary(Object.assign({}, v, { title: 'Variable ' + v.name, skipped: summary.total - v.answered }))),
  ];
}

/** The drop-off by page: how many reached each page, as bars of the first page's, and how many of them completed. */
function funnel() {
  const steps = summary && summary.funnel;
  if (!steps || steps.length < 2 || !steps[0].reached) return null;
  const first = steps[0].reached;
  return h('section', { 'aria-labelledby': 'funnel-title' }, h('h2', { id: 'funnel-title' }, 'Drop-off by page'),
    h('p', { class: 'muted' }, 'How many people reached each page, and how many of them completed the form (all responses, not filtered).'),
    h('ul', { class: 'bars funnel' }, steps.map((s, k) => {
      const pct = Math.round((s.reached / first) * 100);
      return h('li', {}, h('span', {}, 'Page ' + (k + 1) + (s.title ? ': ' + s.title : '')),
        h('span', { class: 'bar', role: 'img', 'aria-label': pct + '% reached' }, h('span', { style: 'width:' + pct + '%' })),
        h('span', {}, s.reached + ' reached, ' + s.completed + ' completed'));
    })));
}

function answerText(v) {
  if (v === null || v === undefined) return '';
  if (Array.isArray(v)) return v.map(answerText).join(', ');
  if (typeof v === 'boolean') return v ? 'Yes' : 'No';
  if (typeof v === 'object') return v.label !== undefined ? String(v.label) : v.name !== undefined ? String(v.name) : JSON.stringify(v);
  return String(v);
}

const clip = (s, n) => (s.length > n ? s.slice(0, n - 1) + '…' : s);
const minute = (t) => (t ? t.slice(0, 16).replace('T', ' ') : '');

/**
 * Responses as a table named by its heading (one name: no caption repeating it), its first column
 * a time. On a phone it scrolls sideways: a cell is never narrower than its longest word.
 */
function table(rows, titleId, timeLabel, timeOf) {
  const cols = form.blocks.filter((b) => b.type !== 'page_break' && b.type !== 'statement').slice(0, 6);
  return h('div', { class: 'scroll', role: 'region', 'aria-labelledby': titleId, tabindex: '0' }, h('table', { 'aria-labelledby': titleId },
    h('thead', {}, h('tr', {}, h('th', { scope: 'col', class: 'time' }, timeLabel), cols.map((b) => h('th', { scope: 'col' }, clip(b.title || b.id, 40))))),
    h('tbody', {}, rows.map((r) => h('tr', {}, h('td', { class: 'time' }, minute(timeOf(r))),
      cols.map((b) => h('td', {}, clip(answerText(r.answers[b.id]), 80))))))));
}

function newestResponses() {
  return [h('h2', { id: 'newest-title' }, 'Newest responses'),
    newest && newest.length ? table(newest, 'newest-title', 'Submitted', (r) => r.submittedAt) : h('p', { class: 'muted' }, 'No responses yet.')];
}

/** The responses in progress (partials) last saved, on a form that has some. */
function inProgress() {
  if (!partials || !partials.total) return null;
  const shown = partials.responses.length < partials.total ? ' (the ' + partials.responses.length + ' last saved)' : '';
  return [h('h2', { id: 'partial-title' }, 'In progress'),
    h('p', { class: 'muted' }, partials.total + (partials.total === 1 ? ' response' : ' responses') + ' not yet completed' + shown + '.'),
    table(partials.responses, 'partial-title', 'Last saved', (r) => r.updatedAt)];
}

/** "3 completed responses · 2 in progress", or "3 responses" on a form with none in progress. */
function counts() {
  const n = summary.total;
  const noun = n === 1 ? ' response' : ' responses';
  const open = partials && partials.total ? ' · ' + partials.total + ' in progress' : '';
  return n + (open ? ' completed' : '') + noun + (where ? (n === 1 ? ' matches' : ' match') + ' the filter' : '') + open;
}

function render() {
  const focused = document.activeElement && document.activeElement.id;
  show(
    h('h1', {}, (form && form.title) || 'Results'),
    summary ? h('p', { role: 'status' }, counts()) : null,
    form ? filterBox() : null,
    h('div', { class: 'row' },
      h('button', { type: 'button', id: 'refresh', disabled: busy, onclick: refresh }, busy ? 'Refreshing…' : 'Refresh'),
      h('button', { type: 'button', id: 'download', class: 'secondary', onclick: download }, 'Download CSV')),
    failure ? problem(failure) : null,
    funnel(),
    summary ? summary.blocks.map(blockSummary) : null,
    summary ? computed() : null,
    newestResponses(),
    inProgress(),
  );
  const again = focused && document.getElementById(focused);
  if (again) again.focus();
}
`;
