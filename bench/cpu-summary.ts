/**
 * Summarises a V8 .cpuprofile (node --cpu-prof): self and total time per function, and self time by
 * area (mcpx's own modules by folder, each npm package, node internals, GC), restricted to a time
 * window (the load phase) when one is given in the profile's clock (µs, CLOCK_MONOTONIC, the same as
 * process.hrtime in another process on Linux).
 *
 *   node dist/bench/cpu-summary.js FILE.cpuprofile [calls]
 */
import { existsSync, readFileSync } from 'node:fs';
import { SourceMap } from 'node:module';
import { dirname, resolve } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

interface CallFrame {
  functionName: string;
  url: string;
  lineNumber: number;
  columnNumber?: number;
}

interface ProfileNode {
  id: number;
  callFrame: CallFrame;
  hitCount?: number;
  children?: number[];
}

interface CpuProfile {
  nodes: ProfileNode[];
  startTime: number;
  endTime: number;
  samples: number[];
  timeDeltas: number[];
}

export interface FunctionEntry {
  name: string;
  where: string;
  area: string;
  selfPct: number;
  totalPct: number;
}

export interface AreaEntry {
  area: string;
  pct: number;
  usPerCall: number;
}

export interface CpuSummary {
  samples: number;
  busyMs: number;
  windowMs: number;
  busyPct: number;
  cpuPerCallUs: number;
  areas: AreaEntry[];
  topSelf: FunctionEntry[];
  topTotalOwn: FunctionEntry[];
}

/**
 * The binary is a bundle: a frame in one of its chunks is put back where its source map says the code
 * came from (an mcpx source file or an npm package), so areas and names read as they would unbundled.
 */
function sourceMapped(): (frame: CallFrame) => CallFrame {
  const maps = new Map<string, { map: SourceMap; dir: string } | null>();
  const mapOf = (url: string) => {
    if (!maps.has(url)) {
      let entry: { map: SourceMap; dir: string } | null = null;
      if (url.startsWith('file:') && url.endsWith('.js')) {
        const file = fileURLToPath(url);
        if (existsSync(`${file}.map`)) entry = { map: new SourceMap(JSON.parse(readFileSync(`${file}.map`, 'utf8'))), dir: dirname(file) };
      }
      maps.set(url, entry);
    }
    return maps.get(url) ?? null;
  };
  return (frame) => {
    const m = frame.url.includes('/dist/src/cli/') ? mapOf(frame.url) : null;
    if (!m) return frame;
    const e = m.map.findEntry(frame.lineNumber, frame.columnNumber ?? 0) as { originalSource?: string; originalLine?: number };
    if (!e.originalSource) return frame;
    const source = e.originalSource.startsWith('file:') ? e.originalSource : pathToFileURL(resolve(m.dir, e.originalSource)).href;
    return { ...frame, url: source, lineNumber: e.originalLine ?? frame.lineNumber };
  };
}

/** mcpx's own code: its built modules, or (through the bundle's source maps) its sources. */
function isOwn(url: string): boolean {
  return url.includes('/dist/src/') || (url.includes('/src/') && !url.includes('/node_modules/'));
}

const SPECIAL = new Set(['(idle)', '(program)', '(garbage collector)', '(root)']);

