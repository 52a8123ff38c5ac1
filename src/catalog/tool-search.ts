/**
 * Search over the catalogue's tools: a hand-written BM25F index, built once per catalogue change and
 * queried synchronously (microseconds at a thousand tools), with no model and no I/O.
 *
 * BM25F: each field's term frequency is length-normalised on its own and weighted, the weighted sum is
 * saturated once per term (so a word in the name and the description counts more than in either, but
 * never more than saturation allows). Because nothing in that depends on the query, each term's
 * per-tool contribution is computed at build time and a query only adds up postings.
 *
 * Fields: the tool name split into words (plus whole-name tokens for exact-name queries), title,
 * the first sentence of the description (weighted more) and the whole description, parameter names
 * and parameter descriptions, the server's name and title, and the server's `instructions` (weighted
 * little: they describe the server's domain, shared by all its tools). Words are split at `_ - .` and
 * camelCase, lower-cased, stop words dropped and Porter-stemmed. A query word also matches, at a
 * discount, the words of its concept group (fetch/get/retrieve, delete/remove, …): general English, so
 * a person's wording finds a tool named in a developer's. Two query words side by side that stand side by
 * side in a tool's name, title or first sentence count a little more ("pull request"), and the words of
 * a multi-step query's later clauses ("…, then …") count less than its first step's.
 */
import { stemmer } from 'stemmer';

export interface SearchableTool {
  /** The configured server name. */
  server: string;
  /** The tool's own name as the server lists it. */
  name: string;
  /** The name MCP clients see (`server__name`, or bare under --passthrough). */
  exposed: string;
  title?: string;
  description?: string;
  inputSchema?: Record<string, unknown>;
  annotations?: Record<string, unknown>;
}

export interface ServerAbout {
  server: string;
  title?: string;
  instructions?: string;
}

export interface ToolHit {
  server: string;
  name: string;
  exposed: string;
  /** The first sentence of the description (compact). */
  description: string;
  /** A short signature, e.g. `read_file(path: string, head?: number)`. */
  signature: string;
  /** Higher is better, rounded to 3 decimals. */
  score: number;
}

export interface ToolIndex {
  readonly size: number;
  /** Default limit 5, at most 50; an empty query or no match gives []. */
  search(query: string, limit?: number): ToolHit[];
}

const DEFAULT_LIMIT = 5;
const MAX_LIMIT = 50;
const MAX_QUERY = 1000;
type Field = 'name' | 'title' | 'lead' | 'desc' | 'params' | 'pdesc' | 'server' | 'about';
const FIELDS: readonly Field[] = ['name', 'title', 'lead', 'desc', 'params', 'pdesc', 'server', 'about'];

/** The ranking's constants (set on the tune half of bench/tool-search/queries.json, never the held-out half). */
const TUNING = {
  k1: 2,
  /** Weight per field, applied to term frequency before saturation. */
  weight: { name: 3, title: 2, lead: 1.5, desc: 1, params: 0.8, pdesc: 0.4, server: 1.2, about: 0.2 } as Record<Field, number>,
  /** Length normalisation per field. */
  b: { name: 0.5, title: 0.5, lead: 0.5, desc: 0.75, params: 0.5, pdesc: 0.75, server: 0.3, about: 0.75 } as Record<Field, number>,
  /** What the very word counts on top of its concept, for a word in a concept group. */
  sameWord: 0.3,
  /** Coordination: a tool's score times (query words it matches / query words) to this power. */
  coord: 1,
  /**
   * A word of a later clause of a multi-step query ("check the pods, then describe the broken one"),
   * against one of the first: the first step is the tool wanted now.
   */
  laterClause: 0.4,
  /** Two query words next to each other in a tool's name, title or first sentence, on top of each word. */
  pair: 0.3,
};
/** Where a query's steps part: a comma, a semicolon, "then". */
const CLAUSE = /[,;]|\bthen\b/i;
/** The fields whose adjacent words are indexed as pairs (short, written to say what the tool does). */
const PAIR_FIELDS: readonly Field[] = ['name', 'title', 'lead'];
/** A pair's index term; `^` keeps it apart from words. */
const pairTerm = (a: string, b: string): string => `^${a} ${b}`;
/** An exact exposed or tool name query ranks its tool first whatever else matches. */
const EXACT_BONUS = 1000;

