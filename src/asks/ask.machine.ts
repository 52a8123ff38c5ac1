/**
 * The ask statechart: one per ask (a call the upstream may interrupt with questions). Every rule about
 * its life and its questions is here; the AskStore (src/asks/ask-store.ts) is its shell: it runs the call,
 * keeps the timers and the promises the upstream waits on, checks answers, and sends the events.
 *
 * The ask is `running` (`working` while nothing is asked, `input_required` while a question is open)
 * until the call settles (`completed` / `failed`), the caller gives up (`abandoned`) or it outlives its
 * age or the daemon (`expired`). Each question is open until answered or refused, and belongs to a
 * round: a legacy server-to-client request is a round of one; a modern `input_required` is a round of
 * its `inputRequests`. A round is answered when all its questions are; one refused question refuses its
 * round, and its siblings close with it. An ask that ends refuses every open question; a question
 * arriving after it ended is refused at once.
 *
 * Like the other machines it does no I/O. It emits `question.opened` (the shell starts its timeout),
 * `question.closed` (answered or refused: the shell stops it), `round.answered` / `round.refused` (the
 * shell settles what the upstream waits on), `refused` (one refusal, for the log), `cancel` (the shell
 * aborts the call) and `ended`.
 */
import { enqueueActions, setup } from 'xstate';
import { QUESTION_METHODS, isQuestionMethod, missingCapability, type QuestionMethod, type RefusalReason, type RefusalView } from './questions.js';

/**
 * `working`: the call runs and nothing is asked; `input_required`: questions wait for answers;
 * `completed` / `failed`: the call finished (`result` / `error`); `abandoned`: the caller gave up;
 * `expired`: the ask outlived its maximum age (or the daemon stopped under it).
 */
export type AskStatus = 'working' | 'input_required' | 'completed' | 'failed' | 'abandoned' | 'expired';
export type AskEnd = Exclude<AskStatus, 'working' | 'input_required'>;

export interface AskError {
  code: string;
  message: string;
  data?: Record<string, unknown>;
}

/** What the call came to (Controller.call's outcome). */
export type AskOutcome = { ok: true; result: Record<string, unknown> } | { ok: false; error: AskError };

export type QuestionVia = 'server-request' | 'input-required';

export interface AskQuestion {
  id: string;
  method: QuestionMethod;
  params: Record<string, unknown>;
  via: QuestionVia;
  key: string | undefined;
  round: string;
  askedAt: number;
  state: 'open' | 'answered' | 'refused';
  answer?: Record<string, unknown>;
}

export interface AskContext {
  /** The ask's id (the call a question's context must name). */
  id: string;
  capabilities: Record<string, unknown>;
  /** Every question put (open or closed), in order. */
  questions: AskQuestion[];
  refused: RefusalView[];
  outcome: AskOutcome | undefined;
  /** How and when the ask ended. */
  ended: { status: AskEnd; at: number } | undefined;
}

export interface AskInput {
  id: string;
  capabilities: Record<string, unknown>;
}

/** One entry of a round as the upstream asked it (`id`: the question's id, should it be put). */
export interface RoundEntry {
  id: string;
  method: string;
  params: Record<string, unknown>;
  key?: string;
}

export type AskEvent =
  /** The upstream asks (a legacy request, or a modern round); `callId`: the call its context names, if any. */
  | {
      type: 'round';
      round: string;
      via: QuestionVia;
      entries: RoundEntry[];
      callId: unknown;
      maxQuestions: number;
      at: number;
      /** Why the ask could not be given a place among the asks that question their callers (the store's bounds), if it could not. */
      busy?: string;
    }
  /** Checked answers to open questions (the shell checks them against `answerProblem` and the answer schemas first). */
  | { type: 'answer'; answers: Array<{ question: string; answer: Record<string, unknown> }> }
  | { type: 'question.timeout'; question: string; message: string }
  | { type: 'settled'; outcome: AskOutcome; at: number }
  | { type: 'abandon'; why?: string; at: number }
  | { type: 'expire'; shutdown: boolean; maxAgeMs: number; at: number };

export type AskEmitted =
  | { type: 'question.opened'; question: string; method: QuestionMethod; via: QuestionVia }
  | { type: 'question.closed'; question: string }
  | { type: 'round.answered'; round: string; answers: Record<string, Record<string, unknown>> }
  | { type: 'round.refused'; round: string; reason: RefusalReason; message: string; method: string; key?: string; question?: string }
  | { type: 'refused'; refusal: RefusalView }
  | { type: 'cancel'; code: string; message: string }
  | { type: 'ended'; status: AskEnd; message: string };

/** Why a round may not be put to the ask's caller, if it may not (pure): the first entry refused names it. */
export function roundRefusal(
  context: AskContext,
  event: Extract<AskEvent, { type: 'round' }>,
): { reason: RefusalReason; message: string; entry: RoundEntry } | undefined {
  for (const entry of event.entries) {
    const why = entryRefusal(context, event, entry);
    if (why) return { ...why, entry };
  }
  return undefined;
}

