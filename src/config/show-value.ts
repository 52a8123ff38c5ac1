/** A value as it appears in an error message: strings quoted, everything else as JSON (never throws). */
export function showValue(input: unknown): string {
  if (input === undefined) return 'nothing';
  if (typeof input === 'bigint') return `${input}n`;
  try {
    return JSON.stringify(input) ?? String(input);
  } catch {
    return String(input);
  }
}
