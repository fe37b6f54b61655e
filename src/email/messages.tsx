import type { ReactNode } from 'react';
import { renderToStaticMarkup } from 'react-dom/server';

/**
 * The messages, rendered on the server from React components (escaped by construction) with a
 * plain-text part beside each. Subjects and names never carry a line break into a header
 * (oneLine), and nodemailer encodes what is not ASCII.
 */
export interface RenderedMessage {
  subject: string;
  html: string;
  text: string;
}

export interface AnswerLine {
  question: string;
  answer: string;
}

/** One line of at most `max` characters: no CR, LF or other control character can reach a header. */
export function oneLine(s: string, max = 150): string {
  // eslint-disable-next-line no-control-regex
  const flat = s.replace(/[\u0000-\u001f\u007f\u2028\u2029]+/g, ' ').trim();
  return flat.length > max ? `${flat.slice(0, max - 1)}…` : flat;
}

function Page(props: { title: string; children: ReactNode; unsubscribe?: string }) {
  return (
    <html>
      <body style={{ fontFamily: 'system-ui, sans-serif', color: '#1d2330', maxWidth: '40rem' }}>
        <h1 style={{ fontSize: '1.2rem' }}>{props.title}</h1>
        {props.children}
        {props.unsubscribe ? (
          <p style={{ color: '#5b6475', fontSize: '.85rem' }}>
            You get this because you asked for it in Formwork&apos;s settings.{' '}
            <a href={props.unsubscribe}>Unsubscribe</a>
          </p>
        ) : null}
      </body>
    </html>
  );
}

/** Questions and answers, one row each (escaped: text only). */
function Answers(props: { answers: AnswerLine[] }) {
  return (
    <table cellPadding={6} style={{ borderCollapse: 'collapse' }}>
      <tbody>
        {props.answers.map((a, i) => (
          <tr key={i} style={{ borderTop: '1px solid #dde1e8', verticalAlign: 'top' }}>
            <th style={{ textAlign: 'left' }}>{a.question}</th>
            <td style={{ whiteSpace: 'pre-wrap' }}>{a.answer}</td>
          </tr>
        ))}
      </tbody>
    </table>
  );
}

function html(node: ReactNode): string {
  return `<!doctype html>${renderToStaticMarkup(node)}`;
}

/** A new response: its answers (escaped), a link to it on the results page (sign-in needed). */
export function notificationMessage(m: {
  formTitle: string;
  submittedAt: Date;
  answers: AnswerLine[];
  responseUrl: string;
  unsubscribeUrl: string;
}): RenderedMessage {
  const title = `New response to ${oneLine(m.formTitle, 100)}`;
  const when = m.submittedAt.toISOString().replace('T', ' ').slice(0, 16) + ' UTC';
  return {
    subject: title,
    html: html(
      <Page title={title} unsubscribe={m.unsubscribeUrl}>
        <p>Submitted {when}.</p>
        <Answers answers={m.answers} />
        <p>
          <a href={m.responseUrl}>See the response in Formwork</a>
        </p>
      </Page>,
    ),
    text: [
      title,
      `Submitted ${when}.`,
      '',
      ...m.answers.map((a) => `${a.question}\n  ${a.answer.replace(/\n/g, '\n  ')}`),
      '',
      `See the response: ${m.responseUrl}`,
      '',
      `Unsubscribe: ${m.unsubscribeUrl}`,
    ].join('\n'),
  };
}

