import { ConsoleLogger, LogLevel } from '@nestjs/common';
import { currentRequestContext } from './request-context';

/** Nest's own start-up lines (one per module and route): useful only when debugging. */
const BOOT_CONTEXTS = new Set(['InstanceLoader', 'RoutesResolver', 'RouterExplorer', 'NestFactory', 'NestApplication']);

const LEVELS: Record<'debug' | 'info' | 'warn' | 'error', LogLevel[]> = {
  debug: ['debug', 'verbose', 'log', 'warn', 'error', 'fatal'],
  info: ['log', 'warn', 'error', 'fatal'],
  warn: ['warn', 'error', 'fatal'],
  error: ['error', 'fatal'],
};

/** The service's logger: JSON lines in production (with the request id of the request being served), readable lines otherwise. */
export class AppLogger extends ConsoleLogger {
  private readonly showBoot: boolean;

  constructor(level: keyof typeof LEVELS, json: boolean) {
    super('Formwork', { json, logLevels: LEVELS[level] });
    this.showBoot = level === 'debug';
  }

  log(message: unknown, ...rest: unknown[]) {
    const context = rest[rest.length - 1];
    if (!this.showBoot && typeof context === 'string' && BOOT_CONTEXTS.has(context)) return;
    super.log(message, ...(rest as [string]));
  }

  protected getJsonLogObject(message: unknown, options: { context: string; logLevel: LogLevel; writeStreamType?: 'stdout' | 'stderr'; errorStack?: unknown }) {
    const line = super.getJsonLogObject(message, options);
    const requestId = currentRequestContext()?.requestId;
    return requestId === undefined ? line : { ...line, requestId };
  }
}
