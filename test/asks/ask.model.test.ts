/**
 * Model-based test of the ask statechart (src/asks/ask.machine.ts).
 *
 * xstate/graph walks the real machine from a fresh ask: the events a state may take are what the world
 * can do next — the upstream asks a round (one question a caller can answer, one it cannot, a round of
 * two, one naming another call, one beyond the per-ask limit), the caller answers every open question,
 * the first open question times out, the call settles (either way), the caller abandons, the ask
 * expires. Every reachable state is checked against the ask's invariants (the status matches the open
 * questions; an ended ask has none open and an outcome; every round is settled once, and a refused one
 * left none of its questions open), and the paths together must take every transition of the chart.
 */
import { describe, expect, it } from 'vitest';
import { createActor, type SnapshotFrom } from 'xstate';
import { getShortestPaths } from 'xstate/graph';
import { askMachine, askStatus, openQuestions, type AskEmitted, type AskEvent, type RoundEntry } from '../../src/asks/ask.machine.js';
import { allTransitions, transitionRecorder } from '../support/chart-coverage.js';

type Snap = SnapshotFrom<typeof askMachine>;

const ASK = 'ask-1';
const MAX_QUESTIONS = 3;
const form = (id: string): RoundEntry => ({ id, method: 'elicitation/create', params: { message: 'Name?' } });

/** The next round's events: question ids continue from what the ask holds (refused rounds put none). */
function rounds(s: Snap): AskEvent[] {
  const n = s.context.questions.length;
  const id = (i: number) => `q${n + i + 1}`;
  const round = (entries: RoundEntry[], via: 'server-request' | 'input-required', callId: unknown = ASK): AskEvent => ({
    type: 'round',
    round: `r${n}`, // a put round is told apart by the questions before it
    via,
    entries,
    callId,
    maxQuestions: MAX_QUESTIONS,
    at: 0,
  });
  return [
    round([form(id(0))], 'server-request'),
    round([{ id: id(0), method: 'sampling/createMessage', params: {} }], 'server-request'),
    round(
      [
        { ...form(id(0)), key: 'a' },
        { ...form(id(1)), key: 'b' },
      ],
      'input-required',
    ),
    round([form(id(0))], 'server-request', 'another-call'),
  ];
}

function modelEvents(s: Snap): AskEvent[] {
  const open = openQuestions(s.context);
  const events: AskEvent[] = [...rounds(s)];
  if (open.length > 0) {
    events.push({ type: 'answer', answers: open.map((q) => ({ question: q.id, answer: { action: 'accept', content: {} } })) });
    events.push({ type: 'question.timeout', question: open[0]!.id, message: 'nobody answered' });
  }
  events.push(
    { type: 'settled', outcome: { ok: true, result: { content: [] } }, at: 1 },
    { type: 'settled', outcome: { ok: false, error: { code: 'MCPX_TOOL_ERROR', message: 'no' } }, at: 1 },
    { type: 'abandon', at: 1 },
    { type: 'expire', shutdown: false, maxAgeMs: 1000, at: 1 },
  );
  return events;
}

/** The state, abstracted: the status, each question's state, and how many refusals (bounded by MAX_QUESTIONS). */
const serializeState = (s: Snap) => {
  const rounds = [...new Set(s.context.questions.map((q) => q.round))];
  return JSON.stringify({ v: s.value, q: s.context.questions.map((q) => `${rounds.indexOf(q.round)}:${q.state}`), r: Math.min(s.context.refused.length, 4) });
};

function invariants(s: Snap): void {
  const status = askStatus(s.value);
  const open = openQuestions(s.context);
  if (status === 'working') expect(open).toEqual([]);
  else if (status === 'input_required') expect(open.length).toBeGreaterThan(0);
  else {
    expect(open, `${status}: nothing stays open`).toEqual([]);
    expect(s.context.outcome).toBeDefined();
    expect(s.context.ended?.status).toBe(status);
  }
  expect(s.context.questions.length).toBeLessThanOrEqual(MAX_QUESTIONS);
}

const universe = allTransitions(askMachine.root);

