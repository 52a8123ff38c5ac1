/**
 * Reading a client's servers out of its file and changing only the servers mcpx moves, keeping every other
 * byte (comments, order, formatting, other settings). JSON with comments goes through jsonc-parser's
 * `modify`; TOML (Codex) by replacing whole `[mcp_servers.NAME]` tables in the text, checked afterwards by
 * parsing both texts: anything else changed and nothing is written.
 */
import { applyEdits, modify, parse as parseJsonc, ParseErrorCode, visit, type FormattingOptions, type ParseError } from 'jsonc-parser';
import { parse as parseToml, TomlError } from 'smol-toml';
import { McpxError } from '../errors.js';
import { isObject } from '../is-object.js';

export type ServerMap = Record<string, Record<string, unknown>>;

export interface ParsedFile {
  /** The whole document (undefined for an absent or empty file). */
  doc: Record<string, unknown>;
  servers: ServerMap;
}

function lineCol(text: string, offset: number): { line: number; column: number } {
  let line = 1;
  let start = 0;
  for (let i = 0; i < offset && i < text.length; i++)
    if (text.charCodeAt(i) === 10) {
      line++;
      start = i + 1;
    }
  return { line, column: offset - start + 1 };
}

function parseError(file: string, line: number, column: number, what: string): McpxError {
  return new McpxError(
    'MCPX_INSTALL_PARSE',
    `${file}:${line}:${column}: ${what} (line ${line}, column ${column}); mcpx does not change a file it cannot read back (fix it, or move it away)`,
    {
      data: { file, line, column },
    },
  );
}

/** What a JSON syntax error is, in words (jsonc-parser names it `CloseBraceExpected` and the like). */
function syntaxInWords(code: ParseErrorCode, text: string, offset: number): string {
  switch (code) {
    case ParseErrorCode.InvalidSymbol:
      return `unexpected ${JSON.stringify(text.slice(offset, offset + 1))}`;
    case ParseErrorCode.InvalidNumberFormat:
      return 'a number that is not written as JSON writes numbers';
    case ParseErrorCode.PropertyNameExpected:
      return 'expected a property name in double quotes';
    case ParseErrorCode.ValueExpected:
      return 'expected a value';
    case ParseErrorCode.ColonExpected:
      return 'expected `:`';
    case ParseErrorCode.CommaExpected:
      return 'expected `,`';
    case ParseErrorCode.CloseBraceExpected:
      return 'expected `}`';
    case ParseErrorCode.CloseBracketExpected:
      return 'expected `]`';
    case ParseErrorCode.EndOfFileExpected:
      return 'expected the end of the file (something follows the closing `}`)';
    case ParseErrorCode.InvalidCommentToken:
      return 'a comment that is not `//` or `/*`';
    case ParseErrorCode.UnexpectedEndOfComment:
      return 'a `/*` comment that is never closed';
    case ParseErrorCode.UnexpectedEndOfString:
      return 'a string that is never closed (a missing `"`)';
    case ParseErrorCode.UnexpectedEndOfNumber:
      return 'a number cut short';
    case ParseErrorCode.InvalidUnicode:
      return 'a `\\u` escape that is not four hex digits';
    case ParseErrorCode.InvalidEscapeCharacter:
      return 'an escape (`\\`) JSON does not have';
    case ParseErrorCode.InvalidCharacter:
      return 'a control character (a tab, a line end) inside a string';
    default:
      return 'a syntax error';
  }
}

/** A UTF-8 byte order mark some Windows editors put first: read past it, written back as it was. */
const BOM = '\uFEFF';
function splitBom(text: string): [string, string] {
  return text.startsWith(BOM) ? [BOM, text.slice(1)] : ['', text];
}

/**
 * The first key written twice in the top-level object or in the servers object. JSON parsers keep the
 * last one, but an edit goes into the first: the client would never see it.
 */
