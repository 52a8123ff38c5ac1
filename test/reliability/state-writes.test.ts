/**
 * State files written and read by the built daemon (issue 37, 19): a full disk leaves no empty temp file in
 * the state folder, and a 300 MB state file is not read whole. Tests run as root on Linux: a tiny tmpfs
 * is the full disk.
 */
import { execFileSync, spawnSync } from 'node:child_process';
import { mkdirSync, readdirSync, rmSync, truncateSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { cleanEnv, ForegroundDaemon, killAll, until } from '../cli/helpers.js';
import { tempDir } from '../support/real.js';

const isRoot = process.getuid?.() === 0;
const linux = process.platform === 'linux';
const mounts: string[] = [];

afterAll(async () => {
  await killAll();
  for (const m of mounts) spawnSync('umount', ['-l', m]);
});

describe.runIf(isRoot && linux)('state writes', () => {
  it('a full disk under the state folder: however little room is left, no empty *.tmp file stays behind', async () => {
    const dir = await tempDir('mcpx-full-');
    const mnt = join(dir.path, 'mnt');
    mkdirSync(mnt);
    try {
      execFileSync('mount', ['-t', 'tmpfs', '-o', 'size=256k', 'tmpfs', mnt]);
    } catch {
      console.warn('skipped: cannot mount a tmpfs here');
      return;
    }
    mounts.push(mnt);
    const config = join(dir.path, 'config.json');
    writeFileSync(config, '{"mcpServers":{}}');
    const failures: string[] = [];
    try {
      // 0 to 3 pages free: the lock, then daemon.json, then the rest find the disk full in turn.
      for (let free = 0; free <= 3; free++) {
        for (const f of readdirSync(mnt)) rmSync(join(mnt, f), { recursive: true, force: true });
        const state = join(mnt, 'state');
        mkdirSync(state, { mode: 0o700 });
        for (let p = 0; p < 3; p++) writeFileSync(join(mnt, `page${p}`), Buffer.alloc(4096));
        spawnSync('dd', ['if=/dev/zero', `of=${join(mnt, 'filler')}`, 'bs=4k'], { stdio: 'ignore' });
        for (let p = 0; p < free; p++) rmSync(join(mnt, `page${p}`));
        const env = cleanEnv(dir.path, { MCPX_STATE_DIR: state });
        const d = new ForegroundDaemon(['--config', config], { env });
        let exited = false;
        void d.exited.then(() => (exited = true));
        // it either gives up (the disk is full) or starts and writes daemon.json; then it is stopped
        await until(() => exited || readdirSync(state).includes('daemon.json'), 30_000, 'the daemon to start or give up');
        await d.stop();
        if (d.stderr.includes('ENOSPC')) failures.push(`${free} page(s) free: ${d.stderr.split('\n').find((l) => l.includes('ENOSPC'))}`);
        expect(readdirSync(state).filter((f) => f.endsWith('.tmp'))).toEqual([]);
      }
      console.log(`full disk:\n${failures.join('\n')}`);
      expect(failures.some((f) => f.includes('write'))).toBe(true);
    } finally {
      spawnSync('umount', ['-l', mnt]);
      mounts.splice(mounts.indexOf(mnt), 1);
      await dir.remove();
    }
  }, 300_000);

  it('a 300 MB era cache: not read whole; the daemon starts and says it is too large', async () => {
    const dir = await tempDir('mcpx-huge-');
    try {
      const state = join(dir.path, 'state');
      mkdirSync(state, { mode: 0o700 });
      const eras = join(state, 'upstream-eras.json');
      writeFileSync(eras, '');
      truncateSync(eras, 300 * 1024 * 1024); // sparse: no disk used
      const config = join(dir.path, 'config.json');
      writeFileSync(config, '{"mcpServers":{}}');
      const env = cleanEnv(dir.path, { MCPX_STATE_DIR: state });
      const d = await ForegroundDaemon.start(join(state, 'daemon.sock'), ['--config', config], { env, timeoutMs: 60_000 });
      try {
        await until(() => `${d.stdout}${d.stderr}`.includes('too large'), 30_000, 'the era cache warning');
        expect(`${d.stdout}${d.stderr}`).toContain(`it is too large (${300 * 1024 * 1024} bytes`);
      } finally {
        await d.stop();
      }
    } finally {
      await dir.remove();
    }
  }, 120_000);
});
