/**
 * docs/behaviour.md §3, row by row, against real processes (test/fixtures/raw.mjs modes and the SDK
 * fixtures), with the wire each process received as proof.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { readWireLog, exitedPids } from '../fixtures/wire-log-read.js';
import { realSession, tempDir, textOf } from '../support/real.js';

let dir: { path: string; remove: () => Promise<void> };
beforeAll(async () => {
  dir = await tempDir();
});
afterAll(async () => {
  await dir.remove();
});

const initialized = 'notifications/initialized';
const log = (name: string) => `${dir.path}/${name}.log`;

describe.concurrent('§3 stdio probe rows (prefer-discover)', () => {
  it('a DiscoverResult: modern, at the newest mutual version, serverInfo from _meta', async () => {
    const { session, wire } = realSession(log('dual'), { fixture: 'dual-v2' }, 'prefer-discover');
    try {
      const info = await session.start();
      expect(info).toMatchObject({ era: 'modern', negotiated: '2026-07-28', serverInfo: { name: 'fixture-v2' } });
      const tools = await session.listTools();
      expect(tools.map((t) => t.name)).toContain('echo');
      expect(wire().methods).toEqual([['server/discover', 'tools/list']]);
    } finally {
      await session.stop();
    }
  });

  it('-32022 naming a mutual version: retry discover with it, each version once', async () => {
    const { session, wire } = realSession(log('retry'), { fixture: 'raw', mode: 'v32022-retry' }, 'prefer-discover', {
      modernVersions: ['2027-03-01', '2026-07-28'],
    });
    try {
      expect(await session.start()).toMatchObject({ era: 'modern', negotiated: '2026-07-28' });
      const w = wire();
      expect(w.methods[0]).toEqual(['server/discover', 'server/discover']);
      expect(w.requests[0]!.map((r) => r.version)).toEqual(['2027-03-01', '2026-07-28']);
    } finally {
      await session.stop();
    }
  });

  it('-32022 naming only legacy revisions: legacy, initialize offering the newest of them', async () => {
    const { session, wireAfter } = realSession(log('v32022-legacy'), { fixture: 'raw', mode: 'v32022-legacy' }, 'prefer-discover');
    try {
      expect(await session.start()).toMatchObject({ era: 'legacy', negotiated: '2025-06-18' });
      const w = await wireAfter(initialized);
      expect(w.methods[0]).toEqual(['server/discover', 'initialize', initialized]);
      expect(w.requests[0]![1]!.version).toBe('2025-06-18');
    } finally {
      await session.stop();
    }
  });

  it('-32022 naming no revision mcpx speaks: a clear "no common version" error', async () => {
    const { session, wire } = realSession(log('v32022-none'), { fixture: 'raw', mode: 'v32022-none' }, 'prefer-discover');
    const err = await session.start().catch((e: unknown) => e);
    expect(err).toMatchObject({ code: 'MCPX_NO_COMMON_VERSION' });
    expect((err as Error).message).toContain('2031-01-01');
    expect(wire().methods[0]).toEqual(['server/discover']);
    await session.stop();
  });

  it.each([
    ['-32020', 'modern-error'],
    ['-32021', 'missing-cap'],
  ] as const)('%s: a modern error, never a fallback to initialize', async (_, mode) => {
    const { session, wire } = realSession(log(mode), { fixture: 'raw', mode }, 'prefer-discover');
    await expect(session.start()).rejects.toMatchObject({ code: 'MCPX_MODERN_PROTOCOL_ERROR' });
    expect(wire().methods[0]).toEqual(['server/discover']);
    await session.stop();
  });

  it.each([
    ['-32601 (SDK v1)', { fixture: 'legacy-v1' as const }],
    ['-32602 before initialize', { fixture: 'raw' as const, mode: 'invalid-params' as const }],
    ['{} from a catch-all handler', { fixture: 'raw' as const, mode: 'catch-all' as const }],
    ['garbage and stderr noise around the answers', { fixture: 'raw' as const, mode: 'garbage' as const }],
  ])('%s: legacy, initialize on the same process', async (name, spec) => {
    const { session, wire } = realSession(log(name.replace(/\W+/g, '-')), spec, 'prefer-discover');
    try {
      expect(await session.start()).toMatchObject({ era: 'legacy', negotiated: '2025-11-25' });
      expect(textOf(await session.callTool('echo', { text: 'x' }))).toContain('x');
      const w = wire();
      expect(w.pids).toHaveLength(1);
      expect(w.methods[0]).toEqual(['server/discover', 'initialize', initialized, 'tools/call']);
    } finally {
      await session.stop();
    }
  });

  it('nothing within probeTimeout: initialize is sent alongside and wins on a silent legacy server', async () => {
    const { session, wireAfter } = realSession(log('silent'), { fixture: 'raw', mode: 'silent' }, 'prefer-discover', { probeTimeoutMs: 300 });
    try {
      const t0 = Date.now();
      expect(await session.start()).toMatchObject({ era: 'legacy' });
      expect(Date.now() - t0).toBeGreaterThanOrEqual(300);
      // discover was not abandoned: both went to the same process.
      expect((await wireAfter(initialized)).methods).toEqual([['server/discover', 'initialize', initialized]]);
    } finally {
      await session.stop();
    }
  });

  it('a modern server slower than probeTimeout: the late discover wins, the refused initialize is ignored', async () => {
    const { session, wire } = realSession(log('slow-modern'), { fixture: 'raw', mode: 'slow-modern', env: { SLOW_MS: '900' } }, 'prefer-discover', {
      probeTimeoutMs: 300,
    });
    try {
      expect(await session.start()).toMatchObject({ era: 'modern', eraSource: 'probe' });
      expect(textOf(await session.callTool('echo', { text: 'late' }))).toContain('late');
      expect(wire().methods).toEqual([['server/discover', 'initialize', 'tools/call']]);
    } finally {
      await session.stop();
    }
  });

  it('a dual server slower than probeTimeout: discover settles modern first; the process pinned legacy by initialize is replaced', async () => {
    const { session, wire } = realSession(log('slow-dual'), { fixture: 'raw', mode: 'slow-dual', env: { SLOW_MS: '700' } }, 'prefer-discover', {
      probeTimeoutMs: 200,
    });
    try {
      expect(await session.start()).toMatchObject({ era: 'modern', supportsModern: true });
      expect(textOf(await session.callTool('echo', { text: 'one session' }))).toContain('one session');
      const w = wire();
      expect(w.methods).toEqual([['server/discover', 'initialize'], ['tools/call']]);
      expect(w.requests[1]![0]!.version).toBe('2026-07-28');
    } finally {
      await session.stop();
    }
  });

  it('the process exits on discover: a new process, connected with initialize only', async () => {
    const { session, wireAfter } = realSession(log('exit-pre-init'), { fixture: 'raw', mode: 'exit-pre-init' }, 'prefer-discover');
    try {
      expect(await session.start()).toMatchObject({ era: 'legacy', spawns: 2 });
      expect((await wireAfter(initialized)).methods).toEqual([['server/discover'], ['initialize', initialized]]);
    } finally {
      await session.stop();
    }
  });

  it('initialize answering a revision mcpx does not speak: an error, and the process is stopped', async () => {
    const { session, wire, log: file } = realSession(log('bad-version'), { fixture: 'raw', mode: 'bad-legacy-version' }, 'prefer-discover');
    const err = await session.start().catch((e: unknown) => e);
    expect(err).toMatchObject({ code: 'MCPX_UNSUPPORTED_LEGACY_VERSION' });
    expect((err as Error).message).toContain('1999-01-01');
    await session.stop();
    expect(exitedPids(readWireLog(file))).toEqual(wire().pids);
  });

  it('a slow initialize is only slow: no timeout applies to it', async () => {
    const { session } = realSession(log('slow-init'), { fixture: 'raw', mode: 'legacy-slow-init', env: { SLOW_MS: '700' } }, 'prefer-discover', {
      probeTimeoutMs: 200,
    });
    try {
      expect(await session.start()).toMatchObject({ era: 'legacy' });
    } finally {
      await session.stop();
    }
  });
});

describe.concurrent('§2 prefer-initialize fallbacks', () => {
  it('a modern server that exits on the refused initialize: a new process, and discover', async () => {
    const { session, wire } = realSession(log('exit-on-refused-init'), { fixture: 'raw', mode: 'exit-on-refused-init' }, 'prefer-initialize');
    try {
      expect(await session.start()).toMatchObject({ era: 'modern', spawns: 2 });
      expect(wire().methods).toEqual([['initialize'], ['server/discover']]);
    } finally {
      await session.stop();
    }
  });
});

describe.concurrent('misbehaving upstreams fail that session with a clear error', () => {
  it('a command that does not exist', async () => {
    const { UpstreamSession } = await import('../../src/upstream/session.js');
    const session = new UpstreamSession({ name: 'nope', definition: { command: 'mcpx-no-such-command-xyz' }, preference: 'prefer-discover' });
    const err = await session.start().catch((e: unknown) => e);
    expect(err).toMatchObject({ code: 'MCPX_SPAWN_FAILED' });
    expect((err as Error).message).toContain('mcpx-no-such-command-xyz');
    await session.stop();
  });

  it('a 10 MB message arrives whole', async () => {
    const { session } = realSession(log('huge'), { fixture: 'raw', mode: 'huge' }, 'prefer-discover');
    try {
      await session.start();
      expect(textOf(await session.callTool('big', {}))).toHaveLength(10_000_000);
    } finally {
      await session.stop();
    }
  });

  it('a message over maxMessageBytes fails the call and closes the session, naming the limit', async () => {
    const { session } = realSession(log('too-huge'), { fixture: 'raw', mode: 'huge' }, 'prefer-discover', { maxMessageBytes: 1_000_000 });
    try {
      await session.start();
      const err = await session.callTool('big', {}).catch((e: unknown) => e);
      expect(err).toMatchObject({ code: 'MCPX_MESSAGE_TOO_LARGE', data: { limitBytes: 1_000_000, method: 'tools/call' } });
      expect((err as Error).message).toMatch(/1000000 bytes/);
      expect(session.snapshot.value).toBe('closed');
    } finally {
      await session.stop();
    }
  });

  it('a crash after the handshake closes the session and reports the exit code', async () => {
    const { session } = realSession(log('crash'), { fixture: 'raw', mode: 'crash-after-init' }, 'prefer-discover');
    try {
      await session.start();
      const closed = new Promise((resolve) => session.once('closed', resolve));
      expect(await closed).toMatchObject({ reason: 'exit', code: 3 });
      expect(session.snapshot.value).toBe('closed');
      await expect(session.callTool('echo', { text: 'x' })).rejects.toMatchObject({ code: 'MCPX_SESSION_CLOSED' });
    } finally {
      await session.stop();
    }
  });
});
