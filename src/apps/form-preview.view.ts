/**
 * The form preview's script (browser JavaScript; run after VIEW_COMMON_JS). The form as a
 * respondent sees it, page by page. Its logic is the server's: every change of an answer asks
 * check_response (a dry run, nothing stored) which blocks are shown, which pages the answers
 * visit, whether a jump ends the form, and what create_response would refuse. A draft says so and
 * offers Publish, a publish_form call through the host (which asks the person first).
 */
import { VIEW_COMMON_JS } from './view-style';

export const FORM_PREVIEW_JS = `${VIEW_COMMON_JS}
let form, check, checkProblem, page = 1, tried = false, timer, seq = 0, publishing = false;
const answers = {}, hidden = {};

start('formwork-form-preview', (value, input) =>
  value && Array.isArray(value.blocks) ? setForm(value) : call('get_form', { publicId: value.publicId || input.publicId }).then(setForm));

function setForm(f) {
  form = f;
  page = 1;
  tried = false;
  check = undefined;
  for (const k of Object.keys(answers)) delete answers[k];
  recheck(0);
}

/** The pages: the blocks between page_breaks, each with the page_break that starts it (none for the first). */
function pages() {
  const out = [{ head: null, blocks: [] }];
  for (const b of form.blocks) {
    if (b.type === 'page_break') out.push({ head: b, blocks: [] });
    else out[out.length - 1].blocks.push(b);
  }
  return out;
}

function recheck(delay) {
  clearTimeout(timer);
  timer = setTimeout(async () => {
    const n = ++seq;
    try {
      const sent = Object.keys(hidden).length ? { hidden } : {};
      const result = await call('check_response', { publicId: form.publicId, answers, ...sent });
      if (n !== seq) return;
      check = result;
      checkProblem = undefined;
    } catch (e) {
      if (n !== seq) return;
      checkProblem = e;
    }
    render();
  }, delay);
}

function errorsOf(b) {
  if (!check) return [];
  const keys = ['/answers/' + b.id, b.ref ? '/answers/' + b.ref : null];
  return check.errors.filter((e) => keys.includes(e.path));
}

function setAnswer(b, value) {
  if (value === undefined || value === '' || (Array.isArray(value) && !value.length)) delete answers[b.id];
  else answers[b.id] = value;
  recheck(200);
}

/** One question: its label, its input (native controls, labelled), and what create_response would say of its answer. */
function question(b) {
  const id = 'q-' + b.id;
  const errors = tried ? errorsOf(b) : [];
  const errId = errors.length ? id + '-err' : undefined;
  const title = (b.title || 'Untitled question') + (b.required ? ' *' : '');
  const described = [b.description ? id + '-desc' : null, errId].filter(Boolean).join(' ') || undefined;
  const desc = b.description ? h('p', { id: id + '-desc', class: 'muted' }, b.description) : null;
  const errs = errors.length ? h('p', { id: errId, class: 'err' }, errors.map((e) => e.message).join('; ')) : null;
  const invalid = errors.length ? 'true' : undefined;
  const current = answers[b.id];
  if (b.type === 'statement') return h('div', {}, h('h2', {}, b.title || ''), desc);
  const choices = b.type === 'yes_no'
    ? [{ id: true, label: 'Yes' }, { id: false, label: 'No' }]
    : b.type === 'rating' || b.type === 'linear_scale'
      ? Array.from({ length: (b.max ?? 5) - (b.min ?? 1) + 1 }, (_, k) => ({ id: (b.min ?? 1) + k, label: String((b.min ?? 1) + k) }))
      : b.choices;
  if (choices && b.type !== 'dropdown') {
    const many = b.type === 'checkboxes';
    const opts = choices.map((c, k) => {
      const oid = id + '-' + k;
      const on = many ? (current || []).includes(c.id) : current === c.id;
      return h('div', { class: 'opt' },
        h('input', { type: many ? 'checkbox' : 'radio', id: oid, name: id, checked: on, 'aria-invalid': invalid,
          onchange: (ev) => {
            if (!many) return setAnswer(b, c.id);
            const set = new Set(answers[b.id] || []);
            if (ev.target.checked) set.add(c.id); else set.delete(c.id);
            setAnswer(b, choices.map((x) => x.id).filter((x) => set.has(x)));
          } }),
        h('label', { for: oid }, c.label));
    });
    return h('fieldset', { 'aria-describedby': described }, h('legend', {}, title), desc, opts, errs);
  }
  let control;
  if (b.type === 'dropdown') {
    control = h('select', { id, 'aria-describedby': described, 'aria-invalid': invalid, onchange: (ev) => setAnswer(b, ev.target.value) },
      h('option', { value: '' }, 'Choose…'), b.choices.map((c) => h('option', { value: c.id, selected: current === c.id }, c.label)));
  } else if (b.type === 'file_upload') {
    control = h('p', { id, class: 'muted' }, 'Files are not sent in a preview.');
  } else {
    const kind = { number: 'number', date: 'date', email: 'email', url: 'url', phone: 'tel' }[b.type] || 'text';
    const tag = b.type === 'long_text' ? 'textarea' : 'input';
    control = h(tag, { id, type: tag === 'input' ? kind : undefined, value: current === undefined ? '' : String(current),
      'aria-describedby': described, 'aria-invalid': invalid,
      oninput: (ev) => {
        const v = ev.target.value;
        setAnswer(b, b.type === 'number' && v.trim() !== '' && !Number.isNaN(Number(v)) ? Number(v) : v);
      } });
  }
  return h('div', { class: 'field' }, h('label', { for: id }, h('strong', {}, title)), desc, control, errs);
}

function render() {
  if (!form) return;
  const focused = document.activeElement && document.activeElement.id;
  const all = pages();
  const visited = check ? check.pages : [1];
  if (!visited.includes(page)) page = visited.filter((p) => p < page).pop() || 1;
  const at = visited.indexOf(page);
  const next = visited[at + 1];
  const back = visited[at - 1];
  const shown = new Set(check ? check.shown : []);
  const current = all[page - 1];
  const blocks = current.blocks.filter((b) => shown.has(b.id));
  const pageErrors = blocks.some((b) => errorsOf(b).length);
  const heading = [
    h('h1', {}, form.title),
    form.description ? h('p', {}, form.description) : null,
    h('p', { class: 'muted' }, 'Preview: answers are checked by Formwork and never stored. Page ' + (at + 1) + ' of ' + visited.length + ' on these answers.'),
  ];
  const draft = form.status !== 'published'
    ? h('div', { class: 'note', role: 'note' },
        h('p', {}, form.status === 'draft' ? 'This form is a draft: people cannot answer it yet.' : 'This form is closed: it takes no answers.'),
        h('button', { type: 'button', disabled: publishing, onclick: publish }, form.status === 'draft' ? 'Publish' : 'Reopen'))
    : h('p', { class: 'note' }, 'Published. Share link: ', form.url || '');
  const hiddenInputs = (form.hiddenFields || []).length
    ? h('details', {}, h('summary', {}, 'Hidden fields (set by the share link)'),
        form.hiddenFields.map((name) => h('div', { class: 'field' }, h('label', { for: 'hf-' + name }, name),
          h('input', { type: 'text', id: 'hf-' + name, value: hidden[name] || '', oninput: (ev) => {
            if (ev.target.value) hidden[name] = ev.target.value; else delete hidden[name];
            recheck(200);
          } }))))
    : null;
  const section = h('section', { 'aria-label': 'Page ' + (at + 1) },
    current.head && current.head.title ? h('h2', {}, current.head.title) : null,
    blocks.map(question));
  const last = next === undefined;
  const nav = h('div', { class: 'row' },
    back !== undefined ? h('button', { type: 'button', class: 'secondary', onclick: () => { page = back; tried = false; render(); } }, 'Back') : null,
    last
      ? h('button', { type: 'button', onclick: () => { tried = true; render(); } }, 'Check answers')
      : h('button', { type: 'button', onclick: () => {
          tried = true;
          if (pageErrors) return render();
          page = next; tried = false; render();
        } }, 'Next'));
  const verdict = [];
  if (checkProblem) verdict.push(problem(checkProblem));
  if (check && last && check.endedBy) verdict.push(h('p', { class: 'note', role: 'status' }, 'A jump on these answers ends the form after this page.'));
  if (tried && check && last) {
    verdict.push(check.ok
      ? h('p', { class: 'note', role: 'status' }, 'These answers would be taken. Nothing was stored.')
      : h('div', { role: 'alert', class: 'problem' }, h('p', {}, h('strong', {}, 'create_response would refuse these answers:')),
          h('ul', {}, check.errors.map((e) => h('li', {}, e.path + ': ' + e.message)))));
  }
  show(...heading, draft, hiddenInputs, section, nav, ...verdict);
  const again = focused && document.getElementById(focused);
  if (again) {
    again.focus();
    try { again.setSelectionRange(again.value.length, again.value.length); } catch (_) { /* not a text field */ }
  }
}

async function publish() {
  publishing = true;
  render();
  try {
    form = await call('publish_form', { publicId: form.publicId });
  } catch (e) {
    checkProblem = e;
  }
  publishing = false;
  render();
}
`;
