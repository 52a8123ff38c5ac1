/**
 * The top level of newline-delimited JSON-RPC, read from bytes as they stream past: each line's `id`,
 * its `method`, and whether it carries `result` or `error`, without parsing or holding the message.
 * `mcpx serve` copies messages between its client and the daemon and needs only this much of each (which
 * requests are open, which are answered, which messages are the daemon's own requests), whatever their
 * size; the stdin gate uses it to name the id of a line too long to keep.
 *
 * JSON has no raw newline inside a value, so a newline always ends the message; a line that is not a
 * JSON object just reports nothing. Structural characters are ASCII, and no byte of a multi-byte UTF-8
 * character is, so bytes are scanned as they come (a chunk may end anywhere).
 */

export interface LineFacts {
  /** The top-level `id` (absent: none, or not a string, number or null). */
  id?: string | number | null;
  /** The top-level `method`, when it is a string. */
  method?: string;
  /** A top-level `result` or `error` key: an answer, and which (`error` when it has both). */
  answer?: 'result' | 'error';
  /** Bytes in the line, its newline excluded. */
  bytes: number;
}

const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const NEWLINE = 0x0a;
const COLON = 0x3a;
const COMMA = 0x2c;
const OPEN_OBJECT = 0x7b;
const CLOSE_OBJECT = 0x7d;
const OPEN_ARRAY = 0x5b;
const CLOSE_ARRAY = 0x5d;
const SPACE = 0x20;
const TAB = 0x09;
const RETURN = 0x0d;

/** A key longer than this (as written, escapes included) is none of the ones looked for. */
const MAX_KEY = 48;
/** An `id` or `method` value longer than this is not kept (no real one is). */
const MAX_VALUE = 512;

export class LineScanner {
  private depth = 0;
  private inString = false;
  private escaped = false;
  /** At depth 1, the next string is a key (after `{` or `,`), not a value. */
  private keyNext = false;
  private key: number[] | undefined;
  /** The key whose value is being read at depth 1. */
  private current = '';
  private value: number[] | undefined;
  private facts: Omit<LineFacts, 'bytes'> = {};
  private bytes = 0;
  /** The line's object has closed. */
  private closed = false;
  /** Something other than one object on the line: it says nothing. */
  private junk = false;

  /** `onLine` is called at each newline with what that line's top level said, and where in the pushed bytes the line ended (past its newline). */
  constructor(private readonly onLine: (facts: LineFacts, end: number) => void) {}

  push(buf: Uint8Array): void {
    const end = buf.length;
    let i = 0;
    let from = 0;
    while (i < end) {
      let c = buf[i]!;
      if (this.inString) {
        if (this.escaped) {
          this.escaped = false;
          this.char(c);
          i++;
          continue;
        }
        // The body of a string, in one tight loop: most of a message's bytes are here.
        if (this.key === undefined && this.value === undefined) {
          while (i < end && (c = buf[i]!) !== QUOTE && c !== BACKSLASH && c !== NEWLINE) i++;
          if (i === end) break;
        }
        if (c === BACKSLASH) this.escaped = true;
        else if (c === QUOTE) {
          this.inString = false;
          if (this.key !== undefined) {
            this.current = this.key.length <= MAX_KEY ? decodeKey(this.key) : '';
            this.key = undefined;
            if (this.current === 'error' || (this.current === 'result' && this.facts.answer === undefined)) this.facts.answer = this.current;
            i++;
            continue;
          }
        } else if (c === NEWLINE) {
          this.bytes += i - from;
          this.endLine(i + 1);
          from = ++i;
          continue;
        }
        this.char(c);
        i++;
        continue;
      }
      if (this.depth === 0 && c !== NEWLINE && c !== SPACE && c !== TAB && c !== RETURN && (c !== OPEN_OBJECT || this.closed || this.junk)) {
        this.junk = true;
        const nl = buf.indexOf(NEWLINE, i);
        i = nl === -1 ? end : nl;
        continue;
      }
      switch (c) {
        case NEWLINE:
          this.bytes += i - from;
          this.endLine(i + 1);
          from = i + 1;
          break;
        case QUOTE:
          this.inString = true;
          if (this.depth === 1 && this.keyNext) {
            this.keyNext = false;
            this.key = [];
          } else this.take(c);
          break;
        case OPEN_OBJECT:
        case OPEN_ARRAY:
          this.depth++;
          if (this.depth === 1) this.keyNext = c === OPEN_OBJECT;
          else if (this.depth === 2) this.value = undefined; // a structured id or method is none
          break;
        case CLOSE_OBJECT:
        case CLOSE_ARRAY:
          if (this.depth === 1) this.endValue();
          this.depth--;
          if (this.depth === 0) this.closed = true;
          break;
        case COMMA:
          if (this.depth === 1) {
            this.endValue();
            this.keyNext = true;
          } else this.take(c);
          break;
        case COLON:
          if (this.depth === 1 && (this.current === 'id' || this.current === 'method')) this.value = [];
          else this.take(c);
          break;
        default:
          this.take(c);
      }
      i++;
    }
    this.bytes += i - from;
  }

  /** A byte inside a string (escapes kept as written): of the key being read, or of the value being kept. */
  private char(c: number): void {
    if (this.key === undefined) this.take(c);
    else if (this.key.length <= MAX_KEY) this.key.push(c);
  }

  /** A byte of the value being kept, if one is. */
  private take(c: number): void {
    if (this.value === undefined || this.depth !== 1) return;
    if (this.value.length < MAX_VALUE) this.value.push(c);
    else this.value = undefined;
  }

  private endValue(): void {
    const raw = this.value;
    const key = this.current;
    this.value = undefined;
    this.current = '';
    if (raw === undefined) return;
    let v: unknown;
    if (raw.length > 0 && raw.length < 16 && raw.every((c) => c >= 0x30 && c <= 0x39))
      v = Number(String.fromCharCode(...raw)); // a plain id
    else {
      try {
        v = JSON.parse(Buffer.from(raw).toString('utf8'));
      } catch {
        return;
      }
    }
    if (key === 'id' && (typeof v === 'string' || typeof v === 'number' || v === null)) this.facts.id = v;
    else if (key === 'method' && typeof v === 'string') this.facts.method = v;
  }

  private endLine(end: number): void {
    const facts: LineFacts = this.closed && !this.junk ? { ...this.facts, bytes: this.bytes } : { bytes: this.bytes };
    this.depth = 0;
    this.inString = false;
    this.escaped = false;
    this.keyNext = false;
    this.key = undefined;
    this.value = undefined;
    this.current = '';
    this.facts = {};
    this.bytes = 0;
    this.closed = false;
    this.junk = false;
    this.onLine(facts, end);
  }
}

/** A key's characters as written between its quotes. */
function decodeKey(raw: number[]): string {
  if (!raw.includes(BACKSLASH)) return String.fromCharCode(...raw); // the keys looked for are ASCII
  try {
    return JSON.parse(`"${String.fromCharCode(...raw)}"`) as string;
  } catch {
    return '';
  }
}
