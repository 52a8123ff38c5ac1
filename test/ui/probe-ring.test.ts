/** The probe timeline ring (src/ui/probe-ring.ts), fed by a real session actor driven by hand. */
import { describe, expect, it } from 'vitest';
import { createActor } from 'xstate';
import { answered, sessionMachine, type ProbeRequest } from '../../src/machines/session.machine.js';
import { ProbeRing } from '../../src/ui/probe-ring.js';

const SECRET = 'sEnTiNeL-ring-7f3a9c';

/** One probe of a legacy server: discover → -32601 → initialize → result (→ ready). */
function legacyProbe(ring: ProbeRing, server: string, instance: string, opts: { timeout?: boolean; cached?: 'modern' } = {}) {
  const actor = createActor(sessionMachine, {
    input: {
      server,
      wire: 'stdio',
      preference: 'prefer-discover',
      probeTimeoutMs: 5,
      ...(opts.cached ? { cached: { era: 'modern' as const, version: '2026-07-28', at: new Date().toISOString(), source: 'probe' } } : {}),
    },
    inspect: (ev) => ring.inspect(ev, { actor: 'session', server, instance, lane: 'own' }),
  });
  const sent: ProbeRequest[] = [];
  actor.on('request', (e) => sent.push(e));
  actor.start();
  actor.send({ type: 'start' });
  actor.send({ type: 'transport.ready', pid: 4242 });
  return { actor, sent };
}

describe('ProbeRing', () => {
  it('tells a legacy probe step by step: discover sent, its answer, initialize sent, the answer, the verdict', () => {
    const ring = new ProbeRing({ scrub: (t) => t.replaceAll(SECRET, '<redacted>') });
    const { actor, sent } = legacyProbe(ring, 'legacy', 'i1');
    expect(sent[0]!.method).toBe('server/discover');
    actor.send(answered(sent[0]!, { error: { code: -32601, message: 'Method not found' } }));
    expect(sent[1]!.method).toBe('initialize');
    actor.send(
      answered(sent[1]!, {
        result: { protocolVersion: '2025-11-25', capabilities: {}, serverInfo: { name: 'x', version: '1' }, instructions: `token ${SECRET}` },
      }),
    );
    expect(actor.getSnapshot().value).toBe('ready');
    const [probe] = ring.probes('legacy');
    expect(probe!.steps.map((s) => s.kind)).toEqual(['start', 'spawn', 'process.ready', 'discover.sent', 'answer', 'initialize.sent', 'answer', 'verdict']);
    expect(probe!.steps[4]!.text).toContain('-32601');
    expect(probe!.verdict).toMatchObject({ ok: true, era: 'legacy', negotiated: '2025-11-25', eraSource: 'probe' });
    expect(probe!.steps.every((s, i, a) => i === 0 || s.t >= a[i - 1]!.t)).toBe(true);
    expect(JSON.stringify(ring.view())).not.toContain(SECRET);
    actor.stop();
  });

  it('a silent discover: the probe timeout, then initialize alongside the pending discover', async () => {
    const ring = new ProbeRing();
    const { actor, sent } = legacyProbe(ring, 'silent', 'i1');
    await new Promise<void>((resolve) => {
      const sub = actor.subscribe((s) => {
        if (s.matches({ connecting: 'racing' })) {
          sub.unsubscribe();
          resolve();
        }
      });
    });
    actor.send(answered(sent[1]!, { result: { protocolVersion: '2025-11-25', capabilities: {}, serverInfo: { name: 'x', version: '1' } } }));
    const kinds = ring.probes('silent')[0]!.steps.map((s) => s.kind);
    expect(kinds).toEqual(['start', 'spawn', 'process.ready', 'discover.sent', 'timeout', 'initialize.sent', 'answer', 'verdict']);
    expect(ring.probes('silent')[0]!.steps[5]!.text).toContain('alongside');
    actor.stop();
  });

  it('a wrong cached era shows server.era.stale in the timeline and in the view', () => {
    const ring = new ProbeRing();
    const { actor, sent } = legacyProbe(ring, 'moved', 'i1', { cached: 'modern' });
    actor.send(answered(sent[0]!, { error: { code: -32601, message: 'Method not found' } }));
    actor.send(answered(sent[1]!, { result: { protocolVersion: '2025-11-25', capabilities: {}, serverInfo: { name: 'x', version: '1' } } }));
    const view = ring.view()['moved']!;
    expect(view.probes[0]!.steps.map((s) => s.kind)).toContain('stale');
    expect(view.stale).toMatchObject({ cached: { era: 'modern' }, found: 'legacy', instance: 'i1' });
    actor.stop();
  });

  it('stays bounded: probes per server, steps per probe, servers', () => {
    const ring = new ProbeRing({ limits: { perServer: 2, maxSteps: 5, maxServers: 3 } });
    for (let s = 0; s < 5; s++) {
      for (let i = 0; i < 4; i++) {
        const { actor, sent } = legacyProbe(ring, `s${s}`, `i${i}`);
        actor.send(answered(sent[0]!, { error: { code: -32601, message: 'Method not found' } }));
        actor.stop();
      }
    }
    expect(ring.size).toEqual({ servers: 3, probes: 6, steps: 30 });
    expect(Object.keys(ring.view())).toEqual(['s2', 's3', 's4']);
    expect(ring.probes('s4').map((p) => p.instance)).toEqual(['i2', 'i3']);
    expect(ring.probes('s4')[0]!.steps.at(-1)!.kind).toBe('truncated');
  });
});
