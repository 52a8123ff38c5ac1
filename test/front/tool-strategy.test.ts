/** What `auto` gives each client (src/front/tool-strategy.ts), and the entry options read from an address. */
import { describe, expect, it } from 'vitest';
import { DEFAULT_TOOL_CAP, decideListing, entryToolsOf, toolCapFor } from '../../src/front/tool-strategy.js';
import { toolShown } from '../../src/catalog/tool-filter.js';

describe('auto', () => {
  it('gives every tool while the listing fits the client, else search', () => {
    expect(toolCapFor('cursor-vscode')).toBe(40);
    expect(toolCapFor('Windsurf')).toBe(50);
    expect(toolCapFor('Visual Studio Code')).toBe(64);
    expect(toolCapFor('claude-code')).toBeNull();
    expect(toolCapFor('codex-mcp-client')).toBeNull();
    expect(toolCapFor('some-new-client')).toBe(DEFAULT_TOOL_CAP);
    expect(toolCapFor(undefined)).toBe(DEFAULT_TOOL_CAP);
    expect(decideListing('auto', 'cursor-vscode', 40)).toBe('all');
    expect(decideListing('auto', 'cursor-vscode', 41)).toBe('search');
    expect(decideListing('auto', 'claude-code', 5000)).toBe('all');
    expect(decideListing('all', 'cursor-vscode', 5000)).toBe('all');
    expect(decideListing('search', 'claude-code', 1)).toBe('search');
  });
});

describe('entry options', () => {
  it('reads tools, allowTools and denyTools (repeated or comma-separated); refuses an unknown strategy', () => {
    expect(entryToolsOf(new URLSearchParams('tools=search&denyTools=a__*,b__x&denyTools=c'))).toEqual({ tools: 'search', denyTools: ['a__*', 'b__x', 'c'] });
    expect(entryToolsOf(new URLSearchParams(''))).toEqual({});
    expect(entryToolsOf(new URLSearchParams('tools=most'))).toMatch(/tools must be one of all, search, auto/);
  });

  it('globs match whole names: * any run, ? one character, everything else as written', () => {
    expect(toolShown({ deny: ['git__*'] }, 'git__log')).toBe(false);
    expect(toolShown({ deny: ['git__*'] }, 'github__log')).toBe(true);
    expect(toolShown({ deny: ['a.b'] }, 'axb')).toBe(true);
    expect(toolShown({ allow: ['fs__read_?ile'] }, 'fs__read_file')).toBe(true);
    expect(toolShown({ allow: ['fs__read_?ile'] }, 'fs__read_files')).toBe(false);
    expect(toolShown({ allow: ['fs__*'], deny: ['fs__delete*'] }, 'fs__delete_file')).toBe(false);
  });
});
