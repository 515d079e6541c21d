#!/usr/bin/env python3
"""CPU of the bench's processes once a second, to line up with P1 timelines.

    python3 tests/bench/cpu_sampler.py cpu.txt &

Each line: unix time, then pid:command:ticks (utime + stime, 1/100 s) for
every kcp, kube-apiserver, etcd, syncweave, api-syncagent and bench process.
"""
import os
import sys
import time

NAMES = ('kcp', 'kube-apiserver', 'etcd', 'syncweave', 'api-syncagent', 'bench')
out = open(sys.argv[1], 'a')
while True:
    t = time.time()
    rows = []
    for pid in os.listdir('/proc'):
        if not pid.isdigit():
            continue
        try:
            s = open(f'/proc/{pid}/stat').read()
        except OSError:
            continue
        comm = s[s.index('(') + 1:s.rindex(')')]
        if comm in NAMES:
            f = s[s.rindex(')') + 2:].split()
            rows.append(f'{pid}:{comm}:{int(f[11]) + int(f[12])}')
    out.write(f'{t:.3f} ' + ' '.join(rows) + '\n')
    out.flush()
    time.sleep(1 - (time.time() - t) % 1)
