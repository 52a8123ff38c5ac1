/**
 * The /v1 API over a real PoolRegistry and real fixture processes: a config file written into a temp
 * folder, loaded the way the daemon loads it, and a fastify app to `inject` into.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import type { FastifyInstance } from 'fastify';
import { pino, type Logger as PinoLogger } from 'pino';
import { Settings, type SettingsSources } from '../../src/config/settings.js';
import { buildApp, type AppDeps } from '../../src/api/app.js';
import type { ResponseViolation } from '../../src/api/response-contract.js';
import { loadDaemonConfig } from '../../src/daemon/config-source.js';
import { Controller } from '../../src/core/controller.js';
import { createPoolRegistry } from '../../src/core/registry.js';
import { Scrubber } from '../../src/core/secrets.js';
import { EraCache } from '../../src/upstream/era-cache.js';
import { fixtureCommand, type FixtureName, type RawMode } from '../fixtures/index.js';
import { pids, readWireLog } from '../fixtures/wire-log-read.js';

export interface FixtureServer {
  fixture: FixtureName;
  mode?: RawMode;
  protocol?: string;
  env?: Record<string, string>;
  mcpx?: Record<string, unknown>;
}

export type ServerEntry = FixtureServer | { url: string; type?: 'http' | 'sse'; headers?: Record<string, string>; protocol?: string };

/** A config-file server entry for a fixture, its wire log in `dir`. */
export function fixtureEntry(dir: string, name: string, s: FixtureServer): Record<string, unknown> {
  const cmd = fixtureCommand(s.fixture, { log: join(dir, `${name}.wire.log`), ...(s.mode ? { mode: s.mode } : {}), ...(s.env ? { env: s.env } : {}) });
  return {
    command: cmd.command,
    args: cmd.args,
    env: cmd.env,
    ...(s.protocol ? { protocol: s.protocol } : {}),
    // Generous: many fixtures start at once on a small machine; probe timing has tests of its own.
    mcpx: { probeTimeout: '10s', startTimeout: '20s', ...s.mcpx },
  };
}

export function writeConfig(dir: string, servers: Record<string, ServerEntry>, extra: Record<string, unknown> = {}, file = join(dir, 'mcpx.json')): string {
  const mcpServers = Object.fromEntries(Object.entries(servers).map(([name, s]) => [name, 'fixture' in s ? fixtureEntry(dir, name, s) : s]));
  writeFileSync(file, `${JSON.stringify({ mcpServers, ...extra }, null, 2)}\n`);
  return file;
}

/** Every pid the fixture `name` started (from its wire log). */
export function fixturePids(dir: string, name: string): number[] {
  return pids(readWireLog(join(dir, `${name}.wire.log`)));
}

/** Gone: kill(pid, 0) fails, or the process is a zombie. */
export function isGone(pid: number): boolean {
  try {
    process.kill(pid, 0);
  } catch {
    return true;
  }
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2).startsWith('Z');
  } catch {
    return true;
  }
}

/** Log lines written by a pino logger, kept in memory. */
export class LogCapture extends Writable {
  readonly lines: string[] = [];
  override _write(chunk: Buffer, _enc: BufferEncoding, cb: () => void): void {
    this.lines.push(
      ...chunk
        .toString('utf8')
        .split('\n')
        .filter((l) => l.length > 0),
    );
    cb();
  }
  get text(): string {
    return this.lines.join('\n');
  }
}

/** A logger like the daemon's: known secrets scrubbed from every line. */
export function captureLogger(scrubber: Scrubber, capture: LogCapture, level = 'debug'): PinoLogger {
  return pino({ level, hooks: { streamWrite: (s: string) => scrubber.scrub(s) } }, capture);
}

export interface Harness {
  dir: string;
  file: string;
  app: FastifyInstance;
  controller: Controller;
  settings: Settings;
  logs: LogCapture;
  cache: EraCache;
  /** Another app over the same controller (e.g. the TCP listener). */
  app2(deps: Partial<AppDeps>): Promise<FastifyInstance>;
  /** Answers so far that did not match the schema their route declares (close() fails when there are any). */
  violations: ResponseViolation[];
  close(): Promise<void>;
}

export async function harness(
  dir: string,
  servers: Record<string, ServerEntry>,
  opts: { extra?: Record<string, unknown>; sources?: Omit<SettingsSources, 'file' | 'filePath'> } = {},
): Promise<Harness> {
  const file = writeConfig(dir, servers, opts.extra);
  const env: NodeJS.ProcessEnv = Object.fromEntries(Object.entries(process.env).filter(([k]) => !k.startsWith('MCPX_')));
  Object.assign(env, opts.sources?.env ?? {});
  const config = await loadDaemonConfig({ configFlag: file, env, cwd: dir });
  if (config.errors.length > 0) throw new Error(config.errors.map((e) => e.message).join('\n'));
  const sources = { ...opts.sources, env, cwd: dir };
  const settings = new Settings({ ...sources, file: config.settingsFile, filePath: file });
  const scrubber = new Scrubber();
  const logs = new LogCapture();
  const logger = captureLogger(scrubber, logs);
  const cache = await EraCache.open(dir);
  const registry = createPoolRegistry({ settings, cache, logger });
  const controller = new Controller({
    settings,
    registry,
    config,
    logger,
    scrubber,
    settingsSources: sources,
    loadConfig: () => loadDaemonConfig({ configFlag: file, env, cwd: dir }),
  });
  await controller.start();
  const apps: FastifyInstance[] = [];
  // Every answer is held against the schema its route declares (the /v1 contract); close() fails on a mismatch.
  const violations: ResponseViolation[] = [];
  const app2 = async (deps: Partial<AppDeps>) => {
    const a = await buildApp({ controller, logger, checkResponses: (v) => violations.push(v), ...deps });
    apps.push(a);
    return a;
  };
  const app = await app2({});
  return {
    dir,
    file,
    app,
    controller,
    settings,
    logs,
    cache,
    app2,
    violations,
    async close() {
      await controller.stop();
      await cache.whenIdle();
      await Promise.all(apps.map((a) => a.close()));
      if (violations.length > 0)
        throw new Error(
          `answers that do not match their route's declared schema:\n${violations.map((v) => `${v.route} ${v.status}: ${v.issues.join('; ')}`).join('\n')}`,
        );
    },
  };
}

export function textOf(body: { result?: { content?: Array<{ type: string; text?: string }> } }): string {
  return body.result?.content?.find((c) => c.type === 'text')?.text ?? '';
}
