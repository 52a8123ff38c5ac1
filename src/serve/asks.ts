/**
 * AskStore: calls the upstream may interrupt with questions (`/v1/ask`), held daemon-side while the
 * caller answers.
 *
 * An ask is one tool call run with a CallContext whose two question hooks belong to that ask alone:
 * - a **legacy** upstream asks with a server-to-client request (`elicitation/create`,
 *   `sampling/createMessage`, `roots/list`) in the middle of the call; the session hands it to the
 *   provoking call's `onServerRequest`, and the caller's answer becomes the JSON-RPC result sent back;
 * - a **modern** upstream answers `input_required`; the session hands the `inputRequests` to the call's
 *   `onInputRequired`, each entry becomes one question, and once all are answered their bare results go
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
 */
import { randomUUID } from 'node:crypto';
import { McpxError, type ErrorCode, type RpcErrorObject } from '../errors.js';
import { silentLogger, type Logger } from '../log.js';
import { RPC } from '../protocol/constants.js';
import type { CallContext } from '../pool/types.js';
import type { JsonRpcRequest } from '../transports/types.js';
import type { ProgressUpdate } from '../upstream/session.js';

/** What an upstream may ask its caller (in either era). */
export const QUESTION_METHODS = ['elicitation/create', 'sampling/createMessage', 'roots/list'] as const;
export type QuestionMethod = (typeof QUESTION_METHODS)[number];

/**
 * `working`: the call runs and nothing is asked; `input_required`: questions wait for answers;
 * `completed` / `failed`: the call finished (`result` / `error`); `abandoned`: the caller gave up;
 * `expired`: the ask outlived its maximum age (or the daemon stopped under it).
 */
export type AskStatus = 'working' | 'input_required' | 'completed' | 'failed' | 'abandoned' | 'expired';

/** What starts an ask: the `/v1/call` body, and the capabilities the caller can answer. */
export interface AskStart {
  server: string;
  tool: string;
  args: Record<string, unknown>;
  /**
   * The request, when it is not `tools/call` (prompts/get and resources/read may ask too): `params` is
   * then the request's params, and `tool` names the prompt or resource for views and logs.
   */
  method?: 'tools/call' | 'prompts/get' | 'resources/read';
  params?: Record<string, unknown>;
  /** How long a question of this ask may wait for its answer, when shorter than the server's request timeout. */
  questionTimeoutMs?: number;
  /** MCP client capabilities the caller can honour (`elicitation: {form?, url?}`, `sampling`, `roots`); absent: DEFAULT_ASK_CAPABILITIES. */
  capabilities?: Record<string, unknown>;
  callerProtocol?: string;
  session?: string;
  /**
   * Who asks, for the per-caller bound (limits.maxPerCaller): the caller's session, else its connection
   * (`/v1/ask`); `/mcp` and `mcpx serve` give their caller's session. Absent: the ask is its own caller.
   */
  caller?: string;
  timeoutMs?: number;
  /**
   * An MCP client's call (`/mcp`, `mcpx serve`): a server that needs authorization is authorized in place,
   * by asking the client to open the authorization URL (URL-mode elicitation), when the client can.
   */
  authorizeInPlace?: boolean;
}

export interface AskError {
  code: string;
  message: string;
  data?: Record<string, unknown>;
}

/** What the call came to (Controller.call's outcome). */
export type AskOutcome = { ok: true; result: Record<string, unknown> } | { ok: false; error: AskError };

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

export type RefusalReason = 'capability' | 'unsupported' | 'limit' | 'timeout' | 'abandoned' | 'expired' | 'finished' | 'misrouted';

/** A question mcpx refused on the caller's behalf (`questionId` when it had been put to the caller). */
export interface RefusalView {
  questionId?: string;
  method: string;
  reason: RefusalReason;
  message: string;
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
  /** Asks running at once; one more is refused (MCPX_TOO_MANY_ASKS, 429). */
  maxRunning: number;
  /** Asks one caller may have running; its next one reclaims its oldest unattended ask, else is refused (MCPX_TOO_MANY_ASKS). */
  maxPerCaller: number;
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
  maxKept: 1024,
  maxQuestionsPerAsk: 32,
  finishedTtlMs: 5 * 60_000,
  maxAgeMs: 60 * 60_000,
  maxWaitMs: 60_000,
});