describe('ask statechart (model)', () => {
  it('every reachable state keeps the invariants, every round settles once, and every transition is taken', () => {
    const paths = getShortestPaths(askMachine, {
      input: { id: ASK, capabilities: { elicitation: { form: {} } } },
      events: modelEvents as never,
      serializeState: serializeState as never,
    });
    expect(paths.length).toBeGreaterThan(10);
    const taken = new Set<object>();
    for (const path of paths) {
      const actor = createActor(askMachine, { input: { id: ASK, capabilities: { elicitation: { form: {} } } }, inspect: transitionRecorder(taken, universe) });
      const settledRounds = new Map<string, AskEmitted['type']>();
      const opened = new Set<string>();
      let roundNo = 0;
      actor.on('*', (e) => {
        const ev = e as AskEmitted;
        if (ev.type === 'round.answered' || ev.type === 'round.refused') {
          expect(settledRounds.has(ev.round), `round ${ev.round} settled twice`).toBe(false);
          settledRounds.set(ev.round, ev.type);
        }
        if (ev.type === 'question.opened') opened.add(ev.question);
        if (ev.type === 'question.closed') {
          expect(opened.has(ev.question), `${ev.question} closed once, after it opened`).toBe(true);
          opened.delete(ev.question);
        }
      });
      actor.start();
      for (const step of path.steps) {
        if ((step.event.type as string) === 'xstate.init') continue;
        // Each round the upstream asks is a round of its own (the store numbers them).
        const ev = step.event.type === 'round' ? { ...(step.event as Extract<AskEvent, { type: 'round' }>), round: `r${++roundNo}` } : (step.event as AskEvent);
        actor.send(ev);
        const s = actor.getSnapshot();
        invariants(s);
        expect(serializeState(s)).toBe(serializeState(step.state as Snap));
        // Every round asked was settled by now, unless its questions are still open.
        if (ev.type === 'round') {
          const put = s.context.questions.some((q) => q.round === ev.round);
          if (!put) expect(settledRounds.get(ev.round), 'a refused round is refused at once').toBe('round.refused');
        }
        for (const [round, how] of settledRounds)
          if (how === 'round.refused') expect(s.context.questions.filter((q) => q.round === round && q.state === 'open')).toEqual([]);
        expect([...opened].sort()).toEqual(
          openQuestions(s.context)
            .map((q) => q.id)
            .sort(),
        );
      }
      // An ended ask refuses what still arrives, at once, naming how it ended.
      const status = askStatus(actor.getSnapshot().value);
      if (status !== 'working' && status !== 'input_required') {
        const late = { ...(rounds(actor.getSnapshot())[0] as Extract<AskEvent, { type: 'round' }>), round: 'late' };
        actor.send(late);
        expect(settledRounds.get('late')).toBe('round.refused');
        expect(actor.getSnapshot().context.refused.at(-1)?.reason).toBe(status === 'abandoned' || status === 'expired' ? status : 'finished');
      }
      actor.stop();
    }
    const missed = [...universe].filter(([t]) => !taken.has(t)).map(([, label]) => label);
    expect(missed, 'transitions never taken').toEqual([]);
  });

  it('a round is refused by the first entry that cannot be put, and nothing of it is put', () => {
    const actor = createActor(askMachine, { input: { id: ASK, capabilities: { elicitation: { form: {} } } } }).start();
    const out: AskEmitted[] = [];
    actor.on('*', (e) => out.push(e as AskEmitted));
    actor.send({
      type: 'round',
      round: 'r1',
      via: 'input-required',
      entries: [
        { ...form('q1'), key: 'a' },
        { id: 'q2', method: 'roots/list', params: {}, key: 'b' },
      ],
      callId: ASK,
      maxQuestions: 8,
      at: 0,
    });
    expect(actor.getSnapshot().context.questions).toEqual([]);
    expect(out.find((e) => e.type === 'round.refused')).toMatchObject({ round: 'r1', reason: 'capability', method: 'roots/list', key: 'b' });
    expect(askStatus(actor.getSnapshot().value)).toBe('working');
  });

  it('one refused question of a round refuses the round once and closes its siblings; an ended ask refuses what arrives', () => {
    const actor = createActor(askMachine, { input: { id: ASK, capabilities: { elicitation: { form: {} } } } }).start();
    const out: AskEmitted[] = [];
    actor.on('*', (e) => out.push(e as AskEmitted));
    actor.send({
      type: 'round',
      round: 'r1',
      via: 'input-required',
      entries: [
        { ...form('q1'), key: 'a' },
        { ...form('q2'), key: 'b' },
      ],
      callId: ASK,
      maxQuestions: 8,
      at: 0,
    });
    actor.send({ type: 'answer', answers: [{ question: 'q1', answer: { action: 'accept', content: {} } }] });
    expect(askStatus(actor.getSnapshot().value)).toBe('input_required');
    actor.send({ type: 'question.timeout', question: 'q2', message: 'nobody answered' });
    expect(out.filter((e) => e.type === 'round.refused')).toEqual([
      { type: 'round.refused', round: 'r1', reason: 'timeout', message: 'nobody answered', method: 'elicitation/create', key: 'b', question: 'q2' },
    ]);
    expect(out.some((e) => e.type === 'round.answered')).toBe(false);
    expect(askStatus(actor.getSnapshot().value)).toBe('working');
    actor.send({ type: 'abandon', at: 5 });
    expect(out.find((e) => e.type === 'cancel')).toEqual({ type: 'cancel', code: 'MCPX_REQUEST_CANCELLED', message: 'the caller abandoned the ask' });
    out.length = 0;
    actor.send({ type: 'round', round: 'r2', via: 'server-request', entries: [form('q3')], callId: ASK, maxQuestions: 8, at: 6 });
    expect(out.find((e) => e.type === 'round.refused')).toMatchObject({
      round: 'r2',
      reason: 'abandoned',
      message: 'elicitation/create arrived after the ask ended (abandoned)',
    });
    actor.send({ type: 'settled', outcome: { ok: true, result: {} }, at: 7 }); // the cancelled call settles later: the ask keeps what it said
    expect(askStatus(actor.getSnapshot().value)).toBe('abandoned');
    expect(actor.getSnapshot().context.outcome).toMatchObject({ ok: false, error: { code: 'MCPX_REQUEST_CANCELLED' } });
  });
});
