/**
 * The daemon's event stream (`GET /v1/events`): every PoolEvent, plus what the daemon itself does —
 * calls finishing, config reloads (good and bad), settings changing.
 */
import type { PoolEvent } from '../pool/types.js';

export interface CallFinishedEvent {
  type: 'call.finished';
  server: string;
  tool: string;
  ok: boolean;
  ms: number;
  code?: string;
  lane?: 'own' | 'legacy';
  callerProtocol?: string;
}

export interface ConfigReloadedEvent {
  type: 'config.reloaded';
  file: string | null;
  demo: boolean;
  added: string[];
  removed: string[];
  replaced: string[];
  kept: string[];
  failed: Array<{ server: string; message: string }>;
  /** Settings whose new value needs a daemon restart (paths.state, daemon.*). */
  restartNeeded: string[];
}

/** A config a caller named was loaded (its servers are pooled; they start on first use). */
export interface ConfigLoadedEvent {
  type: 'config.loaded';
  file: string;
  servers: string[];
}

/** A config no caller used within `daemon.configIdleTimeout` was unloaded (its servers no other config uses stopped). */
export interface ConfigUnloadedEvent {
  type: 'config.unloaded';
  file: string;
}

export interface ConfigErrorEvent {
  type: 'config.error';
  file: string | null;
  message: string;
  problems: Array<{ message: string; key?: string; server?: string; line?: number; column?: number }>;
}

export interface SettingChangedEvent {
  type: 'setting.changed';
  path: string;
  value: unknown;
  source: string;
}

/** What a server offers changed (or the set of servers did, when `server` is absent): MCP fronts tell their callers. */
export interface CatalogChangedEvent {
  type: 'catalog.changed';
  server?: string;
  lists: Array<'tools' | 'prompts' | 'resources'>;
}

/**
 * A tool's definition differs from the one first seen (a live listing found it): what changed, since
 * when, and whether it is held (pinTools) until `mcpx tools --accept`. Names only, never the texts.
 */
export interface ToolChangedEvent {
  type: 'tool.changed';
  server: string;
  tool: string;
  exposed: string;
  lane: 'own' | 'legacy';
  changed: Array<'description' | 'schema' | 'annotations'>;
  since: string;
  held: boolean;
}

/** A server's authorization changed (needed, authorized, refreshed, failed); never carries a token. */
export interface ServerAuthEvent {
  type: 'server.auth';
  server: string;
  state: 'none' | 'needed' | 'authorized' | 'failed';
  issuer?: string;
  scopes?: string[];
  expiresAt?: string;
  refreshable?: boolean;
  error?: string;
  unsaved?: string;
}

export type DaemonEvent =
  | PoolEvent
  | CallFinishedEvent
  | ConfigReloadedEvent
  | ConfigLoadedEvent
  | ConfigUnloadedEvent
  | ConfigErrorEvent
  | SettingChangedEvent
  | CatalogChangedEvent
  | ServerAuthEvent
  | ToolChangedEvent;

export const EVENT_TYPES = [
  'server.start',
  'server.stop',
  'server.era.stale',
  'session.state',
  'server.list_changed',
  'call.finished',
  'config.reloaded',
  'config.loaded',
  'config.unloaded',
  'config.error',
  'setting.changed',
  'catalog.changed',
  'server.auth',
  'tool.changed',
] as const satisfies ReadonlyArray<DaemonEvent['type']>;

/**
 * One hub for every listener (SSE clients, the log); a throwing listener never breaks the sender.
 * Every event gets the next sequence number (the SSE `id:`) whether or not anyone listens; publishing
 * allocates nothing (no copy of the listener list per event, as `EventEmitter.listeners()` made).
 */
export class EventHub {
  /** Copied on subscribe and unsubscribe (rare), never on publish (every call): a publish iterates the list as it was. */
  private subscribers: ReadonlyArray<(event: DaemonEvent, seq: number) => void> = [];
  private seq = 0;

  publish(event: DaemonEvent): void {
    const seq = ++this.seq;
    for (const l of this.subscribers) {
      try {
        l(event, seq);
      } catch {
        // a listener's problem, not the sender's
      }
    }
  }

  /** Whether anyone listens (a sender may skip building an event nobody reads; it must still publish for the sequence). */
  get listening(): boolean {
    return this.subscribers.length > 0;
  }

  subscribe(listener: (event: DaemonEvent, seq: number) => void): () => void {
    // The same function twice is two subscriptions, as with an EventEmitter.
    const entry = (event: DaemonEvent, seq: number) => listener(event, seq);
    this.subscribers = [...this.subscribers, entry];
    return () => {
      this.subscribers = this.subscribers.filter((l) => l !== entry);
    };
  }

  get listeners(): number {
    return this.subscribers.length;
  }
}
