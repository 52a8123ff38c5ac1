/**
 * AskStore: calls the upstream may interrupt with questions (`/v1/ask`), held daemon-side while the
 * caller answers.
 *
 * An ask is one call (src/call/call.ts) run with a QuestionRelay (src/call/question-relay.ts) that is that ask's alone:
 * - a **legacy** upstream asks with a server-to-client request (`elicitation/create`,
 *   `sampling/createMessage`, `roots/list`) in the middle of the call; the session puts it to the
 *   provoking call's relay (`ask`), and the caller's answer becomes the JSON-RPC result sent back;
 * - a **modern** upstream answers `input_required`; the session puts the `inputRequests` to the call's
 *   relay (`askRound`), each entry becomes one question, and once all are answered their bare results go
 *   back as `inputResponses` (the session retries with the byte-exact `requestState`, at most 8 rounds).
 *
 * Either way a question is open until the caller answers it (`answer`), or mcpx refuses it: the caller
 * did not declare the capability it needs (at once), the ask asked too many, nobody answered within the
 * server's request timeout, or the ask ended (abandoned, expired, the call finished). A refused legacy
 * question gets a JSON-RPC error upstream; a refused modern round ends the call (nothing waits upstream
 * between modern rounds: not retrying is the refusal). Nothing is ever left open.
 *
 * Choice: a question the caller cannot answer is refused with a JSON-RPC error, never answered on its
 * behalf: an undeclared capability gets -32601 (what a legacy client without that capability answers),
 * every other refusal -32603, each with a message naming why. Not `{action:"decline"}` for elicitation:
 * a decline is a person's decision, and the upstream should be able to tell it from "could not ask".
 *
 * The rules of an ask's life and its questions are its statechart's (src/asks/ask.machine.ts, one actor
 * per ask); the store is its shell: it runs the call, keeps the timers, the per-store bounds and the
 * promises the upstream waits on, checks answers against their schemas, and carries out what the chart emits.
 */
import { randomUUID } from 'node:crypto';
import { createActor, type Actor } from 'xstate';
import { McpxError, type ErrorCode, type RpcErrorObject } from '../errors.js';
import { silentLogger, type Logger } from '../log.js';
import { RPC } from '../protocol/constants.js';
import { subjectOf, type Call, type ProgressUpdate } from '../call/call.js';
import type { AskingCall, InputRequests, QuestionRelay } from '../call/question-relay.js';
import {
  askMachine,
  askStatus,
  answerProblem,
  openQuestions,
  roundRefusal as refusalOfRound,
  type AskContext,
  type AskEmitted,
  type AskError,
  type AskEvent,
  type AskOutcome,
  type AskStatus,
} from './ask.machine.js';
import { DEFAULT_ASK_CAPABILITIES, refusedKinds, type QuestionMethod, type RefusalReason, type RefusalView } from './questions.js';
import { isObject } from '../is-object.js';
import type { JsonRpcRequest } from '../transports/types.js';

/** What starts an ask: the call, as its entry built it, and what the ask needs besides. */
export interface AskStart {
  /**
   * The call (a tool call; prompts/get and resources/read may ask too). The ask runs it with its own id,
   * signal, relay and progress: an ask outlives the request that started it.
   */
  call: Call;
  /** How long a question of this ask may wait for its answer, when shorter than the server's request timeout. */
  questionTimeoutMs?: number;
  /** MCP client capabilities the caller can honour (`elicitation: {form?, url?}`, `sampling`, `roots`); absent: DEFAULT_ASK_CAPABILITIES. */
  capabilities?: Record<string, unknown>;
  /**
   * Who asks, for the per-caller bound (limits.maxPerCaller): the caller's session, else its connection
   * (`/v1/ask`); `/mcp` and `mcpx serve` give their caller's session. Absent: the ask is its own caller.
   */
  caller?: string;
  /**
   * An MCP client's call (`/mcp`, `mcpx serve`): a server that needs authorization is authorized in place,
   * by asking the client to open the authorization URL (URL-mode elicitation), when the client can.
   */
  authorizeInPlace?: boolean;
}

export interface QuestionView {
  /** Fresh per question; the key of `answers`. */
  id: string;
  method: QuestionMethod;
  /** The upstream's params, less the upstream's own progress token. */
  params: Record<string, unknown>;
  /** How the upstream asked: a legacy server-to-client request, or a modern input_required round. */
  via: 'server-request' | 'input-required';
  /** A modern question's key in the upstream's `inputRequests` (unique within its round only), for a relay that keeps it. */
  key?: string;
  askedAt: string;
}

