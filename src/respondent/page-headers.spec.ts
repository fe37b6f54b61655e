import { pageHeaders, prefersJson } from './page-headers';

describe('pageHeaders', () => {
  it('refuses every frame by default: frame-ancestors none and X-Frame-Options DENY', () => {
    const h = pageHeaders([]);
    expect(h['Content-Security-Policy']).toMatch(/; frame-ancestors 'none'$/);
    expect(h['X-Frame-Options']).toBe('DENY');
  });

  it('lets exactly the listed origins frame the page, without X-Frame-Options (which cannot name a list)', () => {
    const h = pageHeaders(['https://a.example', 'https://b.example:8443']);
    expect(h['Content-Security-Policy']).toMatch(/; frame-ancestors https:\/\/a\.example https:\/\/b\.example:8443$/);
    expect(h).not.toHaveProperty('X-Frame-Options');
  });
});

describe('prefersJson', () => {
  it.each([
    ['application/json', true],
    ['application/json, text/plain, */*', true], // axios
    ['application/json, text/html', true],
    ['text/html;q=0.5, application/json', true],
    ['application/*', true],
    ['text/html,application/xhtml+xml,application/xml;q=0.9,image/avif,image/webp,*/*;q=0.8', false], // Chromium
    ['text/html, application/json', false],
    ['*/*', false],
    ['', false],
    [undefined, false],
    ['application/json;q=0', false],
    ['application/json;q=abc', false],
    ['text/*, application/json', false],
  ])('%s -> %s', (accept, expected) => {
    expect(prefersJson(accept)).toBe(expected);
  });
});