function duplicateKey(text: string, key: string): { name: string; offset: number; inServers: boolean } | undefined {
  const stack: Array<Set<string> | undefined> = [];
  let found: { name: string; offset: number; inServers: boolean } | undefined;
  visit(
    text,
    {
      onObjectBegin: (_o, _l, _sl, _sc, path) => {
        const depth = stack.length;
        const p = depth === 1 ? path() : undefined;
        stack.push(depth === 0 || (p !== undefined && p.length === 1 && p[0] === key) ? new Set() : undefined);
      },
      onObjectEnd: () => {
        stack.pop();
      },
      onObjectProperty: (name, offset) => {
        const seen = stack[stack.length - 1];
        if (seen === undefined || found !== undefined) return;
        if (seen.has(name)) found = { name, offset, inServers: stack.length > 1 };
        seen.add(name);
      },
    },
    { allowTrailingComma: true, disallowComments: false },
  );
  return found;
}

/** The document and its servers under `key`; a syntax error is refused with its line and column. */
export function parseClientFile(text: string | undefined, format: 'json' | 'toml', key: string, file: string): ParsedFile {
  if (text === undefined || text.trim() === '') return { doc: {}, servers: {} };
  const [, body] = splitBom(text);
  let doc: unknown;
  if (format === 'json') {
    const errors: ParseError[] = [];
    doc = parseJsonc(body, errors, { allowTrailingComma: true, disallowComments: false });
    if (errors.length > 0) {
      const e = errors[0]!;
      const { line, column } = lineCol(body, e.offset);
      throw parseError(file, line, column, syntaxInWords(e.error, body, e.offset));
    }
    const dup = duplicateKey(body, key);
    if (dup !== undefined) {
      const { line, column } = lineCol(body, dup.offset);
      throw parseError(
        file,
        line,
        column,
        `${JSON.stringify(dup.name)} is written twice${dup.inServers ? ` in "${key}"` : ''}; the client reads the last one and an edit would go into the first`,
      );
    }
  } else {
    try {
      doc = parseToml(body);
    } catch (err) {
      if (err instanceof TomlError) throw parseError(file, err.line, err.column, err.message.split('\n')[0] ?? 'invalid TOML');
      throw err;
    }
  }
  if (!isObject(doc)) throw parseError(file, 1, 1, 'the top level is not an object');
  const servers = Object.hasOwn(doc, key) ? doc[key] : undefined;
  if (servers === undefined) return { doc, servers: Object.create(null) as ServerMap };
  if (!isObject(servers)) throw new McpxError('MCPX_INSTALL_PARSE', `${file}: "${key}" is not an object; mcpx leaves the file as it is`, { data: { file } });
  // No prototype: a server named `constructor` or `toString` is a name like any other.
  const out = Object.create(null) as ServerMap;
  for (const [name, v] of Object.entries(servers)) if (isObject(v)) out[name] = v;
  return { doc, servers: out };
}

/** Indentation and line ends as the file already has them, so added lines look like the rest. */
function formatting(text: string): FormattingOptions {
  const eol = text.includes('\r\n') ? '\r\n' : '\n';
  const m = /\n([ \t]+)\S/.exec(text);
  const indent = m?.[1] ?? '  ';
  return indent.startsWith('\t') ? { insertSpaces: false, tabSize: 1, eol } : { insertSpaces: true, tabSize: indent.length, eol };
}

export interface ServerChange {
  /** Servers to take out of the file. */
  remove: readonly string[];
  /** Servers to add or replace (in place when the name is there already). */
  set: Readonly<Record<string, Record<string, unknown>>>;
}

/** Applies `change` under `key` and returns the new text (`text` undefined: a new file). */
export function editJson(text: string | undefined, key: string, change: ServerChange): string {
  const [bom, body] = splitBom(text ?? '');
  const t = body.trim() === '' ? '{}\n' : body;
  const fmt = formatting(t === '{}\n' ? '{\n  "x": 1\n}' : t);
  const apply = (doc: string, plainOnly: boolean): string => {
    let d = doc;
    for (const name of change.remove) d = edit(d, [key, name], undefined, fmt, plainOnly);
    for (const [name, entry] of Object.entries(change.set)) d = plainOnly ? edit(d, [key, name], entry, fmt, true) : put(d, key, name, entry, fmt);
    return d;
  };
  return bom + (editInPlace(t, key, fmt.eol ?? '\n', apply) ?? apply(t, false));
}

