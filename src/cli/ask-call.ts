/**
 * `mcpx call` through `/v1/ask`: the call runs daemon-side; when the server asks something (an
 * elicitation, roots, sampling), the question is answered here — on the terminal, or from
 * `--answer` / `--answers` / `--roots` — and the call goes on. The outcome has `/v1/call`'s shape,
 * so `--json` prints what it always printed.
 */
import type { z } from 'zod';
import type { askStartedSchema, askViewSchema, callResultSchema } from '../api/schemas.js';
import { readFileSync } from 'node:fs';
import { McpxError } from '../errors.js';
import { readText, send, type DaemonClient } from '../daemon-client/client.js';
import { answerQuestion, parseAnswerFlag, type AnswerSources } from './questions.js';
import { sseFrameReader } from '../daemon-client/sse-frames.js';
import { terminalSafe } from './terminal-text.js';

/** What /v1/call answers (mcpx call --json prints the same shape, whichever route ran the call). */
export type CallOutcomeBody = z.output<typeof callResultSchema>;
type AskViewBody = z.output<typeof askViewSchema>;

/** What the person gave on the command line (a usage mistake throws). */
export function answerSources(o: { answer?: string[]; answers?: string; roots?: string[] }, stdinUsed: boolean): AnswerSources {
  const answers: Record<string, unknown> = {};
  let sampling: Record<string, unknown> | undefined;
  if (o.answers !== undefined) {
    let parsed: unknown;
    try {
      parsed = JSON.parse(readFileSync(o.answers, 'utf8'));
    } catch (err) {
      throw new McpxError('MCPX_BAD_REQUEST', `--answers ${o.answers}: ${(err as Error).message}`);
    }
    if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed))
      throw new McpxError('MCPX_BAD_REQUEST', `--answers ${o.answers}: expected a JSON object of field → value`);
    for (const [k, v] of Object.entries(parsed)) {
      if (k === '$sampling') sampling = v as Record<string, unknown>;
      else answers[k] = v;
    }
  }
  for (const a of o.answer ?? []) {
    try {
      const [k, v] = parseAnswerFlag(a);
      answers[k] = v;
    } catch (err) {
      throw new McpxError('MCPX_BAD_REQUEST', (err as Error).message);
    }
  }
  // A terminal to ask on: stdin (not taken by the arguments) and stderr, where the questions go.
  const tty = !stdinUsed && process.stdin.isTTY === true && process.stderr.isTTY === true;
  return { tty, answers, roots: o.roots ?? [], ...(sampling ? { sampling } : {}) };
}

async function json<T>(client: DaemonClient, method: 'GET' | 'POST', path: string, body: unknown, headers: Record<string, string> = {}): Promise<T> {
  const res = await client.request<T & { error?: { code: string; message: string } }>(method, path, body, headers);
  if (res.status >= 400) {
    const e = (res.body as { error?: { code?: string; message?: string } } | null)?.error;
    throw new McpxError((e?.code as McpxError['code'] | undefined) ?? 'MCPX_INTERNAL', e?.message ?? `the daemon answered ${res.status}`);
  }
  return res.body;
}

/** The server's own progress on a call (notifications/progress, relayed by the daemon). */
export interface CallProgress {
  progress: number;
  total?: number;
  message?: string;
}

/**
 * One poll of the ask, streamed (`Accept: text/event-stream`): `event: progress` frames while it waits,
 * then the view as `event: result` (a failure there as `{ok:false, error}`).
 */
async function pollStreamed(client: DaemonClient, path: string, onProgress: (p: CallProgress) => void): Promise<AskViewBody> {
  const res = await send(client.socket, { method: 'GET', path, headers: { accept: 'text/event-stream', ...client.configHeaders() } });
  if ((res.statusCode ?? 0) >= 400) {
    const text = await readText(res);
    let e: { code?: string; message?: string } | undefined;
    try {
      e = (JSON.parse(text) as { error?: { code?: string; message?: string } }).error;
    } catch {
      // not JSON
    }
    throw new McpxError((e?.code as McpxError['code'] | undefined) ?? 'MCPX_INTERNAL', e?.message ?? `the daemon answered ${res.statusCode}`);
  }
  return new Promise<AskViewBody>((resolve, reject) => {
    let result: unknown;
    res.setEncoding('utf8');
    const read = sseFrameReader((type, value) => {
      if (type === 'progress') onProgress(value as CallProgress);
      else if (type === 'result') result = value;
    });
    res.on('data', read);
    res.once('error', reject);
    res.once('end', () => {
      const failed = result as { ok?: unknown; error?: { code?: string; message?: string } } | undefined;
      if (result === undefined)
        reject(Object.assign(new Error('the connection closed before the answer was complete'), { code: 'ERR_STREAM_PREMATURE_CLOSE' }));
      else if (failed?.ok === false && failed.error)
        reject(new McpxError((failed.error.code as McpxError['code'] | undefined) ?? 'MCPX_INTERNAL', failed.error.message ?? 'the ask failed'));
      else resolve(result as AskViewBody);
    });
  });
}

export async function runAsk(
  client: DaemonClient,
  body: Record<string, unknown> & { server: string },
  headers: Record<string, string>,
  sources: AnswerSources,
  beforeQuestion?: () => void,
  onProgress?: (p: CallProgress) => void,
): Promise<CallOutcomeBody> {
  const { id } = await json<z.output<typeof askStartedSchema>>(client, 'POST', '/v1/ask', body, headers);
  const path = `/v1/ask/${encodeURIComponent(id)}`;
  // Ctrl-C outside a question gives the call up (the daemon cancels it upstream) before exiting.
  let abandoning: Promise<never> | undefined;
  const onSigint = () => {
    abandoning = new Promise<never>(() => undefined); // the exit below ends the command, not the abandoned ask's outcome
    void client.request('POST', `${path}/abandon`, {}).finally(() => process.exit(130));
  };
  process.once('SIGINT', onSigint);
  try {
    for (;;) {
      const v = await (
        onProgress ? pollStreamed(client, `${path}?waitMs=30000`, onProgress) : json<AskViewBody>(client, 'GET', `${path}?waitMs=30000`, undefined)
      ).catch((err: unknown) => abandoning ?? Promise.reject(err));
      if (abandoning) await abandoning;
      if (v.result !== undefined && v.error === undefined) return { ok: true, result: v.result };
      if (v.error !== undefined) return { ok: false, error: v.error };
      if (v.status === 'abandoned' || v.status === 'expired')
        return { ok: false, error: { code: 'MCPX_REQUEST_CANCELLED', message: `the call was ${v.status}` } };
      if (v.questions.length === 0) continue;
      beforeQuestion?.();
      process.off('SIGINT', onSigint); // a question handles Ctrl-C itself (it declines)
      const answers: Record<string, unknown> = {};
      for (const q of v.questions) {
        const a = await answerQuestion(q, sources, body.server);
        if (a.note) process.stderr.write(`mcpx: ${terminalSafe(a.note)}\n`);
        answers[q.id] = a.answer;
      }
      process.once('SIGINT', onSigint);
      try {
        await json(client, 'POST', `${path}/answers`, { answers });
      } catch (err) {
        // The question closed while it was being answered (the call ended first, or it timed out): the
        // call's own outcome is what this command reports, so poll for it rather than fail a finished call.
        if (!(err instanceof McpxError) || (err.code !== 'MCPX_QUESTION_CLOSED' && err.code !== 'MCPX_ALREADY_ANSWERED')) throw err;
      }
    }
  } finally {
    process.off('SIGINT', onSigint);
  }
}
