import { PAGE_CSP, PAGE_HEADERS, pageHeadersFor } from './interaction.pages';

describe('pageHeadersFor (the sign-in pages of a client)', () => {
  it("adds exactly an app's own redirect scheme to form-action, so the browser follows the final redirect", () => {
    const csp = pageHeadersFor('cursor://anysphere.cursor-retrieval/oauth/callback')['Content-Security-Policy'];
    expect(csp).toContain("form-action 'self' http: https: cursor:;");
    expect(csp.replace(' cursor:', '')).toBe(PAGE_CSP);
  });

  it('keeps the usual headers for http(s) redirect URIs, and never allows script schemes', () => {
    for (const uri of [
      'https://app.example/cb',
      'http://127.0.0.1:8000/cb',
      'javascript:alert(1)',
      'data:text/html,x',
      '',
    ]) {
      expect(pageHeadersFor(uri)).toBe(PAGE_HEADERS);
    }
  });
});
