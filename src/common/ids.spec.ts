import { uuidv7 } from './ids';

describe('uuidv7', () => {
  it('is a version 7 UUID carrying its time in milliseconds, and later ids sort after', () => {
    const at = Date.UTC(2026, 10, 26, 5, 30, 0, 123);
    const id = uuidv7(at);
    expect(id).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
    expect(parseInt(id.replace(/-/g, '').slice(0, 12), 16)).toBe(at);
    const later = uuidv7(at + 1);
    expect(later > id).toBe(true);
    // 74 random bits: ids of the same millisecond differ.
    expect(new Set(Array.from({ length: 1000 }, () => uuidv7(at))).size).toBe(1000);
  });
});
