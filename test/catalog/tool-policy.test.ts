/**
 * The globs of `mcpx.tools` and `mcpx.pin` (src/catalog/tool-policy.ts): `*` any run, `?` one character,
 * everything else itself; allow, then deny; pins; the globs that match nothing (mcpx doctor's warning).
 */
import { describe, expect, it } from 'vitest';
import { filterRefusal, globMatches, toolAllowed, toolPinned, unmatchedGlobs } from '../../src/catalog/tool-policy.js';

describe('globs', () => {
  it('* is any run of characters, none included; ? exactly one', () => {
    expect(globMatches('read_*', 'read_file')).toBe(true);
    expect(globMatches('read_*', 'read_')).toBe(true);
    expect(globMatches('read_*', 'xread_file')).toBe(false);
    expect(globMatches('*_file', 'read_file')).toBe(true);
    expect(globMatches('*', '')).toBe(true);
    expect(globMatches('get_?', 'get_a')).toBe(true);
    expect(globMatches('get_?', 'get_')).toBe(false);
    expect(globMatches('get_?', 'get_ab')).toBe(false);
    expect(globMatches('a*b*c', 'a-x-b-y-c')).toBe(true);
  });

  it('every other character is itself: regular-expression characters, case, whole names', () => {
    expect(globMatches('a.b', 'a.b')).toBe(true);
    expect(globMatches('a.b', 'axb')).toBe(false);
    expect(globMatches('a+(b)', 'a+(b)')).toBe(true);
    expect(globMatches('[ab]', 'a')).toBe(false);
    expect(globMatches('[ab]', '[ab]')).toBe(true);
    expect(globMatches('a\\*', 'a\\x')).toBe(true);
    expect(globMatches('Read', 'read')).toBe(false);
    expect(globMatches('read', 'read_file')).toBe(false);
    expect(globMatches('line*', 'line\nbreak')).toBe(true);
  });
});

describe('filters', () => {
  it('allow (none: every tool), then deny', () => {
    expect(toolAllowed(undefined, 'x')).toBe(true);
    expect(toolAllowed({}, 'x')).toBe(true);
    const f = { allow: ['read_*', 'list'], deny: ['read_secret*'] };
    expect(['read_file', 'list', 'read_secret_key', 'write_file'].map((n) => toolAllowed(f, n))).toEqual([true, true, false, false]);
    expect(toolAllowed({ deny: ['delete_*'] }, 'delete_all')).toBe(false);
    expect(toolAllowed({ deny: ['delete_*'] }, 'create')).toBe(true);
    expect(toolAllowed({ allow: [] }, 'anything')).toBe(false);
  });

  it('a refusal names the glob that refused', () => {
    const f = { allow: ['read_*'], deny: ['read_secret*'] };
    expect(filterRefusal(f, 'read_secret')).toBe('mcpx.tools.deny "read_secret*"');
    expect(filterRefusal(f, 'write')).toBe('no glob of mcpx.tools.allow ("read_*")');
    expect(filterRefusal(f, 'read_file')).toBeUndefined();
    expect(filterRefusal(undefined, 'x')).toBeUndefined();
  });

  it('pins: true pins every tool, a list its globs', () => {
    expect(toolPinned(true, 'x')).toBe(true);
    expect(toolPinned(undefined, 'x')).toBe(false);
    expect(toolPinned(['search*', 'get'], 'search_docs')).toBe(true);
    expect(toolPinned(['search*', 'get'], 'get_x')).toBe(false);
  });

  it('globs that match none of the names, by key', () => {
    const names = ['read_file', 'write_file'];
    expect(unmatchedGlobs({ tools: { allow: ['read_*', 'reed_*'], deny: ['write_file', 'drop'] }, pin: ['read_?ile', 'nope'] }, names)).toEqual([
      { key: 'tools.allow', glob: 'reed_*' },
      { key: 'tools.deny', glob: 'drop' },
      { key: 'pin', glob: 'nope' },
    ]);
    expect(unmatchedGlobs({ pin: true }, [])).toEqual([]);
  });
});
