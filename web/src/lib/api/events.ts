// The WebSocket side of the client: one connection to /api/v1/events that
// reconnects with capped, jittered exponential backoff and tells its owner
// when a reconnect happened so it can refetch whatever it missed.
import type { EventMessage } from './types';

export type ConnectionState = 'connecting' | 'open' | 'closed';

export interface EventsOptions {
  url: string;
  onMessage: (msg: EventMessage) => void;
  onState: (state: ConnectionState) => void;
  /** A connection opened after an earlier one was lost: refetch, events may have been missed. */
  onReconnect: () => void;
  /** Subprotocols to offer on each attempt (the bearer token travels in one, see auth.ts). */
  protocols?: () => string[];
  /**
   * The server closed with 1008 (policy violation) and this reason; return
   * true to stop for good (the credentials are no longer valid) instead of
   * reconnecting (a client that was too slow is closed with 1008 too).
   */
  onPolicyClose?: (reason: string) => boolean;
  WebSocket?: typeof WebSocket;
  minDelayMs?: number;
  maxDelayMs?: number;
  random?: () => number;
}

export interface EventsConnection {
  /** Reconnect now instead of waiting out the backoff (e.g. the browser came back online). */
  kick(): void;
  close(): void;
}

const POLICY_VIOLATION = 1008;

const TYPES = new Set(['report.stored', 'report.deleted', 'scan.status', 'findings.changed']);

/** Delay before reconnect attempt `attempt` (0-based): exponential, capped, with 50% jitter. */
export function backoffDelay(attempt: number, minMs: number, maxMs: number, random: () => number): number {
  const ceiling = Math.min(maxMs, minMs * 2 ** Math.min(attempt, 30));
  return Math.round(ceiling / 2 + (random() * ceiling) / 2);
}

/** Decodes one text frame; anything that is not a known event is dropped (null). */
export function parseEvent(raw: unknown): EventMessage | null {
  if (typeof raw !== 'string') return null;
  let msg: unknown;
  try {
    msg = JSON.parse(raw);
  } catch {
    return null;
  }
  if (typeof msg !== 'object' || msg === null) return null;
  const m = msg as Record<string, unknown>;
  if (typeof m.type !== 'string' || !TYPES.has(m.type)) return null;
  const data = m.data as Record<string, unknown> | undefined;
  if (typeof data !== 'object' || data === null || typeof data.digest !== 'string') return null;
  return msg as EventMessage;
}

export function connectEvents(opts: EventsOptions): EventsConnection {
  const WS = opts.WebSocket ?? globalThis.WebSocket;
  const minMs = opts.minDelayMs ?? 500;
  const maxMs = opts.maxDelayMs ?? 15_000;
  const random = opts.random ?? Math.random;

  let socket: WebSocket | null = null;
  let timer: ReturnType<typeof setTimeout> | null = null;
  let attempt = 0;
  let everOpened = false;
  let closed = false;

  function open(): void {
    if (closed) return;
    timer = null;
    opts.onState('connecting');
    let ws: WebSocket;
    try {
      const protocols = opts.protocols?.() ?? [];
      ws = protocols.length ? new WS(opts.url, protocols) : new WS(opts.url);
    } catch {
      schedule();
      return;
    }
    socket = ws;
    ws.onopen = () => {
      if (socket !== ws) return;
      attempt = 0;
      opts.onState('open');
      if (everOpened) opts.onReconnect();
      everOpened = true;
    };
    ws.onmessage = (ev: MessageEvent) => {
      if (socket !== ws) return;
      const msg = parseEvent(ev.data);
      if (msg) opts.onMessage(msg);
    };
    ws.onclose = (ev: CloseEvent) => {
      if (socket !== ws) return;
      socket = null;
      if (closed) return;
      if (ev.code === POLICY_VIOLATION && opts.onPolicyClose?.(ev.reason ?? '')) closed = true;
      opts.onState('closed');
      schedule();
    };
    // onerror is always followed by onclose; nothing to do here.
    ws.onerror = () => {};
  }

  function schedule(): void {
    if (closed || timer !== null) return;
    timer = setTimeout(open, backoffDelay(attempt++, minMs, maxMs, random));
  }

  open();

  return {
    kick() {
      if (closed || socket !== null) return;
      if (timer !== null) clearTimeout(timer);
      attempt = 0;
      open();
    },
    close() {
      closed = true;
      if (timer !== null) clearTimeout(timer);
      timer = null;
      const ws = socket;
      socket = null;
      ws?.close();
    },
  };
}
