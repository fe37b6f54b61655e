import { Global, Module } from '@nestjs/common';
import { FormAnswers } from '../forms/form-answers';
import { ResponsesFormAnswers } from './form-answers.service';
import { ResponsesRepository } from './responses.repository';

/**
 * Provides forms/' FormAnswers port, implemented by responses/. Global, and imported once by the
 * app's wiring (the service and the CLI), because FormsModule cannot import responses/, which
 * imports it.
 */
@Global()
@Module({
  providers: [ResponsesRepository, { provide: FormAnswers, useClass: ResponsesFormAnswers }],
  exports: [FormAnswers, ResponsesRepository],
})
export class FormAnswersModule {}
