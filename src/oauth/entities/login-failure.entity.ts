import { Column, Entity, PrimaryColumn } from 'typeorm';

/**
 * Failed sign-ins per email (known or not, so that locking reveals nothing about which emails have
 * accounts): after too many in a row, sign-in for that email is locked for a while.
 */
@Entity({ name: 'login_failures' })
export class LoginFailureEntity {
  /** The email as typed, trimmed and lower-cased. */
  @PrimaryColumn({ type: 'text' })
  email: string;

  @Column({ type: 'integer' })
  failures: number;

  @Column({ name: 'last_failure_at', type: 'timestamptz' })
  lastFailureAt: Date;
}
