import { ConsoleLogger, LogLevel } from '@nestjs/common';

/** Nest's own start-up lines (one per module and route): useful only when debugging. */
const BOOT_CONTEXTS = new Set(['InstanceLoader', 'RoutesResolver', 'RouterExplorer', 'NestFactory', 'NestApplication']);

const LEVELS: Record<'debug' | 'info' | 'warn' | 'error', LogLevel[]> = {
  debug: ['debug', 'verbose', 'log', 'warn', 'error', 'fatal'],
  info: ['log', 'warn', 'error', 'fatal'],
  warn: ['warn', 'error', 'fatal'],
  error: ['error', 'fatal'],
};

/** The service's logger: JSON lines in production, readable lines otherwise. */
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
}