const STOP = new Set(
  (
    'a an the to of for in on at by with from into onto as and or but if then than so is are was were be been being ' +
    'it its this that these those there here i me my we our you your he she they them their what whats which who whom ' +
    'how when where why do does did done can could would should will shall may might must please want need like just ' +
    'some any also very s t d ll re ve m let lets using use via about up out over per not no yes ' +
    'each called named one thing things something stuff again now already'
  ).split(' '),
);

/**
 * Concept groups: words a person and a tool's author use for the same thing. General English only,
 * never tuned to one query.
 */
const CONCEPTS: readonly string[] = [
  'get fetch retrieve read obtain load show view open display see look dump',
  'list enumerate browse show all',
  'search find query lookup look seek discover locate',
  'create add new make insert generate start open',
  'delete remove erase drop destroy trash clear forget purge',
  'update edit modify change set patch alter rename switch fix',
  'write save store put record keep persist remember note',
  'send post message notify publish reply',
  'all entire whole everything complete full every',
  'multiple several many batch bulk',
  'size big large small bytes length',
  'file document doc page',
  'directory folder dir',
  'issue ticket bug task',
  'pull pr merge request',
  'repo repository project codebase',
  'screenshot capture snapshot screen',
  'image picture photo png jpg jpeg svg icon graphic media',
  'video record recording screencast',
  'navigate go visit browse url link website site web',
  'click press tap select',
  'type fill enter input form',
  'run execute invoke call perform trigger',
  'user member person people account profile identity self whoami contact',
  'comment reply review feedback approve',
  'commit change revision',
  'branch fork',
  'error exception crash failure fail broken problem incident',
  'log logs trace',
  'database db sql table',
  'sql query statement select',
  'field property attribute column',
  'channel conversation room thread',
  'map location place address geocode coordinates',
  'direction directions route travel distance trip journey drive driving commute',
  'nearby near local around vicinity',
  'shop business restaurant cafe venue',
  'think reason plan step',
  'memory knowledge know remember graph entity',
  'doc documentation docs library reference',
  'scrape crawl extract',
  'research investigate study analyze analysis',
  'paper papers article publication',
  'pay payment charge invoice billing customer subscription price',
  'deploy deployment release',
  'pod container cluster kubernetes k8s',
  'context environment env stage staging',
  'key secret token credential',
  'wait sleep pause delay',
  'close quit exit stop end kill',
  'upload attach',
  'download export save',
  'move rename relocate',
  'copy duplicate clone backup',
  'calendar event schedule meeting',
  'email mail inbox',
  'weather forecast temperature',
  'test check verify validate',
  'describe explain detail details info information inspect',
  'console terminal output',
  'network request http api call traffic xhr',
  'performance speed perf trace profile slow fast',
  'emulate simulate pretend mimic imitate throttle',
  'phone mobile device tablet viewport',
  'theme scheme color dark light mode',
  'monitor watch track observe notify alert',
  'sum total add calculate math',
  'company organization org team workspace',
  'tab window',
  'label tag',
];

/** Lower-case words of a text: split at anything but letters and digits, and at camelCase. */
function words(text: string): string[] {
  const spaced = text.replace(/([a-z0-9])([A-Z])/g, '$1 $2').replace(/([A-Z]+)([A-Z][a-z])/g, '$1 $2');
  return spaced.toLowerCase().split(/[^a-z0-9]+/);
}

/** Stems already computed: the same few thousand words recur across every listing. */
const STEMS = new Map<string, string>();
function stem(word: string): string {
  let s = STEMS.get(word);
  if (s === undefined) {
    s = stemmer(word);
    if (STEMS.size < 50_000) STEMS.set(word, s);
  }
  return s;
}

