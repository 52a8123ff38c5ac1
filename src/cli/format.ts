/** Readable output for the CLI: aligned columns, durations, and the one-line error form. */

/** Columns padded to their widest cell, two spaces apart; the last column is not padded. */
export function table(headers: readonly string[], rows: ReadonlyArray<ReadonlyArray<string | number | null | undefined>>): string {
  const cells = [headers.map(String), ...rows.map((r) => headers.map((_, i) => cell(r[i])))];
  // A loop, not Math.max(...column): spread arguments overflow the stack past ~100k rows.
  const widths = headers.map(() => 0);
  for (const r of cells) for (let i = 0; i < widths.length; i++) widths[i] = Math.max(widths[i]!, width(r[i] ?? ''));
  return cells
    .map((r) =>
      r
        .map((c, i) => (i === r.length - 1 ? c : c + ' '.repeat(widths[i]! - width(c))))
        .join('  ')
        .trimEnd(),
    )
    .join('\n');
}

function cell(v: string | number | null | undefined): string {
  if (v === null || v === undefined || v === '') return '-';
  return String(v).replace(/\s*\n\s*/g, ' ');
}

/** Display width, counting each code point as one column. */
function width(s: string): number {
  return [...s].length;
}

/** 1234 → `1.2s`, 65000 → `1m5s`, 3_700_000 → `1h1m`. */
export function ago(ms: number): string {
  if (ms < 1_000) return `${Math.round(ms)}ms`;
  if (ms < 60_000) return `${(ms / 1_000).toFixed(1)}s`;
  const m = Math.floor(ms / 60_000);
  if (m < 60) return `${m}m${Math.floor((ms % 60_000) / 1_000)}s`;
  return `${Math.floor(m / 60)}h${m % 60}m`;
}

/** A text cut to `max` characters. */
export function clip(text: string | undefined, max = 60): string {
  if (!text) return '';
  const t = text.replace(/\s+/g, ' ').trim();
  return t.length > max ? `${t.slice(0, max - 1)}…` : t;
}

/** What `mcpx status` and `mcpx servers` say of a config edit the daemon refused: a line, then one problem a line. */
export function rejectedEditLines(r: { file: string | null; at: string; problems: string[] } | undefined): string[] {
  if (r === undefined) return [];
  const n = r.problems.length;
  return [
    `the last edit of ${r.file ?? 'the config'} was rejected at ${r.at} (${n} problem${n === 1 ? '' : 's'}); the config before it stays in force until the file is fixed:`,
    ...r.problems.map((p) => `  ${p}`),
  ];
}
