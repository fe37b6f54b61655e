import { notificationMessage, oneLine } from './messages';
import { subscriptionOf, unsubscribeToken } from './unsubscribe-token';

describe('email messages', () => {
  it('keep subjects on one line: no CR, LF or other control character reaches a header', () => {
    expect(oneLine('Survey\r\nBcc: victim@example.com')).toBe('Survey Bcc: victim@example.com');
    expect(oneLine('a\u2028b\u0000c')).toBe('a b c');
    expect(oneLine('x'.repeat(200))).toHaveLength(150);
    const m = notificationMessage({
      formTitle: 'Form\r\nBcc: victim@example.com',
      submittedAt: new Date('2026-12-07T10:00:00Z'),
      answers: [{ question: 'Q <i>', answer: '</td><script>x</script>' }],
      responseUrl: 'http://formwork.test/r',
      unsubscribeUrl: 'http://formwork.test/u',
    });
    expect(m.subject).not.toMatch(/[\r\n]/);
    expect(m.html).toContain('&lt;/td&gt;&lt;script&gt;x&lt;/script&gt;');
    expect(m.html).toContain('Q &lt;i&gt;');
    expect(m.text).toContain('</td><script>x</script>');
  });
});

describe('unsubscribe tokens', () => {
  const key = Buffer.alloc(32, 1).toString('base64');
  const other = Buffer.alloc(32, 2).toString('base64');
  const id = '6f1c9f0e-8a7b-4c1d-9e2f-0a1b2c3d4e5f';

  it('open the subscription they were made for, under the current or a previous key', () => {
    const token = unsubscribeToken([key], id);
    expect(subscriptionOf([key], token)).toBe(id);
    expect(subscriptionOf([other, key], token)).toBe(id);
  });

  it('open nothing when forged, made under another key, or pointed at another subscription', () => {
    const token = unsubscribeToken([key], id);
    expect(subscriptionOf([other], token)).toBeNull();
    expect(subscriptionOf([key], token.replace(id, '00000000-0000-0000-0000-000000000000'))).toBeNull();
    expect(subscriptionOf([key], `${id}.${'A'.repeat(43)}`)).toBeNull();
    expect(subscriptionOf([key], 'garbage')).toBeNull();
  });
});
