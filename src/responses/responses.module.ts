import { Module } from '@nestjs/common';
import { FormsModule } from '../forms/forms.module';
import { GetResponseTool } from './get-response.tool';
import { ListResponsesTool } from './list-responses.tool';
import { ResponsesService } from './responses.service';
import { SummarizeResponsesTool } from './summarize-responses.tool';

@Module({
  imports: [FormsModule],
  providers: [ResponsesService, ListResponsesTool, GetResponseTool, SummarizeResponsesTool],
  exports: [ResponsesService],
})
export class ResponsesModule {}