export interface AskView {
  id: string;
  server: string;
  tool: string;
  status: AskStatus;
  /** The capabilities the ask declared (the caller's, else DEFAULT_ASK_CAPABILITIES), and the kinds of question it refuses at once. */
  capabilities: Record<string, unknown>;
  refuses: string[];
  /** The questions waiting for an answer, oldest first. */
  questions: QuestionView[];
  /** Questions put to the caller so far. */
  asked: number;
  refused: RefusalView[];
  createdAt: string;
  finishedAt?: string;
  /** The tool result: on `completed`, and on `failed` when the tool itself reported an error (`isError`). */
  result?: Record<string, unknown>;
  error?: AskError;
}

export interface AskStats {
  /** Asks held (running and finished ones not yet deleted). */
  asks: number;
  running: number;
  finished: number;
  /** Questions waiting for an answer, over every ask. */
  openQuestions: number;
  /** Calls not settled yet (an abandoned ask's call settles soon after its cancellation). */
  callsInFlight: number;
}

export interface AskLimits {
  /**
   * Running asks that have put a question to their caller, at once (an ask that asks nothing never
   * counts). The next one to ask reclaims the ask left longest unattended (waiting on its caller, unpolled
   * for reclaimIdleMs), whoever its caller; none: its question is refused (`busy`, MCPX_TOO_MANY_ASKS).
   */
  maxRunning: number;
  /** Of those, one caller's; its next one to ask reclaims its oldest unattended ask, else its question is refused (`busy`). */
  maxPerCaller: number;
  /** How long an ask waiting on its caller must have gone unpolled before another caller's question may reclaim it. */
  reclaimIdleMs: number;
  /** Finished asks kept for their pollers beyond the running ones; the oldest go first. */
  maxKept: number;
  /** Questions one ask may put, over every round (legacy: each request; modern: each inputRequests entry). */
  maxQuestionsPerAsk: number;
  /** How long a finished ask stays readable. */
  finishedTtlMs: number;
  /** A running ask older than this is expired: its call cancelled, its questions refused. */
  maxAgeMs: number;
  /** The longest `wait()` (GET /v1/ask/:id?waitMs=). */
  maxWaitMs: number;
}

export const DEFAULT_ASK_LIMITS: Readonly<AskLimits> = Object.freeze({
  maxRunning: 256,
  maxPerCaller: 32,
  reclaimIdleMs: 2_000,
  maxKept: 1024,
  maxQuestionsPerAsk: 32,
  finishedTtlMs: 5 * 60_000,
  maxAgeMs: 60 * 60_000,
  maxWaitMs: 60_000,
});

export interface AskStoreOptions {
  /** Runs the ask's call (the daemon: Controller.call); may reject (e.g. MCPX_UNKNOWN_SERVER). */
  run: (call: Call, start: AskStart) => Promise<AskOutcome>;
  /** How long a question may wait for its answer: the server's request timeout. */
  questionTimeoutMs: (call: Call) => number;
  limits?: Partial<AskLimits>;
  logger?: Logger;
}

/** The answer checks (zod, ./answer-schemas.ts), loaded by the first answer: a daemon loads no zod before it listens. */
let answerSchemas: typeof import('./answer-schemas.js').ANSWER_SCHEMAS | undefined;

// ---------------------------------------------------------------------------------------------

/** What one round of questions hands back to the upstream that waits on it. */
interface Round {
  via: QuestionView['via'];
  resolve: (answers: Record<string, Record<string, unknown>>) => void;
  reject: (reason: RefusalReason, message: string, data: { method: string; key?: string; question?: string }) => void;
}

interface Ask {
  id: string;
  start: AskStart;
  createdAt: number;
  /** Its statechart (./ask.machine.ts): status, questions, refusals and outcome are its context. */
  actor: Actor<typeof askMachine>;
  /** The rounds the upstream waits on, by round id. */
  rounds: Map<string, Round>;
  /** The timeout of each open question. */
  questionTimers: Map<string, NodeJS.Timeout>;
  ac: AbortController;
  settled: boolean;
  waiters: Set<() => void>;
  /** Pollers that want the call's progress while they wait (best effort: progress between polls is dropped). */
  progress: Set<(p: ProgressUpdate) => void>;
  /** Running: the max-age timer; finished: the deletion timer. */
  timer: NodeJS.Timeout | undefined;
  /** It has put a question to its caller: it counts against limits.maxRunning and maxPerCaller until it ends. */
  asking: boolean;
  /** When its caller last started, polled, answered or abandoned it. */
  seenAt: number;
}

