/**
 * The form preview's script (browser JavaScript; run after VIEW_COMMON_JS). The form as a
 * respondent sees it, page by page. Its logic is the server's: every change of an answer asks
 * check_response (a dry run, nothing stored) which blocks are shown, which pages the answers
 * visit, whether a jump ends the form, and what create_response would refuse. A draft says so and
 * offers Publish, a publish_form call through the host (which asks the person first). On a form
 * that computes, the same check's variables, ending and problems are shown under the page (issue 46).
 *
 * Files are never sent from a preview: a file question says what it takes (types in words, size,
 * count) and can be marked as chosen (issue 45). The check then gets an upload id of the right
 * shape that names no upload, so the form's rules see the question answered, and what it says of
 * that id alone is left out: the verdict is create_response's with a good file there.
 */
import { VIEW_COMMON_JS } from './view-style';

export const FORM_PREVIEW_JS = `${VIEW_COMMON_JS}
let form, taken, check, checkProblem, page = 1, tried = false, timer, seq = 0, publishing = false;
const answers = {}, hidden = {};
/** The file questions marked as chosen, and the upload id they are checked with (the shape of one; no such upload). */
const marked = new Set();
/** A ranking's places by choice id, per block. */
const rankPlaces = {};
const PREVIEW_UPLOAD = 'upl_PreviewFileNotSent0000';

/** Accepted types in words, as people name them. */
const TYPE_WORDS = {
  'application/pdf': 'PDF', 'image/*': 'images', 'image/png': 'PNG images', 'image/jpeg': 'JPEG images',
  'image/gif': 'GIF images', 'image/webp': 'WebP images', 'image/svg+xml': 'SVG images', 'video/*': 'videos',
  'audio/*': 'audio files', 'text/*': 'text files', 'text/plain': 'text files', 'text/csv': 'CSV files',
  'application/msword': 'Word documents', 'application/zip': 'ZIP archives', 'application/json': 'JSON files',
  'application/vnd.openxmlformats-officedocument.wordprocessingml.document': 'Word documents',
  'application/vnd.ms-excel': 'Excel spreadsheets', 'application/vnd.openxmlformats-officedocument.spreadsheetml.sheet': 'Excel spreadsheets',
};
function typeWords(accept) {
  const words = [...new Set(accept.map((a) => TYPE_WORDS[a] || (a.startsWith('.') ? a.slice(1).toUpperCase() + ' files' : a)))];
  return words.length > 1 ? words.slice(0, -1).join(', ') + ' or ' + words[words.length - 1] : words[0];
}
/** What a file question takes: "Accepted: PDF or images. Up to 5 MB each; at most 2 files." */
function fileLimits(b) {
  const max = b.maxFiles || 1;
  const types = b.accept && b.accept.length ? 'Accepted: ' + typeWords(b.accept) + '. ' : 'Any type of file. ';
  return types + 'Up to ' + (b.maxSizeMb || 10) + ' MB' + (max > 1 ? ' each; at most ' + max + ' files.' : '.');
}

start('formwork-form-preview', (value, input) =>
  value && Array.isArray(value.blocks) ? setForm(value) : call('get_form', { publicId: value.publicId || input.publicId }).then(setForm));

function setForm(f) {
  form = f;
  taken = undefined;
  // A cap: how many it took already (summarize_responses' maintained total), to say when it is full.
  if (f.maxResponses != null) call('summarize_responses', { publicId: f.publicId }).then((s) => { taken = s.total; render(); }, () => {});
  page = 1;
  tried = false;
  check = undefined;
  for (const k of Object.keys(answers)) delete answers[k];
  marked.clear();
  // A required file question starts answered in the preview (it sends no files): the check goes on to the rest.
  for (const b of f.blocks) if (b.type === 'file_upload' && b.required) { marked.add(b.id); answers[b.id] = [PREVIEW_UPLOAD]; }
  recheck(0);
}

/** The pages: the blocks between page_breaks, each with the page_break that starts it (none for the first). */
/** Why the form takes no answers now, beyond its status (issue 47): not open yet, closed by its schedule or by hand, or full. */
function availability() {
  const at = (t) => new Date(t).toUTCString().replace(' GMT', ' UTC');
  const full = form.maxResponses != null && taken !== undefined && taken >= form.maxResponses;
  if (full) return 'Full: it took its ' + form.maxResponses + (form.maxResponses === 1 ? ' response' : ' responses') + ' (maxResponses); people see the full page.';
  if (form.status === 'closed')
    return form.closesAt && form.closedAt && Date.parse(form.closedAt) >= Date.parse(form.closesAt)
      ? 'Closed by its schedule on ' + at(form.closesAt) + '; a later closesAt (update_form) reopens it.'
      : 'Closed by hand' + (form.closedAt ? ' on ' + at(form.closedAt) : '') + '.';
  if (form.opensAt && Date.parse(form.opensAt) > Date.now()) return 'Not open yet: it opens on ' + at(form.opensAt) + '; until then people see when.';
  return form.closesAt && form.status === 'published' ? 'Closes on ' + at(form.closesAt) + '.' : null;
}

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

/** Whether an error is only about the stand-in of a file marked as chosen (its path is the question's, or under it). */
function aboutMarkedFile(e) {
  return [...marked].some((id) => e.path === '/answers/' + id || e.path.startsWith('/answers/' + id + '/'));
}

/** What create_response would refuse, with good files where files are marked as chosen. */
function refusals() {
  return check ? check.errors.filter((e) => !aboutMarkedFile(e)) : [];
}

function errorsOf(b) {
  const keys = ['/answers/' + b.id, b.ref ? '/answers/' + b.ref : null];
  return refusals().filter((e) => keys.some((k) => k && (e.path === k || e.path.startsWith(k + '/'))));
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
  // A rating's or scale's end labels ("1: Poor, 5: Great"), read with the question as the form page reads them.
  const scale = b.type === 'rating' || b.type === 'linear_scale' || b.type === 'nps';
  const lo = b.type === 'nps' ? 0 : b.type === 'rating' ? 1 : (b.min ?? 1), hi = b.type === 'nps' ? 10 : (b.max ?? 5);
  const ends = scale && (b.minLabel || b.maxLabel)
    ? h('p', { id: id + '-ends', class: 'muted' },
        [b.minLabel ? lo + ': ' + b.minLabel : null, b.maxLabel ? hi + ': ' + b.maxLabel : null].filter(Boolean).join(', '))
    : null;
  const limits = b.type === 'file_upload' ? h('p', { id: id + '-limits', class: 'muted' }, fileLimits(b)) : null;
  const described = [b.description ? id + '-desc' : null, ends ? id + '-ends' : null, limits ? id + '-limits' : null, errId]
    .filter(Boolean).join(' ') || undefined;
  const desc = [b.description ? h('p', { id: id + '-desc', class: 'muted' }, b.description) : null, ends, limits];
  const errs = errors.length ? h('p', { id: errId, class: 'err' }, errors.map((e) => e.message).join('; ')) : null;
  const invalid = errors.length ? 'true' : undefined;
  const current = answers[b.id];
  if (b.type === 'statement') return h('div', {}, h('h2', {}, b.title || ''), desc);
  const choices = b.type === 'yes_no'
    ? [{ id: true, label: 'Yes' }, { id: false, label: 'No' }]
    : scale
      ? Array.from({ length: hi - lo + 1 }, (_, k) => ({ id: lo + k, label: String(lo + k) }))
      : b.choices;
  if (b.type === 'ranking') {
    // A place per option (1 is best), as the form page without script: the answer lists them by place.
    const places = b.rankTop || b.choices.length;
    const at = rankPlaces[b.id] || (rankPlaces[b.id] = {});
    const send = () => {
      const placed = b.choices.filter((c) => at[c.id]).sort((x, y) => at[x.id] - at[y.id]);
      setAnswer(b, placed.map((c, k) => (k > 0 && at[placed[k - 1].id] === at[c.id] ? placed[k - 1].id : c.id)));
    };
    return h('fieldset', { 'aria-describedby': described }, h('legend', {}, title), desc,
      b.choices.map((c, k) => h('div', { class: 'opt' },
        h('select', { id: id + '-' + k, style: 'width:5rem;flex:none', 'aria-invalid': invalid, onchange: (ev) => { at[c.id] = Number(ev.target.value) || undefined; send(); } },
          h('option', { value: '' }, '–'),
          Array.from({ length: places }, (_, p) => h('option', { value: String(p + 1), selected: at[c.id] === p + 1 }, String(p + 1)))),
        h('label', { for: id + '-' + k }, c.label))),
      errs);
  }
  if (b.type === 'matrix') {
    // One group per row (as the form page on a phone): the answer is row label -> column label (a list when multiple).
    const now = current || {};
    const rows = b.rows.map((r, k) => {
      const rid = id + '-r' + k;
      const opts = b.columns.map((c, j) => {
        const oid = rid + '-' + j;
        const on = b.multiple ? (now[r] || []).includes(c) : now[r] === c;
        return h('div', { class: 'opt' },
          h('input', { type: b.multiple ? 'checkbox' : 'radio', id: oid, name: rid, checked: on, 'aria-invalid': invalid,
            onchange: (ev) => {
              const next = Object.assign({}, answers[b.id] || {});
              if (!b.multiple) next[r] = c;
              else {
                const set = new Set(next[r] || []);
                if (ev.target.checked) set.add(c); else set.delete(c);
                next[r] = b.columns.filter((x) => set.has(x));
                if (!next[r].length) delete next[r];
              }
              setAnswer(b, Object.keys(next).length ? next : undefined);
            } }),
          h('label', { for: oid }, c));
      });
      return h('fieldset', {}, h('legend', {}, r), opts);
    });
    return h('fieldset', { 'aria-describedby': described }, h('legend', {}, title), desc, rows, errs);
  }
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
    // No file is sent from a preview: the person marks one as chosen, and the check sees the question answered.
    const box = id + '-chosen';
    return h('fieldset', { 'aria-describedby': described },
      h('legend', {}, title), desc,
      h('div', { class: 'opt' },
        h('input', { type: 'checkbox', id: box, checked: marked.has(b.id), 'aria-invalid': invalid,
          onchange: (ev) => {
            if (ev.target.checked) marked.add(b.id); else marked.delete(b.id);
            setAnswer(b, ev.target.checked ? [PREVIEW_UPLOAD] : undefined);
          } }),
        h('label', { for: box }, (b.maxFiles || 1) > 1 ? 'Files are chosen' : 'A file is chosen')),
      h('p', { class: 'muted' }, b.required ? 'Required: answered in the preview, which sends no files.' : 'A preview sends no files: mark one as chosen to check the rest.'),
      errs);
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
  // Issue 47: an invite-only form takes answers only from create_invites links.
  const invited = form.access === 'invite'
    ? h('p', { class: 'note', role: 'note' }, 'Invite-only: people answer only from create_invites links; the share link alone says so.')
    : null;
  const when = availability();
  const open = when ? h('p', { class: 'note', role: 'note' }, when) : null;
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
    const refused = refusals();
    const files = [...marked].some((id) => shown.has(id)) ? ' (with the files marked as chosen)' : '';
    verdict.push(!refused.length
      ? h('p', { class: 'note', role: 'status' }, 'These answers would be taken' + files + '. Nothing was stored.')
      : h('div', { role: 'alert', class: 'problem' }, h('p', {}, h('strong', {}, 'create_response would refuse these answers:')),
          h('ul', {}, refused.map((e) => h('li', {}, e.path + ': ' + e.message)))));
  }
  show(...heading, draft, open, invited, hiddenInputs, section, nav, ...verdict, scoreFlow());
  const again = focused && document.getElementById(focused);
  if (again) {
    again.focus();
    try { again.setSelectionRange(again.value.length, again.value.length); } catch (_) { /* not a text field */ }
  }
}

/**
 * What the answers compute so far (issue 46), from the same check: each variable (a quiz's score
 * out of its maximum), the ending they reach, and the calculations that could not apply.
 */
function scoreFlow() {
  if (!check || !check.variables) return null;
  const ends = form.endings || [];
  const ending = ends.find((e) => e.ref === check.ending);
  return h('section', { 'aria-labelledby': 'computed-title' }, h('h2', { id: 'computed-title' }, 'What these answers compute'),
    h('ul', {}, Object.entries(check.variables).map(([k, v]) =>
      h('li', {}, k + ': ' + v + (k === 'score' && form.maxScore !== undefined ? ' of ' + form.maxScore : '')))),
    ends.length ? h('p', {}, 'Ending: ' + (ending ? ending.title + ' (' + ending.ref + ')' : 'none yet') + '. Endings: ' + ends.map((e) => e.ref).join(', ') + '.') : null,
    (check.problems || []).map((p) => h('p', { class: 'err' }, p.path + ': ' + p.message)));
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
