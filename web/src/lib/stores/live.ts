// The one live-event store: the rows the images view shows, the scan status of
// each digest, the WebSocket's state, which rows just changed and the recent
// findings.changed frames. Views fill it from the REST client (resync/append)
// and the event stream keeps it current (add/update/remove); components only
// read it.
import { writable, type Readable } from 'svelte/store';
import type { ConnectionState } from '../api/events';
import type { EventMessage, FindingsChanged, ReportList, ReportSummary, ScanStatus } from '../api/types';

/** A findings.changed frame as it arrived, numbered in arrival order. */
export interface ChangeFrame {
  seq: number;
  data: FindingsChanged;
}

export interface LiveState {
  rows: ReportSummary[];
  total: number;
  nextCursor?: string;
  /** True once the first page arrived (distinguishes "loading" from "empty"). */
  loaded: boolean;
  /** Digests of rows added or changed within the last highlight period. */
  highlighted: ReadonlySet<string>;
  scans: ReadonlyMap<string, ScanStatus>;
  connection: ConnectionState;
  /** Bumped when the stream reconnects: events may have been missed, refetch. */
  reconnects: number;
  /** Bumped by every report event, for views that refetch aggregates (overview). */
  changes: number;
  /** The last event applied, for views that watch one digest (image detail). */
  lastEvent?: EventMessage;
  /**
   * The latest findings.changed frames, oldest first, at most changeLogSize.
   * Views remember the last seq they merged and take the frames after it, so
   * no frame is missed when several arrive between two renders.
   */
  changeLog: ChangeFrame[];
  /** The seq of the newest frame in changeLog (0 before the first). */
  changeSeq: number;
}

export type ReportPatch = Pick<ReportSummary, 'digest'> & Partial<ReportSummary>;

export interface LiveStore extends Readable<LiveState> {
  /** Replaces the rows with a fresh first page; rows new or changed since the last one are highlighted. */
  resync(list: ReportList): void;
  /** Forgets the rows (the filters changed): the next resync highlights nothing. */
  reset(): void;
  append(list: ReportList): void;
  add(row: ReportSummary): void;
  update(patch: ReportPatch): boolean;
  remove(digest: string): boolean;
  setScans(items: ScanStatus[]): void;
  upsertScan(scan: ScanStatus): void;
  setConnection(state: ConnectionState): void;
  markReconnect(): void;
  /** Applies one stream event; true when the current list must be refetched to place it. */
  apply(msg: EventMessage): boolean;
  destroy(): void;
}

export interface LiveStoreOptions {
  highlightMs?: number;
  changeLogSize?: number;
}

/** The frames of the log that arrived after seq, oldest first. */
export function framesAfter(log: readonly ChangeFrame[], seq: number): ChangeFrame[] {
  return log.filter((f) => f.seq > seq);
}

function initial(): LiveState {
  return {
    rows: [],
    total: 0,
    loaded: false,
    highlighted: new Set(),
    scans: new Map(),
    connection: 'connecting',
    reconnects: 0,
    changes: 0,
    changeLog: [],
    changeSeq: 0,
  };
}

function changed(a: ReportSummary, b: ReportSummary): boolean {
  if (a.scannedAt !== b.scannedAt || a.findings !== b.findings || a.fixable !== b.fixable) return true;
  return JSON.stringify(a.counts) !== JSON.stringify(b.counts);
}

export function createLiveStore(options: LiveStoreOptions = {}): LiveStore {
  const highlightMs = options.highlightMs ?? 2500;
  const changeLogSize = options.changeLogSize ?? 200;
  const store = writable<LiveState>(initial());
  const timers = new Map<string, ReturnType<typeof setTimeout>>();

  function mark(state: LiveState, digests: string[]): LiveState {
    if (digests.length === 0) return state;
    const next = new Set(state.highlighted);
    for (const d of digests) {
      next.add(d);
      const old = timers.get(d);
      if (old !== undefined) clearTimeout(old);
      timers.set(
        d,
        setTimeout(() => {
          timers.delete(d);
          store.update((s) => {
            const h = new Set(s.highlighted);
            h.delete(d);
            return { ...s, highlighted: h };
          });
        }, highlightMs),
      );
    }
    return { ...state, highlighted: next };
  }

  function update(patch: ReportPatch): boolean {
    let found = false;
    store.update((s) => {
      const i = s.rows.findIndex((r) => r.digest === patch.digest);
      if (i < 0) return s;
      found = true;
      const rows = s.rows.slice();
      rows[i] = { ...rows[i], ...patch };
      return mark({ ...s, rows }, [patch.digest]);
    });
    return found;
  }

  function remove(digest: string): boolean {
    let found = false;
    store.update((s) => {
      const rows = s.rows.filter((r) => r.digest !== digest);
      found = rows.length !== s.rows.length;
      return found ? { ...s, rows, total: Math.max(0, s.total - 1) } : s;
    });
    return found;
  }

  function upsertScan(scan: ScanStatus): void {
    store.update((s) => {
      const scans = new Map(s.scans);
      scans.set(scan.digest, scan);
      return { ...s, scans };
    });
  }

  return {
    subscribe: store.subscribe,
    resync(list) {
      store.update((s) => {
        const before = new Map(s.rows.map((r) => [r.digest, r]));
        const fresh = s.loaded
          ? list.items.filter((r) => {
              const old = before.get(r.digest);
              return old === undefined || changed(old, r);
            })
          : [];
        const next = { ...s, rows: list.items, total: list.total, nextCursor: list.nextCursor, loaded: true };
        return mark(next, fresh.map((r) => r.digest));
      });
    },
    reset() {
      store.update((s) => ({ ...s, rows: [], total: 0, nextCursor: undefined, loaded: false }));
    },
    append(list) {
      store.update((s) => {
        const seen = new Set(s.rows.map((r) => r.digest));
        const rows = s.rows.concat(list.items.filter((r) => !seen.has(r.digest)));
        return { ...s, rows, total: list.total, nextCursor: list.nextCursor, loaded: true };
      });
    },
    add(row) {
      if (update(row)) return;
      store.update((s) => mark({ ...s, rows: [row, ...s.rows], total: s.total + 1 }, [row.digest]));
    },
    update,
    remove,
    setScans(items) {
      store.update((s) => ({ ...s, scans: new Map(items.map((i) => [i.digest, i])) }));
    },
    upsertScan,
    setConnection(connection) {
      store.update((s) => (s.connection === connection ? s : { ...s, connection }));
    },
    markReconnect() {
      store.update((s) => ({ ...s, reconnects: s.reconnects + 1 }));
    },
    apply(msg) {
      store.update((s) => ({ ...s, lastEvent: msg }));
      switch (msg.type) {
        case 'report.stored': {
          const found = update(msg.data);
          store.update((s) => ({ ...s, changes: s.changes + 1 }));
          return !found;
        }
        case 'report.deleted':
          remove(msg.data.digest);
          store.update((s) => ({ ...s, changes: s.changes + 1 }));
          return false;
        case 'scan.status':
          upsertScan(msg.data);
          return false;
        case 'findings.changed': {
          const data = msg.data;
          store.update((s) => {
            const seq = s.changeSeq + 1;
            const changeLog = s.changeLog.concat({ seq, data }).slice(-changeLogSize);
            return { ...s, changeLog, changeSeq: seq };
          });
          return false;
        }
      }
    },
    destroy() {
      for (const t of timers.values()) clearTimeout(t);
      timers.clear();
    },
  };
}
