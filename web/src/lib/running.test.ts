import { describe, expect, it } from 'vitest';
import type { RunningWorkload } from './api/types';
import { namespacesOf, pods, runningSummary, workloadName, workloadRows } from './format';

const w = (namespace: string, kind: string, name: string, podCount = 1, containers = ['app']): RunningWorkload => ({
  namespace,
  kind,
  name,
  containers,
  pods: podCount,
});

describe('runningIn formatting', () => {
  it('names a workload as kubectl does', () => {
    expect(workloadName(w('a', 'Deployment', 'web'))).toBe('Deployment/web');
    expect(pods(1)).toBe('1 pod');
    expect(pods(3)).toBe('3 pods');
  });

  it('summarises the first workload and counts the rest', () => {
    expect(runningSummary([w('a', 'Deployment', 'web', 2), w('b', 'CronJob', 'nightly')])).toEqual({
      text: 'a/Deployment/web',
      more: 1,
      title: 'a/Deployment/web (2 pods)\nb/CronJob/nightly (1 pod)',
    });
    expect(runningSummary([w('a', 'Pod', 'debug')]).more).toBe(0);
  });

  it('says "not running" for an empty list and nothing when the server sent none', () => {
    expect(runningSummary([]).text).toBe('not running');
    expect(runningSummary(undefined)).toEqual({ text: '', more: 0, title: '' });
  });

  it('collects distinct namespaces, keeping those already known', () => {
    const known = new Set(['z']);
    const got = namespacesOf([[w('b', 'Deployment', 'x')], undefined, [w('a', 'Pod', 'p'), w('b', 'Job', 'j')]], known);
    expect([...got].sort()).toEqual(['a', 'b', 'z']);
  });

  it('flattens images into one row per workload and digest, sorted and deduplicated', () => {
    const rows = workloadRows([
      { digest: 'sha256:2', image: 'two', runningIn: [w('b', 'Deployment', 'web'), w('a', 'StatefulSet', 'db')] },
      { digest: 'sha256:1', image: 'one', runningIn: [w('a', 'Deployment', 'web')] },
      { digest: 'sha256:2', image: 'two', runningIn: [w('b', 'Deployment', 'web')] },
      { digest: 'sha256:3', image: 'three' },
    ]);
    expect(rows.map((r) => `${r.namespace}/${r.kind}/${r.name}@${r.digest}`)).toEqual([
      'a/Deployment/web@sha256:1',
      'a/StatefulSet/db@sha256:2',
      'b/Deployment/web@sha256:2',
    ]);
  });
});
