/**
 * The one script of the respondent pages, served from SCRIPT_PATH (a file of the service's own
 * origin, so the page's CSP allows it with script-src 'self': no inline script, no eval). It makes
 * a question whose showIf names a question on the same page appear (or go) as soon as the answers
 * say so, and turns Next into Submit when the answers end the form on this page. The pages work
 * without it: the server's walk shows the same page again with the new questions (see
 * RespondentController.step).
 *
 * Why a hand-written evaluator rather than the server's module: the server is compiled to
 * CommonJS with imports between modules and has no bundler, so its evaluate() cannot be sent to
 * a browser as it is. CONDITIONS_JS below is a line-for-line copy of conditions/evaluate.ts's
 * table (about 40 lines); respondent.script.spec.ts runs every case of conditions.spec.ts through
 * it and compares both evaluators on random conditions and answers, so the two cannot drift apart
 * without a failing test. The server stays the judge: it evaluates again on every post.
 */
import { FOLD_FROM, FOLD_TO } from '../forms/conditions/fold';

export const SCRIPT_PATH = '/f/assets/respondent.js';

/** A string as a JavaScript literal in ASCII (\uXXXX beyond), whatever charset the script is read in. */
const asciiJson = (s: string) =>
  JSON.stringify(s).replace(/[^\x20-\x7e]/g, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`);

/** evaluate(condition, facts) of conditions/evaluate.ts, in plain browser JavaScript. */
export const CONDITIONS_JS = `function evaluate(c, facts) {
  if ('all' in c) return c.all.every(function (x) { return evaluate(x, facts); });
  if ('any' in c) return c.any.some(function (x) { return evaluate(x, facts); });
  if ('not' in c) return !evaluate(c.not, facts);
  return evaluateLeaf(
    c,
    'block' in c ? rowOr(placeOr(facts.answer(c.block), c.choice), c.row) : 'variable' in c ? (facts.variable ? facts.variable(c.variable) : undefined) : facts.hidden(c.hidden),
  );
}
function placeOr(x, choice) {
  if (choice === undefined) return x;
  var i = Array.isArray(x) ? x.indexOf(choice) : -1;
  return i < 0 ? undefined : i + 1;
}
function rowOr(x, row) {
  if (row === undefined) return x;
  return x !== null && typeof x === 'object' && !Array.isArray(x) ? x[row] : undefined;
}
function isMissing(x) {
  return x === undefined || x === null || x === '' || (Array.isArray(x) && x.length === 0);
}
function evaluateLeaf(leaf, x) {
  if (isMissing(x)) return leaf.op === 'not_answered';
  var v = leaf.value;
  switch (leaf.op) {
    case 'answered': return true;
    case 'not_answered': return false;
    case 'equals': return equals(x, v);
    case 'not_equals': return !equals(x, v);
    case 'in':
      if (!Array.isArray(v)) return false;
      return Array.isArray(x) ? x.some(function (e) { return v.includes(e); }) : v.includes(x);
    case 'contains': return contains(x, v);
    case 'not_contains': return !contains(x, v);
    case 'gt': return compare(x, v) > 0;
    case 'gte': return compare(x, v) >= 0;
    case 'lt': return compare(x, v) < 0;
    case 'lte': return compare(x, v) <= 0;
  }
  return false;
}
function equals(x, v) {
  if (Array.isArray(x)) {
    if (!Array.isArray(v)) return false;
    var set = new Set(x);
    return set.size === new Set(v).size && v.every(function (e) { return set.has(e); });
  }
  return x === v;
}
function contains(x, v) {
  if (Array.isArray(x)) return x.includes(v);
  if (typeof x === 'string' && typeof v === 'string') return foldCase(x).includes(foldCase(v));
  return false;
}
var FOLD_FROM = ${asciiJson(FOLD_FROM)}, FOLD_TO = ${asciiJson(FOLD_TO)};
function foldCase(s) {
  var out = '';
  for (var c of s) {
    var lower = String.fromCodePoint(c.toLowerCase().codePointAt(0));
    var i = FOLD_FROM.indexOf(lower);
    out += i < 0 ? lower : FOLD_TO[i];
  }
  return out;
}
function compare(x, v) {
  if (typeof x === 'number' && typeof v === 'number') return x - v;
  if (typeof x === 'string' && typeof v === 'string') return x < v ? -1 : x > v ? 1 : 0;
  return NaN;
}
`;

/**
 * The page's part. The form carries data-logic (PageLogic, from respondent.steps.ts): the page's
 * blocks in order with their showIf, the stored answers and hidden values the rules name from
 * earlier pages, and the page_breaks from the one closing this page on (their showIf and jumps).
 * On each input it walks the page as walk() does (a block is shown when its showIf holds on the
 * blocks shown before it), shows or hides each question's wrapper (q-{id}, drawn with `hidden`
 * when not shown), sets the button to Next or Submit and "Page 2 of 4" (in #progress and the
 * title; the page's position is in data-logic) to the pages the answers now lead through, and
 * says what changed in a polite live region: the focus stays where the person is typing, and a new question comes next in tab order
 * (a rule names only blocks before it). The ids of the questions it showed go back in _seen, so
 * the server does not show the page again for questions the person already saw.
 */
const PAGE_JS = `var form = document.querySelector('form[data-logic]');
var logic;
try { logic = form && JSON.parse(form.getAttribute('data-logic')); } catch (e) { logic = undefined; }
if (logic) {
  var button = form.querySelector('button[name="_action"]');
  var live = document.getElementById('announce');
  var seen = document.createElement('input');
  seen.type = 'hidden';
  seen.name = '_seen';
  form.appendChild(seen);

  // What each field holds now, by name: the ticked boxes and the chosen radio only.
  var fields = function () {
    var byName = {};
    Array.prototype.forEach.call(form.elements, function (el) {
      if (!el.name || ((el.type === 'checkbox' || el.type === 'radio') && !el.checked)) return;
      (byName[el.name] = byName[el.name] || []).push(el.value);
    });
    return byName;
  };

  // A field's value as the server stores it (answersFromFormPost, then validation), or undefined.
  var read = function (b, byName) {
    var picked = (byName[b.id] || []).filter(function (v) { return typeof v === 'string' && v.trim() !== ''; });
    if (b.type === 'checkboxes') return picked.length ? picked : undefined;
    if (b.type === 'matrix') {
      // foldMatrixFields and answersFromFormPost of respondent.page.tsx: each row its own field, "<block id>:<row id>".
      var rows = {}, any = false;
      Object.keys(byName).forEach(function (name) {
        if (name.indexOf(b.id + ':') !== 0) return;
        var cols = byName[name].filter(function (v) { return v !== ''; });
        if (!cols.length) return;
        rows[name.slice(b.id.length + 1)] = b.multiple ? cols : cols[0];
        any = true;
      });
      return any ? rows : undefined;
    }
    if (b.type === 'ranking') {
      // rankingFromPost of respondent.page.tsx: "<choice id>:<place>" in the order of their places.
      var placed = picked.filter(function (v) { return v.indexOf(':') > 0; }).map(function (v) {
        var k = v.lastIndexOf(':');
        return { id: v.slice(0, k), place: Number(v.slice(k + 1)) };
      }).sort(function (x, y) { return x.place - y.place; });
      return placed.length ? placed.map(function (p) { return p.id; }) : undefined;
    }
    if (!picked.length) return undefined;
    var text = picked[0];
    if (b.type === 'number') {
      var t = text.trim();
      if (!/^-?\\d+(\\.\\d+)?([eE][+-]?\\d+)?$/.test(t)) return undefined;
      var n = Number(t);
      if (Math.abs(n) > 1e15 || (b.min !== undefined && n < b.min) || (b.max !== undefined && n > b.max)) return undefined;
      return n;
    }
    if (b.type === 'rating' || b.type === 'linear_scale' || b.type === 'nps') return Number(text);
    if (b.type === 'yes_no') return text === 'true' ? true : text === 'false' ? false : undefined;
    return b.type === 'long_text' ? text : text.trim();
  };

  // Leaving the page that breaks[k] closes: the index of the break starting the next page (a
  // jump's target, or breaks[k] itself), or breaks.length for the end.
  var leave = function (k, facts) {
    var jumps = (k < logic.breaks.length && logic.breaks[k].jumps) || [];
    for (var j = 0; j < jumps.length; j++) {
      if (!evaluate(jumps[j].if, facts)) continue;
      if (jumps[j].to === 'end' || jumps[j].to.indexOf('ending:') === 0) return logic.breaks.length;
      var to = logic.breaks.findIndex(function (p) { return p.id === jumps[j].to; });
      return to < 0 ? k : to;
    }
    return k;
  };
  // How many pages the walk shows after this one, as walk() goes: a page whose showIf fails is
  // skipped (the jumps closing it not tried); a shown page's closing jumps decide where it goes.
  // Answers to later pages are not known here (they count as not answered).
  var pagesAfter = function (facts) {
    var breaks = logic.breaks;
    var n = 0;
    for (var i = leave(0, facts); i < breaks.length; ) {
      if (breaks[i].showIf && !evaluate(breaks[i].showIf, facts)) { i++; continue; }
      n++;
      i = leave(i + 1, facts);
    }
    return n;
  };
  var progress = document.getElementById('progress');

  var update = function (say) {
    var shown = {};
    var values = {};
    var facts = {
      answer: function (id) { return Object.prototype.hasOwnProperty.call(logic.answers, id) ? logic.answers[id] : shown[id] ? values[id] : undefined; },
      hidden: function (name) { return logic.hidden[name]; },
      variable: function (name) { return (logic.variables || {})[name]; },
    };
    var added = [];
    var removed = [];
    var byName = fields();
    logic.blocks.forEach(function (b) {
      var on = !b.showIf || evaluate(b.showIf, facts);
      if (on) { shown[b.id] = true; values[b.id] = read(b, byName); }
      var box = document.getElementById('q-' + b.id);
      if (!box || box.hidden === !on) return;
      box.hidden = !on;
      (on ? added : removed).push(b.title);
    });
    seen.value = Object.keys(shown).join(' ');
    var after = pagesAfter(facts);
    var ends = after === 0;
    // "Page 1 of 3" follows the answers on the page (the server's count stands until one changes).
    if (say && progress && logic.position) {
      var count = word('progress', 'Page {position} of {total}').replace('{position}', logic.position).replace('{total}', logic.position + after);
      if (progress.textContent !== count) {
        document.title = document.title.replace(progress.textContent, count);
        progress.textContent = count;
      }
    }
    var turned = button && (button.value === 'submit') !== ends;
    if (turned) {
      button.value = ends ? 'submit' : 'next';
      button.textContent = ends ? word('submit', 'Submit') : word('next', 'Next');
    }
    if (!say || !live) return;
    var news = [];
    var list = function (titles) { var t = titles.join('; '); return /[.?!:…]$/.test(t) ? t : t + '.'; };
    if (added.length) news.push((added.length === 1 ? 'A question was added below: ' : added.length + ' questions were added below: ') + list(added));
    if (removed.length) news.push((removed.length === 1 ? 'A question was removed: ' : removed.length + ' questions were removed: ') + list(removed));
    if (turned) news.push(ends ? word('turnedSubmit', 'Your answers end the form on this page: the button now submits them.') : word('turnedNext', 'The form goes on after this page: the button now says Next.'));
    if (news.length) live.textContent = news.join(' ');
  };
  update(false);
  form.addEventListener('input', function () { update(true); });
  form.addEventListener('change', function () { update(true); });
}
`;

/**
 * File questions (issue 35). The form carries data-uploads (the page's own endpoint for upload
 * targets). Choosing a file asks it for a target ({ block, filename, contentType, size }), PUTs
 * the bytes straight there (XMLHttpRequest, for the progress bar), asks the endpoint whether the
 * bytes are what the file said (…/uploads/{id}/check), and only then keeps the upload id in a
 * hidden field named after the question, which the form posts like any answer; the file input is
 * emptied so the post never carries the bytes. A refusal (at any step) is shown by the file in
 * the server's words for people (the envelope's error.message, naming the file), and the file is
 * not kept. Each file gets a Remove button (dropping its field, or stopping its upload). On a
 * question of one file, a new file replaces the one there (its Keep box unticked). The buttons
 * that send the form wait while a file is on its way.
 * Without the script the form posts the file itself (multipart), and the server streams it.
 */
const FILES_JS = `var upForm = document.querySelector('form[data-uploads]');
if (upForm) {
  var endpoint = upForm.getAttribute('data-uploads');
  var busy = 0;
  var setBusy = function (d) {
    busy += d;
    Array.prototype.forEach.call(upForm.querySelectorAll('button[type=submit]'), function (b) { b.disabled = busy > 0; });
  };
  Array.prototype.forEach.call(upForm.querySelectorAll('input[type=file]'), function (input) {
    var block = input.name;
    var single = input.getAttribute('data-max-files') === '1';
    var list = document.createElement('ul');
    list.className = 'files';
    list.setAttribute('aria-live', 'polite');
    input.parentNode.insertBefore(list, input.nextSibling);
    var send = function (file) {
      var li = document.createElement('li');
      var label = document.createElement('span');
      label.textContent = file.name + ' ';
      var bar = document.createElement('progress');
      bar.max = 100;
      bar.value = 0;
      bar.setAttribute('aria-label', 'Sending ' + file.name);
      var remove = document.createElement('button');
      remove.type = 'button';
      remove.className = 'secondary';
      remove.textContent = word('removeFile', 'Remove');
      remove.setAttribute('aria-label', 'Remove ' + file.name);
      li.appendChild(label);
      li.appendChild(bar);
      li.appendChild(document.createTextNode(' '));
      li.appendChild(remove);
      list.appendChild(li);
      var xhr;
      var pending = true;
      var settle = function () { if (pending) { pending = false; setBusy(-1); } };
      var unsent = function () { return 'The file \u201c' + file.name + '\u201d could not be sent. Check your connection and choose it again.'; };
      // The server's sentence names the file: it replaces the name.
      var fail = function (message) {
        settle();
        bar.remove();
        label.textContent = '';
        var p = document.createElement('span');
        p.className = 'error';
        p.textContent = message + ' ';
        li.insertBefore(p, remove);
      };
      var refused = function (b) { return (b && b.error && b.error.message) || unsent(); };
      var json = function (r) {
        return r.json().then(function (b) { return { ok: r.ok, b: b }; }, function () { return { ok: false }; });
      };
      remove.addEventListener('click', function () {
        if (xhr) xhr.abort();
        settle();
        li.remove();
        input.focus();
      });
      setBusy(1);
      fetch(endpoint, {
        method: 'POST',
        headers: { 'Content-Type': 'application/json', Accept: 'application/json' },
        body: JSON.stringify({ block: block, filename: file.name, contentType: file.type || 'application/octet-stream', size: file.size }),
      })
        .then(json)
        .then(function (res) {
          if (!res.ok) return fail(refused(res.b));
          if (!pending) return;
          xhr = new XMLHttpRequest();
          xhr.open('PUT', res.b.url);
          Object.keys(res.b.headers).forEach(function (h) {
            if (!/^(content-length|host)$/i.test(h)) xhr.setRequestHeader(h, res.b.headers[h]);
          });
          xhr.upload.onprogress = function (e) { if (e.lengthComputable) bar.value = Math.round((e.loaded * 100) / e.total); };
          xhr.onload = function () {
            var put = xhr.status >= 200 && xhr.status < 300;
            // Arrived (or refused on arrival): are the bytes what the file said? The check says why in the page's words; kept only when they are.
            fetch(endpoint + '/' + encodeURIComponent(res.b.uploadId) + '/check', {
              method: 'POST',
              headers: { 'Content-Type': 'application/json', Accept: 'application/json' },
              body: JSON.stringify({ block: block }),
            })
              .then(json)
              .then(function (checked) {
                if (!pending) return;
                if (!checked.ok) return fail(refused(checked.b));
                if (!put) return fail(unsent());
                settle();
                bar.remove();
                label.textContent = file.name + ' (sent) ';
                var kept = document.createElement('input');
                kept.type = 'hidden';
                kept.name = block;
                kept.value = res.b.uploadId;
                li.appendChild(kept);
              })
              .catch(function () { fail(unsent()); });
          };
          xhr.onerror = function () { fail(unsent()); };
          xhr.send(file);
        })
        .catch(function () { fail(unsent()); });
    };
    input.addEventListener('change', function () {
      var files = Array.prototype.slice.call(input.files || []);
      input.value = '';
      if (single && files.length) {
        // One file: the new one replaces what was there (a file sent before, or one kept from an earlier visit).
        Array.prototype.forEach.call(list.querySelectorAll('button'), function (b) { b.click(); });
        Array.prototype.forEach.call(upForm.querySelectorAll('input[type=checkbox][name="' + block + '"]'), function (c) { c.checked = false; });
        input.focus();
      }
      files.forEach(send);
    });
  });
}
`;

/**
 * Recall of a block above on the same page (issue 46): the page (its form marked data-recall) draws
 * each as an empty span[data-recall] naming the block (respondent.page.tsx's recalled()); this fills it in with
 * what the person has answered there, as the server recalls a stored answer: choices and yes/no by
 * their label (a list joined by ", "), text trimmed but for long text, numbers as numbers, files
 * not at all. As text (textContent): markup in an answer shows as typed.
 */
const RECALL_JS = `var recallForm = document.querySelector('form[data-recall]');
if (recallForm) {
  var spots = recallForm.querySelectorAll('span[data-recall]');
  var answerText = function (id) {
    var out = [];
    Array.prototype.forEach.call(recallForm.elements, function (el) {
      if (el.name !== id || el.type === 'file' || el.type === 'hidden') return;
      if (el.type === 'checkbox' || el.type === 'radio') {
        var label = el.checked && el.closest('label');
        if (label) out.push(label.textContent.trim());
        return;
      }
      if (el.tagName === 'SELECT') {
        if (el.value) out.push(el.options[el.selectedIndex].textContent.trim());
        return;
      }
      var v = el.tagName === 'TEXTAREA' ? el.value : el.value.trim();
      if (el.type === 'number' && v !== '' && isFinite(Number(v))) v = String(Number(v));
      if (v !== '') out.push(v);
    });
    return out.join(', ');
  };
  var fillIn = function () {
    Array.prototype.forEach.call(spots, function (spot) {
      var text = answerText(spot.getAttribute('data-recall'));
      if (spot.textContent !== text) spot.textContent = text;
    });
  };
  fillIn();
  recallForm.addEventListener('input', fillIn);
  recallForm.addEventListener('change', fillIn);
}
`;

/**
 * The page's own words in its language (issue 51): the form carries the few the script says, as
 * JSON in data-words; a page without them says them in English.
 */
const WORDS_JS = `var words = {};
try { words = JSON.parse(document.querySelector('form[data-words]').getAttribute('data-words')) || {}; } catch (e) { words = {}; }
var word = function (key, english) { return typeof words[key] === 'string' ? words[key] : english; };`;

/** The file served at SCRIPT_PATH. */
export const RESPONDENT_SCRIPT = `(function () {
'use strict';
${WORDS_JS}
${CONDITIONS_JS}
${PAGE_JS}
${FILES_JS}
${RECALL_JS}
})();
`;
