import { WEBHOOK_EVENTS } from '../webhooks/events';
import type { WebhooksService } from '../webhooks/webhooks.service';
import { Ctx } from './settings-http';
import {
  Checkboxes,
  Field,
  FieldErrors,
  Hidden,
  Layout,
  OnceShownText,
  Pager,
  PostForm,
  Select,
  StatusFilter,
  Summary,
  Table,
  when,
} from './ui';

/** The settings Webhooks pages: endpoints, their secrets (shown once), and each endpoint's delivery log. */

export type Endpoint = Awaited<ReturnType<WebhooksService['list']>>['webhooks'][number];
type Delivery = Awaited<ReturnType<WebhooksService['deliveries']>>['deliveries'][number];

/** Deliveries per page of an endpoint's log. */
export const DELIVERIES_PER_PAGE = 20;
export const DELIVERY_STATUSES = ['pending', 'delivered', 'failed'] as const;

/** To the second: attempts of one delivery can be seconds apart. */
const whenExactly = (d: string | null) => (d ? `${d.replace('T', ' ').slice(0, 19)} UTC` : '—');

function State({ w }: { w: Endpoint }) {
  if (!w.enabled)
    return (
      <>
        <strong>Disabled</strong>
        {w.disabledReason ? <p className="desc">{w.disabledReason}</p> : null}
      </>
    );
  return w.failingSince ? (
    <>
      Enabled<p className="desc">Failing since {whenExactly(w.failingSince)}</p>
    </>
  ) : (
    <>Enabled</>
  );
}

/** The enable/disable button of an endpoint. */
function EnableForm({ ctx, w }: { ctx: Ctx; w: Endpoint }) {
  return (
    <PostForm
      action={`${ctx.base}/webhooks/${w.id}/enabled`}
      csrf={ctx.chrome.csrf}
      className="inline"
      hidden={{ enabled: w.enabled ? 'false' : 'true' }}
    >
      <button type="submit" className="secondary">
        {w.enabled ? 'Disable' : 'Enable'}
        <Hidden> {w.url}</Hidden>
      </button>
    </PostForm>
  );
}

type NewValues = { url?: string; events?: string[]; description?: string };

export function WebhooksPage(props: {
  ctx: Ctx;
  list: { deliveriesPaused: boolean; webhooks: Endpoint[] };
  nonce: string;
  errors: FieldErrors;
  values: NewValues;
}) {
  const { ctx, errors, values } = props;
  const base = `${ctx.base}/webhooks`;
  return (
    <Layout title="Webhooks" chrome={{ ...ctx.chrome, current: 'webhooks' }}>
      <h1>Webhooks</h1>
      <p className="desc">
        Formwork POSTs each event of this workspace to these URLs as JSON, signed per Standard Webhooks, and retries a
        failed delivery for about a day.
      </p>
      {props.list.deliveriesPaused ? (
        <p className="notice" role="status">
          Deliveries are paused: this workspace is on Free. Events are kept and sent once it is on Pro again; creating
          or changing endpoints needs Pro.
        </p>
      ) : null}
      <Summary errors={errors} />
      {props.list.webhooks.length ? (
        <Table label="Webhook endpoints" head={['URL', 'Events', 'State', 'Created', '']}>
          {props.list.webhooks.map((w) => (
            <tr key={w.id}>
              <td>
                <a href={`${base}/${w.id}`}>
                  <code>{w.url}</code>
                </a>
                {w.description ? <p className="desc">{w.description}</p> : null}
              </td>
              <td>{w.events.join(', ')}</td>
              <td>
                <State w={w} />
              </td>
              <td>{when(w.createdAt)}</td>
              <td>
                <div className="row-actions">
                  <EnableForm ctx={ctx} w={w} />
                  <a href={`${base}/${w.id}`}>
                    Deliveries<Hidden> to {w.url}</Hidden>
                  </a>
                  <a href={`${base}/${w.id}/rotate`}>
                    Rotate secret<Hidden> of {w.url}</Hidden>
                  </a>
                  <a href={`${base}/${w.id}/delete`}>
                    Delete<Hidden> {w.url}</Hidden>
                  </a>
                </div>
              </td>
            </tr>
          ))}
        </Table>
      ) : (
        <p>No endpoints yet.</p>
      )}
      <h2>New endpoint</h2>
      <PostForm action={base} csrf={ctx.chrome.csrf} hidden={{ nonce: props.nonce }}>
        <Field
          id="url"
          label="URL"
          errors={errors}
          hint="Your receiver, e.g. https://example.com/formwork-hook."
          control={(a) => <input type="url" {...a} defaultValue={values.url ?? ''} maxLength={2048} required />}
        />
        <Checkboxes
          id="events"
          legend="Events"
          options={WEBHOOK_EVENTS}
          chosen={values.events ?? ['response.created']}
          errors={errors}
        />
        <Field
          id="description"
          label="Description (optional)"
          errors={errors}
          hint='A note for people, e.g. "CRM sync".'
          control={(a) => <input type="text" {...a} defaultValue={values.description ?? ''} maxLength={500} />}
        />
        <button type="submit">Create endpoint</button>
      </PostForm>
    </Layout>
  );
}

