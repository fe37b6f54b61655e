import { checkSchedule, inWords, scheduleRefusal } from './schedule';

describe('schedule', () => {
  const at = (iso: string) => new Date(iso);

  it('words a time in UTC, whatever zone it was given in', () => {
    expect(inWords(at('2027-03-01T10:05:00+01:00'))).toBe('Monday 1 March 2027, 09:05 UTC');
  });

  it('refuses closesAt not after opensAt, at the time this call moved', () => {
    const s = { opensAt: at('2027-03-01T09:00:00Z'), closesAt: at('2027-03-01T09:00:00Z') };
    expect(checkSchedule(s).map((d) => d.path)).toEqual(['/closesAt']);
    expect(checkSchedule(s, { opensAt: true }).map((d) => d.path)).toEqual(['/opensAt']);
    expect(checkSchedule({ ...s, closesAt: at('2027-03-01T09:00:01Z') })).toEqual([]);
    expect(checkSchedule({ opensAt: null, closesAt: at('2000-01-01T00:00:00Z') })).toEqual([]);
  });

  it('says form_not_open before opensAt and form_closed from closesAt on, to the millisecond', () => {
    const s = { opensAt: at('2027-03-01T09:00:00Z'), closesAt: at('2027-03-02T09:00:00Z') };
    expect(scheduleRefusal(s, at('2027-03-01T08:59:59.999Z'))).toMatchObject({
      code: 'form_not_open',
      hint: expect.stringContaining('2027-03-01T09:00:00.000Z'),
    });
    expect(scheduleRefusal(s, at('2027-03-01T09:00:00Z'))).toBeUndefined();
    expect(scheduleRefusal(s, at('2027-03-02T08:59:59.999Z'))).toBeUndefined();
    expect(scheduleRefusal(s, at('2027-03-02T09:00:00Z'))).toMatchObject({
      code: 'form_closed',
      message: 'This form closed on Tuesday 2 March 2027, 09:00 UTC and takes no more responses.',
      hint: expect.stringContaining('2027-03-02T09:00:00.000Z'),
    });
  });
});
