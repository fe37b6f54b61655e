/** The storage port (FileStorage), for every module: disk or S3, chosen once at start by the configuration. */
import { Global, Module } from '@nestjs/common';
import { getDataSourceToken } from '@nestjs/typeorm';
import { join } from 'node:path';
import type { DataSource } from 'typeorm';
import { APP_CONFIG, AppConfig } from '../config/config';
import { DiskFileStorage } from './disk-file-storage';
import { FileStorage } from './file-storage';
import { observedStorage } from './observed-storage';
import { S3FileStorage } from './s3-file-storage';
import { UploadUrlSigner } from './upload-url';

@Global()
@Module({
  providers: [
    {
      provide: FileStorage,
      inject: [APP_CONFIG, getDataSourceToken()],
      useFactory: (config: AppConfig, db: DataSource): FileStorage => {
        const storage = config.storage.s3
          ? new S3FileStorage(config.storage.s3)
          : new DiskFileStorage(join(config.dataDir, 'uploads'), config.publicUrl, new UploadUrlSigner(db));
        storage.idleMs = config.storage.uploadIdleMs;
        return observedStorage(storage);
      },
    },
  ],
  exports: [FileStorage],
})
export class StorageModule {}
