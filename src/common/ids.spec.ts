import { randomBase62, randomIdBytes, uuidv7 } from './ids';

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

describe('randomIdBytes', () => {
  it('hands out each pooled byte once, across refills, and never more than the pool at once', () => {
    // 600 draws of 16 bytes span three fills of the 4 KiB pool: no two draws are equal, and the
    // buffers handed out are copies (changing one changes no later draw).
    const draws = Array.from({ length: 600 }, () => randomIdBytes(16));
    draws[0].fill(0);
    expect(new Set(draws.map((b) => b.toString('hex'))).size).toBe(600);
    expect(draws.every((b) => b.length === 16)).toBe(true);
    expect(() => randomIdBytes(4097)).toThrow(RangeError);
  });

  it('gives event ids of the stated shape', () => {
    expect(randomBase62(24, randomIdBytes)).toMatch(/^[0-9A-Za-z]{24}$/);
  });

  it('hands out the pool in order, no byte twice and none skipped, and refills when fewer are left than asked', () => {
    // A generator whose output is known: fill k writes (i + k) % 256 at position i.
    let fills = 0;
    const known = (k: number, from: number, to: number) =>
      Array.from({ length: to - from }, (_, j) => (from + j + k) % 256);
    jest.isolateModules(() => {
      jest.doMock('node:crypto', () => ({
        ...jest.requireActual<typeof import('node:crypto')>('node:crypto'),
        randomFillSync: (buf: Buffer) => {
          fills += 1;
          for (let i = 0; i < buf.length; i++) buf[i] = (i + fills) % 256;
          return buf;
        },
      }));
      const ids = jest.requireActual<typeof import('./ids')>('./ids');
      const first = ids.randomIdBytes(4000);
      const second = ids.randomIdBytes(96);
      const third = ids.randomIdBytes(16); // 0 left: a new fill
      const fourth = ids.randomIdBytes(4090); // 4,080 left: a new fill
      expect([...first]).toEqual(known(1, 0, 4000));
      expect([...second]).toEqual(known(1, 4000, 4096));
      expect([...third]).toEqual(known(2, 0, 16));
      expect([...fourth]).toEqual(known(3, 0, 4090));
      expect(fills).toBe(3);
    });
  });
});
