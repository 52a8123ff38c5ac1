/** `mcpx install` / `mcpx uninstall`: the one `mcpx` entry in an MCP client's own config file (docs/clients.md). */
import type { Command } from 'commander';
import { McpxError } from '../../errors.js';
import { out, printJson, target, UsageError, withTarget, type CliContext, type CommonOpts } from '../common.js';

interface InstallOpts extends CommonOpts {
  client?: string;
  project?: boolean;
  import?: boolean;
  dryRun?: boolean;
  rename: string[];
  skip: string[];
}

const collect = (v: string, prev: string[]): string[] => [...prev, v];

async function context() {
  const [{ homeFolder }, clients] = await Promise.all([import('../../config/settings.js'), import('../../install/clients.js')]);
  const ctx = { platform: clients.currentPlatform(), home: homeFolder(process.env), env: process.env, cwd: process.cwd() };
  return { ctx, clients };
}

async function pickClient(name: string | undefined) {
  const { clients } = await context();
  if (name === undefined) throw new UsageError('--client is required');
  const c = clients.findClient(name);
  if (!c)
    throw new McpxError(
      'MCPX_UNKNOWN_CLIENT',
      `${JSON.stringify(name)} is not a client mcpx knows; clients: ${clients.CLIENTS.map((x) => x.name).join(', ')}`,
      { data: { client: name } },
    );
  return c;
}

export function register(program: Command, cli: CliContext): void {
  withTarget(
    program
      .command('install')
      .description(
        "put one `mcpx` entry (running `mcpx serve`) into an MCP client's config file; without --client, list the clients found and what install would do",
      ),
  )
    .option('--client <name>', 'claude-desktop, claude-code, cursor, vscode, vscode-insiders, windsurf, codex')
    .option('--project', "Claude Code: the project's .mcp.json in this folder instead of ~/.claude.json")
    .option('--import', "move the client's own servers into mcpx's config (the user config, or --config FILE)")
    .option('--rename <name=new>', 'with --import: import server NAME as NEW (repeatable)', collect, [])
    .option('--skip <name>', "with --import: do not import NAME (mcpx's server of that name stays; the client's is in the backup) (repeatable)", collect, [])
    .option('--dry-run', 'print the diff of every file it would change, change nothing')
    .option('--json', 'print what was done (or would be) as JSON')
    .action(async (o: InstallOpts) => {
      const { ctx, clients } = await context();
      const inst = await import('../../install/install.js');
      const { resolve } = await import('node:path');
      const { userConfigPath } = await import('../../config/config-file.js');
      // A project's entry names a config of the project's own (`.mcpx.json` beside its `.mcp.json`, which mcpx's
      // walk finds first): its servers stay with the project, and its client sees those, not the user's. Not
      // `.mcp.json` itself: that file holds mcpx's own entry, and mcpx would serve itself.
      const configFile =
        o.config !== undefined ? resolve(o.config) : o.project === true ? resolve(ctx.cwd ?? process.cwd(), '.mcpx.json') : userConfigPath(process.env);
      if (o.client === undefined) {
        // What --import would do, against mcpx's config as it is: the names it would refuse are said here.
        const all = inst.allClientStatus(ctx).map((s) => {
          if (s.error || s.installed || s.servers.length === 0) return s;
          try {
            return { ...s, import: inst.previewImport(clients.findClient(s.client)!, s.file, configFile) };
          } catch (err) {
            return { ...s, importError: (err as Error).message };
          }
        });
        if (o.json) return printJson(all);
        for (const s of all) {
          const state = s.error
            ? `unreadable: ${s.error}`
            : !s.exists
              ? 'no config file'
              : s.installed
                ? `has the mcpx entry${s.entryWorks === false ? ' (its command or main file is missing: run install again)' : ''}`
                : `${s.servers.length} server(s): ${s.servers.join(', ') || '-'}`;
          const would = s.error
            ? 'fix the file first'
            : s.installed
              ? 'nothing (install again to refresh the entry)'
              : `add the mcpx entry${s.servers.length > 0 ? `; with --import, ${importWould(s, configFile)}` : ''}`;
          out(`${s.client.padEnd(16)} ${s.file}\n${' '.repeat(17)}${state}\n${' '.repeat(17)}install would: ${would}`);
        }
        return;
      }
      const client = await pickClient(o.client);
      if (o.project && client.name !== 'claude-code') throw new UsageError('--project is for --client claude-code (its .mcp.json)');
      if (!o.import && (o.rename.length > 0 || o.skip.length > 0)) throw new UsageError('--rename and --skip go with --import');
      const renames = new Map<string, string>();
      for (const r of o.rename) {
        const eq = r.indexOf('=');
        if (eq <= 0 || eq === r.length - 1) throw new UsageError(`--rename ${r}: write NAME=NEW`);
        renames.set(r.slice(0, eq), r.slice(eq + 1));
      }
      const spec = inst.entrySpec(cli.entry, configFile, client.tools);
      const file = inst.clientFile(client, ctx, o.project === true);
      const makePlan = () => inst.planInstall({ client, file, configFile, spec, import: o.import === true, renames, skips: new Set(o.skip) });
      let plan = makePlan();
      const report = () => ({
        client: client.name,
        file,
        configFile,
        entry: inst.clientEntry(client, spec),
        imported: plan.imported,
        unchanged: plan.unchanged,
        dryRun: o.dryRun === true,
      });
      if (o.dryRun) {
        if (o.json) return printJson({ ...report(), diff: inst.planDiff(plan) });
        out(plan.unchanged ? `${file}: the mcpx entry is there already; nothing to change` : inst.planDiff(plan));
        printImport(plan.imported);
        return;
      }
      const t = await target(o);
      // Claude Code rewrites ~/.claude.json often: a file that changed under the edit is read again and the
      // edit made again (servers already moved count as "already there"), a few times.
      let backups: string[] = [];
      let notes: string[] = [];
      // What another program did to the file meanwhile, each time (said, not hidden in a retry).
      const raced: string[] = [];
      for (let attempt = 1; ; attempt++) {
        try {
          ({ backups, notes } = await inst.applyInstall(plan, t.stateDir));
          break;
        } catch (err) {
          if (!(err instanceof McpxError) || err.code !== 'MCPX_INSTALL_RACE' || attempt >= 3) throw err;
          raced.push(err.message);
          await new Promise((r) => setTimeout(r, 100 * attempt));
          plan = makePlan();
        }
      }
      const running = plan.unchanged ? undefined : await runningNote(client, ctx.platform);
      if (o.json) return printJson({ ...report(), backups, notes, raced, ...(running === undefined ? {} : { running }) });
      for (const r of raced) out(`${r}; read it again and redid the edit`);
      if (plan.unchanged) out(`${file}: the mcpx entry is there already; nothing changed`);
      else out(`${client.title}: wrote the mcpx entry into ${file}`);
      for (const b of backups) out(`backup: ${b}`);
      for (const n of notes) out(n);
      printImport(plan.imported, configFile);
      if (!o.import) {
        const own = Object.keys(parseServers(plan.after, client, file, inst)).filter((n) => n !== inst.ENTRY_NAME);
        if (own.length > 0) out(`${client.title} still runs its own servers too (${own.join(', ')}): --import moves them into mcpx`);
      }
      if (!plan.unchanged) out(running ?? hint(client.name));
    });
}