/** One member of an object: where its name starts, where its value starts and ends. */
interface Member {
  name: string;
  start: number;
  valueStart: number;
  end: number;
}

/** An object in the text: its braces, its members, and a comma after the last one (a trailing comma). */
interface ObjectLayout {
  /** Where the name of the property holding the object starts (none for the top level). */
  keyStart?: number;
  open: number;
  close: number;
  members: Member[];
  trailingComma?: number;
}

/** The object at `path` (`[]`: the top level), read in one streaming pass (no tree). */
function objectLayout(text: string, path: readonly string[]): ObjectLayout | undefined {
  const stack: Array<{ object: boolean; prop?: string; propAt?: number }> = [];
  let depth = -1; // the target's depth in `stack` once found
  let layout: ObjectLayout | undefined;
  let done = false;
  let pending: { name: string; start: number; valueStart?: number } | undefined;
  const inside = () => layout !== undefined && !done && stack.length === depth;
  const valueBegins = (offset: number) => {
    if (inside() && pending !== undefined) pending.valueStart = offset;
  };
  const valueEnds = (end: number) => {
    if (inside() && pending?.valueStart !== undefined) layout!.members.push({ ...pending, valueStart: pending.valueStart, end });
    if (inside()) pending = undefined;
  };
  visit(
    text,
    {
      onObjectBegin: (offset) => {
        if (layout === undefined && stack.length === path.length && stack.every((c, i) => c.object && c.prop === path[i])) {
          const parent = stack[stack.length - 1];
          layout = { ...(parent?.propAt === undefined ? {} : { keyStart: parent.propAt }), open: offset, close: -1, members: [] };
          depth = stack.length + 1;
        } else valueBegins(offset);
        stack.push({ object: true });
      },
      onObjectEnd: (offset, length) => {
        stack.pop();
        if (layout !== undefined && !done && stack.length === depth - 1) {
          layout.close = offset;
          done = true;
        } else valueEnds(offset + length);
      },
      onArrayBegin: (offset) => {
        valueBegins(offset);
        stack.push({ object: false });
      },
      onArrayEnd: (offset, length) => {
        stack.pop();
        valueEnds(offset + length);
      },
      onObjectProperty: (name, offset) => {
        const top = stack[stack.length - 1];
        if (top?.object) {
          top.prop = name;
          top.propAt = offset;
        }
        if (inside()) {
          pending = { name, start: offset };
          delete layout!.trailingComma;
        }
      },
      onLiteralValue: (_v, offset, length) => {
        valueBegins(offset);
        valueEnds(offset + length);
      },
      onSeparator: (ch, offset) => {
        if (ch === ',' && inside()) layout!.trailingComma = offset;
      },
    },
    { allowTrailingComma: true, disallowComments: false },
  );
  return done ? layout : undefined;
}

/** The blanks a line starts with (the line holding `at`). */
function lineIndent(text: string, at: number): string {
  const start = text.lastIndexOf('\n', at - 1) + 1;
  return /^[ \t]*/.exec(text.slice(start, at))![0];
}

/** The blanks before `at` when nothing else precedes it on its line, else undefined. */
function ownLineIndent(text: string, at: number): string | undefined {
  const before = text.slice(text.lastIndexOf('\n', at - 1) + 1, at);
  return /^[ \t]*$/.test(before) ? before : undefined;
}

/** JSON on one line, `{ "a": 1, "b": [2] }` when `spaced` (as people write it by hand), else compact. */
function inline(v: unknown, spaced: boolean): string {
  if (!spaced) return JSON.stringify(v);
  if (Array.isArray(v)) return `[${v.map((x) => inline(x, true)).join(', ')}]`;
  if (isObject(v)) {
    const e = Object.entries(v).filter(([, x]) => x !== undefined);
    return e.length === 0 ? '{}' : `{ ${e.map(([k, x]) => `${JSON.stringify(k)}: ${inline(x, true)}`).join(', ')} }`;
  }
  return JSON.stringify(v);
}

