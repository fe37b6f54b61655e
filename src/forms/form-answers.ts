/** FormAnswers: the port through which forms/ reaches the answers to its forms. */
import { EntityManager } from 'typeorm';
import type { AnswerLossCandidate } from './answer-loss';

/**
 * What forms/ needs of the answers to its forms, declared here and implemented by responses/
 * (which depends on forms/, never the other way): a form's creation, edit and deletion reach
 * the answers through this. Every method runs in the caller's transaction.
 */
export abstract class FormAnswers {
  /** Prepares what the answers of a new form need (its counters). */
  abstract formCreated(tx: EntityManager, formId: string): Promise<void>;
  /** How many responses the form has. */
  abstract count(tx: EntityManager, formId: string): Promise<number>;
  /** How many stored answers an edit would discard. */
  abstract countLost(tx: EntityManager, formId: string, loss: AnswerLossCandidate): Promise<number>;
  /** Discards those answers, and exactly them from the aggregates. */
  abstract discard(tx: EntityManager, formId: string, loss: AnswerLossCandidate): Promise<void>;
}
