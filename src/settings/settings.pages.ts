import { esc, page } from '../common/html';
import { Role, SCOPES } from '../common/access/roles';
import { Access, AuditLogRow, MemberView } from './settings.service';

/** The settings pages: the shared layout of html.ts, escaped by default, one script file (the copy button). */

export const SCRIPT_PATH = '/settings/assets/settings.js';

/** Errors by field name (the field's id), shown next to the field and in the summary. */
export type FieldErrors = Record<string, string>;

export interface Chrome {
  email: string;
  csrf: string;
  access?: Access;
  current?: string;
}

export const when = (d: Date | string | null | undefined) =>
  d ? new Date(d).toISOString().replace('T', ' ').slice(0, 16) + ' UTC' : '—';

export const csrfField = (csrf: string) => `<input type="hidden" name="csrf" value="${esc(csrf)}">`;

export function summary(errors: FieldErrors): string {
  const entries = Object.entries(errors);
  if (!entries.length) return '';
  return `<div class="summary" role="alert" aria-labelledby="summary-title" tabindex="-1" autofocus id="errors">
<h2 id="summary-title">There ${entries.length === 1 ? 'is a problem' : `are ${entries.length} problems`}</h2>
<ul>${entries.map(([field, message]) => `<li><a href="#${esc(field)}">${esc(message)}</a></li>`).join('')}</ul></div>`;
}

/** A labelled field with its error beside it. */
export function field(
  id: string,
  label: string,
  control: (attrs: string) => string,
  errors: FieldErrors,
  hint?: string,
): string {
  const error = errors[id];
  const described = [hint ? `${id}-hint` : '', error ? `${id}-error` : ''].filter(Boolean).join(' ');
  const attrs = `id="${esc(id)}" name="${esc(id)}"${described ? ` aria-describedby="${described}"` : ''}${error ? ' aria-invalid="true"' : ''}`;
  return `<div class="field"><label for="${esc(id)}">${esc(label)}</label>${hint ? `<p class="desc" id="${esc(id)}-hint">${esc(hint)}</p>` : ''}${error ? `<p class="error" id="${esc(id)}-error">${esc(error)}</p>` : ''}${control(attrs)}</div>`;
}

export function select(attrs: string, options: string[], chosen?: string, labels: Record<string, string> = {}): string {
  return `<select ${attrs}>${options.map((o) => `<option value="${esc(o)}"${o === chosen ? ' selected' : ''}>${esc(labels[o] ?? o)}</option>`).join('')}</select>`;
}

/** Every signed-in page: the workspace's sections the role may see, the person, and Sign out. */
export function layout(title: string, chrome: Chrome, body: string): string {
  const a = chrome.access;
  const link = (key: string, href: string, label: string) =>
    `<a href="${esc(href)}"${chrome.current === key ? ' aria-current="page"' : ''}>${esc(label)}</a>`;
  const sections = a
    ? [
        a.role === 'admin' || a.role === 'owner'
          ? link('tokens', `/settings/w/${a.workspace.slug}/tokens`, 'API tokens')
          : '',
        a.role === 'admin' || a.role === 'owner'
          ? link('members', `/settings/w/${a.workspace.slug}/members`, 'Members')
          : '',
        link('apps', `/settings/w/${a.workspace.slug}/apps`, 'Connected apps'),
        a.role === 'admin' || a.role === 'owner'
          ? link('webhooks', `/settings/w/${a.workspace.slug}/webhooks`, 'Webhooks')
          : '',
        a.role === 'admin' || a.role === 'owner'
          ? link('audit', `/settings/w/${a.workspace.slug}/audit`, 'Audit log')
          : '',
        a.role === 'owner' ? link('plan', `/settings/w/${a.workspace.slug}/plan`, 'Plan and embedding') : '',
      ].filter(Boolean)
    : [];
  return page(
    `${title} · Formwork settings`,
    `<nav class="top" aria-label="Settings">
<a href="/settings"${chrome.current === 'home' ? ' aria-current="page"' : ''}>Workspaces</a>
${a ? `<strong>${esc(a.workspace.name)}</strong> ${sections.join(' ')}` : ''}
<span class="who">${esc(chrome.email)}</span> ${link('account', '/settings/account', 'Account')}
<form method="post" action="/settings/sign-out" class="inline">${csrfField(chrome.csrf)}<button type="submit" class="secondary">Sign out</button></form>
</nav>
${body}`,
    { script: SCRIPT_PATH, wide: true },
  );
}