export function registerUninstall(program: Command): void {
  withTarget(
    program
      .command('uninstall')
      .description(
        "take the `mcpx` entry out of a client's config file: the backup back when the file is as mcpx left it, else the entry removed and the servers it replaced put back",
      ),
  )
    .option('--client <name>', 'the client (see mcpx install)')
    .option('--project', "Claude Code: the project's .mcp.json in this folder")
    .option('--dry-run', 'print the diff, change nothing')
    .option('--json', 'print what was done as JSON')
    .action(async (o: InstallOpts) => {
      const { ctx } = await context();
      const client = await pickClient(o.client);
      const inst = await import('../../install/install.js');
      const file = inst.clientFile(client, ctx, o.project === true);
      const t = await target(o);
      const r = await inst.uninstall(client, file, t.stateDir, o.dryRun === true);
      const running = o.dryRun || r.how === 'nothing' ? undefined : await runningNote(client, ctx.platform);
      if (o.json)
        return printJson({
          client: client.name,
          file: r.file,
          how: r.how,
          restored: r.restored,
          imported: r.imported,
          ...(r.configFile === undefined ? {} : { configFile: r.configFile }),
          dryRun: o.dryRun === true,
          ...(running === undefined ? {} : { running }),
        });
      if (o.dryRun) {
        const { lineDiff } = await import('../../install/files.js');
        out(
          r.how === 'nothing'
            ? `${r.file}: no mcpx entry; nothing to do`
            : r.how === 'deleted'
              ? `${r.file}: would be deleted (mcpx created it)`
              : lineDiff(r.before ?? '', r.after ?? '', r.file),
        );
        return;
      }
      const said = {
        restored: 'put back as it was before mcpx install (from the backup)',
        'removed-entry': `the mcpx entry removed${r.restored.length > 0 ? `; servers put back from the backup: ${r.restored.join(', ')}` : ''} (the file had changed since the install, so the backup was not copied over it)`,
        deleted: 'deleted (mcpx had created it)',
        nothing: 'no mcpx entry; nothing to do',
      }[r.how];
      out(`${r.file}: ${said}`);
      for (const l of importedLines(r, client)) out(l);
      if (running) out(running);
    });
}

