import { Webhook } from 'standardwebhooks';
import { newSecret, signedHeaders } from './signing';

describe('Standard Webhooks signing', () => {
  const body = JSON.stringify({
    type: 'form.created',
    timestamp: '2026-11-20T10:00:00.000Z',
    data: { publicId: 'abc', title: 'Ünïcode ✓' },
  });

  it('is verified by the standard library with the endpoint secret', () => {
    const secret = newSecret();
    expect(secret).toMatch(/^whsec_[A-Za-z0-9+/]{43}=$/);
    const headers = signedHeaders([secret], 'msg_1', body);
    expect(new Webhook(secret).verify(body, headers)).toEqual(JSON.parse(body));
  });

  it('signs with both secrets during a rotation, and each verifies on its own', () => {
    const [current, previous] = [newSecret(), newSecret()];
    const headers = signedHeaders([current, previous], 'msg_2', body);
    expect(headers['webhook-signature'].split(' ')).toHaveLength(2);
    expect(() => new Webhook(current).verify(body, headers)).not.toThrow();
    expect(() => new Webhook(previous).verify(body, headers)).not.toThrow();
    expect(() => new Webhook(newSecret()).verify(body, headers)).toThrow();
  });

  it('does not verify a changed body', () => {
    const secret = newSecret();
    const headers = signedHeaders([secret], 'msg_3', body);
    expect(() => new Webhook(secret).verify(body.replace('abc', 'abd'), headers)).toThrow();
  });
});