const FINAL: ReadonlySet<AskStatus> = new Set(['completed', 'failed', 'abandoned', 'expired']);

/** The upstream's params as the caller should see them: the upstream's own progress token is meaningless to it. */
function questionParams(params: unknown): Record<string, unknown> {
  if (!isObject(params)) return {};
  const meta = params['_meta'];
  if (!isObject(meta) || !('progressToken' in meta)) return { ...params };
  const { progressToken: _dropped, ...rest } = meta;
  const { _meta: _old, ...others } = params;
  return Object.keys(rest).length > 0 ? { ...others, _meta: rest } : others;
}

/** The JSON-RPC error a refused legacy question gets upstream. */
function rpcRefusal(reason: RefusalReason, message: string): RpcErrorObject {
  const code = reason === 'capability' || reason === 'unsupported' ? RPC.methodNotFound : RPC.internalError;
  return { code, message: `mcpx: ${message}` };
}

/** The error a refused modern round ends its call with. */
function roundRefusal(reason: RefusalReason, message: string, data: Record<string, unknown>): McpxError {
  const code: ErrorCode =
    reason === 'timeout'
      ? 'MCPX_REQUEST_TIMEOUT'
      : reason === 'abandoned'
        ? 'MCPX_REQUEST_CANCELLED'
        : reason === 'expired'
          ? 'MCPX_ASK_EXPIRED'
          : reason === 'busy'
            ? 'MCPX_TOO_MANY_ASKS'
            : 'MCPX_QUESTION_REFUSED';
  return new McpxError(code, message, { data: { reason, ...data } });
}

function errorOf(err: unknown): AskError {
  if (err instanceof McpxError) return err.toJSON();
  return { code: 'MCPX_INTERNAL', message: err instanceof Error ? err.message : String(err) };
}

const stateOf = (ask: Ask): AskContext => ask.actor.getSnapshot().context;
const statusOf = (ask: Ask): AskStatus => askStatus(ask.actor.getSnapshot().value);

export class AskStore {
  /** Tunable at run time (tests lower them); read when each ask, question or wait starts. */
  readonly limits: AskLimits;
  private readonly opts: AskStoreOptions;
  private readonly log: Logger;
  private readonly asks = new Map<string, Ask>();
  private nextQuestion = 0;
  private nextRound = 0;
  private inFlight = 0;
  private stopped = false;

  constructor(opts: AskStoreOptions) {
    this.opts = opts;
    this.limits = { ...DEFAULT_ASK_LIMITS, ...opts.limits };
    this.log = (opts.logger ?? silentLogger).child({ component: 'asks' });
  }

  /**
   * Starts the call; it runs until it finishes, is abandoned or expires. Never refused for the bounds on
   * asks: a call that asks nothing is a plain call; the bounds apply when it first asks (`placeFor`).
   * @throws McpxError MCPX_SHUTTING_DOWN.
   */
  start(start: AskStart): AskView {
    if (this.stopped) throw new McpxError('MCPX_SHUTTING_DOWN', 'the daemon is shutting down');
    const id = `ask-${randomUUID()}`;
    const capabilities = start.capabilities ?? { ...DEFAULT_ASK_CAPABILITIES };
    const ask: Ask = {
      id,
      start,
      createdAt: Date.now(),
      actor: createActor(askMachine, { id, input: { id, capabilities } }),
      rounds: new Map(),
      questionTimers: new Map(),
      ac: new AbortController(),
      settled: false,
      waiters: new Set(),
      progress: new Set(),
      timer: undefined,
      asking: false,
      seenAt: Date.now(),
    };
    ask.actor.on('*', (e) => this.perform(ask, e as AskEmitted));
    ask.actor.subscribe({ error: (err) => this.log.error({ err, ask: id }, 'ask actor failed') });
    ask.actor.start();
    this.asks.set(ask.id, ask);
    ask.timer = setTimeout(
      () => this.send(ask, { type: 'expire', shutdown: false, maxAgeMs: this.limits.maxAgeMs, at: Date.now() }),
      this.limits.maxAgeMs,
    ).unref();
    // The ask's own id, signal, relay and progress: the call it runs is the entry's call with these.
    const call: Call = {
      ...start.call,
      id: ask.id,
      signal: ask.ac.signal,
      relay: this.relayOf(ask, capabilities),
      onProgress: (p) => {
        for (const l of ask.progress) l(p);
      },
    };
    this.inFlight++;
    void Promise.resolve()
      .then(() => this.opts.run(call, start))
      .then(
        (outcome) => outcome,
        (err: unknown): AskOutcome => ({ ok: false, error: errorOf(err) }),
      )
      .then((outcome) => {
        this.inFlight--;
        ask.settled = true;
        this.finish(ask, outcome);
      });
    this.log.debug({ ask: ask.id, server: start.call.server, tool: subjectOf(start.call) }, 'ask started');
    this.evict();
    return this.view(ask);
  }

