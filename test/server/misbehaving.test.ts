/**
 * Bad upstreams fail their own calls with a clear error while the daemon and every other server keep
 * working: a process that crashes after the handshake, one that is silent forever, one that writes
 * garbage around its answers, a command that does not exist, and a server that is down — all in one
 * daemon next to a healthy server that is called before, during and after.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { tempDir } from '../support/real.js';
import { fixturePids, harness, textOf, type Harness } from './helpers.js';

async function call(h: Harness, server: string, tool = 'echo', args: Record<string, unknown> = { text: server }) {
  const res = await h.app.inject({
    method: 'POST',
    url: '/v1/call',
    headers: { 'content-type': 'application/json' },
    payload: JSON.stringify({ server, tool, args }),
  });
  return { status: res.statusCode, body: res.json() as { ok: boolean; result?: Record<string, unknown>; error?: { code: string; message: string } } };
}

describe('misbehaving upstreams, one daemon', () => {
  let dir: { path: string; remove: () => Promise<void> };
  let h: Harness;

  beforeAll(async () => {
    dir = await tempDir('mcpx-bad-');
    h = await harness(dir.path, {
      healthy: { fixture: 'legacy-v1' },
      crashing: { fixture: 'raw', mode: 'crash-after-init' },
      silent: { fixture: 'raw', mode: 'silent', protocol: 'force-discover', mcpx: { startTimeout: '1500ms' } },
      noisy: { fixture: 'raw', mode: 'garbage' },
      missing: { command: 'mcpx-no-such-command-here' } as never,
      down: { url: 'http://127.0.0.1:9/mcp' },
    });
  });
  afterAll(async () => {
    await h?.close();
    await dir?.remove();
  });

  it('each bad server fails with its own clear error; the healthy one answers throughout', async () => {
    expect((await call(h, 'healthy')).body).toMatchObject({ ok: true });

    const [crashing, silent, noisy, missing, down, healthyDuring] = await Promise.all([
      // crash-after-init dies ~100 ms after the handshake: the first call may land before, the next after.
      (async () => {
        await call(h, 'crashing');
        await new Promise((r) => setTimeout(r, 400));
        return call(h, 'crashing');
      })(),
      call(h, 'silent'),
      call(h, 'noisy'),
      call(h, 'missing'),
      call(h, 'down'),
      call(h, 'healthy'),
    ]);

    expect(healthyDuring.body).toMatchObject({ ok: true });
    expect(textOf(healthyDuring.body as never)).toBe('healthy era=legacy');
    // A crashed instance is replaced on the next call (which may itself see the next crash): either it
    // served the call, or it failed it with a transport error naming the exit — never a hang.
    if (!crashing.body.ok) expect(crashing.body.error?.code).toMatch(/^MCPX_(TRANSPORT_CLOSED|SESSION_CLOSED)$/);
    // The second call ran on a fresh process: the crashed one was removed and replaced.
    expect(fixturePids(dir.path, 'crashing').length).toBeGreaterThanOrEqual(2);
    expect(silent.body).toMatchObject({ ok: false, error: { code: 'MCPX_START_TIMEOUT' } });
    expect(silent.body.error?.message).toContain('silent');
    // Garbage lines on stdout are skipped, not fatal.
    expect(noisy.body).toMatchObject({ ok: true });
    expect(missing.body).toMatchObject({ ok: false, error: { code: 'MCPX_SPAWN_FAILED' } });
    expect(missing.body.error?.message).toContain('mcpx-no-such-command-here');
    expect(down.body).toMatchObject({ ok: false, error: { code: 'MCPX_UPSTREAM_UNAVAILABLE' } });
    for (const r of [crashing, silent, noisy, missing, down]) expect(r.status).toBe(200);

    // Afterwards: the daemon is healthy, the good server still answers, the protocol report lists every server.
    const health = await h.app.inject({ method: 'GET', url: '/v1/health' });
    expect(health.json()).toMatchObject({ ok: true });
    expect((await call(h, 'healthy', 'echo', { text: 'after' })).body).toMatchObject({ ok: true });
    const protocol = (await h.app.inject({ method: 'GET', url: '/v1/protocol' })).json() as { servers: Array<{ server: string; era: string | null }> };
    expect(protocol.servers.map((s) => s.server).sort()).toEqual(['crashing', 'down', 'healthy', 'missing', 'noisy', 'silent']);
    expect(protocol.servers.find((s) => s.server === 'healthy')?.era).toBe('legacy');
  });
});
