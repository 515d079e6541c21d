#!/usr/bin/env python3
"""Where each P1 object's time went, from a bench run with BENCH_PROXY_LOG=1.

    BENCH_PROXY_LOG=1 tests/bench/run.sh --scale 100000 ... 2> err.log
    python3 tests/bench/cpu_sampler.py cpu.txt &      # beside it, optional
    tests/bench/p1_timeline.py err.log <kcp root>/audit*.log [--prefix pi-] [--cpu cpu.txt --burst 1.5] [-v]

For every object named <prefix>NNNNN: the bench's create sent (bench trace),
kcp receiving and answering it (kcp's audit log), the agent's finalizer PATCH
starting and its duration (the counting proxy's log), and its copy first seen
on the service cluster (bench trace). Prints the slow objects (-v: all), the
per-stage p50/max over all and over the slow ones, and with --cpu the
latency of objects created while kcp used more than --burst cores against
the others.
"""
import argparse
import collections
import json
import re
from datetime import datetime

ap = argparse.ArgumentParser()
ap.add_argument('err_log')
ap.add_argument('audit', nargs='+')
ap.add_argument('--prefix', default='pi-', help='P1 phase: p1- sustained, pl- under load, pi- at size')
ap.add_argument('--slow-ms', type=float, default=300)
ap.add_argument('--cpu', help='output of tests/bench/cpu_sampler.py')
ap.add_argument('--burst', type=float, default=1.5, help='kcp cores that count as a burst')
ap.add_argument('-v', action='store_true')
a = ap.parse_args()

create, seen, patch = {}, {}, {}
proxy = re.compile(r'^proxy: (\d+) (\S+) (\S+) -> \d+.* in ([\d.]+) ms')
obj = re.compile(r'/crontabs/(' + re.escape(a.prefix) + r'\d+)')
for line in open(a.err_log, errors='replace'):
    if line.startswith('bench: '):
        _, us, what = line.rstrip('\n').split(' ', 2)
        t = int(us) / 1e6
        if what.startswith('create ' + a.prefix):
            create[what[len('create '):]] = t
        elif what.startswith('copy seen ') and '/' + a.prefix in what:
            seen[what.rsplit('/', 1)[-1]] = t
    elif line.startswith('proxy: '):
        m = proxy.match(line)
        if m and m[2] == 'PATCH':
            o = obj.search(m[3])
            if o and o[1] not in patch:
                patch[o[1]] = (int(m[1]) / 1e6, float(m[4]) / 1000)


def ts(s):
    return datetime.fromisoformat(s.replace('Z', '+00:00')).timestamp()


answered = {}
for path in a.audit:
    for line in open(path, errors='replace'):
        if '"' + a.prefix not in line:
            continue
        e = json.loads(line)
        o = e.get('objectRef', {})
        n = o.get('name', '')
        if (e.get('verb') == 'create' and o.get('resource') == 'crontabs'
                and n.startswith(a.prefix) and e.get('stage') == 'ResponseComplete'):
            answered[n] = (ts(e['requestReceivedTimestamp']), ts(e['stageTimestamp']))

rows = []
for n in sorted(create):
    c, s = create[n], seen.get(n)
    rec, ans = answered.get(n, (None, None))
    ps, pd = patch.get(n, (None, None))
    rows.append(dict(name=n, sent=c, received=rec, answered=ans, patch=ps, patch_s=pd, seen=s,
                     total=None if s is None else (s - c) * 1000))


def rel(r, k):
    return '      -' if r[k] is None else f'{(r[k] - r["sent"]) * 1000:7.0f}'


print('object      sent (unix s)   ms after sent: kcp received, answered; agent PATCH starts, takes; copy seen')
for r in rows:
    if a.v or r['total'] is None or r['total'] > a.slow_ms:
        took = '-' if r['patch_s'] is None else f'{r["patch_s"] * 1000:.0f}'
        print(f'{r["name"]} {r["sent"]:.3f} {rel(r, "received")} {rel(r, "answered")} '
              f'{rel(r, "patch")} {took:>6} {rel(r, "seen")}')


def stages(sel):
    acc = collections.defaultdict(list)
    for r in sel:
        if None in (r['answered'], r['patch'], r['seen']):
            continue
        acc['sent -> kcp answered the create'].append(r['answered'] - r['sent'])
        acc['answered -> agent PATCH starts'].append(r['patch'] - r['answered'])
        acc['PATCH, sent to answered'].append(r['patch_s'])
        acc['PATCH answered -> copy seen'].append(r['seen'] - r['patch'] - r['patch_s'])
    for k, v in acc.items():
        v.sort()
        print(f'  {k:32s} n={len(v):4d}  p50 {v[len(v) // 2] * 1000:6.0f} ms  max {v[-1] * 1000:6.0f} ms')


print('\nstages, all objects:')
stages(rows)
print(f'stages, objects slower than {a.slow_ms:.0f} ms:')
stages([r for r in rows if r['total'] is not None and r['total'] > a.slow_ms])

if a.cpu:
    samples = []
    for line in open(a.cpu):
        p = line.split()
        kcp = sum(int(x.split(':')[2]) for x in p[1:] if x.split(':')[1] == 'kcp')
        samples.append((float(p[0]), kcp))
    burst = set()
    for (t0, c0), (t1, c1) in zip(samples, samples[1:]):
        if (c1 - c0) / 100 / (t1 - t0) > a.burst:
            burst.add(int(t1))
    print(f'\nobjects by kcp CPU at their create (burst: kcp above {a.burst} cores in that second or the next 2):')
    for label, want in (('during a kcp burst', True), ('otherwise', False)):
        v = sorted(r['total'] for r in rows if r['total'] is not None
                   and any(int(r['sent']) + d in burst for d in (0, 1, 2)) == want)
        if not v:
            continue
        q = lambda p: v[min(len(v) - 1, int(len(v) * p))]
        print(f'  {label:20s} n={len(v):4d}  p50 {q(.5):5.0f}  p90 {q(.9):5.0f}  p99 {q(.99):5.0f}  '
              f'max {v[-1]:5.0f} ms  slower than {a.slow_ms:.0f} ms: {sum(x > a.slow_ms for x in v)}')
