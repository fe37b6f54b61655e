/** The HTML of the authorization server's pages, and their security headers. */
import type { ReactNode } from 'react';
import { Document, renderPage } from '../common/html';
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

/** A page of the authorization server: the shared shell, one column. */
function OAuthPage(props: { title: string; children: ReactNode }) {
  return (
    <Document title={props.title}>
      <main>{props.children}</main>
    </Document>
  );
}

/** The problem of a sign-in or consent post, announced; its fields are marked invalid. */
const Problem = ({ error }: { error?: string }) =>
  error ? (
    <div className="summary" role="alert">
      <p>{error}</p>
    </div>
  ) : null;

/** The hidden CSRF field of an interaction's forms. */
const Csrf = ({ value }: { value: string }) => <input type="hidden" name="csrf" value={value} />;

/** The email or password field of the sign-in form. */
function SignInField(props: {
  id: 'email' | 'password';
  label: string;
  autoComplete: string;
  value?: string;
  invalid?: true;
}) {
  return (
    <div className="field">
      <label htmlFor={props.id}>{props.label}</label>
      <input
        type={props.id}
        id={props.id}
        name={props.id}
        defaultValue={props.value}
        autoComplete={props.autoComplete}
        required
        aria-invalid={props.invalid}
      />
    </div>
  );
}

/** The sign-in page of an authorization: email, password, and the interaction's CSRF token. */
export function signInPage(
  uid: string,
  csrf: string,
  clientName: string,
  opts: { email?: string; error?: string } = {},
): string {
  const invalid = opts.error ? true : undefined;
  return renderPage(
    <OAuthPage title="Sign in to Formwork">
      <h1>Sign in to Formwork</h1>
      <p className="desc">{clientName} wants to use your Formwork account.</p>
      <Problem error={opts.error} />
      <form method="post" action={`/oauth/interaction/${uid}/login`}>
        <Csrf value={csrf} />
        <SignInField id="email" label="Email" autoComplete="username" value={opts.email ?? ''} invalid={invalid} />
        <SignInField id="password" label="Password" autoComplete="current-password" invalid={invalid} />
        <button type="submit">Sign in</button>
      </form>
    </OAuthPage>,
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
  return renderPage(
    <OAuthPage title="Allow access">
      <h1>Allow {clientName} to use Formwork?</h1>
      <Problem error={error} />
      <p>It will be able to:</p>
      <ul>
        {scopes.map((s) => (
          <li key={s}>
            {isScope(s) ? SCOPE_WORDS[s] : s} <span className="desc">({s})</span>
          </li>
        ))}
      </ul>
      <p className="desc">
        It acts with your role in the workspace you choose, and never more. You can disconnect it at any time.
      </p>
      <p>
        Whether you allow or deny, you will be sent back to <strong>{redirectHost(redirectUri)}</strong>. If you do not
        know that address, deny.
      </p>
      <div className="decide">
        <form method="post" action={`/oauth/interaction/${uid}/confirm`}>
          <Csrf value={csrf} />
          <fieldset className="field" role="radiogroup">
            <legend>Workspace</legend>
            {workspaces.map((w, i) => (
              <label className="option" key={w.slug}>
                <input type="radio" name="workspace" value={w.slug} defaultChecked={i === 0} />
                <span>
                  {w.name}{' '}
                  <span className="muted">
                    ({w.slug}, you are {w.role})
                  </span>
                </span>
              </label>
            ))}
          </fieldset>
          <button type="submit">Allow</button>
        </form>
        <form method="post" action={`/oauth/interaction/${uid}/abort`}>
          <Csrf value={csrf} />
          <button type="submit" className="secondary">
            Deny
          </button>
        </form>
      </div>
    </OAuthPage>,
  );
}

export function errorPage(title: string, message: string): string {
  return renderPage(
    <OAuthPage title="Something went wrong">
      <h1>{title.replace(/_/g, ' ')}</h1>
      <p role="alert">{message}</p>
      <p className="desc">Go back to the app you came from and start again.</p>
    </OAuthPage>,
  );
}