export interface AskStoreOptions {
  /** Runs the call with the ask's context (the daemon: Controller.call); may reject (e.g. MCPX_UNKNOWN_SERVER). */
  run: (start: AskStart, ctx: CallContext) => Promise<AskOutcome>;
  /** How long a question may wait for its answer: the server's request timeout. */
  questionTimeoutMs: (server: string) => number;
  limits?: Partial<AskLimits>;
  logger?: Logger;
}

/** The answer checks (zod, ./answer-schemas.ts), loaded by the first answer: a daemon loads no zod before it listens. */
let answerSchemas: typeof import('./answer-schemas.js').ANSWER_SCHEMAS | undefined;

// ---------------------------------------------------------------------------------------------

interface Question {
  id: string;
  method: QuestionMethod;
  params: Record<string, unknown>;
  via: QuestionView['via'];
  key: string | undefined;
  askedAt: number;
  state: 'open' | 'answered' | 'refused';
  timer: NodeJS.Timeout | undefined;
  /** Hands the caller's answer on (legacy: the JSON-RPC result; modern: its round's inputResponse). */
  deliver: (answer: Record<string, unknown>) => void;
  /** Hands a refusal on (legacy: a JSON-RPC error; modern: the round fails). */
  refuse: (reason: RefusalReason, message: string) => void;
}

interface Ask {
  id: string;
  start: AskStart;
  capabilities: Record<string, unknown>;
  createdAt: number;
  finishedAt: number | undefined;
  status: AskStatus;
  outcome: AskOutcome | undefined;
  /** Every question put (open or closed), in order. */
  questions: Map<string, Question>;
  refused: RefusalView[];
  ac: AbortController;
  settled: boolean;
  waiters: Set<() => void>;
  /** Pollers that want the call's progress while they wait (best effort: progress between polls is dropped). */
  progress: Set<(p: ProgressUpdate) => void>;
  /** Running: the max-age timer; finished: the deletion timer. */
  timer: NodeJS.Timeout | undefined;
}

const FINAL: ReadonlySet<AskStatus> = new Set(['completed', 'failed', 'abandoned', 'expired']);
const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

/** The capability a question needs that the caller did not declare, or undefined when it may be asked. */
export function missingCapability(method: QuestionMethod, params: Record<string, unknown>, caps: Record<string, unknown>): string | undefined {
  switch (method) {
    case 'elicitation/create': {
      const e = caps['elicitation'];
      if (!isObject(e)) return 'elicitation';
      if (params['mode'] === 'url') return isObject(e['url']) ? undefined : 'elicitation.url';
      // An empty `elicitation: {}` declares form mode (2025-11-25's backwards-compatible reading).
      return isObject(e['form']) || Object.keys(e).length === 0 ? undefined : 'elicitation.form';
    }
    case 'sampling/createMessage':
      return isObject(caps['sampling']) ? undefined : 'sampling';
    case 'roots/list':
      return isObject(caps['roots']) ? undefined : 'roots';
  }
}

/** What `/v1/ask` declares for a caller that names no capabilities: what the route can carry to a program (forms and URLs). */
export const DEFAULT_ASK_CAPABILITIES: Readonly<Record<string, unknown>> = Object.freeze({ elicitation: { form: {}, url: {} } });

/** The kinds of question an ask with these capabilities refuses at once (said in its answer). */
export function refusedKinds(caps: Record<string, unknown>): string[] {
  const kinds: Array<[string, QuestionMethod, Record<string, unknown>]> = [
    ['elicitation.form', 'elicitation/create', {}],
    ['elicitation.url', 'elicitation/create', { mode: 'url' }],
    ['sampling', 'sampling/createMessage', {}],
    ['roots', 'roots/list', {}],
  ];
  return kinds.filter(([, method, params]) => missingCapability(method, params, caps) !== undefined).map(([kind]) => kind);
}

const isQuestionMethod = (m: string): m is QuestionMethod => (QUESTION_METHODS as readonly string[]).includes(m);

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
          : 'MCPX_QUESTION_REFUSED';
  return new McpxError(code, message, { data: { reason, ...data } });
}

function errorOf(err: unknown): AskError {
  if (err instanceof McpxError) return err.toJSON();
  return { code: 'MCPX_INTERNAL', message: err instanceof Error ? err.message : String(err) };
}

export class AskStore {
  /** Tunable at run time (tests lower them); read when each ask, question or wait starts. */
  readonly limits: AskLimits;
  private readonly opts: AskStoreOptions;
  private readonly log: Logger;
  private readonly asks = new Map<string, Ask>();
  private nextQuestion = 0;
  private inFlight = 0;
  private stopped = false;

