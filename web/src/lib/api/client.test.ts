// The client against a real HTTP server on loopback (node:http) that records
// what it receives and answers like results-api does; the browser tests run
// the same client against the real results-api.
import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { ApiError, createClient, eventsUrl } from './client';

interface Seen {
  method: string;
  url: string;
  auth?: string;
  accept?: string;
}

let server: Server;
let base = '';
let seen: Seen[] = [];
let reply: (req: IncomingMessage) => { status: number; body?: unknown; raw?: string; delayMs?: number };

beforeAll(async () => {
  server = createServer((req, res) => {
    seen.push({ method: req.method ?? '', url: req.url ?? '', auth: req.headers.authorization, accept: req.headers.accept });
    const r = reply(req);
    const send = () => {
      if (r.raw !== undefined) {
        res.writeHead(r.status, { 'Content-Type': 'text/html' }).end(r.raw);
      } else if (r.body === undefined) {
        res.writeHead(r.status).end();
      } else {
        res.writeHead(r.status, { 'Content-Type': 'application/json' }).end(JSON.stringify(r.body));
      }
    };
    if (r.delayMs) setTimeout(send, r.delayMs);
    else send();
  });
  await new Promise<void>((ok) => server.listen(0, '127.0.0.1', ok));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
afterAll(() => new Promise<void>((ok) => server.close(() => ok())));
beforeEach(() => {
  seen = [];
  reply = () => ({ status: 200, body: { items: [], total: 0 } });
});

const digest = 'sha256:' + 'a1'.repeat(32);

describe('API client', () => {
  it('lists reports with only the filters that are set', async () => {
    reply = () => ({ status: 200, body: { items: [], total: 3, nextCursor: 'next' } });
    const c = createClient({ baseUrl: base + '/' });
    const list = await c.listReports({ limit: 100, q: 'CVE-2024-1', minSeverity: 'high', fixable: true, sort: '-critical' });
    expect(list).toEqual({ items: [], total: 3, nextCursor: 'next' });
    await c.listReports({ q: '', fixable: false, cursor: 'abc/+=' });
    expect(seen.map((s) => s.url)).toEqual([
      '/api/v1/reports?limit=100&q=CVE-2024-1&minSeverity=high&fixable=true&sort=-critical',
      '/api/v1/reports?cursor=abc%2F%2B%3D',
    ]);
    expect(seen[0].accept).toBe('application/json');
  });

  it('builds report, BOM, vulnerability, scans and stats URLs', async () => {
    reply = () => ({ status: 200, body: {} });
    const c = createClient({ baseUrl: base });
    await c.getReport(digest, { sort: 'severity' });
    await c.getReport(digest, { sort: 'id', findingsLimit: 500, findingsCursor: 'eyJv/+' });
    await c.getVulnerability('GHSA-xvch-5gv4-984h');
    await c.getVulnerability('odd/id?x');
    await c.listScans({ status: 'failed', limit: 10 });
    await c.getStats();
    expect(seen.map((s) => s.url)).toEqual([
      `/api/v1/reports/sha256:${'a1'.repeat(32)}?sort=severity`,
      `/api/v1/reports/sha256:${'a1'.repeat(32)}?sort=id&findingsLimit=500&findingsCursor=eyJv%2F%2B`,
      '/api/v1/vulnerabilities/GHSA-xvch-5gv4-984h',
      '/api/v1/vulnerabilities/odd%2Fid%3Fx',
      '/api/v1/scans?status=failed&limit=10',
      '/api/v1/stats',
    ]);
    expect(c.bomUrl(digest)).toBe(`${base}/api/v1/reports/sha256:${'a1'.repeat(32)}/bom`);
    expect(createClient().bomUrl(digest).startsWith('/api/v1/reports/')).toBe(true);
  });

  it('builds the changes feed and a digest history URLs', async () => {
    reply = () => ({ status: 200, body: { items: [] } });
    const c = createClient({ baseUrl: base });
    await c.listChanges();
    await c.listChanges({ since: '2026-11-15T10:00:00.000Z', minSeverity: 'high', cause: 'rematch', limit: 20, cursor: 'eyJ0/+' });
    await c.listReportChanges(digest, { limit: 10, cursor: 'abc' });
    expect(seen.map((s) => s.url)).toEqual([
      '/api/v1/changes',
      '/api/v1/changes?since=2026-11-15T10%3A00%3A00.000Z&minSeverity=high&cause=rematch&limit=20&cursor=eyJ0%2F%2B',
      `/api/v1/reports/sha256:${'a1'.repeat(32)}/changes?limit=10&cursor=abc`,
    ]);
  });

  it('deletes with the bearer token and resolves on 204', async () => {
    reply = () => ({ status: 204 });
    await createClient({ baseUrl: base }).deleteReport(digest, 's3cret');
    expect(seen[0]).toMatchObject({ method: 'DELETE', auth: 'Bearer s3cret' });
  });

  it('sends the read token on every call and reports 401s, but not a write token\'s', async () => {
    let token = 'read-1';
    const codes: string[] = [];
    const c = createClient({ baseUrl: base, token: () => token, onUnauthorized: (code) => codes.push(code) });
    reply = () => ({ status: 200, body: { user: 'u', cluster: true, namespaces: [] } });
    expect(await c.getAccess()).toEqual({ user: 'u', cluster: true, namespaces: [] });
    await c.getBom(digest);
    token = '';
    await c.getStats();
    expect(seen.map((s) => [s.url, s.auth])).toEqual([
      ['/api/v1/access', 'Bearer read-1'],
      [`/api/v1/reports/sha256:${'a1'.repeat(32)}/bom`, 'Bearer read-1'],
      ['/api/v1/stats', undefined],
    ]);

    reply = () => ({ status: 401, body: { error: { code: 'invalid_token', message: 'token refused' } } });
    token = 'expired';
    const err = await c.listReports().catch((e) => e);
    expect(err).toMatchObject({ status: 401, code: 'invalid_token' });
    expect(codes).toEqual(['invalid_token']);
    // A delete carries its own write token: a 401 there is the dialog's business.
    await c.deleteReport(digest, 'write').catch(() => {});
    expect(seen.at(-1)?.auth).toBe('Bearer write');
    expect(codes).toEqual(['invalid_token']);
  });

  it('turns the JSON error body into an ApiError', async () => {
    reply = () => ({ status: 403, body: { error: { code: 'forbidden', message: 'token not allowed' } } });
    const err = await createClient({ baseUrl: base }).deleteReport(digest, 'wrong').catch((e) => e);
    expect(err).toBeInstanceOf(ApiError);
    expect(err).toMatchObject({ status: 403, code: 'forbidden', message: 'token not allowed' });

    reply = () => ({ status: 404, body: { error: { code: 'not_found', message: 'no report' } } });
    const nf = await createClient({ baseUrl: base }).getReport(digest).catch((e) => e);
    expect(nf.notFound).toBe(true);
  });

  it('keeps the status when the error body is not JSON (a proxy page)', async () => {
    reply = () => ({ status: 502, raw: '<html>Bad Gateway</html>' });
    const err = await createClient({ baseUrl: base }).getStats().catch((e) => e);
    expect(err).toMatchObject({ status: 502, code: 'http_502' });
  });

  it('reports network failures and timeouts as status 0', async () => {
    const down = await createClient({ baseUrl: 'http://127.0.0.1:1' }).getStats().catch((e) => e);
    expect(down).toMatchObject({ status: 0, code: 'network' });
    reply = () => ({ status: 200, body: {}, delayMs: 500 });
    const slow = await createClient({ baseUrl: base, timeoutMs: 50 }).getStats().catch((e) => e);
    expect(slow).toMatchObject({ status: 0, code: 'network' });
    expect(slow.message).toMatch(/timed out/);
  });

  it('lets the caller abort without an ApiError', async () => {
    reply = () => ({ status: 200, body: {}, delayMs: 300 });
    const ctl = new AbortController();
    const p = createClient({ baseUrl: base }).getStats(ctl.signal);
    ctl.abort();
    const err = await p.catch((e) => e);
    expect(err).not.toBeInstanceOf(ApiError);
    expect((err as Error).name).toBe('AbortError');
  });

  it('derives the WebSocket URL from the page origin', () => {
    expect(eventsUrl({ protocol: 'http:', host: '127.0.0.1:8080' })).toBe('ws://127.0.0.1:8080/api/v1/events');
    expect(eventsUrl({ protocol: 'https:', host: 'crowsnest.example' })).toBe('wss://crowsnest.example/api/v1/events');
    expect(eventsUrl({ protocol: 'http:', host: 'x' }, 'https://api.example/')).toBe('wss://api.example/api/v1/events');
  });
});
