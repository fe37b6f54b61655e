/** The demo workspace: its owner, token, forms and responses, created on a first start so a newcomer has something to call. */
import { Module } from '@nestjs/common';
import { FormsModule } from '../forms/forms.module';
import { ResponsesModule } from '../responses/responses.module';
import { TokensModule } from '../tokens/tokens.module';
import { WorkspacesModule } from '../workspaces/workspaces.module';
import { DemoService } from './demo.service';

@Module({
  imports: [WorkspacesModule, TokensModule, FormsModule, ResponsesModule],
  providers: [DemoService],
  exports: [DemoService],
})
export class DemoModule {}
