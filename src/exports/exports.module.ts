/** Exports of responses (issue 26): the export_responses tool, its signed link, and the route that streams it. */
import { Module } from '@nestjs/common';
import { FormsModule } from '../forms/forms.module';
import { RateLimitModule } from '../rate-limit/rate-limit.module';
import { ResponsesModule } from '../responses/responses.module';
import { ExportLinkSigner } from './export-link';
import { ExportResponsesTool } from './export-responses.tool';
import { ExportsController } from './exports.controller';
import { ExportsRepository } from './exports.repository';
import { ExportsService } from './exports.service';

@Module({
  imports: [FormsModule, ResponsesModule, RateLimitModule],
  controllers: [ExportsController],
  providers: [ExportsService, ExportsRepository, ExportLinkSigner, ExportResponsesTool],
  // The results pages' downloads make the same links (src/results).
  exports: [ExportsService],
})
export class ExportsModule {}
