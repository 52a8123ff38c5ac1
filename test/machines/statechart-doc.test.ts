import { describe, expect, it } from 'vitest';
import { and, assign, createActor, fromPromise, not, or, setup, stateIn } from 'xstate';
import { activeStateIds, guardText, mermaidId, toMarkdown, toMermaid, withActiveStates } from '../../src/machines/statechart-doc.js';

/** A throwaway machine with one of everything the generator must draw. */
function probeLike() {
  return setup({
    types: { events: {} as { type: 'go' } | { type: 'retry' } | { type: 'stop' } | { type: 'poke' } },
    actors: { connect: fromPromise(async () => 'ok') },
    delays: { probeTimeout: 2_000 },
    guards: { canRetry: () => true, isLegacy: () => false, isReady: () => false },
    actions: { sendDiscover: () => undefined, record: () => undefined, cleanup: () => undefined },
  }).createMachine({
    id: 'a',
    initial: 'b',
    on: { stop: '.done' },
    states: {
      b: {
        entry: 'sendDiscover',
        after: { probeTimeout: 'c' },
        on: { go: { guard: 'isReady', target: 'd' }, poke: {} },
      },
      c: {
        invoke: {
          id: 'connect',
          src: 'connect',
          onDone: 'd',
          onError: { target: 'b', guard: and(['canRetry', not(or(['isLegacy', 'isReady']))]) },
        },
      },
      d: {
        initial: 'e',
        exit: 'cleanup',
        states: {
          e: { always: { guard: 'isLegacy', target: 'f' }, on: { retry: { actions: 'record' } } },
          f: { type: 'final' },
        },
        onDone: 'done',
      },
      done: { type: 'final' },
    },
  });
}

/**
 * A structural check in place of a Mermaid parser (mermaid is not a dependency): the header, balanced
 * braces, every line one of the statement shapes the generator emits, and every id used declared.
 * (The same output was also checked with mermaid@11.17.2's parser outside the project.)
 */