/** A one-line entry longer than this goes on several lines even where the others are one-liners. */
const INLINE_ENTRY_LIMIT = 120;

/**
 * Adds or replaces the member `name` of the object `key` (the object made when missing), written as the
 * file is: on the object's line when the object is on one line; else on a line of its own with the
 * members' indentation and the file's line ends, on one line when every other member is a one-liner and
 * the entry is short, else laid out with the file's indentation unit.
 */
function put(text: string, key: string, name: string, value: unknown, fmt: FormattingOptions): string {
  const servers = objectLayout(text, [key]);
  if (servers !== undefined) return setMember(text, servers, name, value, fmt);
  const root = objectLayout(text, []);
  return root === undefined ? edit(text, [key, name], value, fmt, false) : setMember(text, root, key, { [name]: value }, fmt);
}

function setMember(text: string, o: ObjectLayout, name: string, value: unknown, fmt: FormattingOptions): string {
  const eol = fmt.eol ?? '\n';
  // `"a": 1` or `"a":1`, as the object (and its own name) is written
  const from = o.keyStart ?? o.open;
  const spaced = /":\s/.test(text.slice(from, Math.min(o.close, from + FORMAT_LINE_LIMIT)));
  const fileUnit = fmt.insertSpaces === false ? '\t' : ' '.repeat(fmt.tabSize ?? 2);
  const oneLiners = o.members.length > 0 && o.members.every((m) => !text.slice(m.valueStart, m.end).includes('\n'));
  const laidOut = (indent: string, unit: string): string => {
    const short = inline(value, spaced);
    return oneLiners && short.length <= INLINE_ENTRY_LIMIT
      ? short
      : JSON.stringify(value, null, unit)
          .split('\n')
          .join(eol + indent);
  };
  const objIndent = lineIndent(text, o.open);
  const last = o.members[o.members.length - 1];
  const memberIndent = (last === undefined ? undefined : ownLineIndent(text, last.start)) ?? objIndent + fileUnit;
  const unit = memberIndent.startsWith(objIndent) && memberIndent.length > objIndent.length ? memberIndent.slice(objIndent.length) : fileUnit;

  const existing = o.members.find((m) => m.name === name);
  if (existing !== undefined) {
    const old = text.slice(existing.valueStart, existing.end);
    const v = !old.includes('\n') && !oneLiners ? inline(value, spaced) : laidOut(lineIndent(text, existing.start), unit);
    return text.slice(0, existing.valueStart) + v + text.slice(existing.end);
  }
  if (last !== undefined && !text.slice(o.open, o.close).includes('\n')) {
    // an object on one line: the member goes on that line
    const prop = `${JSON.stringify(name)}: ${inline(value, spaced)}`;
    const at = o.trailingComma !== undefined ? o.trailingComma + 1 : last.end;
    return text.slice(0, at) + (o.trailingComma !== undefined ? ` ${prop},` : `, ${prop}`) + text.slice(at);
  }
  const prop = `${JSON.stringify(name)}: ${laidOut(memberIndent, unit)}`;
  if (last === undefined) {
    const inner = text.slice(o.open + 1, o.close);
    // An empty object in a line of other things (a file on one line): the member goes in on that line.
    if (!inner.includes('\n') && o.keyStart !== undefined && ownLineIndent(text, o.keyStart) === undefined)
      return `${text.slice(0, o.open + 1)}${spaced ? ' ' : ''}${JSON.stringify(name)}:${spaced ? ' ' : ''}${inline(value, spaced)}${spaced ? ' ' : ''}${text.slice(o.close)}`;
    return inner.trim() === ''
      ? text.slice(0, o.open + 1) + eol + memberIndent + prop + eol + objIndent + text.slice(o.close)
      : text.slice(0, o.open + 1) + eol + memberIndent + prop + text.slice(o.open + 1); // only comments inside: first
  }
  // After the last member (and its trailing comma), at the end of its line when only a comment follows there.
  const after = o.trailingComma !== undefined ? o.trailingComma + 1 : last.end;
  const nl = text.indexOf('\n', after);
  const lineEnd = nl === -1 ? text.length : nl > 0 && text[nl - 1] === '\r' ? nl - 1 : nl;
  const at = /^[ \t]*(\/\/.*|\/\*.*\*\/[ \t]*)?$/.test(text.slice(after, lineEnd)) ? lineEnd : after;
  if (o.trailingComma !== undefined) return text.slice(0, at) + eol + memberIndent + prop + ',' + text.slice(at);
  return text.slice(0, last.end) + ',' + text.slice(last.end, at) + eol + memberIndent + prop + text.slice(at);
}

