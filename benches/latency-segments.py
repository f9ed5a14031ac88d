#!/usr/bin/env python3
"""Where a move's latency goes: the latency bench's moves laid beside a trace
of the scheduler.

    EB_LATENCY_MOVES=400 EB_LATENCY_TIMES=/tmp/times.txt \
      perf sched record -k CLOCK_MONOTONIC -a -o /tmp/sched.data -- \
      target/release/deps/latency-<hash> --bench
    perf script -i /tmp/sched.data -F comm,tid,cpu,time,event,trace > /tmp/sched.txt
    python3 benches/latency-segments.py /tmp/sched.txt /tmp/times.txt

(add EB_LATENCY_ATTACK=1 for a run under attack; run as root, or with
perf_event_paranoid at most 1). Each move, from the instant the emulator wrote
its placement's bytes to the instant its MoveMade reached the harness's D-Bus
client, is cut where the scheduler shows the next party woken:

    tty       the bytes through the kernel's pty (a kworker) until one of the
              daemon's threads is woken for them;
    daemon    the daemon's work until it wakes the broker (dbus-daemon) with
              the signal;
    broker    the broker's work until it wakes the harness's client;
    listener  the client's work until it notes the arrival (the harness's side).

Prints the median, p90, p99 and maximum of each, and the slowest moves.
"""
import bisect
import re
import sys

LINE = re.compile(r'^\s*(.+?)\s+(\d+)\s+\[(\d+)\]\s+([\d.]+):\s+sched:(\w+):\s+(.*)$')
WAKEE = re.compile(r'comm=(.+?) pid=(\d+)')
NEXT = re.compile(r'next_comm=(.+?) next_pid=(\d+)')


def events(path):
    """(time, kind, by comm, by tid, whom comm, whom tid), in time order."""
    out = []
    with open(path, errors='replace') as f:
        for line in f:
            m = LINE.match(line)
            if not m:
                continue
            comm, tid, _cpu, t, kind, rest = m.groups()
            if kind in ('sched_waking', 'sched_wakeup_new'):
                w = WAKEE.search(rest)
            elif kind == 'sched_switch':
                w = NEXT.search(rest)
                kind = 'in'
            else:
                continue
            if w:
                out.append((float(t), kind, comm, int(tid), w.group(1), int(w.group(2))))
    out.sort()
    return out


def quantile(values, p):
    v = sorted(x for x in values if x is not None)
    return v[min(len(v) - 1, int(len(v) * p))] if v else float('nan')


def main():
    if len(sys.argv) != 3:
        sys.exit('usage: latency-segments.py PERF_SCRIPT_TEXT TIMES_FILE')
    ev = events(sys.argv[1])
    # The daemon's threads: its main thread's, and every thread they started.
    daemon = {e[3] for e in ev if e[2] == 'eboard-bridge'}
    for e in ev:
        if e[1] == 'sched_wakeup_new' and e[3] in daemon:
            daemon.add(e[5])
    if not daemon:
        sys.exit('no thread named eboard-bridge in the trace: was the daemon binary traced?')
    times = [e[0] for e in ev]
    rows = []
    with open(sys.argv[2]) as f:
        for line in f:
            if line.startswith('#') or not line.strip():
                continue
            written, arrived, ms = map(float, line.split())
            win = ev[bisect.bisect_left(times, written):bisect.bisect_right(times, arrived)]
            woken = next((e[0] for e in win if e[1] in ('sched_waking', 'in')
                          and e[5] in daemon and e[4] != 'eboard-http'), None)
            broker = next((e[0] for e in win if e[1] == 'sched_waking'
                           and e[3] in daemon and e[4] == 'dbus-daemon'), None)
            client = next((e[0] for e in win if e[1] == 'sched_waking' and e[2] == 'dbus-daemon'
                           and e[5] not in daemon and (broker is None or e[0] >= broker)), None)

            def ms_between(a, b):
                return None if a is None or b is None else (b - a) * 1e3
            rows.append((ms, ms_between(written, woken), ms_between(woken, broker),
                         ms_between(broker, client), ms_between(client, arrived)))
    if not rows:
        sys.exit('no move in the times file')
    print(f'{len(rows)} moves, ms')
    for name, k in [('total', 0), ('tty', 1), ('daemon', 2), ('broker', 3), ('listener', 4)]:
        v = [r[k] for r in rows]
        missing = sum(x is None for x in v)
        print(f'  {name:9s} median {quantile(v, .5):.3f}  p90 {quantile(v, .9):.3f}  '
              f'p99 {quantile(v, .99):.3f}  max {quantile(v, 1):.3f}'
              + (f'  ({missing} not found in the trace)' if missing else ''))
    print('  slowest: total = tty + daemon + broker + listener')
    for r in sorted(rows, key=lambda r: r[0], reverse=True)[:8]:
        print('    ' + ' '.join('-' if x is None else f'{x:.3f}' for x in r))


main()
