/**
 * Text from an upstream on its way to a terminal (issue 14). A tool result, an error message or a
 * question is the upstream's text, and a terminal obeys what it contains: OSC 0 retitles the window,
 * OSC 52 writes the clipboard, OSC 8 makes a link whose target is not what it shows, CSI moves the
 * cursor and erases lines, and a bare CR overwrites the line it ends. So every control character but
 * newline and tab is shown escaped (`\x1b`, `\r`, `\x9b`), as are the bidirectional overrides that
 * reorder what is shown; the sequence is visible and does nothing.
 */

/** C0 but tab and newline, DEL, C1, and the Unicode bidi embeddings/overrides/isolates. */
const UNSAFE = /[\u0000-\u0008\u000b-\u001f\u007f-\u009f\u202a-\u202e\u2066-\u2069]/g;

const escape = (c: string): string => {
  const n = c.charCodeAt(0);
  if (n === 0x0d) return '\\r';
  return n <= 0xff ? `\\x${n.toString(16).padStart(2, '0')}` : `\\u${n.toString(16).padStart(4, '0')}`;
};

/** `text` with its terminal control characters escaped visibly; plain text, newlines and tabs unchanged. */
export function terminalSafe(text: string): string {
  return text.replace(UNSAFE, escape);
}

/**
 * JSON text made safe the same way and still the same JSON: `JSON.stringify` escapes C0 itself; DEL,
 * C1 and the bidi controls it leaves raw become `\u` escapes, which parse back to the same string.
 */
export function terminalSafeJson(json: string): string {
  return json.replace(UNSAFE, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`);
}
