/**
 * `mcpx call` through `/v1/ask`: the call runs daemon-side; when the server asks something (an
 * elicitation, roots, sampling), the question is answered here — on the terminal, or from
 * `--answer` / `--answers` / `--roots` — and the call goes on. The outcome has `/v1/call`'s shape,
 * so `--json` prints what it always printed.
 */
import type { z } from 'zod';
import type { askStartedSchema, askViewSchema, callResultSchema } from '../server/schemas.js';
import { readFileSync } from 'node:fs';
import { McpxError } from '../errors.js';
import type { DaemonClient } from './client.js';
import { answerQuestion, parseAnswerFlag, type AnswerSources } from './questions.js';
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

export async function runAsk(
  client: DaemonClient,
  body: Record<string, unknown> & { server: string },
  headers: Record<string, string>,
  sources: AnswerSources,
  beforeQuestion?: () => void,
): Promise<CallOutcomeBody> {
  const { id } = await json<z.output<typeof askStartedSchema>>(client, 'POST', '/v1/ask', body, headers);
  const path = `/v1/ask/${encodeURIComponent(id)}`;
  // Ctrl-C outside a question gives the call up (the daemon cancels it upstream) before exiting.
  const onSigint = () => {
    void client.request('POST', `${path}/abandon`, {}).finally(() => process.exit(130));
  };
  process.once('SIGINT', onSigint);
  try {
    for (;;) {
      const v = await json<AskViewBody>(client, 'GET', `${path}?waitMs=30000`, undefined);
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
