import type { CloseInfo } from './types.js';

/**
 * What ended a connection, in a few words — the one describer of a CloseInfo: "exit, exit code 1",
 * "error, connect ECONNREFUSED …, signal SIGKILL". `reason` leads with why it closed; `stderr` ends with
 * the process's last three stderr lines. Undefined when there is nothing to say.
 */
export function describeClose(info: CloseInfo, parts: { reason?: boolean; stderr?: boolean } = {}): string | undefined {
  const facts: string[] = parts.reason ? [info.reason] : [];
  if (info.error) facts.push(info.error.message);
  if (info.code !== undefined && info.code !== null) facts.push(`exit code ${info.code}`);
  if (info.signal) facts.push(`signal ${info.signal}`);
  if (parts.stderr && info.stderrTail && info.stderrTail.length > 0) facts.push(`stderr: ${info.stderrTail.slice(-3).join(' | ')}`);
  return facts.length > 0 ? facts.join(', ') : undefined;
}
