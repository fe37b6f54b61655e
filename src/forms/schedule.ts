/**
 * A form's schedule (issue 47, item 1): opensAt and closesAt, and what they say at a given time.
 * Pure functions on the two times, so that forms/ (validating and showing a schedule) and the
 * AccessService (admitting answers, closing forms at their time) read a schedule alike.
 */
import { ApiError, ErrorDetail } from '../common/errors/api-error';

export interface Schedule {
  opensAt: Date | null;
  closesAt: Date | null;
}

const WORDS = new Intl.DateTimeFormat('en-GB', {
  weekday: 'long',
  day: 'numeric',
  month: 'long',
  year: 'numeric',
  hour: '2-digit',
  minute: '2-digit',
  timeZone: 'UTC',
});

/** A time as people read it, in UTC: "Monday 7 December 2026, 14:30 UTC". */
export function inWords(at: Date): string {
  const p = Object.fromEntries(WORDS.formatToParts(at).map((x) => [x.type, x.value]));
  return `${p.weekday} ${p.day} ${p.month} ${p.year}, ${p.hour}:${p.minute} UTC`;
}

/** An ISO 8601 time as given to a tool (the schema checked its form); null clears, undefined keeps. */
export function timeOf(value: string | null | undefined): Date | null | undefined {
  return value === undefined || value === null ? value : new Date(value);
}

/** The problems of a schedule (closesAt not after opensAt), at the path of the time to change. */
export function checkSchedule(s: Schedule, changed: { opensAt?: boolean; closesAt?: boolean } = {}): ErrorDetail[] {
  if (!s.opensAt || !s.closesAt || s.closesAt.getTime() > s.opensAt.getTime()) return [];
  const path = changed.closesAt || !changed.opensAt ? '/closesAt' : '/opensAt';
  return [
    {
      path,
      message: `closesAt (${s.closesAt.toISOString()}) must be after opensAt (${s.opensAt.toISOString()})`,
    },
  ];
}

/** Whether the schedule has closed the form at `now`. */
export const closedBySchedule = (s: Schedule, now: Date) => !!s.closesAt && s.closesAt.getTime() <= now.getTime();

/** Whether `now` is before the schedule's opening. */
export const beforeOpening = (s: Schedule, now: Date) => !!s.opensAt && now.getTime() < s.opensAt.getTime();

/**
 * Why a schedule refuses answers at `now`: 409 form_closed after closesAt, 409 form_not_open
 * before opensAt (the time in the message, in words, and in the hint, ISO 8601), else undefined.
 * `wording`: for a program (the tools) or for the person filling in the form (the page).
 */
export function scheduleRefusal(s: Schedule, now: Date, wording: 'api' | 'person' = 'api'): ApiError | undefined {
  if (closedBySchedule(s, now)) {
    const at = s.closesAt!;
    return new ApiError('form_closed', {
      message: `This form closed on ${inWords(at)} and takes no more responses.`,
      hint:
        wording === 'api'
          ? `It closed at ${at.toISOString()} (closesAt). Set a later closesAt (or null) with update_form, then publish_form reopens it.`
          : 'If you still need to answer it, contact the person or organisation who sent you the form.',
    });
  }
  if (beforeOpening(s, now)) {
    const at = s.opensAt!;
    return new ApiError('form_not_open', {
      message: `This form opens on ${inWords(at)}.`,
      hint:
        wording === 'api'
          ? `It takes responses from ${at.toISOString()} (opensAt); try again then, or move opensAt with update_form.`
          : 'Come back then to answer it.',
    });
  }
  return undefined;
}
