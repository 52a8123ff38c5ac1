/** `mcpx doctor`: what would stop mcpx working, checked locally (never starts a daemon). */
import type { Command } from 'commander';
import { McpxError } from '../../errors.js';
import type { DaemonConfig } from '../../core/views.js';
import { out, printJson, withJson, withTarget, type CliContext, type CommonOpts } from '../common.js';

interface Check {
  check: string;
  ok: boolean;
  detail: string;
  /** Worth saying, not a failure (printed `warn`). */
  warn?: boolean;
}

/** The doctor-servers checks, with the daemon's environment and `upstream.inheritEnv` as the daemon would resolve them. */
async function serverChecks(loaded: DaemonConfig, stateDir: string, alive: boolean): Promise<Check[]> {
  const [{ checkServers, daemonEnvironment }, { Settings }] = await Promise.all([import('../doctor-servers.js'), import('../../config/settings.js')]);
  const daemon = daemonEnvironment(stateDir, alive);
  let inheritAll = false;
  try {
    inheritAll =
      new Settings({ file: loaded.settingsFile, ...(loaded.file ? { filePath: loaded.file } : {}), env: daemon.env }).get('upstream.inheritEnv') === true;
  } catch {
    // a bad setting is the config check's to report
  }
  return checkServers(loaded.servers, { file: loaded.found ? loaded.file : undefined, daemon, inheritAll });
}

/** "doctor: server ghost and client cursor need attention (…)", in words. */
function needAttention(failed: string[]): string {
  const list = failed.length === 1 ? failed[0]! : `${failed.slice(0, -1).join(', ')} and ${failed[failed.length - 1]}`;
  return `doctor: ${list} ${failed.length === 1 ? 'needs' : 'need'} attention (the FAIL lines above say why)`;
}

