/**
 * `mcpx call` answering an upstream's questions (issue: questions across eras).
 *
 * - An elicitation form: on a terminal, its message, then each field of its schema in turn (type,
 *   choices, default, required); Ctrl-C declines. Without a terminal, the `--answer KEY=JSON` /
 *   `--answers FILE` values (plus the schema's defaults) are sent; with none given it declines and says
 *   how to answer.
 * - A URL elicitation: only an `https:` (or loopback `http:`) address is shown, others are declined
 *   naming their scheme and host; it is printed, never opened; on a terminal the person says when they are
 *   done (accept) or declines; without one it declines. mcpx prints the address and its host on lines
 *   of its own, and the server's message only quoted under them, so a message cannot pass itself off
 *   as the address.
 * - Everything the upstream wrote (messages, titles, choices, the URL) has its control sequences
 *   escaped (./terminal-text.ts): a question cannot retitle the terminal, erase a line or hide a link.
 * - roots/list: the `--roots DIR…` folders (without them, roots are not declared at all).
 * - sampling: only when an answer was given (`"$sampling"` in the answers file); otherwise mcpx does
 *   not declare sampling, so the daemon refuses it upstream with a clear message.
 */
import { basename, resolve } from 'node:path';
import { createInterface } from 'node:readline/promises';
import { pathToFileURL } from 'node:url';
import { browserAddressProblem } from '../auth/browser-address.js';
import { terminalSafe } from './terminal-text.js';

export interface Question {
  id: string;
  method: string;
  params?: Record<string, unknown>;
}

export interface AnswerSources {
  /** A terminal to ask on (stdin and stderr). */
  tty: boolean;
  /** Form fields given on the command line or in a file. */
  answers: Record<string, unknown>;
  roots: string[];
  /** A CreateMessageResult to answer sampling with. */
  sampling?: Record<string, unknown>;
  input?: NodeJS.ReadableStream;
  output?: NodeJS.WritableStream;
}

/** What to tell the person, besides the answer. */
export interface Answered {
  answer: Record<string, unknown>;
  note?: string;
}

type FieldSchema = {
  type?: string | string[];
  title?: string;
  description?: string;
  default?: unknown;
  enum?: unknown[];
  enumNames?: string[];
  oneOf?: Array<{ const?: unknown; title?: string }>;
  items?: { enum?: unknown[]; anyOf?: Array<{ const?: unknown; title?: string }> };
  minimum?: number;
  maximum?: number;
  format?: string;
};

/** The capabilities a caller with these sources can answer (declared upstream on its behalf). */
export function capabilitiesFor(s: AnswerSources): Record<string, unknown> {
  return {
    elicitation: { form: {}, url: {} },
    // Roots only when there are some to give: a server told of none may drop the folders it was given.
    ...(s.roots.length > 0 ? { roots: {} } : {}),
    ...(s.sampling ? { sampling: {} } : {}),
  };
}

/** `--answer KEY=JSON` (a bare word that is not JSON counts as a string). */
export function parseAnswerFlag(flag: string): [string, unknown] {
  const eq = flag.indexOf('=');
  if (eq <= 0) throw new Error(`--answer ${JSON.stringify(flag)}: expected KEY=JSON, e.g. name='"Ada"' or age=36`);
  const key = flag.slice(0, eq);
  const raw = flag.slice(eq + 1);
  try {
    return [key, JSON.parse(raw)];
  } catch {
    return [key, raw];
  }
}

function choicesOf(f: FieldSchema): Array<{ value: unknown; label: string }> | undefined {
  if (Array.isArray(f.oneOf) && f.oneOf.every((o) => 'const' in o)) return f.oneOf.map((o) => ({ value: o.const, label: o.title ?? String(o.const) }));
  if (Array.isArray(f.enum)) return f.enum.map((v, i) => ({ value: v, label: f.enumNames?.[i] ?? String(v) }));
  return undefined;
}

function multiChoicesOf(f: FieldSchema): Array<{ value: unknown; label: string }> | undefined {
  const items = f.items;
  if (!items) return undefined;
  if (Array.isArray(items.anyOf)) return items.anyOf.map((o) => ({ value: o.const, label: o.title ?? String(o.const) }));
  if (Array.isArray(items.enum)) return items.enum.map((v) => ({ value: v, label: String(v) }));
  return undefined;
}