  /** @throws McpxError MCPX_NOT_FOUND */
  get(id: string): AskView {
    return this.view(this.seen(this.find(id)));
  }

  /**
   * The ask, at once when it has something to say (open questions, or it finished); otherwise when
   * something changes, `waitMs` (at most limits.maxWaitMs) passes, or `signal` aborts.
   * @throws McpxError MCPX_NOT_FOUND
   */
  /**
   * Every progress update of the ask from now until the returned function is called: a caller that waits
   * in rounds hears updates that come between its waits too.
   * @throws McpxError MCPX_NOT_FOUND
   */
  listenProgress(id: string, onProgress: (p: ProgressUpdate) => void): () => void {
    const ask = this.find(id);
    ask.progress.add(onProgress);
    return () => ask.progress.delete(onProgress);
  }

  async wait(id: string, waitMs = 0, signal?: AbortSignal, onProgress?: (p: ProgressUpdate) => void): Promise<AskView> {
    const ask = this.seen(this.find(id));
    const ms = Math.min(Math.max(0, waitMs), this.limits.maxWaitMs);
    if (ms > 0 && statusOf(ask) === 'working' && !signal?.aborted) {
      if (onProgress) ask.progress.add(onProgress);
      await new Promise<void>((resolve) => {
        const done = () => {
          clearTimeout(timer);
          ask.waiters.delete(done);
          if (onProgress) ask.progress.delete(onProgress);
          signal?.removeEventListener('abort', done);
          resolve();
        };
        const timer = setTimeout(done, ms);
        ask.waiters.add(done);
        signal?.addEventListener('abort', done, { once: true });
      });
    }
    return this.view(this.seen(ask));
  }

  /**
   * Answers open questions, all or none: every answer is checked before any is handed on.
   * @throws McpxError MCPX_NOT_FOUND (no such ask); MCPX_UNKNOWN_QUESTION; MCPX_ALREADY_ANSWERED;
   *   MCPX_QUESTION_CLOSED (refused, timed out, or the ask ended); MCPX_BAD_REQUEST (not the result the
   *   question needs). Each names the field in `data.path` (`["answers", <question id>, …]`).
   */
  async answer(id: string, answers: Record<string, unknown>): Promise<AskView> {
    const schemas = (answerSchemas ??= (await import('./answer-schemas.js')).ANSWER_SCHEMAS);
    const ask = this.seen(this.find(id));
    const entries = Object.entries(answers);
    if (entries.length === 0) throw new McpxError('MCPX_BAD_REQUEST', 'body field answers: name at least one question', { data: { path: ['answers'] } });
    const state = stateOf(ask);
    const checked: Array<{ question: string; answer: Record<string, unknown> }> = [];
    for (const [qid, answer] of entries) {
      const path = ['answers', qid];
      const field = `body field answers.${qid}`;
      const problem = answerProblem(state, qid);
      if (problem === 'unknown') {
        const open = openQuestions(state).map((x) => x.id);
        throw new McpxError(
          'MCPX_UNKNOWN_QUESTION',
          `${field}: ${ask.id} has no question ${JSON.stringify(qid)} (open: ${open.length > 0 ? open.join(', ') : 'none'})`,
          {
            data: { path, ask: ask.id, question: qid, open },
          },
        );
      }
      if (problem === 'answered')
        throw new McpxError('MCPX_ALREADY_ANSWERED', `${field}: question ${qid} was answered already`, { data: { path, ask: ask.id, question: qid } });
      if (problem === 'refused') {
        const why = state.refused.find((r) => r.questionId === qid);
        throw new McpxError('MCPX_QUESTION_CLOSED', `${field}: question ${qid} is closed${why ? ` (${why.reason}: ${why.message})` : ''}`, {
          data: { path, ask: ask.id, question: qid, ...(why ? { reason: why.reason } : {}) },
        });
      }
      const q = state.questions.find((x) => x.id === qid)!;
      const { schema, shape } = schemas[q.method];
      const parsed = schema.safeParse(answer);
      if (!parsed.success) {
        const issue = parsed.error.issues[0]!;
        const full = [...path, ...issue.path.map((p) => (typeof p === 'symbol' ? String(p) : p))];
        throw new McpxError('MCPX_BAD_REQUEST', `body field ${full.join('.')}: ${issue.message} (the answer to ${q.method} is ${shape})`, {
          data: { path: full },
        });
      }
      checked.push({ question: qid, answer: answer as Record<string, unknown> });
    }
    this.send(ask, { type: 'answer', answers: checked });
    this.log.debug({ ask: ask.id, questions: checked.map((c) => c.question) }, 'questions answered');
    return this.view(ask);
  }