/** An hourly or daily digest: how many responses came in the window, the latest ones linked. */
export function digestMessage(m: {
  formTitle: string;
  count: number;
  period: 'hourly' | 'daily';
  latest: Array<{ submittedAt: Date; url: string }>;
  resultsUrl: string;
  unsubscribeUrl: string;
}): RenderedMessage {
  const n = `${m.count} new response${m.count === 1 ? '' : 's'}`;
  const title = `${n} to ${oneLine(m.formTitle, 100)} (${m.period === 'hourly' ? 'last hour' : 'last day'})`;
  const at = (d: Date) => d.toISOString().replace('T', ' ').slice(0, 16) + ' UTC';
  return {
    subject: title,
    html: html(
      <Page title={title} unsubscribe={m.unsubscribeUrl}>
        <ul>
          {m.latest.map((r) => (
            <li key={r.url}>
              <a href={r.url}>{at(r.submittedAt)}</a>
            </li>
          ))}
        </ul>
        <p>
          <a href={m.resultsUrl}>See all responses in Formwork</a>
        </p>
      </Page>,
    ),
    text: [
      title,
      '',
      ...m.latest.map((r) => `- ${at(r.submittedAt)}: ${r.url}`),
      '',
      `All responses: ${m.resultsUrl}`,
      '',
      `Unsubscribe: ${m.unsubscribeUrl}`,
    ].join('\n'),
  };
}

/** The settings page's test message: the server works. */
export function testMessage(workspace: string): RenderedMessage {
  const title = `Formwork can send email for ${oneLine(workspace, 100)}`;
  const body = 'This test message was sent from the Email settings page.';
  return {
    subject: title,
    html: html(
      <Page title={title}>
        <p>{body}</p>
      </Page>,
    ),
    text: `${title}\n\n${body}`,
  };
}

/**
 * A receipt to a respondent (issue 48, item 4): the form's message (recall filled in, as text) and
 * their answers. The subject is the form's (recall filled in) on one line.
 */
export function receiptMessage(m: {
  formTitle: string;
  subject: string;
  message: string;
  submittedAt: Date;
  answers: AnswerLine[];
}): RenderedMessage {
  const subject = oneLine(m.subject) || `Your answers to ${oneLine(m.formTitle, 100)}`;
  const heading = `Your answers to ${oneLine(m.formTitle, 100)}`;
  const when = m.submittedAt.toISOString().replace('T', ' ').slice(0, 16) + ' UTC';
  const paragraphs = m.message.split(/\n{2,}/).filter((p) => p.trim());
  return {
    subject,
    html: html(
      <Page title={heading}>
        {paragraphs.map((p, i) => (
          <p key={i} style={{ whiteSpace: 'pre-wrap' }}>
            {p}
          </p>
        ))}
        <p>Submitted {when}.</p>
        <Answers answers={m.answers} />
        <p style={{ color: '#5b6475', fontSize: '.85rem' }}>
          You get this because this address was given in the form. Nothing more will be sent about it.
        </p>
      </Page>,
    ),
    text: [
      heading,
      '',
      ...(paragraphs.length ? [...paragraphs, ''] : []),
      `Submitted ${when}.`,
      '',
      ...m.answers.map((a) => `${a.question}\n  ${a.answer.replace(/\n/g, '\n  ')}`),
    ].join('\n'),
  };
}

/** The link to finish a form later (issue 48, item 5), asked for on the page after "Save and finish later". */
export function resumeMessage(m: { formTitle: string; link: string; days: number }): RenderedMessage {
  const subject = `Finish “${oneLine(m.formTitle, 100)}” later`;
  const keep = `Keep this link to yourself: it opens your answers. It stops working once you submit, or after ${m.days} days without a change.`;
  return {
    subject,
    html: html(
      <Page title={subject}>
        <p>Your answers so far are saved. Open this link to go on where you stopped:</p>
        <p>
          <a href={m.link}>Finish the form</a>
        </p>
        <p>{keep}</p>
        <p style={{ color: '#5b6475', fontSize: '.85rem' }}>
          You get this because someone asked for it on the form&apos;s page. If it was not you, ignore it.
        </p>
      </Page>,
    ),
    text: [
      subject,
      '',
      'Your answers so far are saved. Open this link to go on where you stopped:',
      m.link,
      '',
      keep,
    ].join('\n'),
  };
}