export function areaOf(frame: CallFrame): string {
  const { url, functionName } = frame;
  if (functionName === '(garbage collector)') return 'GC';
  if (functionName === '(program)') return '(program: V8/native, not attributed)';
  if (url === '') return 'native / builtins';
  const nm = url.lastIndexOf('/node_modules/');
  if (nm !== -1) {
    const rest = url.slice(nm + '/node_modules/'.length).split('/');
    return rest[0]!.startsWith('@') ? `${rest[0]}/${rest[1]}` : rest[0]!;
  }
  const src = url.indexOf('/dist/src/');
  if (src !== -1) {
    const rest = url.slice(src + '/dist/src/'.length).replace(/\.js$/, '');
    return `mcpx ${rest}`;
  }
  const own = url.lastIndexOf('/src/');
  if (own !== -1 && url.startsWith('file:')) return `mcpx ${url.slice(own + '/src/'.length).replace(/\.ts$/, '')}`;
  if (url.startsWith('node:')) {
    const parts = url.slice(5).split('/');
    return `node:${parts[0] === 'internal' ? parts.slice(1, 3).join('/') : parts[0]}`;
  }
  return url
    .replace(/^file:\/\//, '')
    .split('/')
    .slice(-2)
    .join('/');
}

function whereOf(frame: CallFrame): string {
  const url = frame.url;
  if (url === '') return '';
  const nm = url.lastIndexOf('/node_modules/');
  const own = url.lastIndexOf('/src/');
  const short =
    nm !== -1
      ? url.slice(nm + '/node_modules/'.length)
      : url.includes('/dist/')
        ? url.slice(url.indexOf('/dist/') + 6)
        : own !== -1
          ? url.slice(own + 1)
          : url.replace(/^file:\/\//, '');
  return `${short}:${frame.lineNumber + 1}`;
}

export function summarise(profile: CpuProfile, calls: number, window?: { fromUs: number; toUs: number }): CpuSummary {
  const original = sourceMapped();
  const byId = new Map(profile.nodes.map((n) => [n.id, { ...n, callFrame: original(n.callFrame) }]));
  const parent = new Map<number, number>();
  for (const n of profile.nodes) for (const c of n.children ?? []) parent.set(c, n.id);
  // Sample times: startTime + running sum of deltas.
  const selfUs = new Map<number, number>();
  let t = profile.startTime;
  let windowUs = 0;
  let first: number | undefined;
  let last = 0;
  for (let i = 0; i < profile.samples.length; i++) {
    t += profile.timeDeltas[i] ?? 0;
    const next = profile.timeDeltas[i + 1] ?? 0;
    if (window && (t < window.fromUs || t > window.toUs)) continue;
    first ??= t;
    last = t;
    const id = profile.samples[i]!;
    selfUs.set(id, (selfUs.get(id) ?? 0) + next);
    windowUs += next;
  }
  const idle = [...selfUs].filter(([id]) => byId.get(id)?.callFrame.functionName === '(idle)').reduce((s, [, us]) => s + us, 0);
  const busy = Math.max(1, windowUs - idle);
  // Per function (name + url + line): self, and total = every sample whose stack contains it (once per sample).
  const key = (f: CallFrame) => `${f.functionName}\u0000${f.url}\u0000${f.lineNumber}`;
  const fnSelf = new Map<string, number>();
  const fnTotal = new Map<string, number>();
  const frameOf = new Map<string, CallFrame>();
  const areaSelf = new Map<string, number>();
  for (const [id, us] of selfUs) {
    const node = byId.get(id)!;
    if (node.callFrame.functionName === '(idle)') continue;
    const k = key(node.callFrame);
    frameOf.set(k, node.callFrame);
    fnSelf.set(k, (fnSelf.get(k) ?? 0) + us);
    const area = areaOf(node.callFrame);
    areaSelf.set(area, (areaSelf.get(area) ?? 0) + us);
    const seen = new Set<string>();
    for (let cur: number | undefined = id; cur !== undefined; cur = parent.get(cur)) {
      const f = byId.get(cur)!.callFrame;
      if (f.functionName === '(root)') break;
      const fk = key(f);
      if (seen.has(fk)) continue;
      seen.add(fk);
      frameOf.set(fk, f);
      fnTotal.set(fk, (fnTotal.get(fk) ?? 0) + us);
    }
  }
  const entry = (k: string): FunctionEntry => {
    const f = frameOf.get(k)!;
    return {
      name: f.functionName || '(anonymous)',
      where: whereOf(f),
      area: areaOf(f),
      selfPct: ((fnSelf.get(k) ?? 0) / busy) * 100,
      totalPct: ((fnTotal.get(k) ?? 0) / busy) * 100,
    };
  };
  const topSelf = [...fnSelf.keys()]
    .sort((a, b) => fnSelf.get(b)! - fnSelf.get(a)!)
    .slice(0, 30)
    .map(entry);
  const topTotalOwn = [...fnTotal.keys()]
    .filter((k) => isOwn(frameOf.get(k)!.url))
    .sort((a, b) => fnTotal.get(b)! - fnTotal.get(a)!)
    .slice(0, 30)
    .map(entry);
  const areas = [...areaSelf]
    .filter(([a]) => !SPECIAL.has(a))
    .sort((a, b) => b[1] - a[1])
    .map(([area, us]) => ({ area, pct: (us / busy) * 100, usPerCall: calls > 0 ? us / calls : 0 }));
  return {
    samples: profile.samples.length,
    busyMs: busy / 1000,
    windowMs: first === undefined ? 0 : (last - first) / 1000,
    busyPct: (busy / Math.max(1, windowUs)) * 100,
    cpuPerCallUs: calls > 0 ? busy / calls : 0,
    areas,
    topSelf,
    topTotalOwn,
  };
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  const [file, calls] = process.argv.slice(2);
  if (!file) {
    console.error('usage: cpu-summary FILE.cpuprofile [calls]');
    process.exit(2);
  }
  const s = summarise(JSON.parse(readFileSync(file, 'utf8')) as CpuProfile, Number(calls ?? 0));
  console.log(`busy ${s.busyMs.toFixed(0)} ms of ${s.windowMs.toFixed(0)} ms (${s.busyPct.toFixed(0)}%), ${s.cpuPerCallUs.toFixed(0)} µs per call`);
  for (const a of s.areas.slice(0, 15)) console.log(`${a.pct.toFixed(1).padStart(5)}%  ${a.usPerCall.toFixed(0).padStart(5)} µs/call  ${a.area}`);
  console.log('--- self');
  for (const f of s.topSelf.slice(0, 25))
    console.log(`${f.selfPct.toFixed(1).padStart(5)}% self ${f.totalPct.toFixed(1).padStart(5)}% total  ${f.name}  ${f.where}`);
  console.log('--- mcpx total');
  for (const f of s.topTotalOwn.slice(0, 25)) console.log(`${f.totalPct.toFixed(1).padStart(5)}% total  ${f.name}  ${f.where}`);
}
