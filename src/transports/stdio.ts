/**
 * A Channel to an MCP server that runs as a child process and speaks NDJSON on stdin/stdout.
 *
 * The child is spawned detached, so it leads its own process group: stopping signals the whole
 * group, which takes wrapper grandchildren (the node process behind `npx`, a python behind a shell
 * script) down with it. stderr is never an error, only a ring buffer for error messages.
 *
 * The child gets a short allowlist of the daemon's environment (INHERITED_ENV_VARS, as the official
 * SDK's stdio transport does) plus its configured `env`, unless `inheritEnv` asks for everything: the
 * daemon's shell may hold credentials no upstream should see. Each process is reported on the
 * `mcpx:upstream-process` diagnostics channel when it starts and when it is gone, so the daemon can
 * record what it started and sweep what a crash of its own left behind (src/daemon/orphans.ts).
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { channel as diagnosticsChannel } from 'node:diagnostics_channel';
import { existsSync } from 'node:fs';
import { readdir, readFile } from 'node:fs/promises';
import { StringDecoder } from 'node:string_decoder';
import { MessageTooLargeError, SpawnError, TransportClosedError, UpstreamBacklogError } from '../errors.js';
import { ChannelBase } from './channel-base.js';
import { parseMessage, silentLogger, truncate, type TransportLogger } from './jsonrpc.js';
import { encode, NdjsonDecoder } from './ndjson.js';
import { procStat } from './proc-stat.js';
import { cutRedacted, redactSecrets, secretEnvValues } from './secret-text.js';
import type { Channel, CloseInfo, JsonRpcMessage } from './types.js';
import { SPAWN_TAG, SPAWN_TAG_VAR, UPSTREAM_PROCESS_CHANNEL, type UpstreamProcessEvent } from './spawn-tag.js';

export interface StdioChannelOptions {
  command: string;
  args?: string[];
  /** The server's configured variables, over the inherited ones. */
  env?: Record<string, string>;
  /** Inherit the daemon's whole environment; default false: only INHERITED_ENV_VARS. */
  inheritEnv?: boolean;
  cwd?: string;
  /** Largest accepted stdout line. Default 64 MiB; a larger one closes the channel. */
  maxMessageBytes?: number;
  /** How long each stop step (stdin EOF, SIGTERM) waits before escalating. Default 2000 ms. */
  stopGraceMs?: number;
  logger?: TransportLogger;
}

/** What a child inherits by default: the official SDK's list (getDefaultEnvironment), per platform. */
export const INHERITED_ENV_VARS: readonly string[] =
  process.platform === 'win32'
    ? [
        'APPDATA',
        'HOMEDRIVE',
        'HOMEPATH',
        'LOCALAPPDATA',
        'PATH',
        'PROCESSOR_ARCHITECTURE',
        'SYSTEMDRIVE',
        'SYSTEMROOT',
        'TEMP',
        'USERNAME',
        'USERPROFILE',
        'PROGRAMFILES',
      ]
    : ['HOME', 'LOGNAME', 'PATH', 'SHELL', 'TERM', 'USER'];

/** The inherited part of a child's environment: all of `source`, or the allowlist (shell functions left out, as the SDK does). */
export function inheritedEnvironment(source: NodeJS.ProcessEnv, all = false): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [k, v] of all ? Object.entries(source) : INHERITED_ENV_VARS.map((k) => [k, source[k]] as const)) {
    if (v === undefined || v.startsWith('()')) continue;
    out[k] = v;
  }
  return out;
}

const processEvents = diagnosticsChannel(UPSTREAM_PROCESS_CHANNEL);

export const DEFAULT_MAX_MESSAGE_BYTES = 64 * 1024 * 1024;
export const DEFAULT_STOP_GRACE_MS = 2000;
const STDERR_TAIL_LINES = 20;
const STDERR_LINE_CHARS = 500;
/** After the process exits, how long to wait for the rest of stdout before reporting the close. */
const STDOUT_DRAIN_MS = 250;
/** After SIGKILL, how long to wait for the exit event before giving up (it only fails in D-state). */
const KILL_WAIT_MS = 5000;
const POLL_MS = 20;
/** Messages sent in one turn of the event loop go to stdin in one write, up to this many characters. */
const WRITE_BATCH_CHARS = 64 * 1024;

