import { Module } from '@nestjs/common';
import { FormsModule } from '../forms/forms.module';
import { ResponsesModule } from '../responses/responses.module';
import { RespondentController } from './respondent.controller';

@Module({ imports: [FormsModule, ResponsesModule], controllers: [RespondentController] })
export class RespondentModule {}
