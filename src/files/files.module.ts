/** Reading files (issue 35): file answers as reads show them, their download links and the route that serves them. */
import { Module } from '@nestjs/common';
import { ExportsRepository } from '../exports/exports.repository';
import { RateLimitModule } from '../rate-limit/rate-limit.module';
import { UploadsModule } from '../uploads/uploads.module';
import { FileAnswers } from './file-answers.service';
import { FileLinks } from './file-links';
import { FilesController } from './files.controller';

@Module({
  imports: [UploadsModule, RateLimitModule],
  controllers: [FilesController],
  // ExportsRepository: the re-check of a link's credential, the same as an export link's.
  providers: [FileLinks, FileAnswers, ExportsRepository],
  exports: [FileAnswers, FileLinks],
})
export class FilesModule {}
