import { Global, Module } from '@nestjs/common';
import { FormAnswers } from '../forms/form-answers';
import { ResponsesFormAnswers } from './form-answers.service';
import { ResponseStatsRepository } from '../summaries/response-stats.repository';
import { ResponsesRepository } from './responses.repository';

/**
 * Provides forms/' FormAnswers port, implemented by responses/, and the repositories of responses
 * (which ResponsesModule uses). Global, and imported once by the
 * app's wiring (the service and the CLI), because FormsModule cannot import responses/, which
 * imports it.
 */
@Global()
@Module({
  providers: [ResponsesRepository, ResponseStatsRepository, { provide: FormAnswers, useClass: ResponsesFormAnswers }],
  exports: [FormAnswers, ResponsesRepository, ResponseStatsRepository],
})
export class FormAnswersModule {}
