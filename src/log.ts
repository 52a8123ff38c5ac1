/**
 * The logger shape mcpx code depends on: pino's, reduced to what we call, so tests and
 * library users can pass any compatible logger. `silentLogger` drops everything.
 */
import { pino } from 'pino';

export interface Logger {
  debug(obj: object, msg?: string): void;
  info(obj: object, msg?: string): void;
  warn(obj: object, msg?: string): void;
  error(obj: object, msg?: string): void;
  child(bindings: Record<string, unknown>): Logger;
}

export const silentLogger: Logger = pino({ level: 'silent' });