function typeOf(f: FieldSchema): string {
  return Array.isArray(f.type) ? (f.type.find((t) => t !== 'null') ?? 'string') : (f.type ?? 'string');
}

/** Reads one field's typed value from what the person typed; an Error says what is wrong. */
export function parseField(f: FieldSchema, text: string): unknown {
  const t = text.trim();
  const choices = choicesOf(f);
  if (choices) {
    const byNumber = /^\d+$/.test(t) ? choices[Number(t) - 1] : undefined;
    const hit = byNumber ?? choices.find((c) => String(c.value) === t || c.label === t);
    if (!hit) throw new Error(`choose one of: ${choices.map((c, i) => `${i + 1}) ${c.label}`).join(', ')}`);
    return hit.value;
  }
  const multi = multiChoicesOf(f);
  if (typeOf(f) === 'array' && multi) {
    const picks = t === '' ? [] : t.split(',').map((x) => x.trim());
    return picks.map((p) => {
      const byNumber = /^\d+$/.test(p) ? multi[Number(p) - 1] : undefined;
      const hit = byNumber ?? multi.find((c) => String(c.value) === p || c.label === p);
      if (!hit) throw new Error(`choose from: ${multi.map((c, i) => `${i + 1}) ${c.label}`).join(', ')}`);
      return hit.value;
    });
  }
  switch (typeOf(f)) {
    case 'number':
    case 'integer': {
      const n = Number(t);
      if (t === '' || !Number.isFinite(n) || (typeOf(f) === 'integer' && !Number.isInteger(n)))
        throw new Error(`a${typeOf(f) === 'integer' ? 'n integer' : ' number'} please`);
      if (f.minimum !== undefined && n < f.minimum) throw new Error(`at least ${f.minimum}`);
      if (f.maximum !== undefined && n > f.maximum) throw new Error(`at most ${f.maximum}`);
      return n;
    }
    case 'boolean':
      if (/^(y|yes|true|1)$/i.test(t)) return true;
      if (/^(n|no|false|0)$/i.test(t)) return false;
      throw new Error('yes or no');
    default:
      return text;
  }
}

function describeField(name: string, f: FieldSchema, required: boolean): string {
  const choices = choicesOf(f) ?? (typeOf(f) === 'array' ? multiChoicesOf(f) : undefined);
  const parts = [f.title ?? name];
  if (f.description) parts.push(`— ${f.description}`);
  const hints: string[] = [typeOf(f) === 'array' ? 'comma-separated' : typeOf(f)];
  if (required) hints.push('required');
  if (f.default !== undefined) hints.push(`default ${JSON.stringify(f.default)}`);
  parts.push(`(${hints.join(', ')})`);
  if (choices) parts.push(`\n    ${choices.map((c, i) => `${i + 1}) ${c.label}`).join('  ')}`);
  return parts.join(' ');
}

/** Answers one question from a terminal or the given answers. */
export async function answerQuestion(q: Question, s: AnswerSources, server: string): Promise<Answered> {
  const p = q.params ?? {};
  if (q.method === 'roots/list') {
    return { answer: { roots: s.roots.map((d) => ({ uri: pathToFileURL(resolve(d)).href, name: basename(resolve(d)) })) } };
  }
  if (q.method === 'sampling/createMessage') {
    if (s.sampling) return { answer: s.sampling, note: `${server} asked for an LLM completion; answered from --answers ($sampling)` };
    return {
      answer: { role: 'assistant', content: { type: 'text', text: '' }, model: 'none' },
      note: `${server} asked for an LLM completion, which mcpx call cannot give (pass "$sampling" in --answers)`,
    };
  }
  if (q.method !== 'elicitation/create') return { answer: {}, note: `${server} asked ${q.method}, which mcpx call does not know` };
  const message = typeof p['message'] === 'string' ? p['message'] : '';
  if (p['mode'] === 'url') {
    const url = String(p['url'] ?? '');
    // Only an address a browser may be sent to is put to the person (../auth/browser-address.ts): a `file:`,
    // `javascript:` or custom-scheme one is declined unseen, its scheme and host named.
    const problem = browserAddressProblem(url);
    if (problem !== undefined) return { answer: { action: 'decline' }, note: `${server} asked you to open an address mcpx refuses: ${problem}; declined` };
    if (!s.tty)
      return { answer: { action: 'decline' }, note: `${server} asks you to open ${shownAddress(url)} (${message}); declined: no terminal to confirm on` };
    return urlOnTerminal(message, url, s, server);
  }
  const schema = (p['requestedSchema'] ?? {}) as { properties?: Record<string, FieldSchema>; required?: string[] };
  const fields = Object.entries(schema.properties ?? {});
  const required = new Set(schema.required ?? []);
  if (!s.tty) {
    const given = Object.keys(s.answers).length > 0;
    if (!given)
      return {
        answer: { action: 'decline' },
        note: `${server} asks: ${message}; declined: no terminal to ask on (answer with --answer KEY=JSON or --answers FILE; fields: ${fields.map(([k]) => k).join(', ') || 'none'})`,
      };
    const content: Record<string, unknown> = {};
    for (const [k, f] of fields) {
      if (k in s.answers) content[k] = s.answers[k];
      else if (f.default !== undefined) content[k] = f.default;
    }
    const missing = [...required].filter((k) => !(k in content));
    if (missing.length > 0) return { answer: { action: 'decline' }, note: `${server} asks: ${message}; declined: no answer for ${missing.join(', ')}` };
    return { answer: { action: 'accept', content } };
  }
  return formOnTerminal(message, fields, required, s, server);
}

