/**
 * Opening an address in the user's browser: the command in `$BROWSER` (the usual convention: a command
 * given the address as its last argument, or in place of a `%s`), else the platform's opener.
 *
 * The opener never gets the address itself. A command line is readable by every local user
 * (`/proc/<pid>/cmdline`), and the addresses mcpx opens are secrets for a while: an authorization URL (its
 * `state`, PKCE challenge and callback port let another user answer the callback first, or sign in with their
 * own account against this login), `mcpx ui`'s one-time code. So the address goes into a page only this user
 * can read (0600, in the 0700 state folder) that sends the browser on, and the opener gets the page's
 * `file://` path, as one argument, with no shell. Only `https:` (or `http:` on loopback) is forwarded to.
 */
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { readdirSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { browserAddressProblem } from '../auth/browser-address.js';
import { McpxError } from '../errors.js';

export interface OpenResult {
  /** The program started, for messages. */
  command: string;
  /** The page handed to it (removed by `forget`). */
  page: string;
}

/** Pages older than this are gone over: their addresses are spent or expired (a login waits 10 minutes). */
const STALE_PAGE_MS = 15 * 60_000;
const PAGE_FILE = /^(ui-login|oauth-login)-[0-9a-f]{16}\.html$/;

const attr = (s: string): string => s.replace(/&/g, '&amp;').replace(/"/g, '&quot;').replace(/</g, '&lt;').replace(/>/g, '&gt;');

/**
 * Writes a page (0600, in `stateDir`) that sends the browser on to `address`; returns its path. Refuses an
 * address that is not `https:` (or `http:` on loopback), naming its scheme and host.
 */
export function writeForwardPage(stateDir: string, kind: 'ui-login' | 'oauth-login', address: string, now = Date.now()): string {
  const problem = browserAddressProblem(address);
  if (problem !== undefined) throw new McpxError('MCPX_BAD_REQUEST', `mcpx does not open this address: ${problem}`);
  try {
    for (const f of readdirSync(stateDir)) {
      if (!PAGE_FILE.test(f)) continue;
      const p = join(stateDir, f);
      if (now - statSync(p).mtimeMs > STALE_PAGE_MS) rmSync(p, { force: true });
    }
  } catch {
    // a sweep that fails leaves old files, holding spent addresses
  }
  const file = join(stateDir, `${kind}-${randomBytes(8).toString('hex')}.html`);
  const url = attr(address);
  writeFileSync(
    file,
    `<!doctype html>\n<meta charset="utf-8">\n<meta name="referrer" content="no-referrer">\n<meta http-equiv="refresh" content="0;url=${url}">\n<title>mcpx</title>\n<p>Opening… <a href="${url}">continue</a></p>\n`,
    { mode: 0o600, flag: 'wx' },
  );
  return file;
}

/**
 * Opens `address` in the browser through a forwarding page (see above); rejects when the address is refused or
 * the program cannot be started. The page stays for the browser to read; `forget` removes it once it is spent.
 */
export async function openInBrowser(
  stateDir: string,
  kind: 'ui-login' | 'oauth-login',
  address: string,
  env: NodeJS.ProcessEnv = process.env,
): Promise<OpenResult & { forget: () => void }> {
  const page = writeForwardPage(stateDir, kind, address);
  const forget = () => rmSync(page, { force: true });
  try {
    const { command } = await spawnOpener(pathToFileURL(page).href, env);
    return { command, page, forget };
  } catch (err) {
    forget();
    throw err;
  }
}

/** Starts the browser on `url` (not waiting for it); rejects when the program cannot be started. */
function spawnOpener(url: string, env: NodeJS.ProcessEnv): Promise<{ command: string }> {
  const configured = env['BROWSER']?.split(':').find((c) => c.trim() !== '');
  let cmd: string;
  let args: string[];
  if (configured) {
    const words = configured.trim().split(/\s+/);
    cmd = words[0]!;
    const rest = words.slice(1);
    args = rest.some((w) => w.includes('%s')) ? rest.map((w) => w.replaceAll('%s', url)) : [...rest, url];
  } else {
    cmd = process.platform === 'darwin' ? 'open' : process.platform === 'win32' ? 'explorer' : 'xdg-open';
    args = [url];
  }
  return new Promise((resolve, reject) => {
    // The browser's own output is its business; its errors go to this terminal.
    const child = spawn(cmd, args, { detached: process.platform !== 'win32', stdio: ['ignore', 'ignore', 'inherit'], shell: false });
    child.once('error', (err) => reject(new Error(`could not run ${cmd}: ${err.message}`)));
    child.once('spawn', () => {
      child.unref();
      resolve({ command: cmd });
    });
  });
}
