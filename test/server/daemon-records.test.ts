/**
 * The daemon's call records on its own log stream (src/core/record-log.ts through startDaemon): every
 * call's `call finished` line arrives, whole and scrubbed, in writes shared by the calls of a burst; the
 * lines follow `log.level`; the daemon's stop writes what waits, and so does a process dying of an
 * uncaught error right after a call.
 */
import { spawn } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import { pathToFileURL } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startDaemon, type DaemonHandle } from '../../src/daemon/daemon.js';
import { packageRoot } from '../../src/package-info.js';
import { api, cleanEnv, until } from '../cli/helpers.js';
import { fixtureCommand } from '../fixtures/index.js';
import { tempDir } from '../support/real.js';

const SECRET = 'd43mon-rec0rd-s3cret';

class Sink extends Writable {
  readonly chunks: string[] = [];
  override _write(chunk: Buffer, _enc: BufferEncoding, cb: () => void): void {
    this.chunks.push(chunk.toString('utf8'));
    cb();
  }
  get text(): string {
    return this.chunks.join('');
  }
  records(): Array<Record<string, unknown>> {
    return this.text
      .split('\n')
      .filter((l) => l.length > 0)
      .map((l) => JSON.parse(l) as Record<string, unknown>)
      .filter((l) => l['msg'] === 'call finished');
  }
}

function writeConfig(dir: string): string {
  const file = join(dir, 'mcpx.json');
  const cmd = fixtureCommand('serve-tools', { env: { API_TOKEN: SECRET } });
  writeFileSync(file, JSON.stringify({ mcpServers: { tools: { ...cmd, mcpx: { probeTimeout: '20s', startTimeout: '60s' } } } }));
  return file;
}

describe("the daemon's call records", () => {
  let dir: { path: string; remove: () => Promise<void> };
  let daemon: DaemonHandle | undefined;
  const logs = new Sink();

  const call = (tool: string, text = 'x') => api(daemon!.socket, 'POST', '/v1/call', { server: 'tools', tool, args: { text } });

  beforeAll(async () => {
    dir = await tempDir('mcpx-daemon-records-');
    const env = cleanEnv(dir.path, { MCPX_STATE_DIR: join(dir.path, 'state') });
    daemon = await startDaemon({ configFlag: writeConfig(dir.path), env, cwd: dir.path, logStream: logs, prettyLogs: false });
    expect((await call('echo')).status).toBe(200); // the server is up before the bursts
    await until(() => logs.records().length === 1, 10_000, 'the first record');
  }, 90_000);

  afterAll(async () => {
    await daemon?.stop();
    await dir?.remove();
  });

  it('every call of a burst gets its record, whole and scrubbed, in fewer writes than calls', async () => {
    const before = logs.records().length;
    const chunksBefore = logs.chunks.length;
    const tools = Array.from({ length: 20 }, (_, i) => (i % 5 === 4 ? `tool-${SECRET}` : 'echo'));
    const answers = await Promise.all(tools.map((t, i) => call(t, `n${i}`)));
    expect(answers.filter((a) => a.status === 200 && a.body.ok === true)).toHaveLength(16);
    await until(() => logs.records().length === before + tools.length, 10_000, "the burst's records");
    const mine = logs.records().slice(before);
    expect(mine.filter((r) => r['tool'] === 'echo')).toHaveLength(16);
    expect(mine.filter((r) => r['tool'] === 'tool-<redacted>' && r['ok'] === false)).toHaveLength(4);
    for (const r of mine) expect(r).toMatchObject({ level: 30, component: 'daemon', daemon: process.pid, server: 'tools' });
    expect(logs.text).not.toContain(SECRET);
    const recordChunks = logs.chunks.slice(chunksBefore).filter((c) => c.includes('"call finished"'));
    for (const c of recordChunks) expect(c.endsWith('\n')).toBe(true);
    expect(recordChunks.length).toBeLessThan(tools.length);
  }, 60_000);

  it('records follow log.level: none at warn, again at info', async () => {
    expect((await api(daemon!.socket, 'PUT', '/v1/settings/log.level', { value: 'warn' })).status).toBe(200);
    const before = logs.records().length;
    await call('echo');
    // Long enough for a waiting record to have been written (the records turn, then the flush).
    await new Promise((r) => setTimeout(r, 500));
    expect(logs.records().length).toBe(before);
    expect((await api(daemon!.socket, 'PUT', '/v1/settings/log.level', { value: 'info' })).status).toBe(200);
    await call('echo');
    await until(() => logs.records().length === before + 1, 10_000, 'the record at info');
  }, 60_000);

  it("the daemon's stop writes the records still waiting", async () => {
    const before = logs.records().length;
    await call('echo');
    await daemon!.stop();
    expect(logs.records().length).toBe(before + 1);
  }, 60_000);
});

describe('a daemon process that dies right after a call', () => {
  it("still writes the call's record, on its way out", async () => {
    const dir = await tempDir('mcpx-daemon-records-exit-');
    try {
      const script = join(dir.path, 'crash.mjs');
      const daemonModule = pathToFileURL(join(packageRoot(), 'dist', 'src', 'daemon', 'daemon.js')).href;
      // The call's record waits for its flush; the uncaught error comes two turns after the answer.
      writeFileSync(
        script,
        `import { startDaemon } from ${JSON.stringify(daemonModule)};
const d = await startDaemon({ configFlag: ${JSON.stringify(writeConfig(dir.path))}, env: process.env, cwd: ${JSON.stringify(dir.path)}, prettyLogs: false });
const out = await d.controller.call({ server: 'tools', method: 'tools/call', params: { name: 'echo', arguments: { text: 'last words' } } });
process.stderr.write('answered ' + JSON.stringify(out.ok) + '\\n');
setImmediate(() => setImmediate(() => { throw new Error('boom'); }));
`,
      );
      const child = spawn(process.execPath, [script], {
        env: cleanEnv(dir.path, { MCPX_STATE_DIR: join(dir.path, 'state') }),
        cwd: dir.path,
        stdio: ['ignore', 'pipe', 'pipe'],
      });
      let stdout = '';
      let stderr = '';
      child.stdout.on('data', (c: Buffer) => (stdout += c.toString()));
      child.stderr.on('data', (c: Buffer) => (stderr += c.toString()));
      const code = await new Promise<number | null>((resolve) => child.once('exit', resolve));
      expect(stderr).toContain('answered true');
      expect(stderr).toContain('boom');
      expect(code).not.toBe(0);
      const records = stdout
        .split('\n')
        .filter((l) => l.includes('"call finished"'))
        .map((l) => JSON.parse(l) as Record<string, unknown>);
      expect(records).toEqual([expect.objectContaining({ server: 'tools', tool: 'echo', ok: true })]);
    } finally {
      await dir.remove();
    }
  }, 90_000);
});