/** The overview's words for `--import`: what would move, and the names it would refuse as they are. */
function importWould(s: { import?: import('../../install/install.js').ImportPreview; importError?: string; servers: string[] }, configFile: string): string {
  if (s.importError !== undefined) return `move ${s.servers.length} server(s) into mcpx, but ${s.importError}`;
  const p = s.import;
  if (p === undefined) return `move ${s.servers.length} server(s) into mcpx`;
  const parts = [`move ${p.move.length} server(s) into mcpx${p.move.length > 0 ? ` (${p.move.join(', ')})` : ''}`];
  if (p.already.length > 0) parts.push(`take out ${p.already.join(', ')} (in mcpx's config already, the same)`);
  if (p.kept.length > 0) parts.push(`leave ${p.kept.join(', ')} in the client (prompted values)`);
  if (p.clashes.length > 0)
    parts.push(
      `but ${configFile} already has a different server named ${p.clashes.join(', ')}: --import refuses until --rename NAME=NEW or --skip NAME settles ${p.clashes.length === 1 ? 'it' : 'each'}`,
    );
  return parts.join('; ');
}

/** After uninstall: the servers --import moved stay in mcpx's config; which are in the client again, and how to put back the others. */
function importedLines(r: import('../../install/install.js').UninstallResult, client: import('../../install/clients.js').ClientInfo): string[] {
  if (r.imported.length === 0) return [];
  const where = r.configFile ?? "mcpx's config";
  const name = (m: { from: string; to: string }) => (m.to === m.from ? m.from : `${m.from} (as ${m.to})`);
  const lines = [`the servers --import moved stay in ${where}: ${r.imported.map(name).join(', ')} (take them out there if mcpx should not run them)`];
  const back = r.imported.filter((m) => m.inClient);
  const missing = r.imported.filter((m) => !m.inClient);
  if (back.length > 0) lines.push(`${back.map((m) => m.from).join(', ')}: in ${client.title}'s file again too`);
  if (missing.length > 0) {
    const from = r.backup !== undefined ? `the backup ${r.backup}` : where;
    lines.push(
      `${missing.map((m) => m.from).join(', ')}: not in ${client.title}'s file; to run ${missing.length === 1 ? 'it' : 'them'} from ${client.title} again, copy ${missing.length === 1 ? 'its entry' : 'their entries'} from ${from} into ${r.file} (under "${client.key}")`,
    );
  }
  return lines;
}

function parseServers(text: string, client: import('../../install/clients.js').ClientInfo, file: string, inst: typeof import('../../install/install.js')) {
  return inst.parseServersOf(text, client, file);
}

function printImport(imp: import('../../install/install.js').ImportPlan | undefined, configFile?: string): void {
  if (!imp) return;
  for (const m of imp.moved)
    out(`imported ${m.from}${m.to === m.from ? '' : ` as ${m.to}`}${m.disabled ? ' (disabled)' : ''}${configFile ? ` into ${configFile}` : ''}`);
  for (const n of imp.already) out(`${n}: already in mcpx's config, same definition; taken out of the client`);
  for (const n of imp.skipped) out(`${n}: skipped (--skip); taken out of the client, kept in the backup`);
  for (const k of imp.kept) out(`${k.server}: kept in the client: ${k.note}`);
  for (const n of imp.notes) out(`${n.server}: ${n.note}`);
}

/** The client's reload step when it runs now (it may keep the old entry, or write its own copy back). */
async function runningNote(
  client: import('../../install/clients.js').ClientInfo,
  platform: import('../../install/clients.js').Platform,
): Promise<string | undefined> {
  const running = await import('../../install/running.js');
  return running.runningNote(client, platform, running.listProcesses(platform));
}

function hint(client: string): string {
  switch (client) {
    case 'claude-desktop':
      return 'restart Claude Desktop to load it';
    case 'cursor':
      return 'Cursor: turn the mcpx server on in Settings → MCP (it may need a reload)';
    case 'vscode':
    case 'vscode-insiders':
      return 'VS Code: run "MCP: List Servers" and start mcpx (a reload may be needed)';
    case 'windsurf':
      return 'Windsurf: refresh the MCP servers in its settings';
    case 'claude-code':
      return 'Claude Code: `claude mcp list` shows it in new sessions';
    default:
      return 'restart the client to load it';
  }
}
