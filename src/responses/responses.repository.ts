import { Injectable } from '@nestjs/common';
import { EntityManager } from 'typeorm';
import type { AnswerLossCandidate } from '../forms/answer-loss';

/** The SQL of the table responses (its aggregates are in ResponseStatsRepository). */
@Injectable()
export class ResponsesRepository {
  /** How many responses the form has. */
  async count(manager: EntityManager, formId: string): Promise<number> {
    const [{ n }] = await manager.query('SELECT count(*)::int AS n FROM responses WHERE form_id = $1', [formId]);
    return n;
  }

  /** How many responses hold an answer that `loss` would discard. */
  async countLost(manager: EntityManager, formId: string, loss: AnswerLossCandidate): Promise<number> {
    const [{ n }] = await manager.query(
      `SELECT count(*)::int AS n FROM responses WHERE form_id = $1 AND ${lossCondition(loss)}`,
      loss.kind === 'choice_removed' ? [formId, loss.blockId, loss.choiceId] : [formId, loss.blockId],
    );
    return n;
  }
}

/** SQL condition (on responses) for the answers a loss candidate would discard; $2 block id, $3 choice id. */
function lossCondition(c: AnswerLossCandidate): string {
  if (c.kind !== 'choice_removed') return 'answers ? $2';
  return c.multiple ? '(answers -> $2) ? $3' : 'answers ->> $2 = $3';
}
