/**
 * Captures real MCP servers' tool listings for the tool-search bench: installs each server from the npm
 * registry at a pinned version into a temp folder (`npm install --prefix <tmp> --ignore-scripts`: no
 * browser downloads), starts it over stdio with the SDK v1 client (dummy keys where a server insists on
 * one to start), and writes its `tools/list` and `instructions` to bench/tool-search/listings/<server>.json.
 * The bench then runs offline from those files. A server that fails to start or list is reported, and
 * its earlier file (if any) is kept.
 *
 * `node dist/bench/tool-search/capture.js [server …]`; CAPTURE_PREFIX=<folder> reuses an install there.
 * Not part of `npm run bench` (it needs the registry).
 */
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

interface Source {
  /** The configured server name the bench uses (exposed names are `<server>__<tool>`). */
  server: string;
  pkg: string;
  version: string;
  /** The bin to run when the package has several. */
  bin?: string;
  args?: (work: string) => string[];
  /** Dummy values: enough for the server to start and list, never a real key. */
  env?: (work: string) => Record<string, string>;
}

export const SOURCES: readonly Source[] = [
  { server: 'filesystem', pkg: '@modelcontextprotocol/server-filesystem', version: '2026.8.31', args: (w) => [w] },
  { server: 'memory', pkg: '@modelcontextprotocol/server-memory', version: '2026.8.31', env: (w) => ({ MEMORY_FILE_PATH: join(w, 'memory.jsonl') }) },
  { server: 'everything', pkg: '@modelcontextprotocol/server-everything', version: '2026.8.31', args: () => ['stdio'] },
  { server: 'sequential-thinking', pkg: '@modelcontextprotocol/server-sequential-thinking', version: '2026.8.31' },
  { server: 'github', pkg: '@modelcontextprotocol/server-github', version: '2025.4.8', env: () => ({ GITHUB_PERSONAL_ACCESS_TOKEN: 'dummy' }) },
  {
    server: 'slack',
    pkg: '@modelcontextprotocol/server-slack',
    version: '2025.4.25',
    env: () => ({ SLACK_BOT_TOKEN: 'xoxb-dummy', SLACK_TEAM_ID: 'T00000000' }),
  },
  { server: 'gitlab', pkg: '@modelcontextprotocol/server-gitlab', version: '2025.4.25', env: () => ({ GITLAB_PERSONAL_ACCESS_TOKEN: 'dummy' }) },
  { server: 'brave-search', pkg: '@modelcontextprotocol/server-brave-search', version: '0.6.2', env: () => ({ BRAVE_API_KEY: 'dummy' }) },
  { server: 'google-maps', pkg: '@modelcontextprotocol/server-google-maps', version: '0.6.2', env: () => ({ GOOGLE_MAPS_API_KEY: 'dummy' }) },
  { server: 'puppeteer', pkg: '@modelcontextprotocol/server-puppeteer', version: '2025.5.12' },
  { server: 'postgres', pkg: '@modelcontextprotocol/server-postgres', version: '0.6.2', args: () => ['postgresql://127.0.0.1:1/none'] },
  { server: 'redis', pkg: '@modelcontextprotocol/server-redis', version: '2025.4.25', args: () => ['redis://127.0.0.1:1'] },
  { server: 'everart', pkg: '@modelcontextprotocol/server-everart', version: '0.6.2', env: () => ({ EVERART_API_KEY: 'dummy' }) },
  {
    server: 'aws-kb',
    pkg: '@modelcontextprotocol/server-aws-kb-retrieval',
    version: '0.6.2',
    env: () => ({ AWS_ACCESS_KEY_ID: 'dummy', AWS_SECRET_ACCESS_KEY: 'dummy', AWS_REGION: 'us-east-1' }),
  },
  { server: 'playwright', pkg: '@playwright/mcp', version: '0.0.83', bin: 'playwright-mcp' },
  { server: 'chrome-devtools', pkg: 'chrome-devtools-mcp', version: '1.11.0', bin: 'chrome-devtools-mcp' },
  { server: 'notion', pkg: '@notionhq/notion-mcp-server', version: '2.5.2', env: () => ({ NOTION_TOKEN: 'ntn_dummy' }) },
  { server: 'firecrawl', pkg: 'firecrawl-mcp', version: '3.26.0', env: () => ({ FIRECRAWL_API_KEY: 'fc-dummy' }) },
  { server: 'sentry', pkg: '@sentry/mcp-server', version: '0.39.0', args: () => ['--access-token=dummy'] },
  { server: 'context7', pkg: '@upstash/context7-mcp', version: '4.1.1' },
  { server: 'tavily', pkg: 'tavily-mcp', version: '0.2.22', env: () => ({ TAVILY_API_KEY: 'tvly-dummy' }) },
  { server: 'exa', pkg: 'exa-mcp-server', version: '3.4.1', env: () => ({ EXA_API_KEY: 'dummy' }) },
  { server: 'kubernetes', pkg: 'mcp-server-kubernetes', version: '4.1.7' },
  { server: 'supabase', pkg: '@supabase/mcp-server-supabase', version: '0.13.0', env: () => ({ SUPABASE_ACCESS_TOKEN: 'sbp_dummy' }) },
  { server: 'stripe', pkg: '@stripe/mcp', version: '0.3.3', args: () => ['--tools=all', '--api-key=sk_test_dummy'] },
  { server: 'heroku', pkg: '@heroku/mcp-server', version: '1.2.8', env: () => ({ HEROKU_API_KEY: 'dummy' }) },
  { server: 'figma', pkg: 'figma-developer-mcp', version: '0.13.2', args: () => ['--stdio', '--figma-api-key=dummy'] },
  { server: 'hubspot', pkg: '@hubspot/mcp-server', version: '0.4.0', env: () => ({ PRIVATE_APP_ACCESS_TOKEN: 'dummy' }) },
];

