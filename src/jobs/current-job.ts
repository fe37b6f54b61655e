/** The job whose work runs now (see JobsService.start): a tool that runs differently as a job reads it. */
import { AsyncLocalStorage } from 'node:async_hooks';

export interface RunningJob {
  id: string;
  /** Aborted when the job is cancelled (here or through another instance): stop between steps. */
  signal: AbortSignal;
}

const running = new AsyncLocalStorage<RunningJob>();

/** The job the caller runs in, if any. */
export function currentJob(): RunningJob | undefined {
  return running.getStore();
}

/** Runs `work` as the job `job`. */
export function runAsJob<T>(job: RunningJob, work: () => Promise<T>): Promise<T> {
  return running.run(job, work);
}

/**
 * The comment a job's statements carry (after the feature's own tag), by which a cancel finds the
 * backend running one in pg_stat_activity, whichever instance started it.
 */
export function jobTag(jobId: string): string {
  return `/* ${jobId} */`;
}

/**
 * `gen`'s steps, each run as the job `job` (a stream pulls them from wherever it is read), and none
 * once the job is cancelled: the work stops between its steps (its batches).
 */
export async function* stepsAsJob<T>(job: RunningJob, gen: AsyncGenerator<T>): AsyncGenerator<T> {
  try {
    for (;;) {
      if (job.signal.aborted) throw new Error(`job ${job.id} cancelled`);
      const step = await runAsJob(job, () => gen.next());
      if (step.done) return;
      yield step.value;
    }
  } finally {
    await gen.return(undefined);
  }
}
