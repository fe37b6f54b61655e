import { MAX_EMBED_ORIGINS, normalizeEmbedOrigins } from './embed-origins';

describe('normalizeEmbedOrigins', () => {
  it('takes https origins (and http on this machine), lower-cased, default port and trailing slash dropped, duplicates once', () => {
    const { origins, details } = normalizeEmbedOrigins([
      'https://Forms.Example.com',
      'https://forms.example.com:443/',
      'https://example.com:8443',
      'http://localhost:3000',
      'http://127.0.0.1:8080',
      'https://bücher.de',
      ' https://a.example ',
    ]);
    expect(details).toEqual([]);
    expect(origins).toEqual([
      'https://forms.example.com',
      'https://example.com:8443',
      'http://localhost:3000',
      'http://127.0.0.1:8080',
      'https://xn--bcher-kva.de',
      'https://a.example',
    ]);
  });

  it.each([
    ['https://a.example/embed', 'without a path'],
    ['https://a.example?x=1', 'without a path'],
    ['https://a.example#top', 'without a path'],
    ['https://user@a.example', 'without a path'],
    ['a.example', 'must be an origin'],
    ['https:a.example', 'must be an origin'],
    ['ftp://a.example', 'must be an origin'],
    ['https://*.example.com', 'wildcard'],
    ['*', 'wildcard'],
    ["https://a.example;script-src 'unsafe-inline'", 'must be an origin'],
    ['https://a;b.example', 'host name'],
    ["https://a'b.example", 'host name'],
    ['https://a.example.', 'host name'],
    ['http://a.example', 'must use https'],
    ['https://a.example:99999', 'not a valid origin'],
  ])('refuses %s', (input, message) => {
    const { details } = normalizeEmbedOrigins(['https://ok.example', input]);
    expect(details).toEqual([{ path: '/embedOrigins/1', message: expect.stringContaining(message) }]);
  });

  it(`refuses more than ${MAX_EMBED_ORIGINS} origins`, () => {
    const many = Array.from({ length: MAX_EMBED_ORIGINS + 1 }, (_, i) => `https://s${i}.example`);
    expect(normalizeEmbedOrigins(many).details).toEqual([
      { path: '/embedOrigins', message: `at most ${MAX_EMBED_ORIGINS} origins` },
    ]);
  });
});
