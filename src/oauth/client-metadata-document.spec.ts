import {
  cacheSecondsOf,
  checkDocument,
  ClientDocumentError,
  clientLabel,
  DEFAULT_CACHE_SECONDS,
  fetchClientDocument,
  MAX_CACHE_SECONDS,
  MIN_CACHE_SECONDS,
  rememberingRefusals,
} from './client-metadata-document';
import { loopbackRedirectMatches } from './redirect-uris';

const ID = 'https://agent.example/oauth/client.json';
const doc = (extra: Record<string, unknown> = {}) => ({
  client_id: ID,
  client_name: 'Example Agent',
  redirect_uris: ['http://127.0.0.1:8976/callback'],
  ...extra,
});
const refusal = (fn: () => unknown) => {
  try {
    fn();
  } catch (err) {
    expect(err).toBeInstanceOf(ClientDocumentError);
    return (err as Error).message;
  }
  throw new Error('expected a refusal');
};

describe('client metadata documents', () => {
  it('reduces a document to a public client: none, code, and only the grants it may use', () => {
    const metadata = checkDocument(
      ID,
      doc({ grant_types: ['authorization_code', 'client_credentials'], jwks_uri: 'https://x' }),
    );
    expect(metadata).toEqual({
      client_id: ID,
      client_name: 'Example Agent',
      redirect_uris: ['http://127.0.0.1:8976/callback'],
      token_endpoint_auth_method: 'none',
      response_types: ['code'],
      grant_types: ['authorization_code'],
    });
  });

  it.each([
    ['another client_id', doc({ client_id: 'https://agent.example/other.json' }), /must be its own URL/],
    ['a secret', doc({ client_secret: 's' }), /client_secret/],
    ['private_key_jwt', doc({ token_endpoint_auth_method: 'private_key_jwt' }), /only public clients/],
    ['client_secret_basic', doc({ token_endpoint_auth_method: 'client_secret_basic' }), /only public clients/],
    ['no redirect_uris', doc({ redirect_uris: undefined }), /redirect_uris/],
    ['a NUL in its name', doc({ client_name: 'a\u0000b' }), /NUL/],
    ['a name too long', doc({ client_name: 'x'.repeat(201) }), /client_name of 201 characters/],
    ['an array', [], /not a JSON object/],
  ])('refuses a document with %s', (_why, document, message) => {
    expect(refusal(() => checkDocument(ID, document))).toMatch(message);
  });

  it('keeps a document as Cache-Control says, within 60 s and 24 h; no-store and no-cache not at all', () => {
    expect(cacheSecondsOf('max-age=300')).toBe(300);
    expect(cacheSecondsOf('public, max-age=0')).toBe(MIN_CACHE_SECONDS);
    expect(cacheSecondsOf('max-age=99999999')).toBe(MAX_CACHE_SECONDS);
    expect(cacheSecondsOf(undefined)).toBe(DEFAULT_CACHE_SECONDS);
    expect(cacheSecondsOf('no-store')).toBeNull();
    expect(cacheSecondsOf('private, no-cache')).toBeNull();
  });

  it.each([
    ['http://agent.example/client.json', /https:\/\//],
    ['https://agent.example/', /must have a path/],
    ['https://agent.example/a/../client.json', /must have a path/],
    ['https://agent.example/alice/%2e%2e/shared.json', /without \. or \.\. segments, plain or as %2e/],
    ['https://agent.example/alice/%2E%2E/shared.json', /without \. or \.\. segments/],
    ['https://agent.example/alice/.%2E/shared.json', /without \. or \.\. segments/],
    ['https://agent.example/alice/%2e./shared.json', /without \. or \.\. segments/],
    ['https://agent.example/alice/%2e/shared.json', /without \. or \.\. segments/],
    ['https://agent.example/alice/%2e%2e', /without \. or \.\. segments/],
    ['https://agent.example/alice\\..\\shared.json', /without \. or \.\. segments/],
    ['https://agent.example/alice/.\t./shared.json', /must be written as it is fetched/],
    ['https://agent.example/alice\\shared.json', /must be written as it is fetched/],
    ['https://agent.example/alice%2F..%2Fshared.json', /without \. or \.\. segments/],
    ['https://agent.example/alice%5c%2e%2e%5cshared.json', /without \. or \.\. segments/],
    ['https://agent.example/alice%2fshared.json', /written as %2f or %5c/],
    ['https://user:pw@agent.example/client.json', /user name or password/],
    ['https://agent.example/client.json#x', /fragment/],
  ])('refuses the client_id %s before any request', async (id, message) => {
    await expect(fetchClientDocument(id, { allowPrivate: false })).rejects.toThrow(message);
  });

  it.each([
    'https://10.0.0.1/a%2eb/client.json',
    'https://10.0.0.1/..x/client.json',
    'https://10.0.0.1/x../client.json',
    'https://10.0.0.1/client.json?next=/../x',
    'https://10.0.0.1:443/client.json',
  ])('takes %s as a document URL (refused later, for its address only)', async (id) => {
    await expect(fetchClientDocument(id, { allowPrivate: false })).rejects.toThrow(/public addresses only/);
  });

  it.each([
    ['https://agent.example/alice/%2e%2e/shared.json', 'https://agent.example/shared.json'],
    ['https://Agent.example/oauth/client.json', ID],
    ['https://agent.example:443/oauth/client.json', ID],
    ['https://agent.example/oauth/client%2Ejson', 'https://agent.example/oauth/client.json'],
  ])('compares the client_id %s with the document, byte for byte: %s is not it', (id, said) => {
    expect(refusal(() => checkDocument(id, doc({ client_id: said })))).toMatch(/must be its own URL/);
  });

  it.each([
    'https://127.0.0.1/client.json',
    'https://[::1]/client.json',
    'https://169.254.169.254/latest/client.json',
    'https://10.0.0.1/c.json',
  ])('refuses %s (the webhooks SSRF guard) unless private addresses are allowed', async (id) => {
    await expect(fetchClientDocument(id, { allowPrivate: false })).rejects.toThrow(/public addresses only/);
  });

  it('refuses a host name that resolves to loopback (the lookup is the guarded one)', async () => {
    await expect(fetchClientDocument('https://localhost:9/client.json', { allowPrivate: false })).rejects.toThrow(
      /loopback, private, link-local or reserved address/,
    );
  });

  it('names such a client with the host of its document', () => {
    expect(clientLabel(ID, 'Example Agent')).toBe('Example Agent (from agent.example)');
    expect(clientLabel(ID, undefined)).toBe('agent.example (from agent.example)');
    expect(clientLabel('abc123', 'Old Agent')).toBe('Old Agent');
    expect(clientLabel('abc123', undefined)).toBe('abc123');
  });

  it('remembers a refusal for a while, so a second lookup in the same request does not fetch again', async () => {
    let calls = 0;
    const fetchOnce = rememberingRefusals(async () => {
      calls += 1;
      throw new ClientDocumentError('no');
    });
    await expect(fetchOnce(ID)).rejects.toThrow('no');
    await expect(fetchOnce(ID)).rejects.toThrow('no');
    expect(calls).toBe(1);
  });
});

describe('loopback redirect URIs (RFC 8252 §7.3)', () => {
  const registered = ['http://127.0.0.1:8976/callback', 'https://app.example/cb'];
  it.each([
    ['http://127.0.0.1:51234/callback', true],
    ['http://127.0.0.1/callback', true],
    ['http://[::1]:40002/callback', true],
    ['http://127.0.0.1:51234/other', false],
    ['http://127.0.0.1:51234/callback?x=1', false],
    ['http://localhost:51234/callback', false],
    ['https://127.0.0.1:51234/callback', false],
    ['http://192.0.2.1:8976/callback', false],
    ['https://app.example:444/cb', false],
  ])('%s matches: %s', (uri, ok) => {
    expect(loopbackRedirectMatches(registered, uri)).toBe(ok);
  });
});