export function signInPage(
  csrf: string,
  next: string,
  opts: { email?: string; errors?: FieldErrors; notice?: string } = {},
): string {
  const errors = opts.errors ?? {};
  return page(
    'Sign in to Formwork',
    `<h1>Sign in to Formwork</h1>
${opts.notice ? `<p class="notice" role="status">${esc(opts.notice)}</p>` : ''}
${summary(errors)}
<form method="post" action="/settings/sign-in">
${csrfField(csrf)}<input type="hidden" name="next" value="${esc(next)}">
${field('email', 'Email', (a) => `<input type="email" ${a} value="${esc(opts.email)}" autocomplete="username" required>`, errors)}
${field('password', 'Password', (a) => `<input type="password" ${a} autocomplete="current-password" required>`, errors)}
<button type="submit">Sign in</button>
</form>`,
  );
}

export function homePage(chrome: Chrome, workspaces: Array<{ slug: string; name: string; role: string }>): string {
  return layout(
    'Workspaces',
    chrome,
    `<h1>Your workspaces</h1>
${workspaces.length ? `<ul>${workspaces.map((w) => `<li><a href="/settings/w/${esc(w.slug)}">${esc(w.name)}</a> <span class="desc">(${esc(w.slug)}, you are ${esc(w.role)})</span></li>`).join('')}</ul>` : '<p>You are not a member of any workspace yet. Ask a workspace admin to add you.</p>'}`,
  );
}

const ROLE_WORDS: Record<Role, string> = {
  viewer: 'viewer (read)',
  editor: 'editor (read and write)',
  admin: 'admin (+ delete forms)',
  owner: 'owner (everything)',
};
const EXPIRY = ['30', '90', '365', 'never'];
const EXPIRY_WORDS: Record<string, string> = { '30': '30 days', '90': '90 days', '365': '1 year', never: 'Never' };

export function tokensPage(
  chrome: Chrome,
  tokens: Array<{
    id: string;
    name: string;
    token_prefix: string;
    role: Role;
    scopes: string[] | null;
    created_at: Date;
    last_used_at: Date | null;
    expires_at: Date | null;
    creator: string | null;
  }>,
  form: {
    nonce: string;
    roles: Role[];
    errors: FieldErrors;
    values: { name?: string; role?: string; scopes?: string[]; expiry?: string };
  },
): string {
  const slug = chrome.access!.workspace.slug;
  const { errors, values } = form;
  const scopes = values.scopes ?? ['forms:read'];
  const rows = tokens
    .map(
      (
        t,
      ) => `<tr><td>${esc(t.name)}</td><td><code>${esc(t.token_prefix)}…</code></td><td>${esc(t.role)}</td><td>${esc((t.scopes ?? SCOPES).join(', '))}</td><td>${esc(t.creator ?? 'CLI')}</td>
<td>${when(t.created_at)}</td><td>${when(t.last_used_at)}</td><td>${t.expires_at ? when(t.expires_at) : 'never'}</td>
<td><a href="/settings/w/${esc(slug)}/tokens/${esc(t.id)}/revoke">Revoke<span class="visually-hidden"> ${esc(t.name)}</span></a></td></tr>`,
    )
    .join('');
  return layout(
    'API tokens',
    chrome,
    `<h1>API tokens</h1>
<p class="desc">Scripts and automations call the tools API with these. A token acts with its role, never more than its creator's current role.</p>
${summary(errors)}
${tokens.length ? `<table><thead><tr><th>Name</th><th>Prefix</th><th>Role</th><th>Scopes</th><th>Creator</th><th>Created</th><th>Last used</th><th>Expires</th><th><span class="visually-hidden">Actions</span></th></tr></thead><tbody>${rows}</tbody></table>` : '<p>No tokens yet.</p>'}
<h2>New token</h2>
<form method="post" action="/settings/w/${esc(slug)}/tokens">
${csrfField(chrome.csrf)}<input type="hidden" name="nonce" value="${esc(form.nonce)}">
${field('name', 'Name', (a) => `<input type="text" ${a} value="${esc(values.name)}" maxlength="100" required>`, errors, 'What uses it, e.g. "Nightly export".')}
${field('role', 'Role', (a) => select(a, form.roles, values.role ?? 'viewer', ROLE_WORDS), errors)}
<fieldset class="field" id="scopes"${errors.scopes ? ' aria-describedby="scopes-error"' : ''}><legend>Scopes</legend>${errors.scopes ? `<p class="error" id="scopes-error">${esc(errors.scopes)}</p>` : ''}
${SCOPES.map((s) => `<label><input type="checkbox" name="scopes" value="${esc(s)}"${scopes.includes(s) ? ' checked' : ''}> ${esc(s)}</label>`).join('')}</fieldset>
${field('expiry', 'Expires after', (a) => select(a, EXPIRY, values.expiry ?? '90', EXPIRY_WORDS), errors)}
<button type="submit">Create token</button>
</form>`,
  );
}