  /** Gives up: the call is cancelled upstream and its open questions refused. Idempotent. @throws McpxError MCPX_NOT_FOUND */
  abandon(id: string): AskView {
    const ask = this.seen(this.find(id));
    this.send(ask, { type: 'abandon', at: Date.now() });
    return this.view(ask);
  }

  stats(): AskStats {
    let running = 0;
    let openCount = 0;
    for (const ask of this.asks.values()) {
      if (!FINAL.has(statusOf(ask))) running++;
      openCount += openQuestions(stateOf(ask)).length;
    }
    return { asks: this.asks.size, running, finished: this.asks.size - running, openQuestions: openCount, callsInFlight: this.inFlight };
  }

  /** The daemon stops: every running ask ends (its call cancelled, its questions refused), nothing is kept. */
  close(): void {
    this.stopped = true;
    for (const ask of this.asks.values()) {
      this.send(ask, { type: 'expire', shutdown: true, maxAgeMs: this.limits.maxAgeMs, at: Date.now() });
      clearTimeout(ask.timer);
    }
    this.asks.clear();
  }

  // ---- the call's relay ----

  /**
   * The ask's relay: its capabilities are declared upstream in each modern request's `_meta` (a legacy
   * session declared what mcpx relays at initialize); its questions become the ask's.
   */
  private relayOf(ask: Ask, capabilities: Record<string, unknown>): QuestionRelay {
    return {
      capabilities,
      ask: (req, call) => this.serverRequest(ask, req, call),
      askRound: (requests, call) => this.inputRequired(ask, requests, call),
    };
  }

  /** A legacy server-to-client request of this ask's call: its answer, or a JSON-RPC error. */
  private serverRequest(ask: Ask, req: JsonRpcRequest, call: AskingCall): Promise<unknown> {
    return new Promise((resolve, reject) => {
      this.ask(ask, 'server-request', [{ method: req.method, params: questionParams(req.params) }], call, {
        via: 'server-request',
        resolve: (answers) => resolve(Object.values(answers)[0]),
        reject: (reason, message) => reject(rpcRefusal(reason, message)),
      });
    });
  }

  /** A modern input_required round of this ask's call: every entry answered, or the call ends. */
  private inputRequired(ask: Ask, requests: InputRequests, call: AskingCall): Promise<Record<string, unknown>> {
    const entries = Object.entries(requests).map(([key, r]) => ({
      key,
      method: isObject(r) && typeof r.method === 'string' ? r.method : String(r?.method),
      params: questionParams(isObject(r) ? r.params : undefined),
    }));
    return new Promise((resolve, reject) => {
      const keys = new Map<string, string>();
      const ids = this.ask(ask, 'input-required', entries, call, {
        via: 'input-required',
        resolve: (answers) => resolve(Object.fromEntries(Object.entries(answers).map(([qid, a]) => [keys.get(qid)!, a]))),
        reject: (reason, message, data) => reject(roundRefusal(reason, message, data)),
      });
      ids.forEach((qid, i) => keys.set(qid, entries[i]!.key));
    });
  }

