/** The audit trail: who changed what in a workspace, recorded by AuditService inside each write's transaction. */
import { Global, Module } from '@nestjs/common';
import { TypeOrmModule } from '@nestjs/typeorm';
import { AuditEventEntity } from './entities/audit-event.entity';
import { AuditRepository } from './audit.repository';
import { AuditService } from './audit.service';

/** The audit trail: written by every write in its own transaction (global, since every feature writes to it). */
@Global()
@Module({
  imports: [TypeOrmModule.forFeature([AuditEventEntity])],
  providers: [AuditService, AuditRepository],
  exports: [AuditService],
})
export class AuditModule {}
