/**
 * Tool definitions pinned: a digest of each tool's definition as first seen, per process definition and
 * lane (the catalogue's key, so a renamed server keeps its history), kept in `<stateDir>/tool-digests.json`:
 *
 *   {"version":1,"servers":{"<sha256>:own":{"tools":{"<tool>":{"digest","parts","at","changed?"}}}}}
 *
 * The digest is sha256 of the canonical JSON (keys sorted) of the tool's description, title, inputSchema,
 * outputSchema and annotations; `parts` keeps one of each of description (with title), schema (input
 * and output) and annotations, to say what changed. A live listing whose tool differs from the approved
 * digest records the difference (`changed`, since when); accepting it makes it the approved one. A tool
 * first listed later is simply recorded. Why: a server could change a tool's description after a person
 * approved the tool — the listing a model reads is an instruction to it (docs/serving.md).
 *
 * Durability is the catalogue's (src/state/locked-json-file.ts): 0600, locked, merged, atomic.
 */
import { createHash } from 'node:crypto';
import stringify from 'safe-stable-stringify';
import { digestRecordOf } from '../state/record-checks.js';
import type { DigestRecord, ToolDigest, ToolDigestParts } from '../state/records.js';
import { LockedJsonFile, type StateFileFormat, type StateFileOptions } from '../state/locked-json-file.js';

export const DIGESTS_FILE = 'tool-digests.json';
export const DIGESTS_VERSION = 1;

export type { DigestRecord, ToolDigest, ToolDigestParts };

/** What changed between two definitions, in words a person reads. */
export type ChangedPart = keyof ToolDigestParts;
export const CHANGED_PARTS: readonly ChangedPart[] = ['description', 'schema', 'annotations'];

const sha256 = (text: string): string => createHash('sha256').update(text).digest('hex');

/**
 * The digests of a tool's definition. `scrub` blanks known secrets first (a description may quote a
 * configured one), so the same definition gives the same digest on every run and the file holds no
 * digest of a secret.
 */
export function toolDigest(tool: Record<string, unknown>, scrub: (text: string) => string = (t) => t): { digest: string; parts: ToolDigestParts } {
  const canon = (v: Record<string, unknown>): string => sha256(scrub(stringify(v) ?? ''));
  const { description, title, inputSchema, outputSchema, annotations } = tool;
  return {
    digest: canon({ description, title, inputSchema, outputSchema, annotations }),
    parts: { description: canon({ description, title }), schema: canon({ inputSchema, outputSchema }), annotations: canon({ annotations }) },
  };
}

/** The parts that differ between the approved definition and the one listed now. */
export function changedParts(d: ToolDigest): ChangedPart[] {
  const now = d.changed?.parts;
  return now ? CHANGED_PARTS.filter((p) => d.parts[p] !== now[p]) : [];
}

const FORMAT: StateFileFormat<DigestRecord> = {
  fileName: DIGESTS_FILE,
  version: DIGESTS_VERSION,
  check: digestRecordOf,
  label: 'tool digests',
  recordLabel: 'tool digest record',
};

export class DigestStore extends LockedJsonFile<DigestRecord> {
  /** Loads `<stateDir>/tool-digests.json`. Never throws for what the file contains (or for failing to read it). */
  static async open(stateDir: string, opts: StateFileOptions = {}): Promise<DigestStore> {
    const store = new DigestStore(stateDir, FORMAT, opts);
    await store.load();
    return store;
  }
}

/** A tool whose listed definition newly differs from the approved one (or differs anew). */
export interface ToolChange {
  tool: string;
  changed: ChangedPart[];
  /** When the difference was first seen. */
  since: string;
}

/**
 * The digests in memory (over the store when there is one): observed on each live listing, read for
 * holding and reporting, written when something changed.
 */
export class ToolDigests {
  private readonly memory = new Map<string, DigestRecord>();

  constructor(
    private readonly store: DigestStore | null,
    private readonly scrub: (text: string) => string = (t) => t,
    private readonly onWriteError: (err: unknown) => void = () => undefined,
  ) {}

  get(key: string): DigestRecord | undefined {
    return this.memory.get(key) ?? this.store?.get(key);
  }

  /** One tool's digests under a key. */
  tool(key: string, name: string): ToolDigest | undefined {
    const r = this.get(key);
    return r && Object.hasOwn(r.tools, name) ? r.tools[name] : undefined;
  }

  /**
   * Compares a live listing with what was approved: a tool not seen before is recorded as it is; one that
   * differs is marked changed (since the first listing that differed); one back to its approved
   * definition is no longer changed. Answers the tools that changed in this listing.
   */
  observe(key: string, tools: ReadonlyArray<Record<string, unknown>>, now = new Date().toISOString()): ToolChange[] {
    const before = this.get(key)?.tools ?? {};
    // A Map, not an object: a tool named "__proto__" is a tool like any other.
    const next = new Map<string, ToolDigest>(Object.entries(before));
    const changes: ToolChange[] = [];
    let dirty = this.get(key) === undefined;
    const seen = new Set<string>();
    for (const t of tools) {
      const name = t['name'];
      if (typeof name !== 'string' || seen.has(name)) continue;
      seen.add(name);
      const { digest, parts } = toolDigest(t, this.scrub);
      const known = Object.hasOwn(before, name) ? before[name] : undefined;
      if (!known) {
        next.set(name, { digest, parts, at: now });
        dirty = true;
      } else if (known.digest === digest) {
        if (known.changed) {
          next.set(name, { digest: known.digest, parts: known.parts, at: known.at });
          dirty = true;
        }
      } else if (known.changed?.digest !== digest) {
        const entry: ToolDigest = { ...known, changed: { digest, parts, at: known.changed?.at ?? now } };
        next.set(name, entry);
        dirty = true;
        changes.push({ tool: name, changed: changedParts(entry), since: entry.changed!.at });
      }
    }
    if (dirty) this.put(key, { tools: Object.fromEntries(next) });
    return changes;
  }

  /** Approves what is listed now; false when the tool has no change to accept under this key. */
  accept(key: string, name: string, now = new Date().toISOString()): boolean {
    const r = this.get(key);
    const entry = r && Object.hasOwn(r.tools, name) ? r.tools[name] : undefined;
    if (!r || !entry?.changed) return false;
    this.put(key, { tools: { ...r.tools, [name]: { digest: entry.changed.digest, parts: entry.changed.parts, at: now } } });
    return true;
  }

  private put(key: string, record: DigestRecord): void {
    this.memory.set(key, record);
    this.store?.set(key, record).catch((err: unknown) => this.onWriteError(err));
  }

  /** Resolves once every change made so far is on disk (or failed to be). */
  whenIdle(): Promise<void> {
    return this.store?.whenIdle() ?? Promise.resolve();
  }
}