/** Where the top-level property `key` is: its name's offset and its value's end. */
function locate(text: string, key: string): { start: number; end: number } | undefined {
  let depth = 0;
  let start = -1;
  let found: { start: number; end: number } | undefined;
  const close = (offset: number, length: number) => {
    depth--;
    if (depth === 1 && start >= 0 && found === undefined) found = { start, end: offset + length };
  };
  visit(
    text,
    {
      onObjectBegin: () => void depth++,
      onArrayBegin: () => void depth++,
      onObjectEnd: close,
      onArrayEnd: close,
      onObjectProperty: (name, offset) => {
        if (depth === 1 && name === key && start < 0) start = offset;
      },
      onLiteralValue: (_v, offset, length) => {
        if (depth === 1 && start >= 0 && found === undefined) found = { start, end: offset + length };
      },
    },
    { allowTrailingComma: true, disallowComments: false },
  );
  return found;
}

/**
 * Edits only the servers property: it is copied into a small document of its own (with whole lines when
 * they hold little else, so the edit is formatted as in the file; else just the property, and the edit
 * goes in compact), edited there, and put back in one splice. jsonc-parser's `modify` parses the whole
 * document into a tree for every change: for a `~/.claude.json` of tens of MB that is seconds and
 * hundreds of MB each. Undefined: not a layout this can do (no such property yet), edit the whole text.
 */
function editInPlace(text: string, key: string, eolText: string, apply: (doc: string, plainOnly: boolean) => string): string | undefined {
  const at = locate(text, key);
  if (at === undefined) return undefined;
  const lineStart = text.lastIndexOf('\n', at.start) + 1;
  const eol = text.indexOf('\n', at.end);
  const lineEnd = eol === -1 ? text.length : eol > 0 && text[eol - 1] === '\r' ? eol - 1 : eol;
  // Short lines: copied whole, so the edit is formatted as the file is. Long ones (a file on one line):
  // just the property, and the edit goes in compact.
  const w =
    lineEnd - lineStart - (at.end - at.start) <= FORMAT_LINE_LIMIT
      ? { from: lineStart, to: lineEnd, head: `{${eolText}`, tail: `${eolText}}`, plainOnly: false }
      : { from: at.start, to: at.end, head: '{', tail: '}', plainOnly: true };
  const mini = w.head + text.slice(w.from, w.to) + w.tail;
  const errors: ParseError[] = [];
  parseJsonc(mini, errors, { allowTrailingComma: true, disallowComments: false });
  if (errors.length > 0) return undefined; // the lines start or end inside something else
  const done = apply(mini, w.plainOnly);
  if (done.startsWith(w.head) && done.endsWith(w.tail))
    return text.slice(0, w.from) + done.slice(w.head.length, done.length - w.tail.length) + text.slice(w.to);
  return undefined;
}

/** Past this many bytes of other text on the lines of an edit, the formatted edit is not tried. */
const FORMAT_LINE_LIMIT = 4096;

/**
 * One `modify`, formatted like the file when that touches only whitespace around the change. jsonc-parser
 * formats whole lines around an edit, so in a file written on one line it would re-lay-out other servers:
 * there the edit goes in unformatted (compact), and every other byte stays. Such lines are not even
 * formatted to find that out: jsonc-parser applies its formatting edits one by one to the whole text,
 * which takes minutes for a one-line file of a few MB (`~/.claude.json` with history).
 */
