/**
 * Under `--json` a failure is JSON too: `{ok:false, error:{code, message, data?}}` on stdout (the `mcpx:`
 * line still goes to stderr), so a script reading stdout never gets nothing. A command that already
 * printed its JSON (a failed call's outcome, `mcpx tools` with the servers that failed) has said it all.
 */
import { terminalSafeJson } from './terminal-text.js';

let printed = false;

/** Told by printJson: this command's JSON is on stdout. */
export function noteJsonPrinted(): void {
  printed = true;
}

/** Whether the command line asks for JSON (`--json` before any `--`). */
export function wantsJson(argv: readonly string[]): boolean {
  const end = argv.indexOf('--');
  return (end === -1 ? argv : argv.slice(0, end)).includes('--json');
}

interface ErrorBody {
  code: string;
  message: string;
  data?: Record<string, unknown>;
}

/** The error as JSON on stdout, when the command line asked for JSON and nothing was printed yet. */
export function printJsonError(argv: readonly string[], error: ErrorBody): void {
  if (printed || !wantsJson(argv)) return;
  printed = true;
  const body = { ok: false, error: { code: error.code, message: error.message, ...(error.data === undefined ? {} : { data: error.data }) } };
  process.stdout.write(`${terminalSafeJson(JSON.stringify(body, null, 2))}\n`);
}
