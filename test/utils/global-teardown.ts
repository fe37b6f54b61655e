export default async function globalTeardown() {
  const teardown = (globalThis as Record<string, unknown>).__formworkTeardown as (() => Promise<void>) | undefined;
  await teardown?.();
}