  constructor(opts: AskStoreOptions) {
    this.opts = opts;
    this.limits = { ...DEFAULT_ASK_LIMITS, ...opts.limits };
    this.log = (opts.logger ?? silentLogger).child({ component: 'asks' });
  }

  /**
   * Starts the call; it runs until it finishes, is abandoned or expires.
   * @throws McpxError MCPX_TOO_MANY_ASKS (limits.maxRunning asks run already); MCPX_SHUTTING_DOWN.
   */
  start(start: AskStart): AskView {
    if (this.stopped) throw new McpxError('MCPX_SHUTTING_DOWN', 'the daemon is shutting down');
    if (start.caller !== undefined) {
      const mine = [...this.asks.values()].filter((a) => a.start.caller === start.caller && !FINAL.has(a.status));
      if (mine.length >= this.limits.maxPerCaller) {
        // A caller asking again while its oldest ask waits on it, unpolled, has walked away from that one.
        const left = mine.find((a) => a.status === 'input_required' && a.waiters.size === 0);
        if (!left) {
          throw new McpxError(
            'MCPX_TOO_MANY_ASKS',
            `this caller has ${mine.length} asks running already (at most ${this.limits.maxPerCaller} per caller): answer, abandon or wait for one first`,
            {
              data: { running: mine.length, max: this.limits.maxPerCaller, scope: 'caller' },
            },
          );
        }
        this.end(left, 'abandoned', `reclaimed: its caller started more than ${this.limits.maxPerCaller} asks without answering this one`);
      }
    }
    const running = this.countRunning();
    if (running >= this.limits.maxRunning) {
      throw new McpxError(
        'MCPX_TOO_MANY_ASKS',
        `${running} asks are running already (at most ${this.limits.maxRunning}): answer, abandon or wait for one first`,
        {
          data: { running, max: this.limits.maxRunning, scope: 'total' },
        },
      );
    }
    const now = Date.now();
    const ask: Ask = {
      id: `ask-${randomUUID()}`,
      start,
      capabilities: start.capabilities ?? { ...DEFAULT_ASK_CAPABILITIES },
      createdAt: now,
      finishedAt: undefined,
      status: 'working',
      outcome: undefined,
      questions: new Map(),
      refused: [],
      ac: new AbortController(),
      settled: false,
      waiters: new Set(),
      progress: new Set(),
      timer: undefined,
    };
    this.asks.set(ask.id, ask);
    ask.timer = setTimeout(() => this.end(ask, 'expired'), this.limits.maxAgeMs).unref();
    const ctx: CallContext = {
      callId: ask.id,
      signal: ask.ac.signal,
      // Declared upstream in each modern request's _meta; a legacy session declared what mcpx relays at initialize.
      capabilities: ask.capabilities,
      ...(start.callerProtocol === undefined ? {} : { callerProtocol: start.callerProtocol }),
      ...(start.session === undefined ? {} : { session: start.session }),
      ...(start.timeoutMs === undefined ? {} : { timeoutMs: start.timeoutMs }),
      onServerRequest: (req, context) => this.serverRequest(ask, req, context),
      onProgress: (p) => {
        for (const l of ask.progress) l(p);
      },
      onInputRequired: (requests, context) => this.inputRequired(ask, requests, context),
    };
    this.inFlight++;
    void Promise.resolve()
      .then(() => this.opts.run(start, ctx))
      .then(
        (outcome) => outcome,
        (err: unknown): AskOutcome => ({ ok: false, error: errorOf(err) }),
      )
      .then((outcome) => {
        this.inFlight--;
        ask.settled = true;
        this.finish(ask, outcome);
      });
    this.log.debug({ ask: ask.id, server: start.server, tool: start.tool }, 'ask started');
    this.evict();
    return this.view(ask);
  }

  /** @throws McpxError MCPX_NOT_FOUND */
  get(id: string): AskView {
    return this.view(this.find(id));
  }

