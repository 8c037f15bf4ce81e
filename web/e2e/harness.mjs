// Real backends for the browser tests: a throwaway Postgres (test/support's
// pgserver), the real results-api binary serving web/dist, and helpers that
// seed it through its REST API with the write token. Every wait has a deadline.
import { spawn, execFile } from 'node:child_process';
import { once } from 'node:events';
import { mkdtemp, writeFile, rm } from 'node:fs/promises';
import { connect, createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';

export const webDir = resolve(dirname(fileURLToPath(import.meta.url)), '..');
export const repoRoot = resolve(webDir, '..');
const run = promisify(execFile);

/** Polls cond until it returns a truthy value or the deadline passes. */
export async function until(cond, what, ms = 10_000, every = 50) {
  const end = Date.now() + ms;
  for (;;) {
    const v = await cond().catch(() => undefined);
    if (v) return v;
    if (Date.now() > end) throw new Error(`timed out after ${ms} ms waiting for ${what}`);
    await new Promise((r) => setTimeout(r, every));
  }
}

export async function freePort() {
  const srv = createServer();
  srv.listen(0, '127.0.0.1');
  await once(srv, 'listening');
  const { port } = srv.address();
  srv.close();
  await once(srv, 'close');
  return port;
}

/** Builds pgserver and results-api into dir (Go's build cache keeps this quick after the first time). */
export async function buildBinaries(dir) {
  const opts = { cwd: repoRoot, maxBuffer: 16 << 20, timeout: 600_000 };
  await Promise.all([
    run('go', ['build', '-o', join(dir, 'pgserver'), './test/support/cmd/pgserver'], opts),
    run('go', ['build', '-o', join(dir, 'results-api'), './cmd/results-api'], { ...opts, cwd: join(repoRoot, 'results-api') }),
  ]);
  return { pgserver: join(dir, 'pgserver'), resultsApi: join(dir, 'results-api') };
}

/** Builds nats-server at the version test/support pins (for tests that need operator events). */
export async function buildNatsServer(dir) {
  const out = join(dir, 'nats-server');
  await run('go', ['build', '-o', out, 'github.com/nats-io/nats-server/v2'], {
    cwd: join(repoRoot, 'test', 'support'),
    maxBuffer: 16 << 20,
    timeout: 600_000,
  });
  return out;
}

/** A JetStream-enabled nats-server on a loopback port with a store under dir. */
export async function startNats(bin, dir) {
  const port = await freePort();
  const proc = spawn(bin, ['-js', '-sd', join(dir, 'jetstream'), '-a', '127.0.0.1', '-p', String(port)], { stdio: 'ignore' });
  await until(async () => {
    if (proc.exitCode !== null) throw new Error(`nats-server exited with ${proc.exitCode}`);
    return canConnect(port);
  }, 'nats-server', 15_000);
  return {
    url: `nats://127.0.0.1:${port}`,
    async stop() {
      if (proc.exitCode !== null) return;
      proc.kill('SIGTERM');
      await once(proc, 'exit');
    },
  };
}

function canConnect(port) {
  return new Promise((ok) => {
    const sock = connect(port, '127.0.0.1', () => {
      sock.destroy();
      ok(true);
    });
    sock.on('error', () => ok(false));
  });
}

/** Starts Postgres; it stops when stop() closes its stdin (or when this process dies). */
export async function startPostgres(bin) {
  const proc = spawn(bin, ['-watch-stdin'], { stdio: ['pipe', 'pipe', 'inherit'] });
  const lines = createInterface({ input: proc.stdout });
  const url = await Promise.race([
    new Promise((ok) => lines.on('line', (l) => l.startsWith('DATABASE_URL=') && ok(l.slice('DATABASE_URL='.length)))),
    once(proc, 'exit').then(([code]) => Promise.reject(new Error(`pgserver exited with ${code}`))),
    new Promise((_, fail) => setTimeout(() => fail(new Error('pgserver did not start in 60 s')), 60_000).unref()),
  ]);
  return {
    url,
    async stop() {
      if (proc.exitCode !== null) return;
      proc.stdin.end();
      const t = setTimeout(() => proc.kill('SIGTERM'), 10_000);
      await once(proc, 'exit');
      clearTimeout(t);
    },
  };
}

/**
 * The real results-api binary on a loopback port, with the static admin
 * token (--admin-token-file; it writes, and reads everything) and the built
 * UI. Reads are open unless opts.readAuth is 'kubernetes': then every read
 * needs credentials, and the only ones that work here are the admin token,
 * because the kubeconfig (TokenReview, SubjectAccessReview) points at
 * 127.0.0.1:1, where no kube-apiserver listens. With
 * --read-auth-namespaces=all results-api does not contact it at start-up
 * (the default, rbac, waits for a list of the RoleBindings and gives up
 * after a minute), a token that is not a JWT for the audience is
 * refused (invalid_token) before any TokenReview, and the admin token is
 * checked locally.
 */
export async function startResultsApi(bin, databaseUrl, extraArgs = [], opts = {}) {
  const readAuth = opts.readAuth ?? 'open';
  const dir = await mkdtemp(join(tmpdir(), 'crowsnest-e2e-'));
  const token = `e2e-${Math.random().toString(36).slice(2)}${Date.now()}`;
  const tokenFile = join(dir, 'admin-token');
  await writeFile(tokenFile, token, { mode: 0o600 });
  const authArgs = ['--read-auth', readAuth];
  if (readAuth === 'kubernetes') {
    const kubeconfig = join(dir, 'kubeconfig');
    await writeFile(kubeconfig, [
      'apiVersion: v1', 'kind: Config',
      "clusters: [{name: none, cluster: {server: 'https://127.0.0.1:1'}}]",
      'users: [{name: none, user: {token: unused}}]',
      'contexts: [{name: none, context: {cluster: none, user: none}}]',
      'current-context: none', '',
    ].join('\n'), { mode: 0o600 });
    authArgs.push('--kubeconfig', kubeconfig, '--read-auth-namespaces', 'all');
  }
  const port = await freePort();
  const base = `http://127.0.0.1:${port}`;
  let proc = null;
  let log = '';

  async function start() {
    proc = spawn(bin, ['--listen', `127.0.0.1:${port}`, '--database-url', databaseUrl, '--admin-token-file', tokenFile,
      '--ui-dir', join(webDir, 'dist'), '--log-level', 'warn', '--shutdown-timeout', '2s', ...authArgs, ...extraArgs], { stdio: ['ignore', 'pipe', 'pipe'] });
    const keep = (b) => (log = (log + b.toString()).slice(-20_000));
    proc.stdout.on('data', keep);
    proc.stderr.on('data', keep);
    const p = proc;
    await until(async () => {
      if (p.exitCode !== null) throw new Error(`results-api exited with ${p.exitCode}:\n${log}`);
      return (await fetch(`${base}/readyz`)).ok;
    }, 'results-api /readyz', 30_000).catch((err) => {
      throw new Error(`${err.message}\n${log}`);
    });
  }

  async function stop() {
    if (!proc || proc.exitCode !== null) return;
    const p = proc;
    p.kill('SIGTERM');
    const t = setTimeout(() => p.kill('SIGKILL'), 10_000);
    await once(p, 'exit');
    clearTimeout(t);
  }

  await start();
  return {
    base,
    token,
    readAuth,
    start,
    stop,
    log: () => log,
    async close() {
      await stop();
      await rm(dir, { recursive: true, force: true });
    },
  };
}

/** PUTs a CycloneDX document as results-api's uploader would. */
export async function putReport(api, digest, image, body, headers = {}) {
  const res = await fetch(`${api.base}/api/v1/reports/${digest}?image=${encodeURIComponent(image)}`, {
    method: 'PUT',
    headers: { Authorization: `Bearer ${api.token}`, 'Content-Type': 'application/vnd.cyclonedx+json', ...headers },
    body,
  });
  if (res.status !== 200 && res.status !== 201) throw new Error(`PUT ${digest}: ${res.status} ${await res.text()}`);
  return res.json();
}

/** GETs JSON; with --read-auth=kubernetes as the admin (reads everything). */
export async function getJson(api, path) {
  const headers = api.readAuth === 'kubernetes' ? { Authorization: `Bearer ${api.token}` } : {};
  const res = await fetch(`${api.base}${path}`, { headers });
  if (!res.ok) throw new Error(`GET ${path}: ${res.status} ${await res.text()}`);
  return res.json();
}

/** Runs fn over items with at most n in flight. */
export async function pool(items, n, fn) {
  let i = 0;
  await Promise.all(
    Array.from({ length: Math.min(n, items.length) }, async () => {
      while (i < items.length) {
        const item = items[i++];
        await fn(item);
      }
    }),
  );
}
