// A real control plane for browser tests that need Kubernetes resources:
// etcd and kube-apiserver from bin/k8s (`make kube-assets`, the binaries
// test/support's envtest helper uses), started directly because the harness
// is Node-driven. An admin token (--token-auth-file, group system:masters)
// is the one credential; kubectl from bin/k8s applies manifests with it, as
// a person would. Everything lives under one temporary directory.
import { spawn, execFile } from 'node:child_process';
import { generateKeyPairSync } from 'node:crypto';
import { once } from 'node:events';
import { access, mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { freePort, repoRoot, until } from './harness.mjs';

export const kubeAssets = process.env.KUBEBUILDER_ASSETS ?? join(repoRoot, 'bin', 'k8s');

function startProcess(bin, args, name) {
  const proc = spawn(bin, args, { stdio: ['ignore', 'pipe', 'pipe'] });
  let log = '';
  const keep = (b) => (log = (log + b.toString()).slice(-20_000));
  proc.stdout.on('data', keep);
  proc.stderr.on('data', keep);
  return {
    proc,
    log: () => log,
    exited: () => proc.exitCode !== null || proc.signalCode !== null,
    async stop() {
      if (proc.exitCode !== null || proc.signalCode !== null) return;
      proc.kill('SIGTERM');
      const t = setTimeout(() => proc.kill('SIGKILL'), 10_000);
      await once(proc, 'exit');
      clearTimeout(t);
    },
    name,
  };
}

/** etcd + kube-apiserver on loopback ports; kubeconfig is a file for results-api and kubectl. */
export async function startKube() {
  for (const b of ['etcd', 'kube-apiserver', 'kubectl']) {
    await access(join(kubeAssets, b)).catch(() => {
      throw new Error(`${b} not found in ${kubeAssets} (run \`make kube-assets\`)`);
    });
  }
  const dir = await mkdtemp(join(tmpdir(), 'crowsnest-e2e-kube-'));
  const started = [];
  const stopAll = async () => {
    for (const p of started.reverse()) await p.stop();
    await rm(dir, { recursive: true, force: true });
  };
  try {
    const [clientPort, peerPort, apiPort] = [await freePort(), await freePort(), await freePort()];
    const etcd = startProcess(join(kubeAssets, 'etcd'), [
      '--data-dir', join(dir, 'etcd'),
      '--listen-client-urls', `http://127.0.0.1:${clientPort}`, '--advertise-client-urls', `http://127.0.0.1:${clientPort}`,
      '--listen-peer-urls', `http://127.0.0.1:${peerPort}`, '--initial-advertise-peer-urls', `http://127.0.0.1:${peerPort}`,
      '--initial-cluster', `default=http://127.0.0.1:${peerPort}`, '--unsafe-no-fsync',
    ], 'etcd');
    started.push(etcd);

    const { publicKey, privateKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
    await writeFile(join(dir, 'sa.pub'), publicKey.export({ type: 'spki', format: 'pem' }));
    await writeFile(join(dir, 'sa.key'), privateKey.export({ type: 'pkcs8', format: 'pem' }), { mode: 0o600 });
    const token = `kube-admin-${Math.random().toString(36).slice(2)}`;
    await writeFile(join(dir, 'tokens.csv'), `${token},admin,admin,"system:masters"\n`, { mode: 0o600 });
    await mkdir(join(dir, 'certs'));
    const api = startProcess(join(kubeAssets, 'kube-apiserver'), [
      '--etcd-servers', `http://127.0.0.1:${clientPort}`,
      '--bind-address', '127.0.0.1', '--advertise-address', '127.0.0.1', '--secure-port', String(apiPort),
      '--cert-dir', join(dir, 'certs'),
      '--service-cluster-ip-range', '10.0.0.0/24',
      '--service-account-issuer', 'https://kubernetes.default.svc',
      '--service-account-key-file', join(dir, 'sa.pub'), '--service-account-signing-key-file', join(dir, 'sa.key'),
      '--token-auth-file', join(dir, 'tokens.csv'),
      '--authorization-mode', 'RBAC',
    ], 'kube-apiserver');
    started.push(api);

    const kubeconfig = join(dir, 'kubeconfig');
    await writeFile(kubeconfig, [
      'apiVersion: v1', 'kind: Config',
      `clusters: [{name: e2e, cluster: {server: 'https://127.0.0.1:${apiPort}', insecure-skip-tls-verify: true}}]`,
      `users: [{name: admin, user: {token: '${token}'}}]`,
      'contexts: [{name: e2e, context: {cluster: e2e, user: admin}}]',
      'current-context: e2e', '',
    ].join('\n'), { mode: 0o600 });

    const kubectl = (args, input) => new Promise((ok, fail) => {
      const p = execFile(join(kubeAssets, 'kubectl'), ['--kubeconfig', kubeconfig, ...args], { timeout: 60_000 }, (err, stdout, stderr) =>
        err ? fail(new Error(`kubectl ${args.join(' ')}: ${err.message}\n${stderr}`)) : ok(stdout));
      if (input !== undefined) p.stdin.end(input);
    });
    await until(async () => {
      for (const p of [etcd, api]) if (p.exited()) throw new Error(`${p.name} exited:\n${p.log()}`);
      await kubectl(['get', '--raw', '/readyz']);
      return true;
    }, 'kube-apiserver /readyz', 60_000, 250).catch((err) => {
      throw new Error(`${err.message}\n${api.log().slice(-4000)}`);
    });
    return { kubeconfig, kubectl, stop: stopAll };
  } catch (err) {
    await stopAll();
    throw err;
  }
}
