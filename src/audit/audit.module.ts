import { Global, Module } from '@nestjs/common';
import { AuditRepository } from './audit.repository';
import { AuditService } from './audit.service';

/** The audit trail: written by every write in its own transaction (global, since every feature writes to it). */
@Global()
@Module({ providers: [AuditService, AuditRepository], exports: [AuditService] })
export class AuditModule {}
