/**
 * `mcpx status`: whether a daemon runs, and if one does, its servers, their lanes and live instances.
 * It starts none unless asked (`--start`): a status that starts a daemon reports one "up 54ms" and
 * cannot say whether one was running.
 */
import type { Command } from 'commander';
import type { z } from 'zod';
import type { statusSchema } from '../../api/schemas.js';
import { api, out, printJson, target, withJson, withTarget, type CliContext, type CommonOpts } from '../common.js';
import { ago, rejectedEditLines, table } from '../format.js';

/** `2 serve, 1 mcp` from caller kinds. */
function countKinds(kinds: string[]): string[] {
  const n = new Map<string, number>();
  for (const k of kinds) n.set(k, (n.get(k) ?? 0) + 1);
  return [...n].map(([k, c]) => `${c} ${k}`);
}

export function register(program: Command, cli: CliContext): void {
  withJson(
    withTarget(
      program.command('status').description('whether a daemon is running, and its servers, their lanes and live instances (starts none unless --start)'),
    ),
  )
    .option('--start', 'start a daemon in the background when none is running')
    .action(async (o: CommonOpts & { start?: boolean }) => {
      const t = await target(o);
      const { DaemonClient, startDaemonInBackground } = await import('../../daemon-client/client.js');
      const client = new DaemonClient(t.socket, t.configFile);
      try {
        let started = false;
        if (!(await client.alive())) {
          if (!o.start) {
            if (o.json) return printJson({ ok: true, running: false, daemon: { stateDir: t.stateDir, socket: t.socket } });
            return out(`no daemon is running (state folder ${t.stateDir}); mcpx status --start starts one, as any other client command does`);
          }
          await startDaemonInBackground(t, { entry: cli.entry });
          started = true;
        }
        const { body } = await api<z.output<typeof statusSchema>>(client, 'GET', '/v1/status');
        if (o.json) return printJson(body);
        if (started) out(`no daemon was running: started one (pid ${body.pid})`);
        out(
          `mcpx ${body.version}, daemon pid ${body.pid}, up ${ago(body.uptimeMs)}; socket ${body.daemon.socket ?? '-'}${body.daemon.tcp ? `; tcp ${body.daemon.tcp.host}:${body.daemon.tcp.port}` : ''}`,
        );
        out(`config: ${body.config.file ?? '-'}${body.config.demo ? ' (the bundled demo)' : ''}`);
        for (const l of rejectedEditLines(body.config.rejected)) out(l);
        out('');
        out(
          table(
            ['SERVER', 'PREFERENCE', 'LANES'],
            body.servers.map((s) => [
              s.server,
              s.preference,
              s.lanes.map((l) => `${l.lane} ${l.instances}/${l.max}${l.state ? ` (${l.state})` : ''}`).join(', '),
            ]),
          ),
        );
        const rows = body.servers.flatMap((s) =>
          s.instances.map((i) => [s.server, i.id, i.lane, i.pid, i.scopeKey, i.holders, i.era, i.sessionState ?? i.state, ago(i.uptimeMs)]),
        );
        if (rows.length > 0) {
          out('');
          out(table(['SERVER', 'INSTANCE', 'LANE', 'PID', 'SCOPE KEY', 'HOLDERS', 'ERA', 'STATE', 'UPTIME'], rows));
        }
        const authNotes = body.servers.flatMap((s) => [
          ...(s.auth?.state === 'failed' && s.auth.error ? [`${s.server}: authorization: ${s.auth.error}`] : []),
          ...(s.auth?.unsaved ? [`${s.server}: ${s.auth.unsaved}`] : []),
        ]);
        if (authNotes.length > 0) {
          out('');
          for (const n of authNotes) out(n);
        }
        // Every config the daemon holds: who uses it, its servers, and which instances configs share.
        if (body.configs.length > 1 || body.configs.some((c) => !c.home)) {
          out('');
          out(
            table(
              ['CONFIG', 'CALLERS', 'SERVERS (→ INSTANCE, SHARED)'],
              body.configs.map((c) => [
                `${c.file ?? '-'}${c.home ? " (daemon's own)" : ''}${c.demo ? ' (demo)' : ''}`,
                [...countKinds(c.callers.map((x) => x.kind)), `last used ${ago(Date.now() - Date.parse(c.lastUsedAt))} ago`].join(', '),
                c.servers
                  .map((s) => `${s.server}${s.instance !== s.server ? ` → ${s.instance}` : ''}${s.sharedWith.length > 0 ? ' (shared)' : ''}`)
                  .join(', ') || '-',
              ]),
            ),
          );
          for (const c of body.configs) if (c.rejected && c.file !== body.config.file) for (const l of rejectedEditLines(c.rejected)) out(l);
        }
      } finally {
        await client.close();
      }
    });
}