/** Index terms of a text: words, no stop words or single letters, stemmed. */
function terms(text: string | undefined): string[] {
  if (!text) return [];
  const out: string[] = [];
  for (const w of words(text)) if (w.length > 1 && !STOP.has(w)) out.push(stem(w));
  return out;
}

/** The whole-name token of an identifier (exact-name matches); `=` keeps it apart from words. */
const whole = (name: string): string => `=${name.toLowerCase()}`;

const IDENTIFIER = /[_\-.]|[a-z][A-Z]/;

/** Word stem → the concept tokens (`~<group>`) of the groups it is in. */
const CONCEPTS_OF: ReadonlyMap<string, readonly string[]> = (() => {
  const byStem = new Map<string, string[]>();
  CONCEPTS.forEach((group, g) => {
    for (const s of new Set(group.split(' ').map((w) => stemmer(w)))) byStem.set(s, [...(byStem.get(s) ?? []), `~${g}`]);
  });
  return byStem;
})();

const LIST_MARK = /^\s*(?:\d{1,2}[.)]|[-*•])\s+/;
const WORDS = /[\p{L}\p{N}]+/gu;

/** A heading line ("🎯 Purpose:", "Guardrails:", "## Usage"): a few words, no sentence, marked as a heading. */
function isHeading(line: string): boolean {
  const t = line.trim();
  if (!t || /[.!?]$/.test(t) || (t.match(WORDS)?.length ?? 0) > 3) return false;
  return t.endsWith(':') || t.startsWith('#') || !/^[\p{L}\p{N}]/u.test(t);
}

