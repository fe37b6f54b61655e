import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { DataSource } from 'typeorm';
import { preparesStatements } from '../database/prepared';
import { currentManager, outsideTransaction } from '../database/transaction';
import { FormKey, FormsRepository, FormVersion, versionKey } from './forms.repository';

/**
 * Statements of this kind running at once, where statements are prepared; reads that arrive
 * meanwhile wait for the next one. One at a time saves little there (0.21 against 0.21 to 0.23 ms
 * of CPU per get_form), and two keep a slow statement from holding every call. Where each is planned
 * afresh, and behind a transaction pooler also crosses one more hop (PgBouncer's CPU and a wakeup),
 * one at a time: it gathers about twice the reads per statement, and a get_form through PgBouncer
 * took 0.23 to 0.25 ms of CPU (instance, primary and PgBouncer) against 0.31 to 0.36 with two
 * (bench/topology-pg.js, alternated rounds).
 */
const MAX_RUNNING_PREPARED = 2;
/** Reads one statement takes at most. */
const MAX_BATCH = 200;

interface Waiting {
  key: Required<FormKey>;
  resolve: (version: FormVersion | undefined) => void;
  reject: (err: unknown) => void;
}

/**
 * get_form's reads of a form's id and version (outside a transaction), gathered: with maxRunning
 * of them running, the reads that arrive wait and go together in the next statement, one for all
 * (a group commit for reads), instead of a round trip each. A read never joins a statement already
 * running: it starts after it was asked for, so it sees every change committed before the call, on
 * any instance. With none running, a read starts at once (no timer, no added wait).
 */
@Injectable()
export class FormVersionReads {
  private readonly waiting: Waiting[] = [];
  private running = 0;
  private readonly maxRunning: number;

  constructor(
    @InjectDataSource() private readonly db: DataSource,
    private readonly repo: FormsRepository,
  ) {
    this.maxRunning = preparesStatements(db) ? MAX_RUNNING_PREPARED : 1;
  }

  /** The form's id and version as committed now, or undefined when the workspace has no such form. */
  read(key: Required<FormKey>): Promise<FormVersion | undefined> {
    return new Promise((resolve, reject) => {
      this.waiting.push({ key, resolve, reject });
      if (this.running < this.maxRunning) void this.next();
    });
  }

  private async next(): Promise<void> {
    const batch = this.waiting.splice(0, MAX_BATCH);
    if (batch.length === 0) return;
    this.running += 1;
    try {
      const keys = new Map(batch.map((w) => [versionKey(w.key), w.key]));
      // Outside any transaction whatever the context that starts it: it reads for many calls.
      const versions = await outsideTransaction(() =>
        this.repo.findVersions(currentManager(this.db), [...keys.values()]),
      );
      for (const w of batch) w.resolve(versions.get(versionKey(w.key)));
    } catch (err) {
      for (const w of batch) w.reject(err);
    } finally {
      this.running -= 1;
      if (this.waiting.length > 0) void this.next();
    }
  }
}
