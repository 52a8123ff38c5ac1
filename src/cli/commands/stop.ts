/** `mcpx stop`: stop the daemon and every upstream process (never starts one). */
import type { z } from 'zod';
import type { shutdownSchema } from '../../api/schemas.js';
import type { Command } from 'commander';
import { McpxError } from '../../errors.js';
import { api, out, printJson, target, withJson, withTarget, type CommonOpts } from '../common.js';

export function register(program: Command): void {
  withJson(withTarget(program.command('stop').description('stop the daemon and every upstream process (never starts one)'))).action(async (o: CommonOpts) => {
    const t = await target(o);
    const [{ DaemonClient }, { describeFilesLeft, pidAlive, removeDaemonFiles }] = await Promise.all([
      import('../../daemon-client/client.js'),
      import('../../daemon/state-dir.js'),
    ]);
    const client = new DaemonClient(t.socket);
    try {
      if (!(await client.alive())) {
        if (o.json) printJson({ ok: true, running: false, stopped: false, daemon: { stateDir: t.stateDir, socket: t.socket } });
        else out(`no daemon is running (state folder ${t.stateDir})`);
        return;
      }
      const { body } = await api<z.output<typeof shutdownSchema>>(client, 'POST', '/v1/shutdown');
      const deadline = Date.now() + 30_000;
      while (pidAlive(body.pid) && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
      if (pidAlive(body.pid)) throw new McpxError('MCPX_INTERNAL', `the daemon (pid ${body.pid}) is still running after 30 s`);
      // What it could not remove (a read-only state folder) would stop the next start: say which files, and why.
      const { left } = await removeDaemonFiles(t.stateDir, t.socket, body.pid);
      // Under --json a failure is the error's JSON (main.ts), so the success body is only for a clean stop.
      if (!o.json) out(`stopped the mcpx daemon (pid ${body.pid})`);
      else if (left.length === 0) printJson({ ok: true, running: false, stopped: true, pid: body.pid, daemon: { stateDir: t.stateDir, socket: t.socket } });
      if (left.length > 0) {
        throw new McpxError(
          'MCPX_BAD_SETTING',
          `the daemon stopped, but these files of the state folder ${t.stateDir} are left and could not be removed: ${describeFilesLeft(left)}; make the folder writable and remove them, or the next daemon cannot start there`,
          { data: { stateDir: t.stateDir, left } },
        );
      }
    } finally {
      await client.close();
    }
  });
}
