import { pageHeaders, postOrigin, prefersJson } from './page-headers';

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

describe('postOrigin', () => {
  const own = ['https://forms.example.com'];
  const embed = ['https://shop.example'];
  it.each([
    [{ 'sec-fetch-site': 'same-origin', origin: 'null' }, 'same-origin'], // a form post under Referrer-Policy no-referrer
    [{ origin: 'https://forms.example.com' }, 'same-origin'],
    [{ origin: 'HTTPS://FORMS.EXAMPLE.COM', 'sec-fetch-site': 'none' }, 'same-origin'],
    [{ origin: 'https://shop.example', 'sec-fetch-site': 'cross-site' }, 'embedding'],
    [{ origin: 'https://evil.example', 'sec-fetch-site': 'cross-site' }, 'cross-site'],
    [{ origin: 'null', 'sec-fetch-site': 'cross-site' }, 'cross-site'], // a sandboxed frame
    [{ 'sec-fetch-site': 'same-site' }, 'cross-site'],
    [{ origin: 'https://evil.example' }, 'cross-site'], // a browser without Sec-Fetch-*
    [{ origin: 'null' }, 'unknown'],
    [{}, 'unknown'], // curl, an old browser
    [{ 'sec-fetch-site': 'none' }, 'unknown'],
  ])('%j is %s', (headers, expected) => {
    expect(postOrigin(headers, own, embed)).toBe(expected);
  });
});