export class StdioChannel<C = unknown> extends ChannelBase<C> implements Channel<C> {
  private readonly command: string;
  private readonly args: string[];
  private readonly env: Record<string, string> | undefined;
  private readonly inheritEnv: boolean;
  /** Configured secret values (env under secret-looking names): redacted from stderr before it is cut. */
  private readonly secrets: string[];
  /** How much of a stderr line is kept before redaction: the shown part plus the longest secret, so a secret crossing the cut is seen whole. */
  private readonly stderrKeep: number;
  private readonly cwd: string | undefined;
  /** The PATH the child was spawned with: what a "command not found" searched. */
  private spawnPath: string | undefined;
  private readonly maxMessageBytes: number;
  private readonly stopGraceMs: number;
  protected readonly log: TransportLogger;

  private child: ChildProcess | undefined;
  private startPromise: Promise<void> | undefined;
  private stopPromise: Promise<void> | undefined;
  private spawned = false;
  private spawnFailed = false;
  private exited = false;
  private exitCode: number | null = null;
  private exitSignal: NodeJS.Signals | null = null;
  private stdoutDone = false;
  /** send() refuses; set by close(), by a fault, and when onClose fires. */
  private isClosed = false;
  private settleTimer: NodeJS.Timeout | undefined;
  /** Lines sent this turn, not yet written (one write per turn: a pipe write is a system call). */
  private pendingOut = '';
  private flushScheduled = false;
  private readonly flushSoon = (): void => {
    this.flushScheduled = false;
    this.flushOut();
  };

  private readonly exitSeen: Promise<void>;
  private markExitSeen!: () => void;
  private readonly stdoutSeen: Promise<void>;
  private markStdoutSeen!: () => void;

  private readonly stderrLines: string[] = [];
  private readonly stderrDecoder = new StringDecoder('utf8');
  private stderrPartial = '';
  private stderrTruncated = false;

  constructor(options: StdioChannelOptions) {
    super();
    this.command = options.command;
    this.args = options.args ?? [];
    this.env = options.env;
    this.inheritEnv = options.inheritEnv ?? false;
    this.secrets = secretEnvValues(options.env);
    this.stderrKeep = STDERR_LINE_CHARS + (this.secrets[0]?.length ?? 0);
    this.cwd = options.cwd;
    this.maxMessageBytes = options.maxMessageBytes ?? DEFAULT_MAX_MESSAGE_BYTES;
    this.stopGraceMs = options.stopGraceMs ?? DEFAULT_STOP_GRACE_MS;
    this.log = options.logger ?? silentLogger;
    this.exitSeen = new Promise((resolve) => (this.markExitSeen = resolve));
    this.stdoutSeen = new Promise((resolve) => (this.markStdoutSeen = resolve));
  }

  get pid(): number | undefined {
    return this.child?.pid;
  }

  get closed(): boolean {
    return this.isClosed;
  }

  /** The last lines the child wrote to stderr (at most 20, each at most 500 characters and a cut mark), configured secrets redacted. */
  get stderrTail(): string[] {
    return [...this.stderrLines];
  }

  start(): Promise<void> {
    this.startPromise ??= this.spawnChild();
    return this.startPromise;
  }

  send(message: JsonRpcMessage, _context?: C): void {
    const stdin = this.child?.stdin;
    if (this.isClosed || this.exited || !this.spawned || !stdin || stdin.destroyed || !stdin.writable) {
      const state = !this.spawned
        ? 'the stdio channel is not started'
        : this.isClosed || this.exited
          ? 'the stdio channel is closed'
          : 'the process closed its stdin';
      throw new TransportClosedError(`cannot send to ${JSON.stringify(this.command)}: ${state}`, { command: this.command });
    }
    this.pendingOut += encode(message);
    if (this.pendingOut.length >= WRITE_BATCH_CHARS) this.flushOut();
    else if (!this.flushScheduled) {
      this.flushScheduled = true;
      setImmediate(this.flushSoon);
    }
  }

  /** Writes what send() collected (in order, as one write). */
  private flushOut(): void {
    const out = this.pendingOut;
    if (out.length === 0) return;
    this.pendingOut = '';
    const stdin = this.child?.stdin;
    if (!stdin || stdin.destroyed || !stdin.writable) {
      this.log.debug({ pid: this.pid }, 'upstream stdin closed before a write');
      return;
    }
    stdin.write(out, this.onWritten);
    // What the process has not read stays in memory: a server that sends requests but does not read the
    // answers would grow it without end. Past one largest message, the session fails, not the daemon.
    if (stdin.writableLength > this.maxMessageBytes) this.fail(new UpstreamBacklogError(stdin.writableLength, this.maxMessageBytes));
  }

  private readonly onWritten = (err: Error | null | undefined): void => {
    if (err) this.log.debug({ err, pid: this.pid }, 'write to upstream stdin failed');
  };

