#!/usr/bin/env python3
"""Samplers for scripts/compare-cost (Linux /proc only, no dependencies).

  sample.py threads PID                 list thread ids and names
  sample.py cycles PID NAME --cycles N [--timeout S] [--gap G] [--after-ns T]
      CPU time per recalculation cycle of the thread(s) of PID whose name
      starts with NAME, from /proc/PID/task/TID/schedstat (ns on CPU), sampled
      every 20 ms. A cycle is a burst of CPU separated from the next by at
      least G seconds with no CPU. A burst already running when sampling
      starts is dropped. Prints 'cycle_ms=<a>,<b>,...', 'median_ms=<m>' and
      'mean_ms=<m>' (the mean counts gpufair's periodic job_list walk, one
      cycle in 10, at its weight).
  sample.py rss PID --seconds T [--interval I] [--warmup W]
      VmRSS of PID every I s for T s. Prints 'rss_before_mb', 'rss_after_mb'
      (medians of the 10 s after the warm-up and of the last 10 s),
      'rss_growth_mb', 'rss_max_mb' and 'rss_samples_mb=...'.
"""
import argparse
import os
import statistics
import sys
import time


def threads(pid):
    out = []
    for tid in os.listdir(f"/proc/{pid}/task"):
        try:
            with open(f"/proc/{pid}/task/{tid}/comm") as f:
                out.append((int(tid), f.read().strip()))
        except OSError:
            pass
    return sorted(out)


def cpu_ns(pid, tids):
    total = 0
    for tid in tids:
        try:
            with open(f"/proc/{pid}/task/{tid}/schedstat") as f:
                total += int(f.read().split()[0])
        except OSError:
            pass
    return total


def cmd_cycles(a):
    tids = [t for t, n in threads(a.pid) if n.startswith(a.name)]
    if not tids:
        names = sorted({n for _, n in threads(a.pid)})
        print(f"sample.py: no thread named {a.name}* in pid {a.pid}; threads: {' '.join(names)}",
              file=sys.stderr)
        return 1
    print(f"sample.py: thread(s) {a.name}: {tids}", file=sys.stderr)
    t_start = time.monotonic()
    last = cpu_ns(a.pid, tids)
    burst_ns, burst_t0, last_busy = 0, None, None
    first_burst_dropped = False
    cycles = []
    while len(cycles) < a.cycles and time.monotonic() - t_start < a.timeout:
        time.sleep(0.02)
        now = time.monotonic()
        v = cpu_ns(a.pid, tids)
        d, last = v - last, v
        if d > 0:
            if burst_t0 is None:
                burst_t0, burst_ns = now, 0
                # A burst that is under way in the first samples is partial.
                if now - t_start < 0.1 and not first_burst_dropped:
                    burst_t0 = -1.0
            burst_ns += d
            last_busy = now
        elif burst_t0 is not None and now - last_busy >= a.gap:
            if burst_t0 >= 0:
                cycles.append(burst_ns / 1e6)
                print(f"sample.py: cycle {len(cycles)}: {burst_ns / 1e6:.1f} ms CPU over "
                      f"{last_busy - burst_t0:.2f} s wall", file=sys.stderr)
            first_burst_dropped = True
            burst_t0 = None
    if len(cycles) < a.cycles:
        print(f"sample.py: only {len(cycles)} of {a.cycles} cycles within {a.timeout} s",
              file=sys.stderr)
        if not cycles:
            return 1
    print("cycle_ms=" + ",".join(f"{c:.2f}" for c in cycles))
    print(f"median_ms={statistics.median(cycles):.2f}")
    print(f"mean_ms={statistics.fmean(cycles):.2f}")
    return 0


def rss_kb(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return 0


def cmd_rss(a):
    t0 = time.monotonic()
    samples = []  # (t, kb)
    while True:
        t = time.monotonic() - t0
        samples.append((t, rss_kb(a.pid)))
        if t >= a.seconds:
            break
        time.sleep(min(a.interval, max(0.0, a.seconds - t)))
    warm = min(a.warmup, a.seconds / 4)
    before = [kb for t, kb in samples if warm <= t <= warm + 10] or [samples[0][1]]
    after = [kb for t, kb in samples if t >= samples[-1][0] - 10] or [samples[-1][1]]
    b, e = statistics.median(before) / 1024, statistics.median(after) / 1024
    print(f"rss_before_mb={b:.1f}")
    print(f"rss_after_mb={e:.1f}")
    print(f"rss_growth_mb={e - b:.1f}")
    print(f"rss_max_mb={max(kb for _, kb in samples) / 1024:.1f}")
    print("rss_samples_mb=" + ",".join(f"{kb / 1024:.0f}" for _, kb in samples))
    return 0


def main():
    p = argparse.ArgumentParser()
    sub = p.add_subparsers(dest="cmd", required=True)
    s = sub.add_parser("threads"); s.add_argument("pid", type=int)
    s = sub.add_parser("cycles"); s.add_argument("pid", type=int); s.add_argument("name")
    s.add_argument("--cycles", type=int, default=3); s.add_argument("--timeout", type=float, default=400)
    s.add_argument("--gap", type=float, default=5)
    s = sub.add_parser("rss"); s.add_argument("pid", type=int)
    s.add_argument("--seconds", type=float, required=True); s.add_argument("--interval", type=float, default=2)
    s.add_argument("--warmup", type=float, default=30)
    a = p.parse_args()
    if a.cmd == "threads":
        for t, n in threads(a.pid):
            print(t, n)
        return 0
    return cmd_cycles(a) if a.cmd == "cycles" else cmd_rss(a)


if __name__ == "__main__":
    sys.exit(main())