export function tokenCreatedPage(chrome: Chrome, flash: { name?: unknown; token?: unknown } | undefined): string {
  const slug = chrome.access!.workspace.slug;
  const body = flash
    ? `<h1>Token created</h1>
<div class="notice" role="status"><p>Copy the secret of <strong>${esc(flash.name)}</strong> now: it is shown only this once, and Formwork keeps only a hash of it.</p>
<code class="secret" id="secret">${esc(flash.token)}</code>
<button type="button" class="secondary" data-copy="secret" hidden>Copy</button></div>`
    : `<h1>Secret no longer shown</h1><p>A token's secret is shown only once, right after it is created. If it was lost, revoke the token and create a new one.</p>`;
  return layout(
    'Token created',
    { ...chrome, current: 'tokens' },
    `${body}\n<p><a href="/settings/w/${esc(slug)}/tokens">Back to API tokens</a></p>`,
  );
}

/** A question and one button that posts (with `hidden`, more hidden fields: a nonce). */
export function confirmPage(
  chrome: Chrome,
  title: string,
  question: string,
  action: string,
  button: string,
  back: string,
  hidden: Record<string, string> = {},
): string {
  const fields = Object.entries(hidden)
    .map(([name, value]) => `<input type="hidden" name="${esc(name)}" value="${esc(value)}">`)
    .join('');
  return layout(
    title,
    chrome,
    `<h1>${esc(title)}</h1>
<p>${esc(question)}</p>
<div class="actions"><form method="post" action="${esc(action)}" class="inline">${csrfField(chrome.csrf)}${fields}<button type="submit" class="danger">${esc(button)}</button></form>
<a href="${esc(back)}" class="cancel">Cancel</a></div>`,
  );
}

export function membersPage(
  chrome: Chrome,
  members: MemberView[],
  form: { roles: Role[]; errors: FieldErrors; values: { email?: string; role?: string }; notice?: string },
): string {
  const a = chrome.access!;
  const base = `/settings/w/${a.workspace.slug}/members`;
  const rows = members
    .map((m) => {
      const mine = m.role !== 'owner' || a.role === 'owner';
      return `<tr><td>${esc(m.email)}${m.userId === chrome.access!.session.userId ? ' <span class="desc">(you)</span>' : ''}</td><td>${esc(m.role)}</td><td>${m.passwordElsewhere ? "through another workspace's link: not usable here" : m.hasPassword ? 'yes' : 'not yet'}</td><td>${when(m.joinedAt)}</td>
<td>${
        mine
          ? `<form method="post" action="${esc(base)}/${esc(m.userId)}/role" class="inline">${csrfField(chrome.csrf)}<label for="role-${esc(m.userId)}" class="visually-hidden">Role of ${esc(m.email)}</label>${select(`id="role-${esc(m.userId)}" name="role"`, form.roles, m.role)} <button type="submit" class="secondary">Change role</button></form>
${m.linkAllowed ? `<form method="post" action="${esc(base)}/${esc(m.userId)}/link" class="inline">${csrfField(chrome.csrf)}<button type="submit" class="secondary">New password link</button></form>` : ''}
<a href="${esc(base)}/${esc(m.userId)}/remove">Remove</a>`
          : '<span class="desc">only an owner can change an owner</span>'
      }</td></tr>`;
    })
    .join('');
  return layout(
    'Members',
    chrome,
    `<h1>Members</h1>
${form.notice ? `<p class="notice" role="status">${esc(form.notice)}</p>` : ''}
${summary(form.errors)}
<table><thead><tr><th>Email</th><th>Role</th><th>Password set</th><th>Joined</th><th><span class="visually-hidden">Actions</span></th></tr></thead><tbody>${rows}</tbody></table>
<h2>Add a member</h2>
<form method="post" action="${esc(base)}">
${csrfField(chrome.csrf)}
${field('email', 'Email', (x) => `<input type="email" ${x} value="${esc(form.values.email)}" maxlength="320" required>`, form.errors)}
${field('role', 'Role', (x) => select(x, form.roles, form.values.role ?? 'editor', ROLE_WORDS), form.errors)}
<button type="submit">Add member</button>
</form>`,
  );
}

