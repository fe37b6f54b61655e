import { deprecationHeaders } from './version-headers';

const link = 'https://forms.example.com/changelog';

describe('deprecationHeaders', () => {
  it('is empty while nothing is deprecated', () => {
    expect(
      deprecationHeaders({ apiV1Deprecation: undefined, apiV1Sunset: undefined, apiV1DeprecationLink: link }),
    ).toEqual({});
  });

  it('sends Deprecation as @epoch-seconds, Sunset as an HTTP-date and Link to the notice', () => {
    const headers = deprecationHeaders({
      apiV1Deprecation: new Date('2027-01-31T00:00:00Z'),
      apiV1Sunset: new Date('2027-07-31T00:00:00Z'),
      apiV1DeprecationLink: link,
    });
    expect(headers).toEqual({
      Deprecation: '@1801353600',
      Sunset: 'Sat, 31 Jul 2027 00:00:00 GMT',
      Link: `<${link}>; rel="deprecation"; type="text/html", <${link}>; rel="sunset"; type="text/html"`,
    });
  });

  it('sends only what is configured', () => {
    expect(
      deprecationHeaders({
        apiV1Deprecation: new Date('2027-01-31T12:30:00Z'),
        apiV1Sunset: undefined,
        apiV1DeprecationLink: link,
      }),
    ).toEqual({
      Deprecation: '@1801398600',
      Link: `<${link}>; rel="deprecation"; type="text/html"`,
    });
  });
});
