/**
 * The results pages' script (served from /settings/assets/results.js, a file of this origin, so
 * the CSP stays free of inline script): it shows the Copy button beside a read-only link or
 * snippet and copies the field's value; on the filter (results.pages.tsx, FilterForm) it makes the
 * Condition offer what the chosen Question takes and the Value a select of its choices (read from
 * the option's data-filter). The pages work without it (the field can be selected; the server
 * refuses a condition the question does not take, and shows the question's conditions).
 */
export const RESULTS_SCRIPT = `document.querySelectorAll('button[data-copy-field]').forEach(function (button) {
  var field = document.getElementById(button.getAttribute('data-copy-field'));
  if (!field || !navigator.clipboard) return;
  button.hidden = false;
  button.addEventListener('click', function () {
    navigator.clipboard.writeText(field.value).then(function () {
      button.firstChild.textContent = 'Copied ';
    });
  });
});
(function () {
  var question = document.getElementById('block');
  if (!question || !question.form || !question.form.hasAttribute('data-filter-form')) return;
  function options(select, list, chosen) {
    select.textContent = '';
    list.forEach(function (o) {
      var option = document.createElement('option');
      option.value = o[0];
      option.textContent = o[1];
      select.appendChild(option);
    });
    if (list.some(function (o) { return o[0] === chosen; })) select.value = chosen;
  }
  question.addEventListener('change', function () {
    var spec = JSON.parse(question.options[question.selectedIndex].getAttribute('data-filter'));
    var op = document.getElementById('op');
    options(op, spec.ops, op.value);
    var value = document.getElementById('value');
    var next;
    if (spec.choices) {
      next = document.createElement('select');
      options(next, spec.choices, value.value);
    } else if (value.tagName === 'INPUT' && value.type === spec.input) {
      return;
    } else {
      next = document.createElement('input');
      next.type = spec.input;
      next.maxLength = 500;
    }
    ['id', 'name', 'aria-describedby', 'aria-invalid'].forEach(function (a) {
      if (value.hasAttribute(a)) next.setAttribute(a, value.getAttribute(a));
    });
    value.parentNode.replaceChild(next, value);
  });
})();
`;
