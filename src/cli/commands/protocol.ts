/** `mcpx protocol`: per server, the preference, era, negotiated version, its source, the cached record, the legacy lane. */
import type { Command } from 'commander';
import type { ProtocolRow } from '../../server/controller.js';
import { api, out, printJson, withClient, withJson, withTarget, type CliContext, type CommonOpts } from '../common.js';
import { clip, table } from '../format.js';

/** How old an era record is, in the largest whole unit (its age decides whether it is still used: upstream.eraCacheMaxAge). */
function recordAge(at: string): string {
  const ms = Math.max(0, Date.now() - Date.parse(at));
  if (!Number.isFinite(ms)) return '?';
  const units: Array<[string, number]> = [['d', 86_400_000], ['h', 3_600_000], ['m', 60_000], ['s', 1_000]];
  for (const [u, n] of units) if (ms >= n) return `${Math.floor(ms / n)}${u}`;
  return '0s';
}

export function register(program: Command, cli: CliContext): void {
  withJson(withTarget(program.command('protocol').description('per server: preference, era, negotiated version, where the era came from, the cached record, the legacy lane'))).action(async (o: CommonOpts) =>
    withClient(o, cli, async (client) => {
      const { body } = await api<{ servers: ProtocolRow[] }>(client, 'GET', '/v1/protocol');
      if (o.json) return printJson(body);
      out(
        table(
          ['SERVER', 'PREFERENCE', 'ERA', 'NEGOTIATED', 'SOURCE', 'CACHED', 'LEGACY LANE'],
          body.servers.map((s) => [
            s.server,
            s.pendingPreference ? `${s.preference} → ${s.pendingPreference}` : s.preference,
            s.era ?? 'not started',
            s.negotiated,
            s.eraSource,
            s.cached ? `${s.cached.era} ${s.cached.version}, ${recordAge(s.cached.at)} old` : null,
            s.legacyLane ? `${s.legacyLane.state}${s.legacyLane.reason ? ` (${clip(s.legacyLane.reason, 40)})` : ''}` : null,
          ]),
        ),
      );
    }),
  );
}