  /** Hands a round to the ask's chart; the ids its questions get, should they be put. */
  private ask(
    ask: Ask,
    via: Round['via'],
    entries: Array<{ method: string; params: Record<string, unknown>; key?: string }>,
    call: AskingCall,
    round: Round,
  ): string[] {
    const id = `r${++this.nextRound}`;
    const ids = entries.map((_, i) => `q${this.nextQuestion + i + 1}`);
    ask.rounds.set(id, round);
    const before = stateOf(ask).questions.length;
    const callId = call.id;
    const event: Extract<AskEvent, { type: 'round' }> = {
      type: 'round',
      round: id,
      via,
      entries: entries.map((e, i) => ({ ...e, id: ids[i]! })),
      callId,
      maxQuestions: this.limits.maxQuestionsPerAsk,
      at: Date.now(),
    };
    // A round that would be put to the caller needs the ask to have its place among the asking ones.
    if (!ask.asking && refusalOfRound(stateOf(ask), event) === undefined) {
      const busy = this.placeFor(ask);
      if (busy === undefined) ask.asking = true;
      else event.busy = busy;
    }
    this.send(ask, event);
    // Ids are spent only by questions put (a refused round puts none).
    this.nextQuestion += stateOf(ask).questions.length - before;
    return ids;
  }

  // ---- the ask's life ----

  /** The call settled. An ask the caller abandoned (or that expired) keeps what it said then. */
  private finish(ask: Ask, outcome: AskOutcome): void {
    this.send(ask, { type: 'settled', outcome, at: Date.now() });
    this.log.info(
      {
        ask: ask.id,
        server: ask.start.call.server,
        tool: subjectOf(ask.start.call),
        status: statusOf(ask),
        ...(outcome.ok ? {} : { code: outcome.error.code }),
        ms: Date.now() - ask.createdAt,
      },
      'ask finished',
    );
  }

  private send(ask: Ask, event: AskEvent): void {
    const before = ask.actor.getSnapshot();
    ask.actor.send(event);
    const after = ask.actor.getSnapshot();
    if (after.context !== before.context || after.value !== before.value) this.changed(ask);
  }

  /** Carries out what the ask's chart says. */
  private perform(ask: Ask, e: AskEmitted): void {
    switch (e.type) {
      case 'question.opened': {
        // A front's caller cannot answer after its requestState expires: no need to wait longer than that.
        const ms = Math.min(this.opts.questionTimeoutMs(ask.start.call), ask.start.questionTimeoutMs ?? Infinity);
        const message = `nobody answered ${e.method} within ${ms} ms`;
        ask.questionTimers.set(e.question, setTimeout(() => this.send(ask, { type: 'question.timeout', question: e.question, message }), ms).unref());
        this.log.debug({ ask: ask.id, question: e.question, method: e.method, via: e.via }, 'question put');
        return;
      }
      case 'question.closed':
        clearTimeout(ask.questionTimers.get(e.question));
        ask.questionTimers.delete(e.question);
        return;
      case 'round.answered':
        ask.rounds.get(e.round)?.resolve(e.answers);
        ask.rounds.delete(e.round);
        return;
      case 'round.refused': {
        const { reason, message, round: _round, type: _type, ...data } = e;
        ask.rounds.get(e.round)?.reject(reason, message, data);
        ask.rounds.delete(e.round);
        return;
      }
      case 'refused': {
        const r = e.refusal;
        this.log.info(
          { ask: ask.id, ...(r.questionId === undefined ? { server: ask.start.call.server } : { question: r.questionId }), method: r.method, reason: r.reason },
          `question refused: ${r.message}`,
        );
        return;
      }
      case 'cancel':
        ask.ac.abort(new McpxError(e.code as ErrorCode, e.message));
        return;
      case 'ended':
        // Kept for finishedTtlMs, for its pollers.
        clearTimeout(ask.timer);
        if (!this.stopped) ask.timer = setTimeout(() => this.asks.delete(ask.id), this.limits.finishedTtlMs).unref();
        if (e.status === 'abandoned' || e.status === 'expired')
          this.log.info({ ask: ask.id, server: ask.start.call.server, tool: subjectOf(ask.start.call), status: e.status }, e.message);
        return;
    }
  }