/** The first sentence of a description, whitespace collapsed, at most 200 characters; headings and list marks skipped. */
export function firstSentence(text: string | undefined): string {
  if (typeof text !== 'string') return '';
  let paragraph = '';
  for (const block of text.trim().split(/\n\s*\n/)) {
    const lines = block.split('\n');
    while (lines.length > 1 && isHeading(lines[0]!)) lines.shift();
    if (lines.length === 1 && isHeading(lines[0]!) && block !== text.trim()) continue;
    paragraph = lines
      .map((l) => l.replace(LIST_MARK, ''))
      .join(' ')
      .replace(/\s+/g, ' ')
      .trim();
    if (paragraph) break;
  }
  // A sentence ends at . ! ? followed by a capital, a digit, a quote or bracket, or the end ("e.g. a" goes on).
  const end = /[.!?](?=\s+[A-Z0-9"'`([*#-]|\s*$)/.exec(paragraph);
  const sentence = end ? paragraph.slice(0, end.index + 1) : paragraph;
  return sentence.length > 200 ? `${sentence.slice(0, 199).trimEnd()}…` : sentence;
}

const isRecord = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

/** A JSON Schema's type, short: `string`, `number`, `string[]`, `object`, `"a"|"b"`, `string|null`. */
function shortType(schema: unknown, depth = 0): string {
  if (!isRecord(schema) || depth > 2) return 'any';
  const en = schema['enum'];
  if (Array.isArray(en) && en.length > 0) {
    const shown = en.map((v) => JSON.stringify(v)).join('|');
    if (en.length <= 4 && shown.length <= 40) return shown;
  }
  if ('const' in schema) {
    const shown = JSON.stringify(schema['const']);
    if (shown !== undefined && shown.length <= 20) return shown;
  }
  const t = schema['type'];
  if (Array.isArray(t)) return t.filter((x): x is string => typeof x === 'string').join('|') || 'any';
  if (t === 'array') return `${shortType(schema['items'], depth + 1)}[]`.replace(/^(.*\|.*)\[\]$/, '($1)[]');
  if (t === 'integer') return 'number';
  if (typeof t === 'string') return t;
  for (const key of ['anyOf', 'oneOf'] as const) {
    const alts = schema[key];
    if (Array.isArray(alts) && alts.length > 0) return [...new Set(alts.map((a) => shortType(a, depth + 1)))].join('|');
  }
  if (isRecord(schema['properties'])) return 'object';
  return 'any';
}

const MAX_SIGNATURE = 120;

/** `name(a: string, b?: number)`: parameters in schema order, `?` for optional, cut with `…`. */
export function signatureOf(tool: Pick<SearchableTool, 'name' | 'inputSchema'>): string {
  const schema = isRecord(tool.inputSchema) ? tool.inputSchema : {};
  const props = isRecord(schema['properties']) ? schema['properties'] : {};
  const required = new Set(Array.isArray(schema['required']) ? schema['required'].filter((r): r is string => typeof r === 'string') : []);
  const params = Object.entries(props).map(([p, s]) => `${p}${required.has(p) ? '' : '?'}: ${shortType(s)}`);
  const name = String(tool.name);
  let out = `${name}(`;
  for (let i = 0; i < params.length; i++) {
    const next = `${i > 0 ? ', ' : ''}${params[i]!}`;
    // Room for `, …)` when more parameters follow.
    const tail = i < params.length - 1 ? 4 : 1;
    if (out.length + next.length + tail > MAX_SIGNATURE) return `${out}${i > 0 ? ', ' : ''}…)`;
    out += next;
  }
  return `${out})`;
}

interface Posting {
  docs: Uint32Array;
  weights: Float64Array;
}

/** The text of each field of one tool, as terms. */
/** The terms a server gives each of its tools (its name and title; its instructions), computed once per server. */
interface ServerTerms {
  server: string[];
  about: string[];
}

function fieldsOf(tool: SearchableTool, serverTerms: ServerTerms): Record<Field, string[]> {
  const schema = isRecord(tool.inputSchema) ? tool.inputSchema : {};
  const props = isRecord(schema['properties']) ? schema['properties'] : {};
  const paramNames: string[] = [];
  const paramDescs: string[] = [];
  for (const [p, s] of Object.entries(props)) {
    paramNames.push(...terms(p));
    if (!isRecord(s)) continue;
    if (typeof s['description'] === 'string') paramDescs.push(...terms(s['description']));
    // Enum values say what a tool can do (`state: "open"|"closed"`: it closes issues).
    const values = Array.isArray(s['enum']) ? s['enum'] : isRecord(s['items']) && Array.isArray(s['items']['enum']) ? s['items']['enum'] : [];
    for (const v of values.slice(0, 30)) if (typeof v === 'string') paramDescs.push(...terms(v));
  }
  const name = String(tool.name ?? '');
  const exposed = String(tool.exposed ?? '');
  const nameTerms = terms(name);
  nameTerms.push(whole(name));
  if (exposed && exposed !== name) nameTerms.push(whole(exposed));
  const annotationTitle = isRecord(tool.annotations) && typeof tool.annotations['title'] === 'string' ? tool.annotations['title'] : undefined;
  const description = typeof tool.description === 'string' ? tool.description : '';
  return {
    name: nameTerms,
    title: terms(typeof tool.title === 'string' ? tool.title : annotationTitle),
    lead: terms(firstSentence(description)),
    desc: terms(description),
    params: paramNames,
    pdesc: paramDescs,
    server: serverTerms.server,
    about: serverTerms.about,
  };
}

export function buildToolIndex(tools: readonly SearchableTool[], servers: readonly ServerAbout[] = []): ToolIndex {
  const aboutOf = new Map(servers.map((s) => [s.server, s]));
  const serverTerms = new Map<string, ServerTerms>();
  const docServer: ServerTerms[] = [];
  const docs = tools.map((t) => {
    const server = String(t.server ?? '');
    let st = serverTerms.get(server);
    if (!st) {
      const about = aboutOf.get(server);
      st = { server: [...terms(server), ...terms(about?.title)], about: terms(about?.instructions) };
      serverTerms.set(server, st);
    }
    docServer.push(st);
    return fieldsOf(t, st);
  });
  const n = docs.length;

  // Per-field average lengths, then each (term, tool)'s weighted, normalised frequency: a word counts
  // for itself and for each concept group it is in (not towards the field's length).
  const avg = {} as Record<Field, number>;
  for (const f of FIELDS) avg[f] = n === 0 ? 1 : Math.max(1, docs.reduce((sum, d) => sum + d[f].length, 0) / n);
  const postingDocs = new Map<string, number[]>();
  const postingTfs = new Map<string, number[]>();
  const local = new Map<string, number>();
  const countInto = (into: Map<string, number>, f: Field, list: readonly string[]) => {
    if (list.length === 0) return;
    const norm = TUNING.weight[f] / (1 - TUNING.b[f] + (TUNING.b[f] * list.length) / avg[f]);
    for (const t of list) {
      into.set(t, (into.get(t) ?? 0) + norm);
      const concepts = CONCEPTS_OF.get(t);
      if (concepts) for (const c of concepts) into.set(c, (into.get(c) ?? 0) + norm);
    }
    // Adjacent words as pairs ("pull request", "take screenshot"): counted like words, not towards length.
    if (!PAIR_FIELDS.includes(f)) return;
    let prev: string | undefined;
    for (const t of list) {
      if (t.startsWith('=')) continue;
      if (prev !== undefined) {
        const p = pairTerm(prev, t);
        into.set(p, (into.get(p) ?? 0) + norm);
      }
      prev = t;
    }
  };
  // The server's fields are the same for each of its tools: counted once per server.
  const shared = new Map<ServerTerms, Map<string, number>>();
  const sharedOf = (st: ServerTerms) => {
    let m = shared.get(st);
    if (!m) {
      m = new Map();
      countInto(m, 'server', st.server);
      countInto(m, 'about', st.about);
      shared.set(st, m);
    }
    return m;
  };
  docs.forEach((d, i) => {
    local.clear();
    for (const f of FIELDS) if (f !== 'server' && f !== 'about') countInto(local, f, d[f]);
    for (const [t, tf] of sharedOf(docServer[i]!)) local.set(t, (local.get(t) ?? 0) + tf);
    for (const [t, tf] of local) {
      const ids = postingDocs.get(t);
      if (ids) {
        ids.push(i);
        postingTfs.get(t)!.push(tf);
      } else {
        postingDocs.set(t, [i]);
        postingTfs.set(t, [tf]);
      }
    }
  });
  // Saturate once per term and multiply by its idf: the per-tool contribution a query adds up.
  const postings = new Map<string, Posting>();
  for (const [t, ids] of postingDocs) {
    const tfs = postingTfs.get(t)!;
    const df = ids.length;
    const idf = Math.log(1 + (n - df + 0.5) / (df + 0.5));
    const weights = new Float64Array(df);
    for (let k = 0; k < df; k++) weights[k] = (idf * tfs[k]! * (TUNING.k1 + 1)) / (TUNING.k1 + tfs[k]!);
    postings.set(t, { docs: Uint32Array.from(ids), weights });
  }

  // Exact names, lower-cased: an exposed name is unique; a tool name may be listed by several servers.
  const exact = new Map<string, number[]>();
  tools.forEach((t, i) => {
    for (const key of new Set([String(t.exposed ?? '').toLowerCase(), String(t.name ?? '').toLowerCase()])) {
      if (!key) continue;
      const list = exact.get(key) ?? [];
      list.push(i);
      exact.set(key, list);
    }
  });

  const hits: Array<Omit<ToolHit, 'score'>> = tools.map((t) => ({
    server: t.server,
    name: t.name,
    exposed: t.exposed,
    description: firstSentence(t.description),
    signature: signatureOf(t),
  }));

  // Scratch space, reused by every search (search is synchronous) and left zeroed after each.
  const scores = new Float64Array(n);
  const matched = new Float64Array(n);
  const best = new Float64Array(n);
  const touched: number[] = [];
  const bestTouched: number[] = [];

  function search(query: string, limit?: number): ToolHit[] {
    if (typeof query !== 'string' || n === 0) return [];
    const max = typeof limit === 'number' && Number.isFinite(limit) ? Math.min(MAX_LIMIT, Math.max(1, Math.floor(limit))) : DEFAULT_LIMIT;
    // A query is a few words; a model that pastes a page gets its first part searched, in bounded time.
    const q = query.slice(0, MAX_QUERY).trim();
    if (!q) return [];

    // Query terms: each word once (a repeated word says no more), plus whole identifiers as written.
    const queryTerms = new Set<string>();
    for (const chunk of q.split(/\s+/)) {
      const bare = chunk.replace(/^[^A-Za-z0-9]+|[^A-Za-z0-9]+$/g, '');
      if (IDENTIFIER.test(bare)) queryTerms.add(whole(bare));
    }
    // A multi-step query counts the words of its first clause fully and the later ones' less; `words`
    // is the weighted count coordination divides by. Adjacent words of a clause also ask for their pair.
    const weightOf = new Map<string, number>();
    const pairs: Array<[string, number]> = [];
    let words = 0;
    let first = true;
    for (const clause of q.split(CLAUSE)) {
      const ts = terms(clause);
      if (ts.length === 0) continue;
      const w = first ? 1 : TUNING.laterClause;
      first = false;
      for (let k = 0; k < ts.length; k++) {
        const t = ts[k]!;
        if (k > 0) pairs.push([pairTerm(ts[k - 1]!, t), w]);
        if (queryTerms.has(t)) continue;
        queryTerms.add(t);
        weightOf.set(t, w);
        words += w;
      }
    }
    for (const [t, w] of pairs) {
      const p = postings.get(t);
      if (!p) continue;
      for (let k = 0; k < p.docs.length; k++) {
        const doc = p.docs[k]!;
        if (scores[doc] === 0) touched.push(doc);
        scores[doc]! += TUNING.pair * w * p.weights[k]!;
      }
    }
    // A word of a concept group scores as its concept (make, create, add, new: one word to the ranking),
    // plus a little for the very word; a word in several groups takes the group that suits each tool best.
    for (const t of queryTerms) {
      const concepts = CONCEPTS_OF.get(t);
      const own = postings.get(t);
      const ownWeight = concepts ? TUNING.sameWord : 1;
      const mark = (doc: number) => {
        if (best[doc] === 0) bestTouched.push(doc);
      };
      for (const c of concepts ?? []) {
        const p = postings.get(c);
        if (!p) continue;
        for (let k = 0; k < p.docs.length; k++) {
          const doc = p.docs[k]!;
          mark(doc);
          if (p.weights[k]! > best[doc]!) best[doc] = p.weights[k]!;
        }
      }
      if (own)
        for (let k = 0; k < own.docs.length; k++) {
          const doc = own.docs[k]!;
          mark(doc);
          best[doc]! += ownWeight * own.weights[k]!;
        }
      const isWord = !t.startsWith('=');
      const w = weightOf.get(t) ?? 1;
      for (const doc of bestTouched) {
        if (scores[doc] === 0) touched.push(doc);
        scores[doc]! += w * best[doc]!;
        best[doc] = 0;
        if (isWord) matched[doc]! += w;
      }
      bestTouched.length = 0;
    }
    // Coordination: a tool that matches more of what was asked beats one that matches a word of it well.
    if (words > 1 && TUNING.coord > 0) for (const doc of touched) scores[doc]! *= (Math.max(1, matched[doc]!) / words) ** TUNING.coord;
    for (const doc of exact.get(q.toLowerCase()) ?? []) {
      if (scores[doc] === 0) touched.push(doc);
      scores[doc]! += EXACT_BONUS;
    }

    // The best `max`, best first (ties: catalogue order), without sorting every tool touched.
    const top: number[] = [];
    const before = (a: number, b: number) => scores[a]! > scores[b]! || (scores[a] === scores[b] && a < b);
    for (const doc of touched) {
      if (top.length === max && !before(doc, top[max - 1]!)) continue;
      let at = top.length === max ? max - 1 : top.length;
      while (at > 0 && before(doc, top[at - 1]!)) {
        top[at] = top[at - 1]!;
        at--;
      }
      top[at] = doc;
    }
    const out = top.map((doc) => ({ ...hits[doc]!, score: Math.round(scores[doc]! * 1000) / 1000 }));
    for (const doc of touched) {
      scores[doc] = 0;
      matched[doc] = 0;
    }
    touched.length = 0;
    return out;
  }

  return { size: n, search };
}
