import { PrimaryColumn } from 'typeorm';

/**
 * A uuid primary key filled by PostgreSQL's built-in gen_random_uuid() (PostgreSQL 13+), so no
 * extension has to be installed (TypeORM's 'uuid' strategy wants uuid-ossp, which the embedded
 * PostgreSQL lacks).
 */
export const UuidPrimaryKey = () => PrimaryColumn({ type: 'uuid', default: () => 'gen_random_uuid()' });