function checkStructure(text: string): { declared: Set<string>; edges: string[] } {
  const lines = text.trimEnd().split('\n');
  expect(lines[0]).toBe('stateDiagram-v2');
  const declared = new Set<string>();
  const used: string[] = [];
  const edges: string[] = [];
  let depth = 0;
  for (const raw of lines.slice(1)) {
    const line = raw.trim();
    let m: RegExpMatchArray | null;
    if ((m = line.match(/^state "([^"]*)" as ([A-Za-z0-9_]+)( \{)?$/))) {
      expect(declared.has(m[2]!), `${m[2]} declared twice`).toBe(false);
      declared.add(m[2]!);
      if (m[3]) depth++;
    } else if (line === '}') {
      depth--;
      expect(depth).toBeGreaterThanOrEqual(0);
    } else if (line === '--') {
      expect(depth).toBeGreaterThan(0);
    } else if ((m = line.match(/^(\[\*\]|[A-Za-z0-9_]+) --> (\[\*\]|[A-Za-z0-9_]+)(?: : ([^\n]+))?$/))) {
      for (const id of [m[1]!, m[2]!]) if (id !== '[*]') used.push(id);
      if (m[3] !== undefined) {
        expect(m[3]).not.toMatch(/[;"]/);
        edges.push(line);
      }
    } else if ((m = line.match(/^class ([A-Za-z0-9_,]+) active$/))) {
      used.push(...m[1]!.split(','));
    } else if (line !== 'classDef active fill:#f9d71c') {
      throw new Error(`unexpected Mermaid line: ${JSON.stringify(raw)}`);
    }
  }
  expect(depth, 'unbalanced { }').toBe(0);
  expect(text.split('{').length).toBe(text.split('}').length);
  for (const id of used) expect(declared, `${id} is used but never declared`).toContain(id);
  return { declared, edges };
}

describe('toMermaid', () => {
  const text = toMermaid(probeLike());
  const lines = text.split('\n').map((l) => l.trim());

  it('draws the exact expected diagram', () => {
    expect(text).toBe(
      [
        'stateDiagram-v2',
        '  state "a" as a {',
        '    [*] --> a_b',
        '    state "b<br/>entry / sendDiscover" as a_b',
        '    state "c<br/>invoke connect" as a_c',
        '    state "d<br/>exit / cleanup" as a_d {',
        '      [*] --> a_d_e',
        '      state "e" as a_d_e',
        '      state "f" as a_d_f',
        '      a_d_f --> [*]',
        '    }',
        '    state "done" as a_done',
        '    a_done --> [*]',
        '  }',
        '  a --> a_done : stop',
        '  a_b --> a_d : go [isReady]',
        '  a_b --> a_c : after probeTimeout',
        '  a_c --> a_d : done(connect)',
        '  a_c --> a_b : error(connect) [canRetry and not (isLegacy or isReady)]',
        '  a_d --> a_done : onDone',
        '  a_d_e --> a_d_f : always [isLegacy]',
        '',
      ].join('\n'),
    );
  });

  it('contains the important lines', () => {
    for (const l of [
      'a_b --> a_c : after probeTimeout',
      '[*] --> a_b',
      '[*] --> a_d_e',
      'a_d_f --> [*]',
      'a_done --> [*]',
      'a_b --> a_d : go [isReady]',
      'a_c --> a_d : done(connect)',
      'a_c --> a_b : error(connect) [canRetry and not (isLegacy or isReady)]',
      'a_d --> a_done : onDone',
      'a_d_e --> a_d_f : always [isLegacy]',
      'state "d<br/>exit / cleanup" as a_d {',
    ]) {
      expect(lines).toContain(l);
    }
    // the delay's name, never its number or xstate's internal event name
    expect(text).not.toMatch(/2000|xstate\./);
  });

  it('leaves targetless transitions out by default; selfLoops draws those with actions', () => {
    expect(text).not.toContain('retry');
    expect(text).not.toContain('poke');
    const loops = toMermaid(probeLike(), { selfLoops: true });
    expect(loops).toContain('  a_d_e --> a_d_e : retry / record\n');
    expect(loops).not.toContain('poke'); // no target, no actions: nothing happens, nothing drawn
    checkStructure(loops);
  });

  it('is deterministic', () => {
    expect(toMermaid(probeLike())).toBe(text);
    expect(toMermaid(probeLike())).toBe(toMermaid(probeLike()));
    const m = probeLike();
    expect(toMermaid(m)).toBe(toMermaid(m));
  });

  it('passes the structural check', () => {
    const { declared, edges } = checkStructure(text);
    expect([...declared]).toEqual(['a', 'a_b', 'a_c', 'a_d', 'a_d_e', 'a_d_f', 'a_done']);
    expect(edges).toHaveLength(7);
  });

  it('numeric delays, unnamed invokes, inline guards and actions, wildcard events', () => {
    const isWarm = () => true;
    const m = setup({ actors: { fetcher: fromPromise(async () => 1) } }).createMachine({
      id: 'm',
      initial: 'x',
      states: {
        x: {
          entry: assign({}),
          invoke: { src: 'fetcher', onDone: 'y', onError: 'z' },
          after: { 500: { target: 'y', guard: isWarm } },
          on: { '*': 'z' },
        },
        y: { invoke: { src: fromPromise(async () => 1), onDone: 'z' } },
        z: {},
      },
    });
    const out = toMermaid(m);
    expect(out).toContain('state "x<br/>entry / assign<br/>invoke fetcher" as m_x');
    expect(out).toContain('state "y<br/>invoke inline actor" as m_y');
    expect(out).toContain('m_x --> m_y : done(fetcher)');
    expect(out).toContain('m_x --> m_z : error(fetcher)');
    expect(out).toContain('m_x --> m_y : after 500 ms [isWarm]');
    expect(out).toContain('m_x --> m_z : *');
    expect(out).toContain('m_y --> m_z : done(inline)');
    checkStructure(out);
  });

  it('Mermaid-safe ids: non-alphanumerics become _, clashes get a suffix, keywords are avoided', () => {
    expect(mermaidId('my-machine.some state')).toBe('my_machine_some_state');
    expect(mermaidId('end')).toBe('end_');
    const m = setup({}).createMachine({
      id: 'end',
      type: 'parallel',
      states: {
        'x-y': { initial: 'a"b', states: { 'a"b': { on: { 'go;now': 'c' } }, c: { type: 'final' } } },
        x_y: {},
        h: { initial: 'p', states: { p: {}, hist: { type: 'history', history: 'deep' } } },
      },
    });
    const out = toMermaid(m);
    const { declared } = checkStructure(out);
    expect([...declared]).toEqual(['end_', 'end_x_y', 'end_x_y_a_b', 'end_x_y_c', 'end_x_y_2', 'end_h', 'end_h_p', 'end_h_hist']);
    expect(out).toContain('state "a#quot;b" as end_x_y_a_b');
    expect(out).toContain('end_x_y_a_b --> end_x_y_c : go,now');
    expect(out).toContain('state "H*" as end_h_hist');
    expect(out.split('\n').filter((l) => l.trim() === '--')).toHaveLength(2); // three regions
  });
});

describe('guardText', () => {
  it('renders higher-order guards readably', () => {
    expect(guardText('a')).toBe('a');
    expect(guardText({ type: 'a', params: { x: 1 } })).toBe('a');
    expect(guardText(and(['a', 'b']))).toBe('a and b');
    expect(guardText(or(['a', and(['b', 'c'])]))).toBe('a or (b and c)');
    expect(guardText(not('a'))).toBe('not a');
    expect(guardText(not(and(['a', 'b'])))).toBe('not (a and b)');
    expect(guardText(and([not('a'), { type: 'b' }]))).toBe('not a and b');
    expect(guardText(stateIn({ p: 'q' }))).toBe('in p.q');
    expect(guardText(() => true)).toBe('inline');
  });

  it('reads and/or/not under the names a bundler gives them (and2, or2, not3)', () => {
    const renamed = <G extends object>(g: G, name: string): G => Object.defineProperty(g, 'name', { value: name });
    expect(guardText(renamed(and(['a', 'b']), 'and2'))).toBe('a and b');
    expect(guardText(renamed(or(['a', renamed(and(['b', 'c']), 'and2')]), 'or2'))).toBe('a or (b and c)');
    expect(guardText(renamed(not('a'), 'not3'))).toBe('not a');
  });
});

describe('toMarkdown', () => {
  it('wraps the chart in a mermaid fence under a heading, with the generated notice', () => {
    const md = toMarkdown(probeLike(), 'Probe', 'What the probe does.');
    expect(md.startsWith('# Probe\n\nWhat the probe does.\n\n')).toBe(true);
    expect(md).toContain('generated — do not edit; run `npm run statecharts`');
    expect(md).toContain(`\`\`\`mermaid\n${toMermaid(probeLike())}\`\`\`\n`);
    expect(toMarkdown(probeLike(), 'Probe')).not.toContain('undefined');
  });
});

describe('live view', () => {
  it('activeStateIds follows a running actor', () => {
    const actor = createActor(probeLike()).start();
    expect(activeStateIds(actor.getSnapshot())).toEqual(['a_b']);
    actor.send({ type: 'stop' });
    expect(activeStateIds(actor.getSnapshot())).toEqual(['a_done']);
    actor.stop();
  });

  it('activeStateIds lists every region of a parallel state', () => {
    const m = setup({}).createMachine({
      id: 'p',
      type: 'parallel',
      states: { r1: { initial: 'x', states: { x: {}, y: {} } }, r2: { initial: 'y', states: { x: {}, y: {} } }, solo: {} },
    });
    const actor = createActor(m).start();
    expect(activeStateIds(actor.getSnapshot())).toEqual(['p_r1_x', 'p_r2_y', 'p_solo']);
    actor.stop();
  });

  it('withActiveStates appends the highlight class', () => {
    const base = toMermaid(probeLike());
    const live = withActiveStates(base, ['a_d_e', 'a_b', 'a_b']);
    expect(live).toBe(`${base}  classDef active fill:#f9d71c\n  class a_d_e,a_b active\n`);
    checkStructure(live);
    expect(withActiveStates(base, [])).toBe(`${base}  classDef active fill:#f9d71c\n`);
    expect(withActiveStates(base, ['a b;x'])).toContain('class a_b_x active');
  });
});
