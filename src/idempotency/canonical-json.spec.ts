import { canonicalJson, fingerprint } from './canonical-json';

describe('canonicalJson', () => {
  it('sorts object members at every level and drops whitespace', () => {
    expect(canonicalJson({ b: 1, a: { d: [3, { z: true, y: null }], c: 'x' } })).toBe(
      '{"a":{"c":"x","d":[3,{"y":null,"z":true}]},"b":1}',
    );
  });

  it('keeps the order of arrays', () => {
    expect(canonicalJson([3, 1, 2])).toBe('[3,1,2]');
  });

  it('leaves out undefined members, as JSON does', () => {
    expect(canonicalJson({ a: undefined, b: 2 })).toBe('{"b":2}');
    expect(canonicalJson([undefined])).toBe('[null]');
  });

  it('writes strings and numbers as JSON does', () => {
    expect(canonicalJson({ s: 'é "q" \n', n: 1e21, f: 0.1 })).toBe(JSON.stringify({ f: 0.1, n: 1e21, s: 'é "q" \n' }));
  });
});

describe('fingerprint', () => {
  it('is the same for the same arguments in any member order', () => {
    expect(
      fingerprint({ publicId: 'f_1', answers: { a: 1, b: [1, 2] } }).equals(
        fingerprint({ answers: { b: [1, 2], a: 1 }, publicId: 'f_1' }),
      ),
    ).toBe(true);
  });

  it('differs when a value differs, and is 32 bytes (SHA-256)', () => {
    const a = fingerprint({ limit: 10 });
    expect(a).toHaveLength(32);
    expect(a.equals(fingerprint({ limit: 11 }))).toBe(false);
    expect(fingerprint([1, 2]).equals(fingerprint([2, 1]))).toBe(false);
  });
});
