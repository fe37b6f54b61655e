import { Module } from '@nestjs/common';
import { FormsService } from './forms.service';
import { GetFormTool } from './get-form.tool';
import { ListFormsTool } from './list-forms.tool';

@Module({
  providers: [FormsService, ListFormsTool, GetFormTool],
  exports: [FormsService],
})
export class FormsModule {}
