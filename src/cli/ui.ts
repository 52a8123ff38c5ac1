/**
 * `mcpx ui [--open]`: the address of the daemon's live page (src/ui), and the `--inspect[=PORT]` flag
 * of `mcpx daemon` (src/inspect/stately.ts). Loaded by src/cli/main.ts only when one of them is used.
 */
import { McpxError } from '../errors.js';
import type { DaemonClient } from '../daemon-client/client.js';
import { DEFAULT_INSPECT_PORT } from '../inspect/constants.js';

export interface UiLogin {
  ok: true;
  /** One-time: trades its code for the page's cookie, then shows the page. */
  url: string;
  page: string;
  expiresAt: string;
  inspector: string | null;
}

/** `--inspect` (true) or `--inspect=PORT` as daemon options. @throws McpxError MCPX_BAD_SETTING for a bad port. */
export function inspectOption(value: string | boolean): { port: number } {
  if (value === true || value === '') return { port: DEFAULT_INSPECT_PORT };
  const port = Number(value);
  if (typeof value !== 'string' || !/^\d+$/.test(value) || !Number.isInteger(port) || port < 0 || port > 65535) {
    throw new McpxError(
      'MCPX_BAD_SETTING',
      `--inspect: ${JSON.stringify(value)} is not a TCP port (0–65535, 0: any free one); --inspect alone uses ${DEFAULT_INSPECT_PORT}`,
      { data: { flag: '--inspect', value } },
    );
  }
  return { port };
}

/** Asks the daemon for a one-time login address. */
export async function uiLogin(client: DaemonClient): Promise<UiLogin> {
  const res = await client.request<UiLogin | { error?: { code?: string; message?: string } }>('POST', '/v1/ui/login');
  if (res.status >= 400 || !res.body || !('url' in res.body)) {
    const e = res.body && 'error' in res.body ? res.body.error : undefined;
    throw new McpxError((e?.code as McpxError['code'] | undefined) ?? 'MCPX_INTERNAL', e?.message ?? `the daemon answered ${res.status}`);
  }
  return res.body;
}

export async function runUi(client: DaemonClient, o: { open?: boolean; json?: boolean }, out: (text: string) => void, stateDir?: string): Promise<void> {
  const login = await uiLogin(client);
  if (o.json) {
    out(JSON.stringify(login, null, 2));
  } else {
    out(login.url);
    out(`(a one-time address, valid until ${login.expiresAt}: it logs this browser in to ${login.page}, for as long as the daemon runs)`);
    if (login.inspector) out(`Stately inspector (its viewer is Stately's web page): ${login.inspector}`);
  }
  // The browser gets a 0600 page's path (./browser.ts); the code stays out of every command line.
  if (o.open) {
    if (stateDir === undefined) throw new McpxError('MCPX_INTERNAL', 'mcpx ui --open needs the state folder to hand the browser its login');
    await import('./browser.js')
      .then(({ openInBrowser }) => openInBrowser(stateDir, 'ui-login', login.url))
      .catch((err: unknown) => process.stderr.write(`mcpx: ${(err as Error).message}; open the address yourself\n`));
  }
}
