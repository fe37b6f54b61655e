/** The create_upload tool: apart from UploadsModule, which FormsModule imports (a form's deletion deletes its files). */
import { Module } from '@nestjs/common';
import { FormsModule } from '../forms/forms.module';
import { CreateUploadTool } from './create-upload.tool';
import { UploadsModule } from './uploads.module';

@Module({
  imports: [FormsModule, UploadsModule],
  providers: [CreateUploadTool],
})
export class UploadToolsModule {}
