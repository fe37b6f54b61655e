/** The HTML of the authorization server's pages, and their security headers. */
import { esc, page } from '../common/html';
import { isScope } from '../common/access/roles';
import { SCOPE_WORDS } from './oauth-config';

/**
 * The Content-Security-Policy of every page of the authorization server, ours and oidc-provider's:
 * inline styles only, images only the service's own (its favicon), no script (oidc-provider adds the hash of its one inline script, the
 * form_post auto-submit, to script-src), forms posting here or to the app's http(s) redirect URI.
 */
export const PAGE_CSP =
  "default-src 'none'; script-src 'none'; style-src 'unsafe-inline'; img-src 'self'; form-action 'self' http: https:; base-uri 'none'; frame-ancestors 'none'";

export const PAGE_HEADERS = {
  'Content-Security-Policy': PAGE_CSP,
  'X-Content-Type-Options': 'nosniff',
  'Referrer-Policy': 'no-referrer',
  'Cache-Control': 'no-store',
};

/**
 * The headers of a sign-in or consent page of a client whose redirect URI may use an app's own
 * scheme (cursor://, vscode://): browsers apply form-action to the redirects that follow a form
 * post too, so the final redirect to such a URI is allowed by adding exactly that scheme.
 */
export function pageHeadersFor(redirectUri: string): typeof PAGE_HEADERS {
  const scheme = /^([a-z][a-z0-9+.-]*):/i.exec(redirectUri)?.[1].toLowerCase();
  if (!scheme || scheme === 'http' || scheme === 'https' || scheme === 'javascript' || scheme === 'data')
    return PAGE_HEADERS;
  return {
    ...PAGE_HEADERS,
    'Content-Security-Policy': PAGE_CSP.replace(
      "form-action 'self' http: https:",
      `form-action 'self' http: https: ${scheme}:`,
    ),
  };
}

/** Where the app sends the person back to, as the consent page shows it: the host, or the whole URI when it has none (an app's own scheme). */
export function redirectHost(redirectUri: string): string {
  try {
    const url = new URL(redirectUri);
    return url.host || `${url.protocol}${url.pathname}`;
  } catch {
    return redirectUri;
  }
}

/** The sign-in page of an authorization: email, password, and the interaction's CSRF token. */
export function signInPage(
  uid: string,
  csrf: string,
  clientName: string,
  opts: { email?: string; error?: string } = {},
): string {
  return page(
    'Sign in to Formwork',
    `<h1>Sign in to Formwork</h1>
<p class="desc">${esc(clientName)} wants to use your Formwork account.</p>
${opts.error ? `<div class="summary" role="alert"><p>${esc(opts.error)}</p></div>` : ''}
<form method="post" action="/oauth/interaction/${esc(uid)}/login">
<input type="hidden" name="csrf" value="${esc(csrf)}">
<div class="field"><label for="email">Email</label><input type="email" id="email" name="email" value="${esc(opts.email)}" autocomplete="username" required${opts.error ? ' aria-invalid="true"' : ''}></div>
<div class="field"><label for="password">Password</label><input type="password" id="password" name="password" autocomplete="current-password" required${opts.error ? ' aria-invalid="true"' : ''}></div>
<button type="submit">Sign in</button>
</form>`,
  );
}

/** The consent page: who asks, for what (in plain words), in which workspace. */
export function consentPage(
  uid: string,
  csrf: string,
  clientName: string,
  scopes: string[],
  workspaces: Array<{ slug: string; name: string; role: string }>,
  redirectUri: string,
  error?: string,
): string {
  const words = scopes
    .map((s) => `<li>${esc(isScope(s) ? SCOPE_WORDS[s] : s)} <span class="desc">(${esc(s)})</span></li>`)
    .join('');
  const choices = workspaces
    .map(
      (w, i) =>
        `<label class="option"><input type="radio" name="workspace" value="${esc(w.slug)}"${i === 0 ? ' checked' : ''}><span>${esc(w.name)} <span class="muted">(${esc(w.slug)}, you are ${esc(w.role)})</span></span></label>`,
    )
    .join('\n');
  return page(
    'Allow access',
    `<h1>Allow ${esc(clientName)} to use Formwork?</h1>
${error ? `<div class="summary" role="alert"><p>${esc(error)}</p></div>` : ''}
<p>It will be able to:</p>
<ul>${words}</ul>
<p class="desc">It acts with your role in the workspace you choose, and never more. You can disconnect it at any time.</p>
<p>Whether you allow or deny, you will be sent back to <strong>${esc(redirectHost(redirectUri))}</strong>. If you do not know that address, deny.</p>
<div class="decide">
<form method="post" action="/oauth/interaction/${esc(uid)}/confirm">
<input type="hidden" name="csrf" value="${esc(csrf)}">
<fieldset class="field" role="radiogroup"><legend>Workspace</legend>${choices}</fieldset>
<button type="submit">Allow</button>
</form>
<form method="post" action="/oauth/interaction/${esc(uid)}/abort">
<input type="hidden" name="csrf" value="${esc(csrf)}">
<button type="submit" class="secondary">Deny</button>
</form>
</div>`,
  );
}

export function errorPage(title: string, message: string): string {
  return page(
    'Something went wrong',
    `<h1>${esc(title.replace(/_/g, ' '))}</h1>\n<p role="alert">${esc(message)}</p>\n<p class="desc">Go back to the app you came from and start again.</p>`,
  );
}
