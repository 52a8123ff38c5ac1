import { stderrCause } from './stderr-cause.js';
import type { CloseInfo } from './types.js';

/**
 * What ended a connection, in a few words — the one describer of a CloseInfo: "exit, exit code 1",
 * "error, connect ECONNREFUSED …, signal SIGKILL". `reason` leads with why it closed; `stderr` ends with
 * the stderr line that names the cause (stderr-cause.ts). Undefined when there is nothing to say.
 */
export function describeClose(info: CloseInfo, parts: { reason?: boolean; stderr?: boolean } = {}): string | undefined {
  const facts: string[] = parts.reason ? [info.reason] : [];
  if (info.error) facts.push(info.error.message);
  if (info.code !== undefined && info.code !== null) facts.push(`exit code ${info.code}`);
  if (info.signal) facts.push(`signal ${info.signal}`);
  const cause = parts.stderr && info.stderrTail ? stderrCause(info.stderrTail) : undefined;
  if (cause !== undefined) facts.push(`stderr: ${cause}`);
  return facts.length > 0 ? facts.join(', ') : undefined;
}
