// The reconnecting event stream against a real WebSocket server (ws) on
// loopback: messages arrive, a dropped server is noticed, the client comes
// back with backoff and signals the reconnect so callers refetch.
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { WebSocket as WsClient, WebSocketServer } from 'ws';
import { backoffDelay, connectEvents, parseEvent, type ConnectionState, type EventsConnection } from './events';
import type { EventMessage } from './types';

const digest = 'sha256:' + 'b2'.repeat(32);

async function until(cond: () => boolean, what: string, ms = 5000): Promise<void> {
  const end = Date.now() + ms;
  while (!cond()) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 10));
  }
}

function listen(port = 0): Promise<WebSocketServer> {
  return new Promise((ok, fail) => {
    const wss = new WebSocketServer({ host: '127.0.0.1', port });
    wss.once('listening', () => ok(wss));
    wss.once('error', fail);
  });
}

function closeServer(wss: WebSocketServer): Promise<void> {
  for (const c of wss.clients) c.terminate();
  return new Promise((ok) => wss.close(() => ok()));
}

let conn: EventsConnection | undefined;
let servers: WebSocketServer[] = [];
afterEach(async () => {
  conn?.close();
  await Promise.all(servers.map(closeServer));
  servers = [];
});

describe('event stream', () => {
  it('backs off exponentially with jitter and a cap', () => {
    expect(backoffDelay(0, 500, 15000, () => 0)).toBe(250);
    expect(backoffDelay(0, 500, 15000, () => 1)).toBe(500);
    expect(backoffDelay(3, 500, 15000, () => 1)).toBe(4000);
    expect(backoffDelay(10, 500, 15000, () => 1)).toBe(15000);
    expect(backoffDelay(100, 500, 15000, () => 0.5)).toBe(11250);
  });

  it('parses known events and drops everything else', () => {
    const ok = { type: 'report.deleted', id: 'x', time: 't', data: { digest, image: 'i' } };
    expect(parseEvent(JSON.stringify(ok))).toEqual(ok);
    expect(parseEvent('not json')).toBeNull();
    expect(parseEvent(JSON.stringify({ ...ok, type: 'report.exploded' }))).toBeNull();
    expect(parseEvent(JSON.stringify({ ...ok, data: null }))).toBeNull();
    expect(parseEvent(new ArrayBuffer(2))).toBeNull();
    const changed = {
      type: 'findings.changed', id: 'c', time: 't',
      data: { changeId: 7, digest, image: 'i', cause: 'rematch', changedAt: 't', baseline: false, newCounts: {}, resolvedCounts: {} },
    };
    expect(parseEvent(JSON.stringify(changed))).toEqual(changed);
    expect(parseEvent(JSON.stringify({ ...changed, data: { changeId: 7 } }))).toBeNull();
  });

  it('delivers events, reconnects after the server goes away and signals the reconnect', async () => {
    const wss = await listen();
    servers.push(wss);
    const port = (wss.address() as AddressInfo).port;
    const states: ConnectionState[] = [];
    const got: EventMessage[] = [];
    let reconnects = 0;
    conn = connectEvents({
      url: `ws://127.0.0.1:${port}/api/v1/events`,
      WebSocket: WsClient as unknown as typeof WebSocket,
      onMessage: (m) => got.push(m),
      onState: (s) => states.push(s),
      onReconnect: () => reconnects++,
      minDelayMs: 20,
      maxDelayMs: 100,
    });
    await until(() => wss.clients.size === 1 && states.at(-1) === 'open', 'first connection');
    expect(reconnects).toBe(0);
    const ev = { type: 'report.deleted', id: 'e1', time: '2026-11-21T10:00:00Z', data: { digest, image: 'r@' + digest } };
    for (const c of wss.clients) {
      c.send('garbage');
      c.send(JSON.stringify(ev));
    }
    await until(() => got.length === 1, 'the event');
    expect(got[0]).toEqual(ev);

    // Server goes away: the client notices, keeps retrying while it is down...
    await closeServer(wss);
    servers = [];
    await until(() => states.includes('closed'), 'closed state');
    await new Promise((r) => setTimeout(r, 250));
    expect(reconnects).toBe(0);
    // ...and when it returns on the same port, reconnects and says so.
    const again = await listen(port);
    servers.push(again);
    await until(() => reconnects === 1 && states.at(-1) === 'open', 'reconnect', 5000);
    expect(again.clients.size).toBe(1);
  });

  it('close stops reconnecting', async () => {
    const wss = await listen();
    servers.push(wss);
    const port = (wss.address() as AddressInfo).port;
    let opened = 0;
    conn = connectEvents({
      url: `ws://127.0.0.1:${port}/`,
      WebSocket: WsClient as unknown as typeof WebSocket,
      onMessage: () => {},
      onState: (s) => s === 'open' && opened++,
      onReconnect: () => {},
      minDelayMs: 10,
      maxDelayMs: 20,
    });
    await until(() => opened === 1, 'open');
    conn.close();
    await until(() => wss.clients.size === 0, 'client gone');
    await new Promise((r) => setTimeout(r, 100));
    expect(opened).toBe(1);
    expect(wss.clients.size).toBe(0);
  });

  it('offers the subprotocols and stops for good on a 1008 the owner calls final', async () => {
    const wss = await listen();
    servers.push(wss);
    const port = (wss.address() as AddressInfo).port;
    const offered: string[] = [];
    wss.on('connection', (ws, req) => offered.push(req.headers['sec-websocket-protocol'] ?? ''));
    let opened = 0;
    const reasons: string[] = [];
    let final = false;
    conn = connectEvents({
      url: `ws://127.0.0.1:${port}/`,
      WebSocket: WsClient as unknown as typeof WebSocket,
      protocols: () => ['crowsnest.v1', 'base64url.bearer.authorization.k8s.io.dG9r'],
      onMessage: () => {},
      onState: (s) => s === 'open' && opened++,
      onReconnect: () => {},
      onPolicyClose: (reason) => {
        reasons.push(reason);
        return final;
      },
      minDelayMs: 10,
      maxDelayMs: 20,
    });
    await until(() => opened === 1, 'open');
    expect(offered[0].split(/, */)).toEqual(['crowsnest.v1', 'base64url.bearer.authorization.k8s.io.dG9r']);
    // A slow client is closed with 1008 too: the owner says go on, it reconnects.
    for (const c of wss.clients) c.close(1008, 'client too slow to keep up');
    await until(() => opened === 2, 'reconnect after a non-final 1008');
    final = true;
    for (const c of wss.clients) c.close(1008, 'credentials no longer valid');
    await until(() => reasons.length === 2, 'second 1008');
    await new Promise((r) => setTimeout(r, 150));
    expect(reasons).toEqual(['client too slow to keep up', 'credentials no longer valid']);
    expect(opened).toBe(2);
    expect(wss.clients.size).toBe(0);
  });
});