function edit(text: string, path: string[], value: unknown, fmt: FormattingOptions, plainOnly: boolean): string {
  const plain = modify(text, path, value, {});
  if (plain.length === 0) return text;
  const start = Math.min(...plain.map((e) => e.offset));
  const end = Math.max(...plain.map((e) => e.offset + e.length));
  const lineStart = text.lastIndexOf('\n', start - 1) + 1;
  const nextEol = text.indexOf('\n', end);
  const lineEnd = nextEol === -1 ? text.length : nextEol;
  if (plainOnly || lineEnd - lineStart - (end - start) > FORMAT_LINE_LIMIT) return applyEdits(text, plain);
  const pretty = modify(text, path, value, { formattingOptions: fmt });
  // The formatted edit may rewrite whole lines around the change: they must come back as they were, but
  // for the whitespace next to the change.
  const keeps = pretty.every((e) => {
    const before = text.slice(e.offset, Math.max(e.offset, Math.min(start, e.offset + e.length))).trimEnd();
    const after = text.slice(Math.min(e.offset + e.length, Math.max(end, e.offset)), e.offset + e.length).trimStart();
    return e.content.startsWith(before) && e.content.endsWith(after) && e.content.length >= before.length + after.length;
  });
  return applyEdits(text, keeps ? pretty : plain);
}

// ---- TOML (Codex) ----