function entryRefusal(
  context: AskContext,
  event: Extract<AskEvent, { type: 'round' }>,
  { method, params }: RoundEntry,
): { reason: RefusalReason; message: string } | undefined {
  // The session hands each question the provoking call's context: one naming another call is never this ask's.
  if (event.callId !== undefined && event.callId !== context.id)
    return { reason: 'misrouted', message: `${method} came with the context of another call (${String(event.callId)})` };
  const ended = context.ended?.status;
  if (ended !== undefined)
    return {
      reason: ended === 'expired' ? 'expired' : ended === 'abandoned' ? 'abandoned' : 'finished',
      message: `${method} arrived after the ask ended (${ended})`,
    };
  if (!isQuestionMethod(method)) return { reason: 'unsupported', message: `mcpx relays only ${QUESTION_METHODS.join(', ')} to a caller, not ${method}` };
  const missing = missingCapability(method, params, context.capabilities);
  if (missing !== undefined) return { reason: 'capability', message: `the caller did not declare the ${missing} capability, so ${method} cannot be put to it` };
  if (context.questions.length + event.entries.length > event.maxQuestions)
    return { reason: 'limit', message: `this call asked more than ${event.maxQuestions} questions (the limit per ask)` };
  if (event.busy !== undefined) return { reason: 'busy', message: event.busy };
  return undefined;
}

/** Why a question may not be answered, if it may not (pure): no such question, answered already, or closed. */
export function answerProblem(context: AskContext, question: string): 'unknown' | 'answered' | 'refused' | undefined {
  const q = context.questions.find((x) => x.id === question);
  if (!q) return 'unknown';
  return q.state === 'open' ? undefined : q.state;
}

export const openQuestions = (context: AskContext): AskQuestion[] => context.questions.filter((q) => q.state === 'open');

/** The status a snapshot of this machine stands for. */
export function askStatus(value: unknown): AskStatus {
  return (typeof value === 'string' ? value : (value as { running: string }).running) as AskStatus;
}

/**
 * Refuses open questions (pure on the copy it is handed): each refused question's round is refused
 * once, by its first refused question, and its siblings close with it.
 */
function refuseQuestions(
  questions: AskQuestion[],
  refused: RefusalView[],
  first: AskQuestion[],
  reason: RefusalReason,
  message: string,
  emit: (e: AskEmitted) => void,
) {
  for (const q of first) {
    if (q.state !== 'open') continue;
    const close = (x: AskQuestion) => {
      x.state = 'refused';
      const refusal: RefusalView = { questionId: x.id, method: x.method, reason, message };
      refused.push(refusal);
      emit({ type: 'question.closed', question: x.id });
      emit({ type: 'refused', refusal });
    };
    close(q);
    emit({ type: 'round.refused', round: q.round, reason, message, method: q.method, ...(q.key === undefined ? {} : { key: q.key }), question: q.id });
    for (const other of questions) if (other.round === q.round && other.state === 'open') close(other);
  }
}

/** Refuses `which` of the open questions (pure): the context after, and what to emit. */
function refuse(
  context: AskContext,
  which: (q: AskQuestion) => boolean,
  reason: RefusalReason,
  message: string,
): { next: Pick<AskContext, 'questions' | 'refused'>; emitted: AskEmitted[] } {
  const questions = context.questions.map((q) => ({ ...q }));
  const refused = [...context.refused];
  const emitted: AskEmitted[] = [];
  refuseQuestions(
    questions,
    refused,
    questions.filter((q) => q.state === 'open' && which(q)),
    reason,
    message,
    (e) => emitted.push(e),
  );
  return { next: { questions, refused }, emitted };
}