  /**
   * A place among the asks that question their callers, for `ask`'s first question; undefined when it
   * has one, else why not. Past the caller's bound its oldest unattended ask (waiting on it, unpolled) is
   * reclaimed; past the total bound, the ask left unattended longest by any caller, once it has been for
   * reclaimIdleMs.
   */
  private placeFor(ask: Ask): string | undefined {
    const asking = [...this.asks.values()].filter((a) => a !== ask && a.asking && !FINAL.has(statusOf(a)));
    const unattended = (a: Ask) => statusOf(a) === 'input_required' && a.waiters.size === 0;
    const caller = ask.start.caller;
    if (caller !== undefined) {
      const mine = asking.filter((a) => a.start.caller === caller);
      if (mine.length >= this.limits.maxPerCaller) {
        // A caller asking again while its oldest ask waits on it, unpolled, has walked away from that one.
        const left = mine.find(unattended);
        if (!left)
          return `this caller has ${mine.length} asks waiting on it already (at most ${this.limits.maxPerCaller} per caller, serve.maxAsksPerCaller): answer, abandon or wait for one first`;
        this.reclaim(left, `its caller started more than ${this.limits.maxPerCaller} asks without answering this one`);
        asking.splice(asking.indexOf(left), 1);
      }
    }
    if (asking.length < this.limits.maxRunning) return undefined;
    const now = Date.now();
    let oldest: Ask | undefined;
    for (const a of asking) if (unattended(a) && now - a.seenAt >= this.limits.reclaimIdleMs && (!oldest || a.seenAt < oldest.seenAt)) oldest = a;
    if (!oldest)
      return `${asking.length} asks are waiting on their callers already (at most ${this.limits.maxRunning}, serve.maxAsks), none of them unattended: answer, abandon or wait for one first`;
    this.reclaim(oldest, `${this.limits.maxRunning} asks were waiting on their callers and this one had gone unpolled longest (${now - oldest.seenAt} ms)`);
    return undefined;
  }

  private reclaim(ask: Ask, why: string): void {
    this.log.info({ ask: ask.id, server: ask.start.call.server, tool: subjectOf(ask.start.call) }, `ask reclaimed: ${why}`);
    this.send(ask, { type: 'abandon', why: `reclaimed: ${why}`, at: Date.now() });
  }

  private seen(ask: Ask): Ask {
    ask.seenAt = Date.now();
    return ask;
  }

  /** Keeps at most maxKept finished asks (beyond the running ones): the oldest go first. */
  private evict(): void {
    let excess = this.asks.size - this.countRunning() - this.limits.maxKept;
    for (const ask of this.asks.values()) {
      if (excess <= 0) break;
      if (!FINAL.has(statusOf(ask))) continue;
      clearTimeout(ask.timer);
      this.asks.delete(ask.id);
      excess--;
    }
  }

  private changed(ask: Ask): void {
    for (const wake of [...ask.waiters]) wake();
  }

  private countRunning(): number {
    let n = 0;
    for (const ask of this.asks.values()) if (!FINAL.has(statusOf(ask))) n++;
    return n;
  }

  private find(id: string): Ask {
    const ask = this.asks.get(id);
    if (!ask)
      throw new McpxError('MCPX_NOT_FOUND', `no ask ${JSON.stringify(id)} (unknown, or finished more than ${this.limits.finishedTtlMs} ms ago)`, {
        data: { ask: id },
      });
    return ask;
  }

  private view(ask: Ask): AskView {
    const state = stateOf(ask);
    const o = state.outcome;
    // A tool that reported an error (isError) still has a result, which a relaying front passes on as it is.
    const result =
      o === undefined
        ? undefined
        : o.ok
          ? o.result
          : o.error.code === 'MCPX_TOOL_ERROR' && isObject(o.error.data?.['result'])
            ? (o.error.data['result'] as Record<string, unknown>)
            : undefined;
    return {
      id: ask.id,
      server: ask.start.call.server,
      tool: subjectOf(ask.start.call),
      status: statusOf(ask),
      capabilities: state.capabilities,
      refuses: refusedKinds(state.capabilities),
      questions: openQuestions(state).map((q) => ({
        id: q.id,
        method: q.method,
        params: q.params,
        via: q.via,
        ...(q.key === undefined ? {} : { key: q.key }),
        askedAt: new Date(q.askedAt).toISOString(),
      })),
      asked: state.questions.length,
      refused: [...state.refused],
      createdAt: new Date(ask.createdAt).toISOString(),
      ...(state.ended === undefined ? {} : { finishedAt: new Date(state.ended.at).toISOString() }),
      ...(result === undefined ? {} : { result }),
      ...(o === undefined || o.ok ? {} : { error: o.error }),
    };
  }
}
