/**
 * Opening an address in the user's browser: the command in `$BROWSER` (the usual convention: a command
 * given the address as its last argument, or in place of a `%s`), else the platform's opener.
 */
import { spawn } from 'node:child_process';

export interface OpenResult {
  /** The program started, for messages. */
  command: string;
}

/** Starts the browser on `url` (not waiting for it); rejects when the program cannot be started. */
export function openUrl(url: string, env: NodeJS.ProcessEnv = process.env): Promise<OpenResult> {
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
    const child = spawn(cmd, args, { detached: process.platform !== 'win32', stdio: ['ignore', 'ignore', 'inherit'] });
    child.once('error', (err) => reject(new Error(`could not run ${cmd}: ${err.message}`)));
    child.once('spawn', () => {
      child.unref();
      resolve({ command: cmd });
    });
  });
}
