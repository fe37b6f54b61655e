/**
 * Imported first by main.ts and by the webhook delivery thread's entry: the SDK must start before
 * pg and ioredis are first required, for their instrumentation to patch them (see tracing.ts).
 */
import { startTracing } from './tracing';

startTracing();