export const askMachine = setup({
  types: {
    context: {} as AskContext,
    events: {} as AskEvent,
    emitted: {} as AskEmitted,
    input: {} as AskInput,
  },
  guards: {
    roundRefused: ({ context, event }) => event.type === 'round' && roundRefusal(context, event) !== undefined,
    isOpen: ({ context, event }) => event.type === 'question.timeout' && answerProblem(context, event.question) === undefined,
    allOpen: ({ context, event }) => event.type === 'answer' && event.answers.every((a) => answerProblem(context, a.question) === undefined),
    noneOpen: ({ context }) => openQuestions(context).length === 0,
    succeeded: ({ event }) => event.type === 'settled' && event.outcome.ok,
  },
  actions: {
    /** A refused round puts nothing to the caller: the upstream hears why at once. */
    refuseRound: enqueueActions(({ context, event, enqueue }) => {
      if (event.type !== 'round') return;
      const r = roundRefusal(context, event)!;
      const refusal: RefusalView = { method: r.entry.method, reason: r.reason, message: r.message };
      enqueue.assign({ refused: [...context.refused, refusal] });
      enqueue.emit({ type: 'refused', refusal });
      enqueue.emit({
        type: 'round.refused',
        round: event.round,
        reason: r.reason,
        message: r.message,
        method: r.entry.method,
        ...(r.entry.key === undefined ? {} : { key: r.entry.key }),
      });
    }),
    openRound: enqueueActions(({ context, event, enqueue }) => {
      if (event.type !== 'round') return;
      const put: AskQuestion[] = event.entries.map((e) => ({
        id: e.id,
        method: e.method as QuestionMethod,
        params: e.params,
        via: event.via,
        key: e.key,
        round: event.round,
        askedAt: event.at,
        state: 'open',
      }));
      enqueue.assign({ questions: [...context.questions, ...put] });
      for (const q of put) enqueue.emit({ type: 'question.opened', question: q.id, method: q.method, via: q.via });
    }),
    answer: enqueueActions(({ context, event, enqueue }) => {
      if (event.type !== 'answer') return;
      const byId = new Map(event.answers.map((a) => [a.question, a.answer]));
      const questions = context.questions.map((q) => (byId.has(q.id) ? { ...q, state: 'answered' as const, answer: byId.get(q.id)! } : q));
      enqueue.assign({ questions });
      for (const a of event.answers) enqueue.emit({ type: 'question.closed', question: a.question });
      // A round is answered when its last open question is.
      const rounds = new Set(questions.filter((q) => byId.has(q.id)).map((q) => q.round));
      for (const round of rounds) {
        const members = questions.filter((q) => q.round === round);
        if (members.every((q) => q.state === 'answered'))
          enqueue.emit({ type: 'round.answered', round, answers: Object.fromEntries(members.map((q) => [q.id, q.answer!])) });
      }
    }),
    timeOut: enqueueActions(({ context, event, enqueue }) => {
      if (event.type !== 'question.timeout') return;
      const { next, emitted } = refuse(context, (q) => q.id === event.question, 'timeout', event.message);
      enqueue.assign(next);
      for (const e of emitted) enqueue.emit(e);
    }),
    /** The call settled first: it keeps its outcome, and nothing stays open. */
    settle: enqueueActions(({ context, event, enqueue }) => {
      if (event.type !== 'settled') return;
      const status: AskEnd = event.outcome.ok ? 'completed' : 'failed';
      const { next, emitted } = refuse(context, () => true, 'finished', 'the call ended first');
      enqueue.assign({ outcome: event.outcome, ended: { status, at: event.at }, ...next });
      for (const e of emitted) enqueue.emit(e);
      enqueue.emit({ type: 'ended', status, message: 'the call ended first' });
    }),
    /** Abandoned or expired: the call is cancelled upstream and every open question refused. */
    giveUp: enqueueActions(({ context, event, enqueue }) => {
      if (event.type !== 'abandon' && event.type !== 'expire') return;
      const status: AskEnd = event.type === 'abandon' ? 'abandoned' : 'expired';
      const message =
        event.type === 'abandon'
          ? (event.why ?? 'the caller abandoned the ask')
          : event.shutdown
            ? 'the daemon is shutting down'
            : `the ask was not done within ${event.maxAgeMs} ms`;
      const code = event.type === 'abandon' ? 'MCPX_REQUEST_CANCELLED' : event.shutdown ? 'MCPX_SHUTTING_DOWN' : 'MCPX_ASK_EXPIRED';
      enqueue.emit({ type: 'cancel', code, message });
      const { next, emitted } = refuse(context, () => true, status, message);
      enqueue.assign({ outcome: { ok: false, error: { code, message } }, ended: { status, at: event.at }, ...next });
      for (const e of emitted) enqueue.emit(e);
      enqueue.emit({ type: 'ended', status, message });
    }),
  },
}).createMachine({
  id: 'ask',
  context: ({ input }) => ({ id: input.id, capabilities: input.capabilities, questions: [], refused: [], outcome: undefined, ended: undefined }),
  initial: 'running',
  states: {
    running: {
      initial: 'working',
      on: {
        round: [
          { guard: 'roundRefused', actions: 'refuseRound' },
          { target: '.input_required', actions: 'openRound' },
        ],
        settled: [
          { guard: 'succeeded', target: 'completed', actions: 'settle' },
          { target: 'failed', actions: 'settle' },
        ],
        abandon: { target: 'abandoned', actions: 'giveUp' },
        expire: { target: 'expired', actions: 'giveUp' },
      },
      states: {
        working: {},
        input_required: {
          always: { guard: 'noneOpen', target: 'working' },
          on: {
            answer: { guard: 'allOpen', actions: 'answer' },
            'question.timeout': { guard: 'isOpen', actions: 'timeOut' },
          },
        },
      },
    },
    // Ended, kept for its pollers: a question arriving now is refused at once.
    completed: { on: { round: { actions: 'refuseRound' } } },
    failed: { on: { round: { actions: 'refuseRound' } } },
    abandoned: { on: { round: { actions: 'refuseRound' } } },
    expired: { on: { round: { actions: 'refuseRound' } } },
  },
});

export type AskMachine = typeof askMachine;
