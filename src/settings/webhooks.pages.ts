import { esc } from '../common/html';
import { WEBHOOK_EVENTS } from '../webhooks/events';
import type { WebhooksService } from '../webhooks/webhooks.service';
import { Chrome, confirmPage, csrfField, field, FieldErrors, layout, select, summary, when } from './settings.pages';

/** The settings Webhooks pages: endpoints, their secrets (shown once), and each endpoint's delivery log. */

type Endpoint = Awaited<ReturnType<WebhooksService['list']>>['webhooks'][number];
type Delivery = Awaited<ReturnType<WebhooksService['deliveries']>>['deliveries'][number];

/** Deliveries per page of an endpoint's log. */
export const DELIVERIES_PER_PAGE = 20;
export const DELIVERY_STATUSES = ['pending', 'delivered', 'failed'] as const;

/** To the second: attempts of one delivery can be seconds apart. */
const whenExactly = (d: string | null) => (d ? `${d.replace('T', ' ').slice(0, 19)} UTC` : '—');

function state(w: Endpoint): string {
  if (!w.enabled)
    return `<strong>Disabled</strong>${w.disabledReason ? `<p class="desc">${esc(w.disabledReason)}</p>` : ''}`;
  return w.failingSince ? `Enabled<p class="desc">Failing since ${whenExactly(w.failingSince)}</p>` : 'Enabled';
}

/** The enable/disable button of an endpoint, posting to its page's action. */
function enableForm(chrome: Chrome, base: string, w: Endpoint): string {
  return `<form method="post" action="${esc(base)}/${esc(w.id)}/enabled" class="inline">${csrfField(chrome.csrf)}<input type="hidden" name="enabled" value="${w.enabled ? 'false' : 'true'}"><button type="submit" class="secondary">${w.enabled ? 'Disable' : 'Enable'}<span class="visually-hidden"> ${esc(w.url)}</span></button></form>`;
}

export function webhooksPage(
  chrome: Chrome,
  list: { deliveriesPaused: boolean; webhooks: Endpoint[] },
  form: { nonce: string; errors: FieldErrors; values: { url?: string; events?: string[]; description?: string } },
): string {
  const base = `/settings/w/${chrome.access!.workspace.slug}/webhooks`;
  const { errors, values } = form;
  const chosen = values.events ?? ['response.created'];
  const rows = list.webhooks
    .map(
      (
        w,
      ) => `<tr><td><a href="${esc(base)}/${esc(w.id)}"><code>${esc(w.url)}</code></a>${w.description ? `<p class="desc">${esc(w.description)}</p>` : ''}</td>
<td>${esc(w.events.join(', '))}</td><td>${state(w)}</td><td>${when(w.createdAt)}</td>
<td>${enableForm(chrome, base, w)}
<a href="${esc(base)}/${esc(w.id)}">Deliveries<span class="visually-hidden"> to ${esc(w.url)}</span></a>
<a href="${esc(base)}/${esc(w.id)}/rotate">Rotate secret<span class="visually-hidden"> of ${esc(w.url)}</span></a>
<a href="${esc(base)}/${esc(w.id)}/delete">Delete<span class="visually-hidden"> ${esc(w.url)}</span></a></td></tr>`,
    )
    .join('');
  return layout(
    'Webhooks',
    chrome,
    `<h1>Webhooks</h1>
<p class="desc">Formwork POSTs each event of this workspace to these URLs as JSON, signed per Standard Webhooks, and retries a failed delivery for about a day.</p>
${list.deliveriesPaused ? '<p class="notice" role="status">Deliveries are paused: this workspace is on Free. Events are kept and sent once it is on Pro again; creating or changing endpoints needs Pro.</p>' : ''}
${summary(errors)}
${list.webhooks.length ? `<table><thead><tr><th>URL</th><th>Events</th><th>State</th><th>Created</th><th><span class="visually-hidden">Actions</span></th></tr></thead><tbody>${rows}</tbody></table>` : '<p>No endpoints yet.</p>'}
<h2>New endpoint</h2>
<form method="post" action="${esc(base)}">
${csrfField(chrome.csrf)}<input type="hidden" name="nonce" value="${esc(form.nonce)}">
${field('url', 'URL', (a) => `<input type="url" ${a} value="${esc(values.url)}" maxlength="2048" required>`, errors, 'Your receiver, e.g. https://example.com/formwork-hook.')}
<fieldset class="field" id="events"${errors.events ? ' aria-describedby="events-error"' : ''}><legend>Events</legend>${errors.events ? `<p class="error" id="events-error">${esc(errors.events)}</p>` : ''}
${WEBHOOK_EVENTS.map((e) => `<label><input type="checkbox" name="events" value="${esc(e)}"${chosen.includes(e) ? ' checked' : ''}> ${esc(e)}</label>`).join('')}</fieldset>
${field('description', 'Description (optional)', (a) => `<input type="text" ${a} value="${esc(values.description)}" maxlength="500">`, errors, 'A note for people, e.g. "CRM sync".')}
<button type="submit">Create endpoint</button>
</form>`,
  );
}

