/**
 * The results pages' script (served from /settings/assets/results.js, a file of this origin, so
 * the CSP stays free of inline script): it shows the Copy button beside a read-only link or
 * snippet and copies the field's value. The pages work without it (the field can be selected).
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
`;