  /**
   * The ask, at once when it has something to say (open questions, or it finished); otherwise when
   * something changes, `waitMs` (at most limits.maxWaitMs) passes, or `signal` aborts.
   * @throws McpxError MCPX_NOT_FOUND
   */
  async wait(id: string, waitMs = 0, signal?: AbortSignal, onProgress?: (p: ProgressUpdate) => void): Promise<AskView> {
    const ask = this.find(id);
    const ms = Math.min(Math.max(0, waitMs), this.limits.maxWaitMs);
    if (ms > 0 && ask.status === 'working' && !signal?.aborted) {
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
    return this.view(ask);
  }

  /**
   * Answers open questions, all or none: every answer is checked before any is handed on.
   * @throws McpxError MCPX_NOT_FOUND (no such ask); MCPX_UNKNOWN_QUESTION; MCPX_ALREADY_ANSWERED;
   *   MCPX_QUESTION_CLOSED (refused, timed out, or the ask ended); MCPX_BAD_REQUEST (not the result the
   *   question needs). Each names the field in `data.path` (`["answers", <question id>, …]`).
   */
  async answer(id: string, answers: Record<string, unknown>): Promise<AskView> {
    const schemas = (answerSchemas ??= (await import('./answer-schemas.js')).ANSWER_SCHEMAS);
    const ask = this.find(id);
    const entries = Object.entries(answers);
    if (entries.length === 0) throw new McpxError('MCPX_BAD_REQUEST', 'body field answers: name at least one question', { data: { path: ['answers'] } });
    const checked: Array<[Question, Record<string, unknown>]> = [];
    for (const [qid, answer] of entries) {
      const path = ['answers', qid];
      const field = `body field answers.${qid}`;
      const q = ask.questions.get(qid);
      if (!q) {
        const open = this.open(ask).map((x) => x.id);
        throw new McpxError(
          'MCPX_UNKNOWN_QUESTION',
          `${field}: ${ask.id} has no question ${JSON.stringify(qid)} (open: ${open.length > 0 ? open.join(', ') : 'none'})`,
          {
            data: { path, ask: ask.id, question: qid, open },
          },
        );
      }
      if (q.state === 'answered')
        throw new McpxError('MCPX_ALREADY_ANSWERED', `${field}: question ${qid} was answered already`, { data: { path, ask: ask.id, question: qid } });
      if (q.state === 'refused') {
        const why = ask.refused.find((r) => r.questionId === qid);
        throw new McpxError('MCPX_QUESTION_CLOSED', `${field}: question ${qid} is closed${why ? ` (${why.reason}: ${why.message})` : ''}`, {
          data: { path, ask: ask.id, question: qid, ...(why ? { reason: why.reason } : {}) },
        });
      }
      const { schema, shape } = schemas[q.method];
      const parsed = schema.safeParse(answer);
      if (!parsed.success) {
        const issue = parsed.error.issues[0]!;
        const full = [...path, ...issue.path.map((p) => (typeof p === 'symbol' ? String(p) : p))];
        throw new McpxError('MCPX_BAD_REQUEST', `body field ${full.join('.')}: ${issue.message} (the answer to ${q.method} is ${shape})`, {
          data: { path: full },
        });
      }
      checked.push([q, answer as Record<string, unknown>]);
    }
    for (const [q, answer] of checked) {
      q.state = 'answered';
      clearTimeout(q.timer);
      q.deliver(answer);
    }
    this.log.debug({ ask: ask.id, questions: checked.map(([q]) => q.id) }, 'questions answered');
    this.changed(ask);
    return this.view(ask);
  }

  /** Gives up: the call is cancelled upstream and its open questions refused. Idempotent. @throws McpxError MCPX_NOT_FOUND */
  abandon(id: string): AskView {
    const ask = this.find(id);
    this.end(ask, 'abandoned');
    return this.view(ask);
  }

  stats(): AskStats {
    let running = 0;
    let openQuestions = 0;
    for (const ask of this.asks.values()) {
      if (!FINAL.has(ask.status)) running++;
      openQuestions += this.open(ask).length;
    }
    return { asks: this.asks.size, running, finished: this.asks.size - running, openQuestions, callsInFlight: this.inFlight };
  }

  /** The daemon stops: every running ask ends (its call cancelled, its questions refused), nothing is kept. */
  close(): void {
    this.stopped = true;
    for (const ask of this.asks.values()) {
      this.end(ask, 'expired', 'the daemon is shutting down');
      clearTimeout(ask.timer);
    }
    this.asks.clear();
  }

  // ---- the call's two question hooks ----

  /** A legacy server-to-client request of this ask's call: its answer, or a JSON-RPC error. */
  private serverRequest(ask: Ask, req: JsonRpcRequest, context: unknown): Promise<unknown> {
    const params = questionParams(req.params);
    const refusal = this.refusal(ask, req.method, params, 1, context);
    if (refusal) {
      this.refuseUnasked(ask, req.method, refusal.reason, refusal.message);
      return Promise.reject(rpcRefusal(refusal.reason, refusal.message));
    }
    return new Promise((resolve, reject) => {
      this.put(ask, req.method as QuestionMethod, params, 'server-request', undefined, {
        deliver: resolve,
        refuse: (reason, message) => reject(rpcRefusal(reason, message)),
      });
    });
  }

  /** A modern input_required round of this ask's call: every entry answered, or the call ends. */
  private inputRequired(ask: Ask, requests: Record<string, { method: string; params?: unknown }>, context: unknown): Promise<Record<string, unknown>> {
    const entries = Object.entries(requests).map(([key, r]) => ({
      key,
      method: isObject(r) && typeof r.method === 'string' ? r.method : String(r?.method),
      params: questionParams(isObject(r) ? r.params : undefined),
    }));
    for (const e of entries) {
      const refusal = this.refusal(ask, e.method, e.params, entries.length, context);
      if (refusal) {
        this.refuseUnasked(ask, e.method, refusal.reason, refusal.message);
        return Promise.reject(roundRefusal(refusal.reason, refusal.message, { method: e.method, key: e.key }));
      }
    }
    return new Promise((resolve, reject) => {
      const responses: Record<string, unknown> = {};
      const round: Question[] = [];
      let waiting = entries.length;
      let over = false;
      for (const e of entries) {
        const q = this.put(ask, e.method as QuestionMethod, e.params, 'input-required', e.key, {
          deliver: (answer) => {
            responses[e.key] = answer;
            if (--waiting === 0 && !over) {
              over = true;
              resolve(responses);
            }
          },
          refuse: (reason, message) => {
            if (over) return;
            over = true;
            // One question of the round cannot be answered: the round (so the call) ends, and its siblings close with it.
            for (const other of round) if (other !== q) this.closeQuestion(ask, other, reason, message);
            reject(roundRefusal(reason, message, { method: e.method, key: e.key, question: q.id }));
          },
        });
        round.push(q);
      }
    });
  }

  /** Why a question may not be put to this ask's caller, if it may not. */
  private refusal(
    ask: Ask,
    method: string,
    params: Record<string, unknown>,
    n: number,
    context: unknown,
  ): { reason: RefusalReason; message: string } | undefined {
    // The session hands each question the provoking call's context: one naming another call is never this ask's.
    const callId = isObject(context) ? context['callId'] : undefined;
    if (callId !== undefined && callId !== ask.id)
      return { reason: 'misrouted', message: `${method} came with the context of another call (${String(callId)})` };
    if (FINAL.has(ask.status))
      return {
        reason: ask.status === 'expired' ? 'expired' : ask.status === 'abandoned' ? 'abandoned' : 'finished',
        message: `${method} arrived after the ask ended (${ask.status})`,
      };
    if (!isQuestionMethod(method)) return { reason: 'unsupported', message: `mcpx relays only ${QUESTION_METHODS.join(', ')} to a caller, not ${method}` };
    const missing = missingCapability(method, params, ask.capabilities);
    if (missing !== undefined)
      return { reason: 'capability', message: `the caller did not declare the ${missing} capability, so ${method} cannot be put to it` };
    const max = this.limits.maxQuestionsPerAsk;
    if (ask.questions.size + n > max) return { reason: 'limit', message: `this call asked more than ${max} questions (the limit per ask)` };
    return undefined;
  }

  private refuseUnasked(ask: Ask, method: string, reason: RefusalReason, message: string): void {
    ask.refused.push({ method, reason, message });
    this.log.info({ ask: ask.id, server: ask.start.server, method, reason }, `question refused: ${message}`);
    this.changed(ask);
  }

  /** Opens a question: the caller sees it on its next poll; it closes when answered, refused or timed out. */
  private put(
    ask: Ask,
    method: QuestionMethod,
    params: Record<string, unknown>,
    via: QuestionView['via'],
    key: string | undefined,
    hand: Pick<Question, 'deliver' | 'refuse'>,
  ): Question {
    const q: Question = { id: `q${++this.nextQuestion}`, method, params, via, key, askedAt: Date.now(), state: 'open', timer: undefined, ...hand };
    ask.questions.set(q.id, q);
    // A front's caller cannot answer after its requestState expires: no need to wait longer than that.
    const ms = Math.min(this.opts.questionTimeoutMs(ask.start.server), ask.start.questionTimeoutMs ?? Infinity);
    q.timer = setTimeout(() => this.closeQuestion(ask, q, 'timeout', `nobody answered ${method} within ${ms} ms`), ms).unref();
    this.log.debug({ ask: ask.id, question: q.id, method, via }, 'question put');
    this.changed(ask);
    return q;
  }

  private closeQuestion(ask: Ask, q: Question, reason: RefusalReason, message: string): void {
    if (q.state !== 'open') return;
    q.state = 'refused';
    clearTimeout(q.timer);
    ask.refused.push({ questionId: q.id, method: q.method, reason, message });
    this.log.info({ ask: ask.id, question: q.id, method: q.method, reason }, `question refused: ${message}`);
    q.refuse(reason, message);
    this.changed(ask);
  }

  // ---- the ask's life ----

  /** The call settled. An ask the caller abandoned (or that expired) keeps what it said then. */
  private finish(ask: Ask, outcome: AskOutcome): void {
    if (!FINAL.has(ask.status)) {
      ask.outcome = outcome;
      ask.status = outcome.ok ? 'completed' : 'failed';
      this.ended(ask, 'finished', 'the call ended first');
    }
    this.log.info(
      {
        ask: ask.id,
        server: ask.start.server,
        tool: ask.start.tool,
        status: ask.status,
        ...(outcome.ok ? {} : { code: outcome.error.code }),
        ms: Date.now() - ask.createdAt,
      },
      'ask finished',
    );
  }

  /** Abandoned or expired: the call is cancelled upstream (its signal aborts) and every open question refused. */
  private end(ask: Ask, how: 'abandoned' | 'expired', why?: string): void {
    if (FINAL.has(ask.status)) return;
    const message = why ?? (how === 'abandoned' ? 'the caller abandoned the ask' : `the ask was not done within ${this.limits.maxAgeMs} ms`);
    const code: ErrorCode = how === 'abandoned' ? 'MCPX_REQUEST_CANCELLED' : why !== undefined ? 'MCPX_SHUTTING_DOWN' : 'MCPX_ASK_EXPIRED';
    ask.status = how;
    ask.outcome = { ok: false, error: { code, message } };
    ask.ac.abort(new McpxError(code, message));
    this.ended(ask, how, message);
    this.log.info({ ask: ask.id, server: ask.start.server, tool: ask.start.tool, status: how }, message);
  }

  /** Common to every end: nothing stays open, pollers hear of it, the ask is kept for finishedTtlMs. */
  private ended(ask: Ask, reason: RefusalReason, message: string): void {
    ask.finishedAt = Date.now();
    for (const q of this.open(ask)) this.closeQuestion(ask, q, reason, message);
    clearTimeout(ask.timer);
    if (!this.stopped) ask.timer = setTimeout(() => this.asks.delete(ask.id), this.limits.finishedTtlMs).unref();
    this.changed(ask);
  }

  /** Keeps at most maxKept finished asks (beyond the running ones): the oldest go first. */
  private evict(): void {
    let excess = this.asks.size - this.countRunning() - this.limits.maxKept;
    for (const ask of this.asks.values()) {
      if (excess <= 0) break;
      if (!FINAL.has(ask.status)) continue;
      clearTimeout(ask.timer);
      this.asks.delete(ask.id);
      excess--;
    }
  }

  private changed(ask: Ask): void {
    if (!FINAL.has(ask.status)) ask.status = this.open(ask).length > 0 ? 'input_required' : 'working';
    for (const wake of [...ask.waiters]) wake();
  }

  private open(ask: Ask): Question[] {
    return [...ask.questions.values()].filter((q) => q.state === 'open');
  }

  private countRunning(): number {
    let n = 0;
    for (const ask of this.asks.values()) if (!FINAL.has(ask.status)) n++;
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
    const o = ask.outcome;
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
      server: ask.start.server,
      tool: ask.start.tool,
      status: ask.status,
      capabilities: ask.capabilities,
      refuses: refusedKinds(ask.capabilities),
      questions: this.open(ask).map((q) => ({
        id: q.id,
        method: q.method,
        params: q.params,
        via: q.via,
        ...(q.key === undefined ? {} : { key: q.key }),
        askedAt: new Date(q.askedAt).toISOString(),
      })),
      asked: ask.questions.size,
      refused: [...ask.refused],
      createdAt: new Date(ask.createdAt).toISOString(),
      ...(ask.finishedAt === undefined ? {} : { finishedAt: new Date(ask.finishedAt).toISOString() }),
      ...(result === undefined ? {} : { result }),
      ...(o === undefined || o.ok ? {} : { error: o.error }),
    };
  }
}
