/** `mcpx call SERVER TOOL [JSON]`: call a tool and print its result (questions answered here). */
import { readFileSync } from 'node:fs';
import type { Command } from 'commander';
import { McpxError } from '../../errors.js';
import { callHeaders, out, printJson, UsageError, wentAway, withClient, withJson, withTarget, type CliContext, type CommonOpts } from '../common.js';

function resultText(result: Record<string, unknown>): string {
  const content = result['content'];
  if (!Array.isArray(content)) return JSON.stringify(result, null, 2);
  const parts = content.map((c: { type?: string; text?: string }) => (c?.type === 'text' && typeof c.text === 'string' ? c.text : JSON.stringify(c)));
  if (parts.length === 0 && result['structuredContent'] !== undefined) return JSON.stringify(result['structuredContent'], null, 2);
  return parts.join('\n');
}

export function register(program: Command, cli: CliContext): void {
  withJson(
    withTarget(
      program
        .command('call')
        .argument('<server>', 'the server')
        .argument('<tool>', 'the tool')
        .argument('[json]', 'the arguments as a JSON object (- reads stdin)')
        .description('call a tool and print its result'),
    ),
  )
    .option('--session <id>', 'the caller session: the scope key of a server pooled per session')
    .option('--caller-protocol <revision>', 'call as a caller on this MCP revision (X-Mcpx-Caller-Protocol), e.g. 2025-11-25')
    .option('--timeout <duration>', 'give up after this long (e.g. 30s)')
    .option(
      '--answer <key=json>',
      "answer a question's form field without a terminal (repeatable), e.g. --answer name='\"Ada\"'",
      (v: string, acc: string[] = []) => [...acc, v],
    )
    .option('--answers <file>', 'answers from a JSON file: form fields, and "$sampling" (a CreateMessageResult) to answer sampling')
    .option('--roots <dir...>', 'the roots to give a server that asks for them (default: none)')
    .action(
      async (
        server: string,
        tool: string,
        json: string | undefined,
        o: CommonOpts & { session?: string; callerProtocol?: string; timeout?: string; answer?: string[]; answers?: string; roots?: string[] },
      ) => {
        let args: unknown = {};
        if (json !== undefined) {
          const text = json === '-' ? readFileSync(0, 'utf8') : json;
          try {
            args = JSON.parse(text);
          } catch (err) {
            throw new UsageError(`the arguments are not JSON: ${(err as Error).message}`);
          }
          if (typeof args !== 'object' || args === null || Array.isArray(args))
            throw new UsageError('the arguments must be a JSON object, e.g. \'{"text":"hi"}\'');
        }
        let timeoutMs: number | undefined;
        if (o.timeout !== undefined) {
          const { parseDuration } = await import('../../config/duration.js');
          try {
            timeoutMs = parseDuration(o.timeout, '--timeout');
          } catch (err) {
            throw new UsageError((err as Error).message);
          }
        }
        const [{ answerSources, runAsk }, { capabilitiesFor }, { progressEnabled, startProgress }] = await Promise.all([
          import('../ask-call.js'),
          import('../questions.js'),
          import('../progress.js'),
        ]);
        const sources = answerSources(o, json === '-');
        await withClient(o, cli, async (client) => {
          const body = {
            server,
            tool,
            args,
            capabilities: capabilitiesFor(sources),
            ...(o.session ? { session: o.session } : {}),
            ...(timeoutMs === undefined ? {} : { timeoutMs }),
          };
          // Through /v1/ask, so a server that asks something in the middle of the call is answered here.
          // The progress line (a TTY only) gives way to the first question.
          const progress = progressEnabled() ? startProgress(client, server, { doing: `calling ${tool}` }) : undefined;
          await progress?.ready;
          // A server that needs authorization fails the call, naming `mcpx login NAME`: a call never opens a browser.
          const outcome = await runAsk(client, body, callHeaders(o), sources, () => progress?.stop(), progress ? (p) => progress.update(p) : undefined)
            .catch((err: unknown) => wentAway(client, err))
            .finally(() => progress?.stop());
          if (o.json) printJson(outcome);
          if (!outcome.ok)
            throw new McpxError((outcome.error?.code as McpxError['code'] | undefined) ?? 'MCPX_INTERNAL', outcome.error?.message ?? 'the call failed');
          if (!o.json) out(resultText(outcome.result ?? {}));
        });
      },
    );
}
