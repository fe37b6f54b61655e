/** responses/' implementation of forms/' FormAnswers port. */
import { Injectable } from '@nestjs/common';
import { EntityManager } from 'typeorm';
import type { AnswerLossCandidate } from '../forms/answer-loss';
import { FormAnswers } from '../forms/form-answers';
import { ResponsesRepository } from './responses.repository';
import { ResponseStatsRepository } from '../summaries/response-stats.repository';

/** responses/' side of FormAnswers: what a form's creation, edit and deletion do to its answers. */
@Injectable()
export class ResponsesFormAnswers implements FormAnswers {
  constructor(
    private readonly responses: ResponsesRepository,
    private readonly stats: ResponseStatsRepository,
  ) {}

  async formCreated(tx: EntityManager, formId: string): Promise<void> {
    await this.stats.createCounters(tx, formId);
  }

  count(tx: EntityManager, formId: string): Promise<number> {
    return this.responses.count(tx, formId);
  }

  countLost(tx: EntityManager, formId: string, loss: AnswerLossCandidate): Promise<number> {
    return this.responses.countLost(tx, formId, loss);
  }

  async discard(tx: EntityManager, formId: string, loss: AnswerLossCandidate): Promise<void> {
    if (loss.kind === 'variable_removed' || loss.kind === 'ending_removed') {
      await this.stats.discardOutcome(tx, formId, loss.kind, loss.blockId);
      return this.responses.discardOutcome(tx, formId, loss);
    }
    return this.stats.discardAnswers(tx, formId, { ...loss, kind: loss.kind });
  }
}
