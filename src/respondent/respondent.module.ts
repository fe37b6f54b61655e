import { MiddlewareConsumer, Module, NestModule, RequestMethod } from '@nestjs/common';
import express from 'express';
import { FormsModule } from '../forms/forms.module';
import { ResponsesModule } from '../responses/responses.module';
import { WorkspacesModule } from '../workspaces/workspaces.module';
import { RespondentController } from './respondent.controller';

@Module({ imports: [FormsModule, ResponsesModule, WorkspacesModule], controllers: [RespondentController] })
export class RespondentModule implements NestModule {
  configure(consumer: MiddlewareConsumer) {
    // Browser form posts: flat fields, repeated names (checkboxes) as lists.
    consumer.apply(express.urlencoded({ extended: false, limit: '200kb', parameterLimit: 1000 })).forRoutes({ path: 'f/*path', method: RequestMethod.POST });
  }
}
