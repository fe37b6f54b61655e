import { checkContentEncoding, formatBytes, payloadTooLarge } from './request-checks';

describe('checkContentEncoding', () => {
  it('passes a body without Content-Encoding, or with identity', () => {
    expect(checkContentEncoding({})).toBeUndefined();
    expect(checkContentEncoding({ 'content-encoding': 'identity' })).toBeUndefined();
    expect(checkContentEncoding({ 'content-encoding': ' Identity ' })).toBeUndefined();
  });

  it('refuses any other coding with 415 unsupported_media_type naming it', () => {
    for (const coding of ['gzip', 'br', 'deflate', 'zstd', 'identity, gzip', 'x-unknown']) {
      const error = checkContentEncoding({ 'content-encoding': coding });
      expect(error).toMatchObject({ code: 'unsupported_media_type', status: 415 });
      expect(error!.message).toContain(coding.replace('identity, ', ''));
      expect(error!.hint).toContain('uncompressed');
    }
  });
});

describe('payloadTooLarge', () => {
  it('says the limit in the unit it was set in', () => {
    expect(payloadTooLarge(1024 * 1024).hint).toBe('Send a body of at most 1 MB; page through large imports.');
    expect(payloadTooLarge(200 * 1024).hint).toContain('at most 200 KB');
    expect(payloadTooLarge(20 * 1024).hint).toContain('at most 20 KB');
    expect(formatBytes(1000)).toBe('1000 bytes');
    expect(payloadTooLarge(undefined)).toMatchObject({ code: 'payload_too_large', status: 413 });
  });
});