  close(): Promise<void> {
    this.isClosed = true;
    // The process already went away on its own: report that, not a stop.
    if (this.exited && !this.closeFired && !this.spawnFailed) this.fireClose(this.exitInfo('exit'));
    this.stopPromise ??= this.terminate();
    return this.stopPromise.then(() => this.fireClose(this.exitInfo('stopped')));
  }

  // ---------------------------------------------------------------------------------- spawning

  private spawnChild(): Promise<void> {
    if (this.isClosed) {
      return Promise.reject(new TransportClosedError('the stdio channel was closed before it started', { command: this.command }));
    }
    return new Promise<void>((resolve, reject) => {
      let child: ChildProcess;
      const env: NodeJS.ProcessEnv = { ...inheritedEnvironment(process.env, this.inheritEnv), ...this.env, [SPAWN_TAG_VAR]: SPAWN_TAG };
      this.spawnPath = env['PATH'];
      try {
        child = spawn(this.command, this.args, {
          stdio: ['pipe', 'pipe', 'pipe'],
          env,
          cwd: this.cwd,
          detached: true,
          windowsHide: true,
        });
      } catch (err) {
        this.spawnFailure(err, reject);
        return;
      }
      this.child = child;

      child.once('spawn', () => {
        this.spawned = true;
        this.report(child);
        this.log.info({ command: this.command, pid: child.pid }, 'upstream process started');
        this.log.debug({ command: this.command, args: this.args, cwd: this.cwd, pid: child.pid }, 'spawn details');
        resolve();
      });
      child.on('error', (err) => {
        if (!this.spawned && !this.spawnFailed) this.spawnFailure(err, reject);
        else this.log.warn({ err, pid: child.pid }, 'upstream process error');
      });
      child.on('exit', (code, signal) => this.handleExit(code, signal));

      // Without an 'error' listener an EPIPE on stdin would crash the whole daemon.
      child.stdin?.on('error', (err) => this.log.debug({ err, pid: child.pid }, 'upstream stdin error'));

      const decoder = new NdjsonDecoder({
        maxLineBytes: this.maxMessageBytes,
        onLine: (line) => this.handleLine(line),
        onOverflow: () => this.fail(new MessageTooLargeError(this.maxMessageBytes)),
      });
      const stdout = child.stdout;
      if (stdout) {
        stdout.on('data', (chunk: Buffer) => decoder.push(chunk));
        stdout.on('end', () => decoder.end());
        stdout.on('error', (err) => this.log.debug({ err, pid: child.pid }, 'upstream stdout error'));
        stdout.on('close', () => this.handleStdoutClosed());
      } else {
        this.handleStdoutClosed();
      }

      const stderr = child.stderr;
      stderr?.on('data', (chunk: Buffer) => this.handleStderrText(this.stderrDecoder.write(chunk)));
      stderr?.on('end', () => {
        this.handleStderrText(this.stderrDecoder.end());
        if (this.stderrPartial.length > 0) this.flushStderrLine();
      });
      stderr?.on('error', (err) => this.log.debug({ err, pid: child.pid }, 'upstream stderr error'));
    });
  }

  /** Announces the new process (pid, group, start time) to whoever records them. */
  private report(child: ChildProcess): void {
    const pid = child.pid;
    if (pid === undefined || !processEvents.hasSubscribers) return;
    const stat = procStat(pid);
    // Detached: the child leads its own group (setsid), so its group id is its pid.
    const event: UpstreamProcessEvent = { type: 'spawn', pid, pgid: stat?.pgrp ?? pid, start: stat?.start ?? null, tag: SPAWN_TAG, command: this.command };
    processEvents.publish(event);
  }

  private spawnFailure(err: unknown, reject: (e: Error) => void): void {
    this.spawnFailed = true;
    this.exited = true;
    this.isClosed = true;
    this.markExitSeen();
    let cause = err;
    let plain: string | undefined;
    const enoent = (err as NodeJS.ErrnoException | undefined)?.code === 'ENOENT';
    // Node reports a missing cwd as "spawn <command> ENOENT", which blames the wrong thing.
    if (this.cwd !== undefined && enoent && !existsSync(this.cwd)) {
      cause = new Error(`working directory ${JSON.stringify(this.cwd)} does not exist`, { cause: err });
    } else if (enoent) plain = commandNotFound(this.command, this.spawnPath, this.cwd);
    const error = new SpawnError(this.command, cause, plain);
    this.log.warn({ err: error, command: this.command }, 'could not start upstream process');
    reject(error);
    this.fireClose({ reason: 'spawn-failed', error, stderrTail: this.stderrTail });
  }

  // --------------------------------------------------------------------------------- streams

