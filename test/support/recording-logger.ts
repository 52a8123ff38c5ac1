/** A logger that keeps every line it is given, for tests that check what was (or was not) logged. */
import type { Logger } from '../../src/log.js';

export interface LogRecord {
  level: string;
  obj: Record<string, unknown>;
  msg: string | undefined;
}

/** Fits both the transports' logger and src/log.ts's Logger (children log into the same records). */
export function recordingLogger(): { logger: Logger; records: LogRecord[] } {
  const records: LogRecord[] = [];
  const at = (level: string) => (obj: object, msg?: string) => void records.push({ level, obj: obj as Record<string, unknown>, msg });
  const logger: Logger = { debug: at('debug'), info: at('info'), warn: at('warn'), error: at('error'), child: () => logger };
  return { logger, records };
}
