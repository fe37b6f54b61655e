import { SHARED_SESSION_MARK } from '../database/embedded-postgres';
import { loopConnectionString } from './delivery-loop.repository';

describe("the delivery loop's connections", () => {
  const options = (url: string) => new URL(url).searchParams.get('options');

  it('plan without bitmap or sequential scans and commit without waiting for the flush, keeping the options the URL had', () => {
    expect(options(loopConnectionString('postgres://u@db:5432/app'))).toBe(
      '-c enable_bitmapscan=off -c enable_seqscan=off -c synchronous_commit=off',
    );
    expect(
      options(loopConnectionString('postgres://u@db:5432/app?options=-c%20search_path%3Dtenant&sslmode=require')),
    ).toBe('-c search_path=tenant -c enable_bitmapscan=off -c enable_seqscan=off -c synchronous_commit=off');
    expect(new URL(loopConnectionString('postgres://u@db:5432/app?sslmode=require')).searchParams.get('sslmode')).toBe(
      'require',
    );
  });

  it('leave the embedded database alone (its connections share one session with the requests)', () => {
    const embedded = `postgres://postgres@127.0.0.1:5555/postgres?sslmode=disable&${SHARED_SESSION_MARK}`;
    expect(loopConnectionString(embedded)).toBe(embedded);
  });
});
