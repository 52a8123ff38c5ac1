/**
 * `mcpx install` / `mcpx uninstall`: one `mcpx` entry in a client's file that runs `mcpx serve`, and with
 * `--import` the client's own servers moved into mcpx's config (docs/clients.md).
 *
 * Order of writes: mcpx's config first, the client's file second, so a server is never in neither. Each
 * file is locked, backed up (the restore point `uninstall` puts back) and replaced atomically. What was
 * done is kept in `<state>/installs.json`.
 */
import { chmodSync, existsSync, mkdirSync, statSync, unlinkSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { McpxError } from '../errors.js';
import { clientPaths, CLIENTS, type ClientInfo, type PathContext } from './clients.js';
import { editJson, editToml, parseClientFile, sameValue, type ServerMap } from './edit.js';
import { assertOwnLink, assertWritable, atomicWrite, backupFile, lineDiff, readIfExists, realTarget, sha256, withLock } from './files.js';
import { readRegularFileSync } from '../state/safe-files.js';

export const ENTRY_NAME = 'mcpx';

export interface EntrySpec {
  /** Absolute: GUI clients start servers without the user's shell PATH. */
  command: string;
  args: string[];
}

/**
 * What the entry runs: this Node and the real path of the running `main.js` (GUI clients start servers
 * without the shell's PATH), then `serve --config FILE` always — a client starts servers in a project
 * folder, where mcpx would otherwise pick up that project's `.mcp.json` — and the client's tool
 * strategy (`--tools`, ./clients.ts).
 */
export function entrySpec(mainJs: string, configFile: string, tools?: ClientInfo['tools']): EntrySpec {
  return { command: process.execPath, args: [realTarget(mainJs), 'serve', '--config', configFile, ...(tools ? ['--tools', tools] : [])] };
}

/** The entry as this client writes one. */
export function clientEntry(client: ClientInfo, spec: EntrySpec): Record<string, unknown> {
  return client.typeStdio ? { type: 'stdio', command: spec.command, args: spec.args } : { command: spec.command, args: spec.args };
}

/** The file this client uses: the first candidate that exists, else the first. */
export function clientFile(client: ClientInfo, ctx: PathContext, project = false): string {
  const all = clientPaths(client.name, ctx, { project });
  return all.find((f) => existsSync(f)) ?? all[0]!;
}

export interface Note {
  server: string;
  note: string;
}

export interface ImportPlan {
  /** client name → name in mcpx's config. */
  moved: Array<{ from: string; to: string; disabled: boolean }>;
  /** In mcpx's config already with the same definition: taken out of the client, not added twice. */
  already: string[];
  skipped: string[];
  /** Left in the client's file (and why). */
  kept: Note[];
  notes: Note[];
}

export interface InstallPlan {
  client: ClientInfo;
  file: string;
  before: string | undefined;
  after: string;
  configFile: string;
  configBefore: string | undefined;
  configAfter: string | undefined;
  imported?: ImportPlan;
  /** The entry was there already, exactly as it would be written. */
  unchanged: boolean;
}

function hasInput(v: unknown): boolean {
  return JSON.stringify(v).includes('${input:');
}

/** A client's server as mcpx's config holds it (`mcpServers` form); notes on what does not carry over. */
export function toMcpxServer(client: ClientInfo, name: string, raw: Record<string, unknown>, notes: Note[]): Record<string, unknown> {
  if (client.format === 'toml') {
    // Codex: command/args/env/cwd or url + http_headers / env_http_headers / bearer_token_env_var; enabled = false.
    const out: Record<string, unknown> = {};
    for (const k of ['command', 'args', 'env', 'cwd', 'url'] as const) if (raw[k] !== undefined) out[k] = raw[k];
    const headers: Record<string, string> = {};
    if (typeof raw['http_headers'] === 'object' && raw['http_headers'] !== null) Object.assign(headers, raw['http_headers']);
    if (typeof raw['env_http_headers'] === 'object' && raw['env_http_headers'] !== null)
      for (const [h, v] of Object.entries(raw['env_http_headers'] as Record<string, string>)) headers[h] = `\${${v}}`;
    if (typeof raw['bearer_token_env_var'] === 'string') headers['Authorization'] = `Bearer \${${raw['bearer_token_env_var']}}`;
    if (Object.keys(headers).length > 0) out['headers'] = headers;
    if (raw['enabled'] === false) out['disabled'] = true;
    const dropped = Object.keys(raw).filter(
      (k) => !['command', 'args', 'env', 'cwd', 'url', 'http_headers', 'env_http_headers', 'bearer_token_env_var', 'enabled'].includes(k),
    );
    if (dropped.length > 0)
      notes.push({ server: name, note: `Codex-only keys not carried into mcpx's config: ${dropped.join(', ')} (they stay in the backup)` });
    return out;
  }
  const out: Record<string, unknown> = { ...raw };
  if (client.urlKey === 'serverUrl' && out['serverUrl'] !== undefined && out['url'] === undefined) {
    out['url'] = out['serverUrl'];
    delete out['serverUrl'];
  }
  return out;
}

function isDisabled(client: ClientInfo, raw: Record<string, unknown>): boolean {
  return client.format === 'toml' ? raw['enabled'] === false : raw['disabled'] === true;
}

export interface PlanOptions {
  client: ClientInfo;
  file: string;
  configFile: string;
  spec: EntrySpec;
  import: boolean;
  renames: ReadonlyMap<string, string>;
  skips: ReadonlySet<string>;
}

function editClient(client: ClientInfo, text: string | undefined, remove: string[], set: Record<string, Record<string, unknown>>, file: string): string {
  return client.format === 'toml' ? editToml(text, client.key, { remove, set }, file) : editJson(text, client.key, { remove, set });
}

/**
 * What `--import` would do with a client's servers against mcpx's config: what moves, what is there
 * already, what stays, and the names mcpx's config already has with another definition (`--import`
 * refuses those until --rename or --skip settles them; the overview names them beforehand).
 */
export function classifyImport(
  client: ClientInfo,
  clientServers: ServerMap,
  configServers: ServerMap,
  renames: ReadonlyMap<string, string>,
  skips: ReadonlySet<string>,
): { imported: ImportPlan; add: Record<string, Record<string, unknown>>; remove: string[]; collisions: string[] } {
  const remove: string[] = [];
  const add = Object.create(null) as Record<string, Record<string, unknown>>;
  const imported: ImportPlan = { moved: [], already: [], skipped: [], kept: [], notes: [] };
  const collisions: string[] = [];
  for (const [name, raw] of Object.entries(clientServers)) {
    if (name === ENTRY_NAME) continue;
    if (hasInput(raw)) {
      imported.kept.push({
        server: name,
        note: 'uses ${input:…} (a value VS Code prompts for), which mcpx cannot ask: left in the client; put the value in an environment variable to move it',
      });
      continue;
    }
    if (skips.has(name)) {
      imported.skipped.push(name);
      remove.push(name);
      continue;
    }
    const to = renames.get(name) ?? name;
    const server = toMcpxServer(client, name, raw, imported.notes);
    // Own keys only: a server named `constructor` is not Object's constructor.
    const existing = Object.hasOwn(configServers, to) ? configServers[to] : Object.hasOwn(add, to) ? add[to] : undefined;
    if (existing !== undefined) {
      if (sameValue(existing, server)) {
        imported.already.push(name);
        remove.push(name);
      } else collisions.push(to === name ? name : `${name} (renamed ${to})`);
      continue;
    }
    add[to] = server;
    remove.push(name);
    const disabled = isDisabled(client, raw);
    imported.moved.push({ from: name, to, disabled });
    if (disabled) imported.notes.push({ server: name, note: `disabled in ${client.title}: imported with "disabled": true` });
  }
  return { imported, add, remove, collisions };
}

/** mcpx's config: which key holds its servers (`mcpServers` unless the file uses `servers`), and the servers. */
function configServersOf(text: string | undefined, file: string): { configKey: 'mcpServers' | 'servers'; configServers: ServerMap } {
  const config = parseClientFile(text, 'json', 'mcpServers', file);
  const configKey = config.doc['servers'] !== undefined && config.doc['mcpServers'] === undefined ? 'servers' : 'mcpServers';
  return { configKey, configServers: configKey === 'servers' ? parseClientFile(text, 'json', 'servers', file).servers : config.servers };
}

/** What `install --client C --import` would do with C's servers, for the overview (`mcpx install` alone). */
export interface ImportPreview {
  move: string[];
  /** In mcpx's config already, the same. */
  already: string[];
  /** Left in the client (a prompted `${input:…}`). */
  kept: string[];
  /** In mcpx's config already with another definition: `--import` refuses them until --rename or --skip. */
  clashes: string[];
}

export function previewImport(client: ClientInfo, clientFile: string, configFile: string): ImportPreview {
  const { servers } = parseClientFile(readIfExists(clientFile), client.format, client.key, clientFile);
  const { configServers } = configServersOf(readIfExists(configFile), configFile);
  const c = classifyImport(client, servers, configServers, new Map(), new Set());
  return { move: c.imported.moved.map((m) => m.from), already: c.imported.already, kept: c.imported.kept.map((k) => k.server), clashes: c.collisions };
}

export function planInstall(o: PlanOptions): InstallPlan {
  // One file as both would have mcpx run itself, and the two edits overwrite each other.
  if (realTarget(o.file) === realTarget(o.configFile))
    throw new McpxError('MCPX_INSTALL_COLLISION', `${o.configFile} is ${o.client.title}'s own file: give mcpx a config file of its own (--config FILE)`, {
      data: { file: o.file },
    });
  const before = readIfExists(o.file);
  const parsed = parseClientFile(before, o.client.format, o.client.key, o.file);
  const entry = clientEntry(o.client, o.spec);
  const configBefore = readIfExists(o.configFile);
  const { configKey, configServers } = configServersOf(configBefore, o.configFile);
  let remove: string[] = [];
  let add = Object.create(null) as Record<string, Record<string, unknown>>;
  let imported: ImportPlan | undefined;
  if (o.import) {
    const c = classifyImport(o.client, parsed.servers, configServers, o.renames, o.skips);
    ({ imported, add, remove } = c);
    const { collisions } = c;
    if (collisions.length > 0) {
      throw new McpxError(
        'MCPX_INSTALL_COLLISION',
        `${o.configFile} already has a different server named ${collisions.join(', ')}; choose with --rename NAME=NEW or --skip NAME (nothing was written)`,
        { data: { collisions } },
      );
    }
    const unknownRename = [...o.renames.keys()].filter((n) => !Object.hasOwn(parsed.servers, n));
    if (unknownRename.length > 0)
      throw new McpxError('MCPX_INSTALL_COLLISION', `--rename names servers ${o.client.title} does not have: ${unknownRename.join(', ')}`);
  }
  const after = editClient(o.client, before, remove, { [ENTRY_NAME]: entry }, o.file);
  let configAfter: string | undefined;
  if (Object.keys(add).length > 0) configAfter = editJson(configBefore, configKey, { remove: [], set: add });
  else if (configBefore === undefined) configAfter = '{\n  "mcpServers": {}\n}\n'; // `mcpx serve --config FILE` needs the file
  return {
    client: o.client,
    file: o.file,
    before,
    after,
    configFile: o.configFile,
    configBefore,
    configAfter,
    ...(imported ? { imported } : {}),
    unchanged: before === after && configAfter === undefined,
  };
}

export function planDiff(plan: InstallPlan): string {
  const parts: string[] = [];
  if (plan.configAfter !== undefined && plan.configAfter !== plan.configBefore)
    parts.push(lineDiff(plan.configBefore ?? '', plan.configAfter, plan.configFile));
  if (plan.after !== plan.before) parts.push(lineDiff(plan.before ?? '', plan.after, plan.file));
  return parts.join('\n');
}

// ---- the record of installs ----

export interface InstallRecord {
  client: string;
  file: string;
  /** The restore point: the file as it was before mcpx first changed it (absent: mcpx created the file). */
  backup?: string;
  /** sha256 of what mcpx last wrote. */
  written: string;
  configFile: string;
  imported: Array<{ from: string; to: string }>;
  at: string;
}

type Records = Record<string, InstallRecord>;

function recordsFile(stateDir: string): string {
  return join(stateDir, 'installs.json');
}

/** The records (none when the file is missing, not a regular file, too large or not JSON). */
export function readRecords(stateDir: string): Records {
  const records = Object.create(null) as Records;
  try {
    const data = JSON.parse(readRegularFileSync(recordsFile(stateDir)).text) as unknown;
    if (typeof data === 'object' && data !== null && !Array.isArray(data)) Object.assign(records, data);
  } catch {
    // nothing usable: the next install writes it anew
  }
  return records;
}

function writeRecords(stateDir: string, records: Records): void {
  const file = recordsFile(stateDir);
  mkdirSync(dirname(file), { recursive: true, mode: 0o700 });
  let now: string | undefined;
  try {
    now = readIfExists(file);
  } catch {
    now = undefined; // not a regular file, too large: replaced (atomicWrite refuses what it cannot read)
  }
  atomicWrite(file, `${JSON.stringify(records, null, 2)}\n`, now, { mode: 0o600 });
}

/** Writes one file under its lock: refuses read-only, backs up, replaces atomically. Returns the backup. */
async function writeFileSafely(file: string, before: string | undefined, after: string, backup: boolean, mode?: number): Promise<string | undefined> {
  assertOwnLink(file);
  const target = realTarget(file);
  assertWritable(target);
  return withLock(target, () => {
    const made = backup && before !== undefined ? backupFile(target) : undefined;
    atomicWrite(target, after, before, mode === undefined ? {} : { mode });
    return made;
  });
}

export interface ApplyResult {
  backups: string[];
  /** What else was done (a mode narrowed). */
  notes: string[];
}

const modeOf = (file: string): number | undefined => {
  try {
    return statSync(file).mode & 0o7777;
  } catch {
    return undefined;
  }
};
const octal = (m: number) => m.toString(8).padStart(4, '0');

/**
 * Servers imported from a client's file may carry secrets (a token in `env` or `headers`): mcpx's config
 * gets no more readable than the file they came from. Returns the config's mode to write (undefined: as
 * it is) and what to say.
 */
function importMode(plan: InstallPlan): { mode?: number; note?: string } {
  if (plan.imported === undefined || plan.imported.moved.length === 0) return {};
  const from = modeOf(realTarget(plan.file));
  const was = modeOf(realTarget(plan.configFile));
  if (from === undefined || was === undefined) return {};
  const extra = was & 0o077 & ~from;
  if (extra === 0) return {};
  const mode = was & ~extra;
  const who = extra & 0o004 ? 'every user' : 'its group';
  return {
    mode,
    note: `${plan.configFile} was mode ${octal(was)}, readable by ${who}; made ${octal(mode)} as ${plan.file} (${octal(from)}) is: the imported servers may carry secrets`,
  };
}

export async function applyInstall(plan: InstallPlan, stateDir: string): Promise<ApplyResult> {
  const backups: string[] = [];
  const notes: string[] = [];
  // Check both files before writing either.
  assertOwnLink(plan.file);
  assertWritable(realTarget(plan.file));
  if (plan.configAfter !== undefined) {
    assertOwnLink(plan.configFile);
    assertWritable(realTarget(plan.configFile));
  }
  if (plan.configAfter !== undefined && plan.configAfter !== plan.configBefore) {
    const narrow = importMode(plan);
    const b = await writeFileSafely(plan.configFile, plan.configBefore, plan.configAfter, true, narrow.mode);
    if (b) {
      backups.push(b);
      // The backup holds no imported server, but keeps to the same mode all the same.
      if (narrow.mode !== undefined) chmodSync(b, narrow.mode);
    }
    if (narrow.note !== undefined) notes.push(narrow.note);
  }
  const records = readRecords(stateDir);
  const key = realTarget(plan.file);
  const old = records[key];
  // The old restore point still holds when the file is what mcpx last wrote; else this file is the new one.
  const keepOld = old !== undefined && plan.before !== undefined && sha256(plan.before) === old.written;
  if (plan.after !== plan.before) {
    const b = await writeFileSafely(plan.file, plan.before, plan.after, !keepOld);
    if (b) backups.push(b);
    const backup = keepOld ? old.backup : b;
    records[key] = {
      client: plan.client.name,
      file: key,
      ...(backup === undefined ? {} : { backup }),
      written: sha256(plan.after),
      configFile: plan.configFile,
      imported: [...(keepOld ? old.imported : []), ...(plan.imported?.moved.map(({ from, to }) => ({ from, to })) ?? [])],
      at: new Date().toISOString(),
    };
    writeRecords(stateDir, records);
  }
  return { backups, notes };
}

export interface UninstallResult {
  file: string;
  how: 'restored' | 'removed-entry' | 'deleted' | 'nothing';
  /** Servers put back from the backup when the file had changed since the install. */
  restored: string[];
  /** What `--import` moved into mcpx's config (they stay there), and whether each is in the client's file again. */
  imported: Array<{ from: string; to: string; inClient: boolean }>;
  /** mcpx's config the servers were imported into. */
  configFile?: string;
  /** The restore point, when mcpx kept one. */
  backup?: string;
  after?: string;
  before?: string;
}

/**
 * Puts the client's file back: byte for byte the backup when the file is still what mcpx wrote; else
 * (the user or the client changed it since) only the `mcpx` entry comes out and the servers the backup
 * had, and the file lacks, go back in. mcpx's config keeps the imported servers either way.
 */
export async function uninstall(client: ClientInfo, file: string, stateDir: string, dryRun: boolean): Promise<UninstallResult> {
  const key = realTarget(file);
  const records = readRecords(stateDir);
  const rec = records[key];
  const before = readIfExists(key);
  if (before === undefined) return { file: key, how: 'nothing', restored: [], imported: [] };
  const parsed = parseClientFile(before, client.format, client.key, key);
  let after: string | undefined;
  let how: UninstallResult['how'];
  const restored: string[] = [];
  // A restore point the user deleted: fall back to taking the entry out.
  if (rec !== undefined && sha256(before) === rec.written && (rec.backup === undefined || existsSync(rec.backup))) {
    if (rec.backup !== undefined) {
      after = readIfExists(rec.backup) ?? '';
      how = 'restored';
    } else {
      after = undefined;
      how = 'deleted';
    }
  } else {
    if (parsed.servers[ENTRY_NAME] === undefined && rec === undefined) return { file: key, how: 'nothing', restored: [], imported: [] };
    const set = Object.create(null) as Record<string, Record<string, unknown>>;
    if (rec?.backup !== undefined && existsSync(rec.backup)) {
      const old = parseClientFile(readIfExists(rec.backup), client.format, client.key, rec.backup).servers;
      for (const [name, raw] of Object.entries(old))
        if (name !== ENTRY_NAME && !Object.hasOwn(parsed.servers, name)) {
          set[name] = raw;
          restored.push(name);
        }
    }
    after = editClient(client, before, [ENTRY_NAME], set, key);
    how = 'removed-entry';
  }
  // Before the write below: a backup it makes within the same second takes the same name.
  const backupThere = rec?.backup !== undefined && existsSync(rec.backup);
  if (!dryRun) {
    if (after === undefined) {
      assertOwnLink(file);
      assertWritable(key);
      await withLock(key, () => {
        if (readIfExists(key) !== before) throw new McpxError('MCPX_INSTALL_RACE', `${key} changed while mcpx was editing it; nothing was done, try again`);
        unlinkSync(key);
      });
    } else await writeFileSafely(key, before, after, how !== 'restored');
    delete records[key];
    writeRecords(stateDir, records);
  }
  // The imported servers stay in mcpx's config; say which the client has again (the file as it is now).
  let nowIn: ServerMap = Object.create(null) as ServerMap;
  try {
    if (after !== undefined) nowIn = parseClientFile(after, client.format, client.key, key).servers;
  } catch {
    // a restore point that does not parse: nothing to say it holds
  }
  const imported = (rec?.imported ?? []).map(({ from, to }) => ({ from, to, inClient: Object.hasOwn(nowIn, from) }));
  return {
    file: key,
    how,
    restored,
    imported,
    ...(rec === undefined ? {} : { configFile: rec.configFile }),
    ...(backupThere ? { backup: rec!.backup! } : {}),
    before,
    ...(after === undefined ? {} : { after }),
  };
}

// ---- what is there ----

export interface ClientStatus {
  client: string;
  title: string;
  file: string;
  exists: boolean;
  /** The file could not be read back (line:column in `error`). */
  error?: string;
  installed: boolean;
  /** The entry's command and main file exist. */
  entryWorks?: boolean;
  servers: string[];
}

export function parseServersOf(text: string, client: ClientInfo, file: string): ServerMap {
  return parseClientFile(text, client.format, client.key, file).servers;
}

export function clientStatus(client: ClientInfo, ctx: PathContext, project = false): ClientStatus {
  const file = clientFile(client, ctx, project);
  const base = { client: client.name, title: client.title, file, exists: existsSync(file) };
  try {
    const text = readIfExists(file);
    const { servers } = parseClientFile(text, client.format, client.key, file);
    const entry = servers[ENTRY_NAME];
    const args = Array.isArray(entry?.['args']) ? (entry['args'] as unknown[]) : [];
    const works =
      entry === undefined
        ? undefined
        : typeof entry['command'] === 'string' && existsSync(entry['command']) && typeof args[0] === 'string' && existsSync(args[0]);
    return {
      ...base,
      installed: entry !== undefined,
      ...(works === undefined ? {} : { entryWorks: works }),
      servers: Object.keys(servers).filter((n) => n !== ENTRY_NAME),
    };
  } catch (err) {
    return { ...base, error: (err as Error).message, installed: false, servers: [] };
  }
}

export function allClientStatus(ctx: PathContext): ClientStatus[] {
  return CLIENTS.map((c) => clientStatus(c, ctx));
}
