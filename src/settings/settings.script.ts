/**
 * The one script of the settings pages (served from /settings/assets/settings.js, so the CSP can
 * stay free of inline script): it shows the Copy button next to a one-time secret. The pages
 * work without it.
 */
export const COPY_SCRIPT = `document.querySelectorAll('button[data-copy]').forEach(function (button) {
  var target = document.getElementById(button.getAttribute('data-copy'));
  if (!target || !navigator.clipboard) return;
  button.hidden = false;
  button.addEventListener('click', function () {
    navigator.clipboard.writeText(target.textContent.trim()).then(function () { button.textContent = 'Copied'; });
  });
});
`;