  private handleLine(line: string): void {
    if (this.closeFired) return;
    const parsed = parseMessage(line);
    if (!parsed.ok) {
      this.log.warn(
        { pid: this.pid, reason: parsed.reason, line: truncate(redactSecrets(line, this.secrets), 200) },
        'ignoring a stdout line that is not a JSON-RPC message',
      );
      return;
    }
    this.deliverMessage(parsed.message, undefined);
  }

  private handleStderrText(text: string): void {
    let start = 0;
    for (;;) {
      const nl = text.indexOf('\n', start);
      if (nl === -1) {
        this.appendStderr(text.slice(start));
        return;
      }
      this.appendStderr(text.slice(start, nl));
      this.flushStderrLine();
      start = nl + 1;
    }
  }

  private appendStderr(piece: string): void {
    if (this.stderrTruncated || piece.length === 0) return;
    this.stderrPartial += piece;
    if (this.stderrPartial.length > this.stderrKeep) {
      this.stderrPartial = this.stderrPartial.slice(0, this.stderrKeep);
      this.stderrTruncated = true;
    }
  }

  private flushStderrLine(): void {
    let raw = this.stderrPartial;
    if (raw.endsWith('\r')) raw = raw.slice(0, -1);
    // Redact, then cut: a secret cut in half no longer matches any scrubber.
    const line = cutRedacted(raw, STDERR_LINE_CHARS, this.secrets, this.stderrTruncated);
    this.stderrPartial = '';
    this.stderrTruncated = false;
    if (line.trim() === '') return;
    this.stderrLines.push(line);
    if (this.stderrLines.length > STDERR_TAIL_LINES) this.stderrLines.shift();
    this.log.debug({ pid: this.pid, stderr: line }, 'upstream stderr');
  }

  // ---------------------------------------------------------------------------- lifecycle

  private handleExit(code: number | null, signal: NodeJS.Signals | null): void {
    this.exited = true;
    this.exitCode = code;
    this.exitSignal = signal;
    this.markExitSeen();
    this.log.info({ pid: this.pid, code, signal }, 'upstream process exited');
    if (this.closeFired || this.stopPromise) return; // a stop in progress reports for itself
    clearTimeout(this.settleTimer);
    if (this.stdoutDone) {
      this.fireClose(this.exitInfo('exit'));
    } else {
      // Let the last lines on stdout arrive first; a grandchild holding stdout must not stall us.
      this.settleTimer = setTimeout(() => this.fireClose(this.exitInfo('exit')), STDOUT_DRAIN_MS);
    }
  }

  private handleStdoutClosed(): void {
    this.stdoutDone = true;
    this.markStdoutSeen();
    if (this.closeFired || this.stopPromise) return;
    clearTimeout(this.settleTimer);
    if (this.exited) {
      this.fireClose(this.exitInfo('exit'));
    } else {
      // The child closed stdout but lives on: it cannot talk to us any more. Give it the grace
      // period to exit, then report the close and stop it.
      this.settleTimer = setTimeout(() => {
        this.fireClose(this.exitInfo('exit'));
        this.stopInBackground();
      }, this.stopGraceMs);
    }
  }

  /** A fault on our side (an oversized message): report it now, stop the child in the background. */
  private fail(error: Error): void {
    if (this.closeFired) return;
    this.isClosed = true;
    this.log.error({ err: error, pid: this.pid }, 'closing the stdio channel');
    this.child?.stdout?.destroy();
    this.fireClose({ ...this.exitInfo('error'), error });
    this.stopInBackground();
  }

  private stopInBackground(): void {
    this.stopPromise ??= this.terminate().catch((err: unknown) => this.log.error({ err }, 'stopping the upstream process failed'));
  }

  private exitInfo(reason: CloseInfo['reason']): CloseInfo {
    const info: CloseInfo = { reason, stderrTail: this.stderrTail };
    if (this.exited && !this.spawnFailed) {
      info.code = this.exitCode;
      info.signal = this.exitSignal;
    }
    return info;
  }

  private fireClose(info: CloseInfo): void {
    if (this.closeFired) return;
    this.isClosed = true;
    clearTimeout(this.settleTimer);
    this.reportClose(info);
  }