/** The signing secret, once: after creation, or after a rotation (with the old secret's overlap). */
export function webhookSecretPage(
  chrome: Chrome,
  flash: { url?: unknown; secret?: unknown; previousSecretExpiresAt?: unknown } | undefined,
): string {
  const base = `/settings/w/${chrome.access!.workspace.slug}/webhooks`;
  const rotated = typeof flash?.previousSecretExpiresAt === 'string';
  const body = !flash
    ? `<h1>Secret no longer shown</h1><p>A signing secret is shown only once. If it was lost, rotate the endpoint's secret to get a new one.</p>`
    : `<h1>${rotated ? 'Secret rotated' : 'Endpoint created'}</h1>
<div class="notice" role="status"><p>Copy the signing secret of <code>${esc(flash.url)}</code> now: it is shown only this once. Your receiver verifies each delivery with it.</p>
<code class="secret" id="secret">${esc(flash.secret)}</code>
<button type="button" class="secondary" data-copy="secret" hidden>Copy</button>
${rotated ? `<p>The old secret keeps signing beside this one for 24 hours, until ${whenExactly(String(flash.previousSecretExpiresAt))}: switch your receiver to the new one before then.</p>` : ''}</div>`;
  return layout(
    rotated ? 'Secret rotated' : 'Endpoint created',
    { ...chrome, current: 'webhooks' },
    `${body}\n<p><a href="${esc(base)}">Back to webhooks</a></p>`,
  );
}

function attemptLine(a: Delivery['attempts'][number]): string {
  const outcome = a.statusCode === null ? 'no answer' : `answered ${a.statusCode}`;
  return `<li>${whenExactly(a.attemptedAt)}: ${esc(outcome)} in ${esc(a.durationMs)} ms${a.error ? ` <span class="error">(${esc(a.error)})</span>` : ''}${a.nextAttemptAt ? `; next retry ${whenExactly(a.nextAttemptAt)}` : ''}</li>`;
}

