/**
 * "Email me the link" on the page shown after "Save and finish later" (issue 48, item 5): a plain
 * form post to /f/{publicId}/email-link, so it works with and without JavaScript. The address is
 * the one typed, or the first email answer given so far.
 */
export interface ResumeEmailView {
  /** The partial's resume secret (the link on the same page holds it already). */
  secret: string;
  /** The address filled in: the one sent, else the first email answered. */
  address?: string;
  /** What happened to a request: sent, or why not. */
  sent?: string;
  problem?: string;
}

export function ResumeEmailForm(props: { publicId: string; view: ResumeEmailView }) {
  const { view } = props;
  return (
    <form method="post" action={`/f/${props.publicId}/email-link`} noValidate>
      <input type="hidden" name="_resume" value={view.secret} />
      {view.sent ? (
        <p className="notice" role="status">
          {view.sent}
        </p>
      ) : null}
      <div className="field">
        <label htmlFor="resume-email">Or email the link to yourself</label>
        {view.problem ? (
          <p className="error" id="resume-email-error" role="alert">
            {view.problem}
          </p>
        ) : null}
        <input
          id="resume-email"
          type="email"
          name="email"
          autoComplete="email"
          defaultValue={view.address ?? ''}
          aria-invalid={view.problem ? true : undefined}
          aria-describedby={view.problem ? 'resume-email-error' : undefined}
        />
      </div>
      <button type="submit">Email me the link</button>
    </form>
  );
}

/** The first email answered so far (by block order), to fill in: the person may change it. */
export function answeredEmail(
  blocks: ReadonlyArray<{ id: string; type: string }>,
  answers: Record<string, unknown>,
): string | undefined {
  for (const b of blocks) {
    const v = answers[b.id];
    const text = Array.isArray(v) ? v[0] : v;
    if (b.type === 'email' && typeof text === 'string' && text.trim()) return text.trim();
  }
  return undefined;
}
