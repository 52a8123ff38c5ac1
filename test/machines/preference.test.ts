import { describe, expect, it } from 'vitest';
import { McpxError, ProtocolValueError } from '../../src/errors.js';
import { protocolCodec } from '../../src/config/settings.js';
import {
  CANONICAL_PREFERENCES,
  PREFERENCE_ALIASES,
  canonicalPreference,
  isForced,
  isPreference,
  laneSessionPreference,
  parsePreference,
  preferenceRefusal,
  type Preference,
} from '../../src/machines/preference.js';

/** The spec's table (docs/behaviour.md §1), written out again so a change to the code cannot silently change it. */
const TABLE: Record<Preference, string[]> = {
  'prefer-discover': ['modern', 'prefer-modern', 'prefer-stateless', 'prefer-newest'],
  'prefer-initialize': ['legacy', 'prefer-legacy', 'prefer-session', 'prefer-oldest'],
  'force-discover': ['force-modern', 'force-stateless'],
  'force-initialize': ['force-legacy', 'force-session'],
  follow: [],
};

const variants = (s: string): string[] => [
  s,
  s.toUpperCase(),
  s.charAt(0).toUpperCase() + s.slice(1),
  s.replace(/-(.)/g, (_m, c: string) => `-${c.toUpperCase()}`),
  `  ${s}  `,
  `\t${s.toUpperCase()}\n`,
];

const REJECTED: unknown[] = [
  '',
  '   ',
  'auto',
  'prefer',
  'discover',
  'prefer_discover',
  'prefer-discover-x',
  'force',
  'constructor',
  '__proto__',
  42,
  null,
  undefined,
  true,
  {},
  ['follow'],
  10n,
];

function expectListsCanonical(message: string): void {
  for (const c of CANONICAL_PREFERENCES) expect(message).toContain(c);
  expect(message).toContain('prefer-discover, prefer-initialize, force-discover, force-initialize, follow');
}

describe('protocol preference', () => {
  it('has exactly the five canonical values, prefer-discover first', () => {
    expect(CANONICAL_PREFERENCES).toEqual(['prefer-discover', 'prefer-initialize', 'force-discover', 'force-initialize', 'follow']);
  });

  it('alias table is exactly the spec table', () => {
    const fromTable = Object.entries(TABLE).flatMap(([canon, aliases]) => aliases.map((a) => [a, canon]));
    expect(Object.entries(PREFERENCE_ALIASES).sort()).toEqual(fromTable.sort());
    expect(Object.isFrozen(PREFERENCE_ALIASES)).toBe(true);
  });

  for (const [canon, aliases] of Object.entries(TABLE) as [Preference, string[]][]) {
    for (const name of [canon, ...aliases]) {
      it(`${name} → ${canon} in any casing and with surrounding white space`, () => {
        for (const v of variants(name)) {
          expect(parsePreference(v)).toBe(canon);
          expect(canonicalPreference(v)).toBe(canon);
        }
      });
    }
  }

  for (const bad of REJECTED) {
    it(`refuses ${typeof bad === 'bigint' ? `${bad}n` : (JSON.stringify(bad) ?? String(bad))}`, () => {
      let caught: unknown;
      try {
        parsePreference(bad);
      } catch (err) {
        caught = err;
      }
      expect(caught).toBeInstanceOf(ProtocolValueError);
      expect(caught).toBeInstanceOf(McpxError);
      const err = caught as ProtocolValueError;
      expect(err.code).toBe('MCPX_BAD_PROTOCOL_VALUE');
      expectListsCanonical(err.message);
      expect(err.data?.allowed).toEqual([...CANONICAL_PREFERENCES]);

      expect(canonicalPreference(bad)).toBeUndefined();
      const refusal = preferenceRefusal(bad);
      expectListsCanonical(refusal);
      // the config file's and the settings' refusal and the function say the same thing
      expect(refusal).toBe(err.message);
    });
  }

  it('prefixes the message with `where`', () => {
    expect(() => parsePreference('auto', 'config.json: mcpServers.x.protocol')).toThrow(
      'config.json: mcpServers.x.protocol: "auto" is not a protocol preference; use one of: prefer-discover, prefer-initialize, force-discover, force-initialize, follow',
    );
    expect(() => parsePreference(42)).toThrow(/^42 is not a protocol preference; use one of: /);
  });

  it("the settings codec and a server's protocol key read aliases the same way", () => {
    expect(protocolCodec.parse(' Legacy ', { text: false, baseDir: '/', home: '/' })).toEqual({ ok: true, value: 'prefer-initialize' });
    const r = protocolCodec.parse('auto', { text: false, baseDir: '/', home: '/' });
    expect(r.ok).toBe(false);
    expectListsCanonical((r as { message: string }).message);
  });

  it('laneSessionPreference resolves follow into its two lanes', () => {
    expect(laneSessionPreference('follow', 'own')).toBe('prefer-discover');
    expect(laneSessionPreference('follow', 'legacy')).toBe('force-initialize');
    for (const p of CANONICAL_PREFERENCES.filter((x) => x !== 'follow')) {
      expect(laneSessionPreference(p, 'own')).toBe(p);
      expect(laneSessionPreference(p, 'legacy')).toBe(p);
    }
  });

  it('isForced / isPreference', () => {
    expect(CANONICAL_PREFERENCES.filter(isForced)).toEqual(['force-discover', 'force-initialize']);
    expect(isPreference('follow')).toBe(true);
    expect(isPreference('Follow')).toBe(false);
    expect(isPreference('modern')).toBe(false);
  });
});