async function formOnTerminal(
  message: string,
  fields: Array<[string, FieldSchema]>,
  required: Set<string>,
  s: AnswerSources,
  server: string,
): Promise<Answered> {
  const output = s.output ?? process.stderr;
  const rl = createInterface({ input: s.input ?? process.stdin, output, terminal: true });
  const ac = new AbortController();
  rl.on('SIGINT', () => ac.abort());
  try {
    output.write(`\n${server} asks: ${terminalSafe(message)}\n`);
    const content: Record<string, unknown> = {};
    for (const [name, f] of fields) {
      const req = required.has(name);
      for (;;) {
        const text = await rl.question(`  ${terminalSafe(describeField(name, f, req))}\n  > `, { signal: ac.signal });
        if (text.trim() === '') {
          if (f.default !== undefined) {
            content[name] = f.default;
            break;
          }
          if (!req) break;
          output.write('  required\n');
          continue;
        }
        try {
          content[name] = parseField(f, text);
          break;
        } catch (err) {
          output.write(`  ${terminalSafe((err as Error).message)}\n`);
        }
      }
    }
    return { answer: { action: 'accept', content } };
  } catch (err) {
    if ((err as { name?: string }).name === 'AbortError') {
      output.write('\n');
      return { answer: { action: 'decline' }, note: `${server}: declined (Ctrl-C)` };
    }
    throw err;
  } finally {
    rl.close();
  }
}

/** The address as the browser would go to it (normalised, an IDN host in punycode); `(not a valid URL)` when it is not one. */
function shownAddress(url: string): string {
  try {
    return terminalSafe(new URL(url).href);
  } catch {
    return `${terminalSafe(url)} (not a valid URL)`;
  }
}

function hostOf(url: string): string | undefined {
  try {
    return new URL(url).host || undefined;
  } catch {
    return undefined;
  }
}

async function urlOnTerminal(message: string, url: string, s: AnswerSources, server: string): Promise<Answered> {
  const output = s.output ?? process.stderr;
  const rl = createInterface({ input: s.input ?? process.stdin, output, terminal: true });
  const ac = new AbortController();
  rl.on('SIGINT', () => ac.abort());
  try {
    // mcpx's own lines first, the server's words quoted after them: a message cannot pose as the address.
    const host = hostOf(url);
    output.write(`\n${server} asks you to open an address (mcpx opens nothing; open it yourself if you trust it):\n`);
    output.write(`  address: ${shownAddress(url)}\n`);
    if (host !== undefined) output.write(`  host:    ${terminalSafe(host)}\n`);
    if (message !== '')
      output.write(
        `  the server's message:\n${terminalSafe(message)
          .split('\n')
          .map((l) => `  | ${l}`)
          .join('\n')}\n`,
      );
    const text = await rl.question('Press Enter when you are done there, or type "decline": ', { signal: ac.signal });
    return { answer: { action: /^d(ecline)?$/i.test(text.trim()) ? 'decline' : 'accept' } };
  } catch (err) {
    if ((err as { name?: string }).name === 'AbortError') return { answer: { action: 'decline' }, note: 'declined (Ctrl-C)' };
    throw err;
  } finally {
    rl.close();
  }
}
