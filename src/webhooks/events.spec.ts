import { eventBody, responseCreatedBody } from './events';

describe('response.created body around the stored submittedAt', () => {
  it('is eventBody byte for byte once the submittedAt is put between its two parts', () => {
    const at = new Date('2026-11-20T10:00:00.123Z');
    const form = { publicId: 'f_abc', title: 'Quotes " and \\ and Ünïcode ✓ and </script>' };
    const response = {
      id: '6f1c1e0e-7a4b-4c39-9a57-7f2d8f0f1b11',
      answers: { b1: 'A "quoted"\nanswer', b2: ['Red', 'Blue'], b3: 4.5, b4: true, b5: null },
    };
    const submittedAt = '2026-11-20T10:00:00.456Z';
    const { head, tail } = responseCreatedBody(form, response, at);
    expect(head + submittedAt + tail).toBe(
      eventBody(
        'response.created',
        { form, response: { id: response.id, submittedAt, answers: response.answers } },
        { at },
      ),
    );
  });

  it('is eventBody byte for byte with refs and hidden values too, in that order', () => {
    const at = new Date('2026-11-20T10:00:00.123Z');
    const form = { publicId: 'f_abc', title: 'T' };
    const response = {
      id: 'r1',
      answers: { b1: 'x' },
      refs: { b1: 'email "ref"' },
      hidden: { source: 'ads' },
    };
    const submittedAt = '2026-11-20T10:00:00.456Z';
    const { head, tail } = responseCreatedBody(form, response, at);
    expect(head + submittedAt + tail).toBe(
      eventBody(
        'response.created',
        {
          form,
          response: { id: 'r1', submittedAt, answers: response.answers, refs: response.refs, hidden: response.hidden },
        },
        { at },
      ),
    );
  });

  it('is eventBody byte for byte with the variables and ending of a form that computes (issue 46), last', () => {
    const at = new Date('2026-11-20T10:00:00.123Z');
    const form = { publicId: 'f_abc', title: 'T' };
    const response = {
      id: 'r1',
      answers: { b1: 'x' },
      hidden: { s: 'a' },
      variables: { score: 3, tag: '"x"' },
      ending: 'pass',
    };
    const submittedAt = '2026-11-20T10:00:00.456Z';
    const { head, tail } = responseCreatedBody(form, response, at);
    expect(head + submittedAt + tail).toBe(
      eventBody(
        'response.created',
        {
          form,
          response: {
            id: 'r1',
            submittedAt,
            answers: response.answers,
            hidden: response.hidden,
            variables: response.variables,
            ending: 'pass',
          },
        },
        { at },
      ),
    );
    expect(JSON.parse(head + submittedAt + tail).data.response).toMatchObject({
      variables: { score: 3 },
      ending: 'pass',
    });
  });

  it('leaves out whatever else the form record holds', () => {
    const { head, tail } = responseCreatedBody(
      { publicId: 'f_1', title: 'T', workspaceId: 'secret-ish' } as { publicId: string; title: string },
      { id: 'r', answers: {} },
    );
    expect(JSON.parse(`${head}2026-01-01T00:00:00.000Z${tail}`).data.form).toEqual({ publicId: 'f_1', title: 'T' });
  });
});