  /** stdin EOF → grace → SIGTERM to the group → grace → SIGKILL to the group; then sweep stragglers. */
  private async terminate(): Promise<void> {
    if (this.startPromise) await this.startPromise.catch(() => undefined);
    const child = this.child;
    const pid = child?.pid;
    if (!child || this.spawnFailed || pid === undefined) return;

    if (!this.exited) {
      try {
        this.flushOut(); // what was sent before close() still reaches the process
        child.stdin?.end();
      } catch {
        // already destroyed
      }
      if (!(await this.waitExit(this.stopGraceMs))) {
        this.log.info({ pid }, 'upstream ignored stdin EOF; sending SIGTERM');
        this.signalGroup(pid, 'SIGTERM');
        if (!(await this.waitExit(this.stopGraceMs))) {
          this.log.warn({ pid }, 'upstream ignored SIGTERM; sending SIGKILL');
          this.signalGroup(pid, 'SIGKILL');
          if (!(await this.waitExit(KILL_WAIT_MS))) this.log.error({ pid }, 'upstream did not exit after SIGKILL');
        }
      }
    }

    await this.sweepGroup(pid);
    if (processEvents.hasSubscribers) processEvents.publish({ type: 'gone', pid } satisfies UpstreamProcessEvent);
    if (!this.stdoutDone) await withTimeout(this.stdoutSeen, STDOUT_DRAIN_MS);
    child.stdin?.destroy();
    child.stdout?.destroy();
    child.stderr?.destroy();
  }

  /** The leader is gone; anything else left in its process group gets SIGTERM, then SIGKILL. */
  private async sweepGroup(pgid: number): Promise<void> {
    if (process.platform === 'win32' || !(await groupHasLiveMembers(pgid))) return;
    this.log.info({ pgid }, 'processes left in the upstream process group; sending SIGTERM');
    this.signalGroup(pgid, 'SIGTERM');
    if (await pollUntilGroupGone(pgid, this.stopGraceMs)) return;
    this.log.warn({ pgid }, 'processes in the upstream process group ignored SIGTERM; sending SIGKILL');
    this.signalGroup(pgid, 'SIGKILL');
    if (!(await pollUntilGroupGone(pgid, 1000))) this.log.error({ pgid }, 'processes in the upstream process group survived SIGKILL');
  }

  private signalGroup(pid: number, signal: NodeJS.Signals): void {
    try {
      process.kill(-pid, signal);
      return;
    } catch (err) {
      this.log.debug({ err, pid, signal }, 'could not signal the process group');
    }
    // Only fall back to the bare pid while the leader is alive (after it is reaped the pid may be reused).
    if (!this.exited) {
      try {
        this.child?.kill(signal);
      } catch (err) {
        this.log.debug({ err, pid, signal }, 'could not signal the process');
      }
    }
  }

  private waitExit(ms: number): Promise<boolean> {
    return this.exited ? Promise.resolve(true) : withTimeout(this.exitSeen, ms);
  }
}

/** Resolves true when `p` settles within `ms`, false otherwise; the timer never outlives the race. */
function withTimeout(p: Promise<void>, ms: number): Promise<boolean> {
  return new Promise((resolve) => {
    const timer = setTimeout(() => resolve(false), ms);
    void p.then(() => {
      clearTimeout(timer);
      resolve(true);
    });
  });
}

/**
 * Whether a process group still has members that are not zombies. A zombie answers kill(0) but is
 * already dead; where PID 1 does not reap orphans (containers without an init) zombies linger, so on
 * Linux /proc is consulted to tell them apart.
 */
async function groupHasLiveMembers(pgid: number): Promise<boolean> {
  try {
    process.kill(-pgid, 0);
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
  if (process.platform !== 'linux') return true;
  let entries: string[];
  try {
    entries = await readdir('/proc');
  } catch {
    return true;
  }
  for (const name of entries) {
    if (!/^\d+$/.test(name)) continue;
    let stat: string;
    try {
      stat = await readFile(`/proc/${name}/stat`, 'utf8');
    } catch {
      continue; // exited meanwhile
    }
    // "pid (comm) state ppid pgrp ..." — comm may contain spaces and parentheses.
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    if (Number(fields[2]) === pgid && fields[0] !== 'Z' && fields[0] !== 'X') return true;
  }
  return false;
}

async function pollUntilGroupGone(pgid: number, ms: number): Promise<boolean> {
  const deadline = Date.now() + ms;
  for (;;) {
    if (!(await groupHasLiveMembers(pgid))) return true;
    if (Date.now() >= deadline) return false;
    await new Promise((resolve) => setTimeout(resolve, POLL_MS));
  }
}

/** "command not found: X", with where it was looked for: the PATH searched, or the path itself. */
function commandNotFound(command: string, path: string | undefined, cwd: string | undefined): string {
  if (command.includes('/') || command.includes('\\'))
    return `command not found: ${command} (no such file${cwd === undefined ? '' : ` from ${cwd}`}, or its #! interpreter is missing)`;
  return `command not found: ${command} (PATH searched: ${path === undefined || path === '' ? '(empty)' : path})`;
}
