/** `mcpx protocol`: per server, the preference, era, negotiated version, its source, the cached record, the legacy lane. */
import type { Command } from 'commander';
import type { ProtocolRow } from '../../core/views.js';
import { api, out, printJson, withClient, withJson, withTarget, type CliContext, type CommonOpts } from '../common.js';
import { clip, table } from '../format.js';

/** A duration in the largest whole unit. */
function inUnits(ms: number): string {
  const units: Array<[string, number]> = [
    ['d', 86_400_000],
    ['h', 3_600_000],
    ['m', 60_000],
    ['s', 1_000],
  ];
  for (const [u, n] of units) if (ms >= n) return `${Math.floor(ms / n)}${u}`;
  return '0s';
}

/**
 * How old an era record is (its age decides whether it is still used: upstream.eraCacheMaxAge). One dated
 * ahead of this clock says so: the daemon does not use it (it probes again), and "0s old" would hide why.
 */
function recordAge(at: string): string {
  const ms = Date.now() - Date.parse(at);
  if (!Number.isFinite(ms)) return 'of unreadable date';
  if (ms < -60_000) return `dated ${inUnits(-ms)} in the future (not used)`;
  return `${inUnits(Math.max(0, ms))} old`;
}

export function register(program: Command, cli: CliContext): void {
  withJson(
    withTarget(
      program.command('protocol').description('per server: preference, era, negotiated version, where the era came from, the cached record, the legacy lane'),
    ),
  ).action(async (o: CommonOpts) =>
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
            s.cached ? `${s.cached.era} ${s.cached.version}, ${recordAge(s.cached.at)}` : null,
            s.legacyLane ? `${s.legacyLane.state}${s.legacyLane.reason ? ` (${clip(s.legacyLane.reason, 40)})` : ''}` : null,
          ]),
        ),
      );
    }),
  );
}
