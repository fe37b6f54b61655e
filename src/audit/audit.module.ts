/** The audit trail: who changed what in a workspace, recorded by AuditService inside each write's transaction. */
import { Global, Module } from '@nestjs/common';
import { AuditService } from './audit.service';

@Global()
@Module({ providers: [AuditService], exports: [AuditService] })
export class AuditModule {}