/** One endpoint: its settings, a test event, and its delivery log (newest first) with Redeliver. */
export function webhookPage(
  chrome: Chrome,
  w: Endpoint,
  log: { total: number; deliveries: Delivery[] },
  view: { status?: string; page: number; notice?: string },
): string {
  const base = `/settings/w/${chrome.access!.workspace.slug}/webhooks`;
  const here = `${base}/${w.id}`;
  const q = (page: number) =>
    `?${new URLSearchParams({ ...(view.status ? { status: view.status } : {}), page: String(page) })}`;
  const rows = log.deliveries
    .map(
      (
        d,
      ) => `<tr><td>${esc(d.type)}${d.payload && (d.payload as { test?: boolean }).test ? ' <span class="desc">(test)</span>' : ''}<p class="desc"><code>${esc(d.eventId)}</code></p></td>
<td>${whenExactly(d.createdAt)}</td>
<td>${esc(d.status)}${d.status === 'pending' && d.nextAttemptAt ? `<p class="desc">next attempt ${whenExactly(d.nextAttemptAt)}</p>` : ''}</td>
<td>${d.attempts.length ? `<ol>${d.attempts.map(attemptLine).join('')}</ol>` : 'none yet'}</td>
<td>${w.enabled ? `<form method="post" action="${esc(base)}/deliveries/${esc(d.id)}/redeliver" class="inline">${csrfField(chrome.csrf)}<button type="submit" class="secondary">Redeliver<span class="visually-hidden"> ${esc(d.eventId)}</span></button></form>` : ''}</td></tr>`,
    )
    .join('');
  return layout(
    'Webhook endpoint',
    { ...chrome, current: 'webhooks' },
    `<h1>Webhook endpoint</h1>
${view.notice ? `<p class="notice" role="status">${esc(view.notice)}</p>` : ''}
<table><tbody>
<tr><th>URL</th><td><code>${esc(w.url)}</code></td></tr>
${w.description ? `<tr><th>Description</th><td>${esc(w.description)}</td></tr>` : ''}
<tr><th>Events</th><td>${esc(w.events.join(', '))}</td></tr>
<tr><th>State</th><td>${state(w)}</td></tr>
<tr><th>Created</th><td>${when(w.createdAt)}</td></tr>
${w.previousSecretExpiresAt ? `<tr><th>Previous secret</th><td>still signs until ${whenExactly(w.previousSecretExpiresAt)}</td></tr>` : ''}
</tbody></table>
<div class="actions" style="align-items: center">${enableForm(chrome, base, w)} <a href="${esc(here)}/rotate">Rotate secret</a> <a href="${esc(here)}/delete">Delete</a> <a href="${esc(base)}" class="cancel">Back to webhooks</a></div>
<h2>Send a test event</h2>
<p class="desc">Sent to this endpoint whatever it subscribes to, built from the form of this workspace changed last, and marked "test": true.</p>
<form method="post" action="${esc(here)}/test" class="actions" style="align-items: flex-end">${csrfField(chrome.csrf)}
${field('event', 'Event', (a) => select(a, [...WEBHOOK_EVENTS], w.events[0]), {})}
<div class="field"><button type="submit">Send test event</button></div></form>
<h2>Deliveries</h2>
<form method="get" action="${esc(here)}" class="actions">
<div class="field"><label for="status">Status</label>${select('id="status" name="status"', ['', ...DELIVERY_STATUSES], view.status ?? '', { '': 'Any' })}</div>
<div class="field"><label>&nbsp;</label><button type="submit" class="secondary">Filter</button></div>
</form>
${rows ? `<table><thead><tr><th>Event</th><th>Created</th><th>Status</th><th>Attempts</th><th><span class="visually-hidden">Actions</span></th></tr></thead><tbody>${rows}</tbody></table>` : '<p>No deliveries in the last 30 days.</p>'}
<nav aria-label="Pages" class="actions">${view.page > 1 ? `<a href="${esc(q(view.page - 1))}">Newer</a>` : ''}${log.total > view.page * DELIVERIES_PER_PAGE ? `<a href="${esc(q(view.page + 1))}">Older</a>` : ''}</nav>`,
  );
}

/** Before deleting an endpoint, or rotating its secret (with a nonce: one rotation per confirmation). */
export function webhookConfirmPage(
  chrome: Chrome,
  action: 'delete' | 'rotate',
  w: Endpoint,
  hidden: { nonce: string },
) {
  const base = `/settings/w/${chrome.access!.workspace.slug}/webhooks`;
  return action === 'delete'
    ? confirmPage(
        chrome,
        `Delete the endpoint ${w.url}?`,
        'Nothing more is sent to it, and its delivery log goes with it. This cannot be undone.',
        `${base}/${w.id}/delete`,
        'Delete',
        base,
      )
    : confirmPage(
        chrome,
        `Rotate the secret of ${w.url}?`,
        'A new signing secret is made and shown once. The old one keeps signing beside it for 24 hours, so your receiver can switch in that time; rotating again ends that overlap.',
        `${base}/${w.id}/rotate`,
        'Rotate secret',
        `${base}/${w.id}`,
        hidden,
      );
}