const HEADER = /^[ \t]*(\[\[?)([^[\]\n]*)\]\]?[ \t]*(#.*)?$/;

/** `mcp_servers."my server".env` → ['mcp_servers', 'my server', 'env'] (bare, basic and literal keys). */
export function tomlKeyPath(raw: string): string[] | undefined {
  const parts: string[] = [];
  let i = 0;
  const s = raw.trim();
  while (i < s.length) {
    while (s[i] === ' ' || s[i] === '\t') i++;
    if (s[i] === '"' || s[i] === "'") {
      const q = s[i]!;
      let j = i + 1;
      let v = '';
      while (j < s.length && s[j] !== q) {
        if (q === '"' && s[j] === '\\') {
          try {
            v += JSON.parse(`"${s.slice(j, j + (s[j + 1] === 'u' ? 6 : 2))}"`) as string;
          } catch {
            return undefined;
          }
          j += s[j + 1] === 'u' ? 6 : 2;
        } else v += s[j++];
      }
      if (j >= s.length) return undefined;
      parts.push(v);
      i = j + 1;
    } else {
      const m = /^[A-Za-z0-9_-]+/.exec(s.slice(i));
      if (!m) return undefined;
      parts.push(m[0]);
      i += m[0].length;
    }
    while (s[i] === ' ' || s[i] === '\t') i++;
    if (i < s.length) {
      if (s[i] !== '.') return undefined;
      i++;
    }
  }
  return parts;
}

function tomlKey(name: string): string {
  return /^[A-Za-z0-9_-]+$/.test(name) ? name : JSON.stringify(name);
}

function tomlValue(v: unknown): string {
  if (typeof v === 'string') return JSON.stringify(v); // JSON string escapes are valid TOML basic-string escapes
  if (typeof v === 'number' || typeof v === 'boolean') return String(v);
  if (Array.isArray(v)) return `[${v.map(tomlValue).join(', ')}]`;
  if (isObject(v))
    return `{ ${Object.entries(v)
      .map(([k, x]) => `${tomlKey(k)} = ${tomlValue(x)}`)
      .join(', ')} }`;
  throw new Error(`cannot write ${String(v)} as TOML`);
}

/** `[mcp_servers.NAME]` with its keys (a nested object becomes an inline table). */
export function tomlTable(prefix: string, name: string, entry: Record<string, unknown>, eol: string): string {
  const lines = [`[${prefix}.${tomlKey(name)}]`];
  for (const [k, v] of Object.entries(entry)) lines.push(`${tomlKey(k)} = ${tomlValue(v)}`);
  return lines.join(eol) + eol;
}

function canonical(v: unknown): string {
  if (Array.isArray(v)) return `[${v.map(canonical).join(',')}]`;
  if (v instanceof Date) return JSON.stringify(v.toISOString());
  if (isObject(v))
    return `{${Object.keys(v)
      .sort()
      .map((k) => `${JSON.stringify(k)}:${canonical(v[k])}`)
      .join(',')}}`;
  return JSON.stringify(v) ?? 'undefined';
}

export function sameValue(a: unknown, b: unknown): boolean {
  return canonical(a) === canonical(b);
}

/**
 * Applies `change` to a Codex config: each named server's tables (`[mcp_servers.NAME]` and its sub-tables)
 * are cut out, a replaced one is written where it was, a new one at the end. The result is parsed and
 * compared with what was meant; a layout this cannot edit (inline tables, dotted keys under `[mcp_servers]`)
 * is refused rather than guessed at.
 */
export function editToml(text: string | undefined, prefix: string, change: ServerChange, file: string): string {
  const [bom, src] = splitBom(text ?? '');
  const eol = src.includes('\r\n') ? '\r\n' : '\n';
  const lines = src.split(/(?<=\n)/); // keeps each line's end
  const touched = new Set([...change.remove, ...Object.keys(change.set)]);
  const placed = new Set<string>();
  const out: string[] = [];
  let cutting: string | undefined;
  let cut: string[] = [];
  let replaced = false;
  // A replaced table keeps the blank lines after it: they separate it from the next one.
  const endCut = () => {
    let k = cut.length;
    while (k > 0 && cut[k - 1]!.trim() === '') k--;
    if (replaced) out.push(...cut.slice(k));
    cut = [];
    replaced = false;
  };
  for (const line of lines) {
    const m = HEADER.exec(line.replace(/\r?\n$/, ''));
    if (m) {
      endCut();
      const path = tomlKeyPath(m[2]!);
      const name = path !== undefined && path.length >= 2 && path[0] === prefix ? path[1]! : undefined;
      cutting = name !== undefined && touched.has(name) ? name : undefined;
      if (cutting !== undefined && !placed.has(cutting)) {
        placed.add(cutting);
        const entry = change.set[cutting];
        if (entry !== undefined) {
          out.push(tomlTable(prefix, cutting, entry, eol));
          replaced = true;
        }
      }
    }
    if (cutting === undefined) out.push(line);
    else cut.push(line);
  }
  endCut();
  let result = out.join('');
  const added = Object.entries(change.set).filter(([name]) => !placed.has(name));
  if (added.length > 0) {
    if (result.length > 0 && !result.endsWith('\n')) result += eol;
    if (result.trim().length > 0 && !result.endsWith(`${eol}${eol}`)) result += eol;
    result += added.map(([name, entry]) => tomlTable(prefix, name, entry, eol)).join(eol);
  }
  // What was meant: the old document with the change applied.
  const before = src.trim() === '' ? {} : (parseToml(src) as Record<string, unknown>);
  const want: Record<string, unknown> = { ...before };
  const servers: Record<string, unknown> = Object.assign(Object.create(null) as Record<string, unknown>, isObject(before[prefix]) ? before[prefix] : {});
  for (const n of change.remove) delete servers[n];
  for (const [n, e] of Object.entries(change.set)) servers[n] = e;
  if (Object.keys(servers).length > 0 || Object.hasOwn(before, prefix)) want[prefix] = servers;
  let got: unknown;
  try {
    got = parseToml(result);
  } catch {
    got = undefined;
  }
  if (!sameValue(got, want)) {
    throw new McpxError(
      'MCPX_INSTALL_LAYOUT',
      `${file}: its [${prefix}] tables are written in a way mcpx cannot change without touching other lines (inline tables or dotted keys); nothing was written: edit it by hand (docs/clients.md shows the entry)`,
      { data: { file } },
    );
  }
  return bom + result;
}