/** The signing secret, once: after creation, or after a rotation (with the old secret's overlap). */
export const WEBHOOK_SECRET: OnceShownText = {
  section: 'webhooks',
  title: (f) => (f.previousSecretExpiresAt ? 'Secret rotated' : 'Endpoint created'),
  intro: (f) => (
    <>
      Copy the signing secret of <code>{String(f.url)}</code> now: it is shown only this once. Your receiver verifies
      each delivery with it.
    </>
  ),
  secret: 'secret',
  more: (f) =>
    typeof f.previousSecretExpiresAt === 'string' ? (
      <p>
        The old secret keeps signing beside this one for 24 hours, until {whenExactly(f.previousSecretExpiresAt)}:
        switch your receiver to the new one before then.
      </p>
    ) : null,
  gone: [
    'Secret no longer shown',
    "A signing secret is shown only once. If it was lost, rotate the endpoint's secret to get a new one.",
  ],
  back: 'Back to webhooks',
};

function Attempt({ a }: { a: Delivery['attempts'][number] }) {
  const outcome = a.statusCode === null ? 'no answer' : `answered ${a.statusCode}`;
  return (
    <li>
      {`${whenExactly(a.attemptedAt)}: ${outcome} in ${a.durationMs} ms`}
      {a.error ? (
        <>
          {' '}
          <span className="error">({a.error})</span>
        </>
      ) : null}
      {a.nextAttemptAt ? `; next retry ${whenExactly(a.nextAttemptAt)}` : null}
    </li>
  );
}

function DeliveryRow({ ctx, w, d }: { ctx: Ctx; w: Endpoint; d: Delivery }) {
  return (
    <tr>
      <td>
        {d.type}
        {d.payload && (d.payload as { test?: boolean }).test ? <span className="desc"> (test)</span> : null}
        <p className="desc">
          <code>{d.eventId}</code>
        </p>
      </td>
      <td>{whenExactly(d.createdAt)}</td>
      <td>
        {d.status}
        {d.status === 'pending' && d.nextAttemptAt ? (
          <p className="desc">next attempt {whenExactly(d.nextAttemptAt)}</p>
        ) : null}
      </td>
      <td>
        {d.attempts.length ? (
          <ol>
            {d.attempts.map((a, i) => (
              <Attempt key={i} a={a} />
            ))}
          </ol>
        ) : (
          'none yet'
        )}
      </td>
      <td>
        {w.enabled ? (
          <PostForm
            action={`${ctx.base}/webhooks/deliveries/${d.id}/redeliver`}
            csrf={ctx.chrome.csrf}
            className="inline"
          >
            <button type="submit" className="secondary">
              Redeliver<Hidden> {d.eventId}</Hidden>
            </button>
          </PostForm>
        ) : null}
      </td>
    </tr>
  );
}

/** One endpoint: its settings, a test event, and its delivery log (newest first) with Redeliver. */
export function WebhookPage(props: {
  ctx: Ctx;
  w: Endpoint;
  log: { total: number; deliveries: Delivery[] };
  view: { status?: string; page: number };
}) {
  const { ctx, w, log, view } = props;
  const base = `${ctx.base}/webhooks`;
  const here = `${base}/${w.id}`;
  return (
    <Layout title="Webhook endpoint" chrome={{ ...ctx.chrome, current: 'webhooks' }}>
      <h1>Webhook endpoint</h1>
      <table>
        <tbody>
          <tr>
            <th>URL</th>
            <td>
              <code>{w.url}</code>
            </td>
          </tr>
          {w.description ? (
            <tr>
              <th>Description</th>
              <td>{w.description}</td>
            </tr>
          ) : null}
          <tr>
            <th>Events</th>
            <td>{w.events.join(', ')}</td>
          </tr>
          <tr>
            <th>State</th>
            <td>
              <State w={w} />
            </td>
          </tr>
          <tr>
            <th>Created</th>
            <td>{when(w.createdAt)}</td>
          </tr>
          {w.previousSecretExpiresAt ? (
            <tr>
              <th>Previous secret</th>
              <td>still signs until {whenExactly(w.previousSecretExpiresAt)}</td>
            </tr>
          ) : null}
        </tbody>
      </table>
      <div className="actions" style={{ alignItems: 'center', flexWrap: 'wrap' }}>
        <EnableForm ctx={ctx} w={w} /> <a href={`${here}/rotate`}>Rotate secret</a>{' '}
        <a href={`${here}/delete`}>Delete</a>{' '}
        <a href={base} className="cancel">
          Back to webhooks
        </a>
      </div>
      <h2>Send a test event</h2>
      <p className="desc">
        Sent to this endpoint whatever it subscribes to, built from the form of this workspace changed last, and marked
        &quot;test&quot;: true.
      </p>
      <PostForm action={`${here}/test`} csrf={ctx.chrome.csrf} className="actions">
        <Field
          id="event"
          label="Event"
          errors={{}}
          control={(a) => <Select {...a} options={WEBHOOK_EVENTS} chosen={w.events[0]} />}
        />
        <div className="field">
          <span className="label-space" aria-hidden="true">
            &nbsp;
          </span>
          <button type="submit">Send test event</button>
        </div>
      </PostForm>
      <h2>Deliveries</h2>
      <StatusFilter action={here} statuses={DELIVERY_STATUSES} chosen={view.status} />
      {log.deliveries.length ? (
        <Table label="Deliveries" head={['Event', 'Created', 'Status', 'Attempts', '']}>
          {log.deliveries.map((d) => (
            <DeliveryRow key={d.id} ctx={ctx} w={w} d={d} />
          ))}
        </Table>
      ) : (
        <p>No deliveries in the last 30 days.</p>
      )}
      <Pager
        query={view.status ? { status: view.status } : {}}
        page={view.page}
        more={log.total > view.page * DELIVERIES_PER_PAGE}
      />
    </Layout>
  );
}