export function linkPage(chrome: Chrome, flash: { email?: unknown; url?: unknown } | undefined): string {
  const base = `/settings/w/${chrome.access!.workspace.slug}/members`;
  const body = flash
    ? `<h1>Set-password link</h1>
<div class="notice" role="status"><p>Formwork sends no email: give this link to <strong>${esc(flash.email)}</strong>. It works once, within 24 hours, and is shown only now.</p>
<code class="secret" id="secret">${esc(flash.url)}</code>
<button type="button" class="secondary" data-copy="secret" hidden>Copy</button></div>`
    : `<h1>Link no longer shown</h1><p>A set-password link is shown only once. Make a new one from the members list if it was lost.</p>`;
  return layout(
    'Set-password link',
    { ...chrome, current: 'members' },
    `${body}\n<p><a href="${esc(base)}">Back to members</a></p>`,
  );
}

export function appsPage(
  chrome: Chrome,
  apps: Array<{
    grant_id: string;
    client_name: string | null;
    client_id: string;
    scopes: string[];
    created_at: Date;
    email: string;
    last_used: Date | null;
  }>,
): string {
  const a = chrome.access!;
  const rows = apps
    .map(
      (
        g,
      ) => `<tr><td>${esc(g.client_name ?? g.client_id)}</td><td>${esc(g.email)}</td><td>${esc(a.workspace.name)}</td><td>${esc(g.scopes.join(', '))}</td><td>${when(g.created_at)}</td><td>${when(g.last_used)}</td>
<td><form method="post" action="/settings/w/${esc(a.workspace.slug)}/apps/${encodeURIComponent(g.grant_id)}/disconnect" class="inline">${csrfField(chrome.csrf)}<button type="submit" class="danger">Disconnect<span class="visually-hidden"> ${esc(g.client_name ?? g.client_id)}</span></button></form></td></tr>`,
    )
    .join('');
  return layout(
    'Connected apps',
    chrome,
    `<h1>Connected apps</h1>
<p class="desc">${a.role === 'owner' || a.role === 'admin' ? 'Every app connected to this workspace, by anyone.' : 'The apps you connected to this workspace.'} Disconnecting stops the app's tokens within 5 seconds.</p>
${apps.length ? `<table><thead><tr><th>App</th><th>Person</th><th>Workspace</th><th>Scopes</th><th>Connected</th><th>Last token</th><th><span class="visually-hidden">Actions</span></th></tr></thead><tbody>${rows}</tbody></table>` : '<p>No connected apps.</p>'}`,
  );
}

export function actorLabel(r: Pick<AuditLogRow, 'actor_kind' | 'email' | 'token_name' | 'app'>): string {
  if (r.actor_kind === 'api_token') return `token ${r.token_name ?? '(deleted)'}${r.email ? ` of ${r.email}` : ''}`;
  if (r.actor_kind === 'oauth') return `app ${r.app ?? '(unknown)'}${r.email ? ` for ${r.email}` : ''}`;
  return r.email ?? 'a person';
}

