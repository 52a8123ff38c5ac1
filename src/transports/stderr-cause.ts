/**
 * The one stderr line of a process that failed to start that names why: npm's "404 Not Found - GET …
 * <package>", a shell's "command not found", a missing module. A failing start prints many lines — npm
 * ends a 404 with a note about tarballs and the path of its debug log, which say nothing about the cause
 * (and the log path differs per process, so the same failure read twice) — so the last lines are the
 * wrong ones to show.
 */

/** Lines that never name a cause: npm's closing notes, empty `npm error 404` lines. */
const NOISE: readonly RegExp[] = [
  /A complete log of this run can be found in/i,
  /^npm (?:error|ERR!)(?: 404)?\s*$/,
  /Note that you can also install from a\s*$/,
  /tarball, folder, http url, or git url/,
  /^npm (?:error|ERR!) code E[A-Z0-9]+\s*$/,
  /^\s*at .+\(.+\)\s*$/, // a stack frame
];

/** What names a cause, most telling first. */
const CAUSES: readonly RegExp[] = [
  /\b404 Not Found\b/,
  /command not found|: not found$|is not recognized as an internal or external command/i,
  /\b(?:ModuleNotFoundError|Cannot find module|ERR_MODULE_NOT_FOUND|No module named|No such file or directory|ENOENT)\b/,
  /\b(?:E[A-Z]{2,}[A-Z0-9_]*|[A-Z][A-Za-z]*Error)\b/,
  /\b(?:error|fatal|failed)\b/i,
];

export function stderrCause(lines: readonly string[]): string | undefined {
  const useful = lines.map((l) => l.trim()).filter((l) => l.length > 0 && !NOISE.some((n) => n.test(l)));
  for (const cause of CAUSES) {
    const hit = useful.find((l) => cause.test(l));
    if (hit !== undefined) return hit;
  }
  return useful[useful.length - 1];
}