export function register(program: Command, cli: CliContext): void {
  withJson(
    withTarget(
      program
        .command('doctor')
        .description(
          'check Node, the daemon, the state folder, the config and its servers, and which MCP clients have the mcpx entry; exits 1 when something is wrong',
        ),
    ),
  )
    .option('--fix', 're-add the mcpx entry to every client it was installed in and is gone from (a client that rewrote its file)')
    .action(async (o: CommonOpts & { fix?: boolean }) => {
      const env = process.env;
      const cwd = process.cwd();
      const checks: Check[] = [];
      const [major, minor, patch] = process.versions.node.split('.').map(Number) as [number, number, number];
      const nodeOk = major > 20 || (major === 20 && (minor > 18 || (minor === 18 && patch >= 1)));
      checks.push({ check: 'node', ok: nodeOk, detail: `${process.version} at ${process.execPath}${nodeOk ? '' : ' (mcpx needs 20.18.1 or later)'}` });

      const { loadDaemonConfig } = await import('../../daemon/config-source.js');
      const loaded = await loadDaemonConfig({ ...(o.config === undefined ? {} : { configFlag: o.config }), env, cwd });
      checks.push({
        check: 'config',
        ok: loaded.errors.length === 0,
        detail:
          loaded.errors.length > 0
            ? `${loaded.file ?? '-'}: ${loaded.errors.map((e) => e.message).join('; ')}`
            : loaded.found
              ? `${loaded.file} (found via ${loaded.via})`
              : 'no config file: the bundled demo runs',
      });
      const servers = loaded.servers.map((s) => ({ name: s.name, transport: s.transport, disabled: s.disabled }));
      checks.push({
        check: 'servers',
        ok: true,
        detail: servers.length === 0 ? 'none' : servers.map((s) => `${s.name} (${s.transport}${s.disabled ? ', disabled' : ''})`).join(', '),
      });

      const { resolveTarget, DaemonClient } = await import('../../daemon-client/client.js');
      const t = await resolveTarget({ ...(o.config === undefined ? {} : { config: o.config }), ...(o.stateDir === undefined ? {} : { stateDir: o.stateDir }) });
      const { accessSync, constants, existsSync, statSync } = await import('node:fs');
      let stateOk = true;
      let stateDetail = `${t.stateDir}`;
      if (existsSync(t.stateDir)) {
        try {
          accessSync(t.stateDir, constants.W_OK);
          const mode = statSync(t.stateDir).mode & 0o777;
          if ((mode & 0o022) !== 0) {
            stateOk = false;
            stateDetail += ` is writable by others (mode ${mode.toString(8)}): the daemon refuses it`;
          } else stateDetail += ' (writable)';
        } catch {
          stateOk = false;
          stateDetail += ' is not writable';
        }
      } else stateDetail += ' (not made yet: the first daemon makes it)';
      checks.push({ check: 'state folder', ok: stateOk, detail: stateDetail });

      // What a server listed that clients could not take, from the catalogue the daemon keeps (no server
      // is started): named with its reason, the rest served (docs/serving.md). A note, not a failure.
      const { listingNotes, toolGlobNotes } = await import('../doctor-listings.js');
      for (const n of listingNotes(t.stateDir, loaded.servers)) checks.push({ check: `listing ${n.server}`, ok: true, detail: n.detail });
      // A filter or pin glob that matches none of the tools a server last listed: a typo, most likely.
      for (const n of toolGlobNotes(t.stateDir, loaded.servers)) checks.push({ check: `tools ${n.server}`, ok: true, warn: true, detail: n.detail });

      const client = new DaemonClient(t.socket, t.configFile);
      let alive = false;
      try {
        alive = await client.alive();
      } finally {
        await client.close();
      }
      checks.push({ check: 'daemon', ok: true, detail: alive ? `running (${t.socket})` : `not running (the first client command starts one at ${t.socket})` });
      // Whether each server can start, right after the list of servers.
      checks.splice(checks.findIndex((c) => c.check === 'servers') + 1, 0, ...(await serverChecks(loaded, t.stateDir, alive)));

      // What an upstream left running in a session of its own (setsid): neither a stop nor the sweep reaches it.
      const leftovers = (await import('../../daemon/leftovers.js')).findLeftovers();
      if (leftovers.length > 0)
        checks.push({
          check: 'leftover processes',
          ok: true,
          warn: true,
          detail: `${leftovers
            .map((l) => `pid ${l.pid} (${l.command}; process group ${l.pgid}, parent ${l.ppid})`)
            .join(
              ', ',
            )} outlived the upstream that started them (they carry an earlier upstream's MCPX_SPAWN_TAG and left its process group or session, so mcpx's stop and start-up sweep do not reach them); end them with kill ${leftovers.map((l) => l.pid).join(' ')}`,
        });

      const [{ homeFolder }, clients, inst, running, { realTarget }] = await Promise.all([
        import('../../config/settings.js'),
        import('../../install/clients.js'),
        import('../../install/install.js'),
        import('../../install/running.js'),
        import('../../install/files.js'),
      ]);
      const ctx = { platform: clients.currentPlatform(), home: homeFolder(env), env, cwd };
      const processes = running.listProcesses(ctx.platform);
      // Entries mcpx installed (its records), by the real path of the client's file.
      const records = Object.values(inst.readRecords(t.stateDir));
      const fixed: string[] = [];
      const notes = new Map(clients.CLIENTS.map((c) => [c.name as string, running.runningNote(c, ctx.platform, processes)]));
      const found = inst.allClientStatus(ctx).map((s) => ({ ...s, ...(notes.get(s.client) === undefined ? {} : { running: true }) }));
      for (const s of found) {
        const client = clients.findClient(s.client)!;
        const record = records.find((r) => r.client === s.client && r.file === realTarget(s.file));
        let gone = record !== undefined && s.error === undefined && !s.installed;
        if (gone && o.fix) {
          // The entry as install writes it, with the config file that install named.
          const spec = inst.entrySpec(cli.entry, record!.configFile, client.tools);
          const plan = inst.planInstall({ client, file: s.file, configFile: record!.configFile, spec, import: false, renames: new Map(), skips: new Set() });
          await inst.applyInstall(plan, t.stateDir);
          fixed.push(s.client);
          gone = false;
        }
        const ok = s.error === undefined && s.entryWorks !== false && !gone;
        const note = notes.get(s.client);
        const detail =
          s.error ??
          (gone
            ? `${s.file}: the mcpx entry installed ${record!.at} is gone (the client rewrote its file?): mcpx doctor --fix re-adds it`
            : fixed.includes(s.client)
              ? `${s.file}: the mcpx entry was gone; re-added`
              : !s.exists
                ? `${s.file}: not found`
                : s.installed
                  ? `${s.file}: has the mcpx entry${s.entryWorks === false ? ', but its command or main file is missing (run mcpx install again)' : ''}`
                  : `${s.file}: no mcpx entry (${s.servers.length} server(s) of its own; mcpx install --client ${s.client} --import)`);
        checks.push({ check: `client ${s.client}`, ok, detail: note && (fixed.includes(s.client) || gone) ? `${detail}; ${note}` : detail });
      }
      const ok = checks.every((c) => c.ok);
      if (o.json) printJson({ ok, checks, servers, clients: found, fixed, daemon: { running: alive, socket: t.socket, stateDir: t.stateDir }, leftovers });
      else for (const c of checks) out(`${c.ok ? (c.warn ? 'warn' : 'ok  ') : 'FAIL'} ${c.check.padEnd(22)} ${c.detail}`);
      if (!ok) throw new McpxError('MCPX_BAD_CONFIG', needAttention(checks.filter((c) => !c.ok).map((c) => c.check)));
    });
}
