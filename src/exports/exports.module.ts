/** Exports of responses (issue 26): the export_responses tool, its link (stored grant), and the route that streams it. */
import { Module } from '@nestjs/common';
import { FilesModule } from '../files/files.module';
import { FormsModule } from '../forms/forms.module';
import { RateLimitModule } from '../rate-limit/rate-limit.module';
import { ResponsesModule } from '../responses/responses.module';
import { TypeOrmModule } from '@nestjs/typeorm';
import { ExportLinkEntity } from './entities/export-link.entity';
import { ExportLinkStore } from './export-link';
import { ExportResponsesTool } from './export-responses.tool';
import { ExportsController } from './exports.controller';
import { ExportsRepository } from './exports.repository';
import { ExportsService } from './exports.service';

@Module({
  imports: [TypeOrmModule.forFeature([ExportLinkEntity]), FormsModule, ResponsesModule, RateLimitModule, FilesModule],
  controllers: [ExportsController],
  providers: [ExportsService, ExportsRepository, ExportLinkStore, ExportResponsesTool],
  // The results pages' downloads make the same links (src/results).
  exports: [ExportsService],
})
export class ExportsModule {}