export function auditPage(
  chrome: Chrome,
  log: { rows: AuditLogRow[]; more: boolean; actors: AuditLogRow[]; actions: string[] },
  filter: { actor?: string; action?: string; page: number },
): string {
  const slug = chrome.access!.workspace.slug;
  const q = (page: number) =>
    `?${new URLSearchParams({ ...(filter.actor ? { actor: filter.actor } : {}), ...(filter.action ? { action: filter.action } : {}), page: String(page) })}`;
  const rows = log.rows
    .map(
      (r) =>
        `<tr><td>${when(r.at)}</td><td>${esc(actorLabel(r))}</td><td>${esc(r.action)}</td><td><code>${esc(r.subject_id)}</code></td><td><code>${esc(r.request_id ?? '—')}</code></td></tr>`,
    )
    .join('');
  return layout(
    'Audit log',
    chrome,
    `<h1>Audit log</h1>
<form method="get" action="/settings/w/${esc(slug)}/audit" class="actions">
<div class="field"><label for="actor">Who</label><select id="actor" name="actor"><option value="">Anyone</option>${log.actors.map((a) => `<option value="${esc(a.actor_id)}"${a.actor_id === filter.actor ? ' selected' : ''}>${esc(actorLabel(a))}</option>`).join('')}</select></div>
<div class="field"><label for="action">Action</label><select id="action" name="action"><option value="">Any</option>${log.actions.map((a) => `<option${a === filter.action ? ' selected' : ''}>${esc(a)}</option>`).join('')}</select></div>
<div class="field"><label>&nbsp;</label><button type="submit" class="secondary">Filter</button></div>
</form>
${rows ? `<table><thead><tr><th>When</th><th>Who</th><th>What</th><th>Object</th><th>Request id</th></tr></thead><tbody>${rows}</tbody></table>` : '<p>No events.</p>'}
<nav aria-label="Pages" class="actions">${filter.page > 1 ? `<a href="${esc(q(filter.page - 1))}">Newer</a>` : ''}${log.more ? `<a href="${esc(q(filter.page + 1))}">Older</a>` : ''}</nav>`,
  );
}

export function planPage(chrome: Chrome, form: { errors: FieldErrors; origins?: string; notice?: string }): string {
  const a = chrome.access!;
  return layout(
    'Plan and embedding',
    chrome,
    `<h1>Plan and embedding</h1>
${form.notice ? `<p class="notice" role="status">${esc(form.notice)}</p>` : ''}
${summary(form.errors)}
<h2>Plan</h2>
<p>This workspace is on <strong>${a.workspace.plan === 'pro' ? 'Pro' : 'Free'}</strong>. ${a.workspace.plan === 'pro' ? 'Write tools are available.' : 'Write tools need Pro.'} There is no billing: switching is recorded in the audit log.</p>
<form method="post" action="/settings/w/${esc(a.workspace.slug)}/plan">${csrfField(chrome.csrf)}<input type="hidden" name="plan" value="${a.workspace.plan === 'pro' ? 'free' : 'pro'}">
<button type="submit">Switch to ${a.workspace.plan === 'pro' ? 'Free' : 'Pro'}</button></form>
<h2>Embedding</h2>
<form method="post" action="/settings/w/${esc(a.workspace.slug)}/embed-origins">${csrfField(chrome.csrf)}
${field('origins', 'Sites allowed to embed the forms', (x) => `<textarea ${x} rows="4">${esc(form.origins ?? a.workspace.embedOrigins.join('\n'))}</textarea>`, form.errors, 'One origin per line, e.g. https://www.example.com. Empty: no site may frame the forms.')}
<button type="submit">Save origins</button></form>`,
  );
}

export function accountPage(chrome: Chrome, form: { errors: FieldErrors; notice?: string }): string {
  return layout(
    'Account',
    { ...chrome, current: 'account' },
    `<h1>Account</h1>
<p>Signed in as <strong>${esc(chrome.email)}</strong>.</p>
${form.notice ? `<p class="notice" role="status">${esc(form.notice)}</p>` : ''}
${summary(form.errors)}
<h2>Change password</h2>
<form method="post" action="/settings/account/password">${csrfField(chrome.csrf)}
${field('current', 'Current password', (x) => `<input type="password" ${x} autocomplete="current-password" required>`, form.errors)}
${field('password', 'New password', (x) => `<input type="password" ${x} autocomplete="new-password" required>`, form.errors, 'At least 10 characters.')}
<button type="submit">Change password</button></form>`,
  );
}

export function setPasswordPage(token: string, email: string, errors: FieldErrors = {}): string {
  return page(
    'Set your password',
    `<h1>Set your password</h1>
<p>For <strong>${esc(email)}</strong>. This link works once.</p>
${summary(errors)}
<form method="post" action="/settings/set-password/${esc(token)}">
${field('password', 'Password', (x) => `<input type="password" ${x} autocomplete="new-password" required>`, errors, 'At least 10 characters.')}
<button type="submit">Set password</button></form>`,
  );
}

export function messagePage(title: string, message: string, chrome?: Chrome): string {
  const body = `<h1>${esc(title)}</h1>\n<p role="alert">${esc(message)}</p>\n<p><a href="/settings">Back to settings</a></p>`;
  return chrome ? layout(title, chrome, body) : page(title, body);
}
