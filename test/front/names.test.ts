/**
 * The names callers see in aggregate mode: `<server>__<name>`, within the tool-name rules and 64
 * characters; long names and collisions get a short stable hash suffix.
 */
import { describe, expect, it } from 'vitest';
import { exposeNames, hashSuffix, MAX_NAME, NameTable, sanitize } from '../../src/catalog/names.js';

const RULE = /^[A-Za-z0-9_.-]{1,64}$/;

describe('exposeNames', () => {
  it('is <server>__<name> when that fits the rules', () => {
    expect(
      exposeNames([
        { server: 'github', name: 'create_issue' },
        { server: 'fs.local', name: 'read-file' },
      ]),
    ).toEqual([
      { name: 'github__create_issue', server: 'github', original: 'create_issue' },
      { name: 'fs.local__read-file', server: 'fs.local', original: 'read-file' },
    ]);
  });

  it('keeps case: names are case-sensitive', () => {
    const n = exposeNames([
      { server: 'a', name: 'Read' },
      { server: 'a', name: 'read' },
    ]);
    expect(n.map((x) => x.name)).toEqual(['a__Read', 'a__read']);
  });

  it('replaces characters outside A-Z a-z 0-9 _ - . and says so', () => {
    const [n] = exposeNames([{ server: 'my server', name: 'créer/issue, now' }]);
    expect(n!.name).toBe('my_server__cr_er_issue__now');
    expect(n!.name).toMatch(RULE);
    expect(n!.adjusted).toBe('characters');
  });

  it('cuts a name longer than 64 characters and adds a stable hash suffix', () => {
    const long = 'x'.repeat(80);
    const [n] = exposeNames([{ server: 'srv', name: long }]);
    expect(n!.name).toHaveLength(MAX_NAME);
    expect(n!.name).toMatch(RULE);
    expect(n!.name.endsWith(hashSuffix('srv', long))).toBe(true);
    expect(n!.adjusted).toBe('length');
    // stable: the same pair gets the same name whatever else is configured
    const again = exposeNames([
      { server: 'zzz', name: 'other' },
      { server: 'srv', name: long },
    ]);
    expect(again[1]!.name).toBe(n!.name);
  });

  it('a name of exactly 64 characters is kept', () => {
    const name = 'y'.repeat(64 - 'srv__'.length);
    expect(exposeNames([{ server: 'srv', name }])[0]!.name).toBe(`srv__${name}`);
  });

  it("a collision keeps the first pair's plain name and suffixes the later one", () => {
    // "a b" and "a_b" both sanitize to a_b
    const n = exposeNames([
      { server: 'a_b', name: 't' },
      { server: 'a b', name: 't' },
      { server: 'a', name: 'b__t' },
    ]);
    expect(n[0]!.name).toBe('a_b__t');
    expect(n[1]!.name).toBe(`a_b__t${hashSuffix('a b', 't')}`);
    expect(n[1]!.adjusted).toBe('collision');
    // "a" + "__" + "b__t" is "a__b__t": no collision with a_b__t
    expect(n[2]!.name).toBe('a__b__t');
    expect(new Set(n.map((x) => x.name)).size).toBe(3);
  });

  it('many colliding long names stay unique and within the rules', () => {
    const pairs = Array.from({ length: 200 }, (_, i) => ({ server: 's'.repeat(40), name: `${'t'.repeat(40)}${i % 2 === 0 ? '!' : '?'}${i}` }));
    const n = exposeNames(pairs);
    expect(new Set(n.map((x) => x.name)).size).toBe(200);
    for (const x of n) expect(x.name).toMatch(RULE);
  });
});

describe('NameTable', () => {
  it('resolves a name a caller used back to the server and the upstream name', () => {
    const t = NameTable.of([
      { server: 'one', name: 'echo' },
      { server: 'two', name: 'echo' },
    ]);
    expect(t.resolve('two__echo')).toMatchObject({ server: 'two', original: 'echo' });
    expect(t.resolve('three__echo')).toBeUndefined();
    expect(t.nameOf('one', 'echo')).toBe('one__echo');
  });

  it('sanitize leaves allowed characters alone', () => {
    expect(sanitize('Az09_-.')).toBe('Az09_-.');
  });
});
