/** The readings of the database pool and the replica's lag that Prometheus' scrapes take (metrics.ts). */
import { Injectable, Module, OnModuleInit, Optional } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { DataSource } from 'typeorm';
import { ReadReplica } from '../database/replica';
import { readAtScrape } from './metrics';

/** node-postgres' pool, as TypeORM's postgres driver holds it. */
interface PgPool {
  totalCount: number;
  idleCount: number;
  waitingCount: number;
}

@Injectable()
export class ScrapeReadings implements OnModuleInit {
  constructor(
    @InjectDataSource() private readonly db: DataSource,
    @Optional() private readonly replica?: ReadReplica,
  ) {}

  onModuleInit() {
    const pool = (this.db.driver as unknown as { master?: PgPool }).master;
    readAtScrape.pool = () =>
      pool && { inUse: pool.totalCount - pool.idleCount, idle: pool.idleCount, waiting: pool.waitingCount };
    const replica = this.replica;
    readAtScrape.replicaLagSeconds = replica?.configured
      ? async () => {
          const lagMs = (await replica.status())?.lagMs;
          return lagMs === undefined ? undefined : lagMs / 1000;
        }
      : undefined;
  }
}

@Module({ providers: [ScrapeReadings] })
export class ObservabilityModule {}