const HERE = dirname(fileURLToPath(import.meta.url));
/** The source folder (this file runs from dist/bench/tool-search). */
export const LISTINGS = join(HERE, '..', '..', '..', 'bench', 'tool-search', 'listings');

/** The command that runs a package's bin with this node. */
function binOf(prefix: string, source: Source): string {
  const dir = join(prefix, source.server, 'node_modules', ...source.pkg.split('/'));
  const bin = (JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8')) as { bin?: string | Record<string, string> }).bin;
  const file = typeof bin === 'string' ? bin : bin && (bin[source.bin ?? ''] ?? Object.values(bin)[0]);
  if (!file) throw new Error(`${source.pkg} has no bin`);
  return join(dir, file);
}

/** Every server's work folder: removed after its capture and again at the end, since a child a server left
 * behind (chrome-devtools-mcp's npm check) can write into it after the server exits. */
const workFolders: string[] = [];

async function capture(prefix: string, source: Source): Promise<{ tools: number } | { error: string }> {
  const work = mkdtempSync(join(tmpdir(), `mcpx-capture-${source.server}-`));
  workFolders.push(work);
  let stderr = '';
  const transport = new StdioClientTransport({
    command: process.execPath,
    args: [binOf(prefix, source), ...(source.args?.(work) ?? [])],
    env: { PATH: process.env['PATH'] ?? '', HOME: work, ...source.env?.(work) },
    cwd: work,
    stderr: 'pipe',
  });
  transport.stderr?.on('data', (c: Buffer) => (stderr = (stderr + c.toString()).slice(-2000)));
  const client = new Client({ name: 'mcpx-capture', version: '1.0.0' });
  try {
    await client.connect(transport, { timeout: 60_000 });
    const tools: unknown[] = [];
    let cursor: string | undefined;
    do {
      const page = await client.listTools(cursor ? { cursor } : {}, { timeout: 60_000 });
      tools.push(...page.tools);
      cursor = page.nextCursor;
    } while (cursor);
    const listing = {
      server: source.server,
      package: source.pkg,
      version: source.version,
      capturedAt: new Date().toISOString().slice(0, 10),
      serverInfo: client.getServerVersion(),
      instructions: client.getInstructions(),
      tools,
    };
    mkdirSync(LISTINGS, { recursive: true });
    // The temp folder a server was started in (some name it in a description) is not part of its listing.
    const text = JSON.stringify(listing, null, 2).split(work).join('<work>');
    writeFileSync(join(LISTINGS, `${source.server}.json`), `${text}\n`);
    return { tools: tools.length };
  } catch (err) {
    const tail = stderr.trim().split('\n').slice(-3).join(' | ');
    return { error: `${err instanceof Error ? err.message : String(err)}${tail ? ` — stderr: ${tail}` : ''}` };
  } finally {
    await client.close().catch(() => undefined);
    rmSync(work, { recursive: true, force: true });
  }
}

async function main(): Promise<void> {
  const only = new Set(process.argv.slice(2));
  const sources = SOURCES.filter((s) => only.size === 0 || only.has(s.server));
  const given = process.env['CAPTURE_PREFIX'];
  const prefix = given ?? mkdtempSync(join(tmpdir(), 'mcpx-capture-'));
  try {
    // Each server in a folder of its own: two servers' dependencies (SDK versions above all) never meet.
    for (const s of sources) {
      const dir = join(prefix, s.server);
      if (existsSync(join(dir, 'node_modules', ...s.pkg.split('/'), 'package.json'))) continue;
      mkdirSync(dir, { recursive: true });
      writeFileSync(join(dir, 'package.json'), '{"private":true}\n');
      process.stderr.write(`installing ${s.pkg}@${s.version}\n`);
      execFileSync('npm', ['install', '--prefix', dir, '--ignore-scripts', '--no-audit', '--no-fund', `${s.pkg}@${s.version}`], {
        stdio: ['ignore', 'ignore', 'inherit'],
      });
    }
    for (const source of sources) {
      const r = await capture(prefix, source);
      console.log(`${source.server.padEnd(20)} ${source.pkg}@${source.version}: ${'error' in r ? `FAILED ${r.error}` : `${r.tools} tools`}`);
    }
  } finally {
    if (!given) rmSync(prefix, { recursive: true, force: true });
    await new Promise((r) => setTimeout(r, 3000));
    for (const w of workFolders) rmSync(w, { recursive: true, force: true });
  }
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) await main();
