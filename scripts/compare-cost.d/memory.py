#!/usr/bin/env python3
"""Where a process's resident memory lies (scripts/compare-cost runs it on
slurmctld at the full backlog). Linux /proc only; root.

  memory.py PID [--stop] [--gdb] [--top N]

From /proc/PID/smaps: resident memory of the main heap ([heap]), of glibc's
per-thread malloc arenas (anonymous heaps at 64 MiB-aligned addresses, each
found by its heap_info header), of the thread stacks, of other anonymous
mappings (malloc's own mmap()ed chunks, of at least the mmap threshold), and
of file mappings (by file).

For every arena (the main one too), its chunks are walked in
/proc/PID/mem: bytes in use, bytes free, and how much of the free memory is
resident (/proc/PID/pagemap: pages wholly inside free chunks and present):
memory malloc keeps that a malloc_trim() would give back. Also the chunk
sizes holding the most bytes in use, to tell per-job allocations (tens of
thousands of one size) from a few big arrays.

--stop holds the process with SIGSTOP while reading (a consistent walk; the
process continues after). --gdb names the threads of each arena (glibc's
thread_arena, through gdb and libc6-dbg; skipped without them).

Output: key=value lines (mem_* in MiB), then a readable report, all to
stdout. Assumes 64-bit glibc >= 2.35 (heap_info 48 bytes, malloc_state 2200).
"""
import argparse
import collections
import os
import re
import shutil
import signal
import struct
import subprocess
import sys

PAGE = os.sysconf("SC_PAGE_SIZE")
HEAP_MAX = 64 << 20          # glibc HEAP_MAX_SIZE on 64-bit
HEAP_INFO = 48               # sizeof(heap_info), glibc 2.35+
MALLOC_STATE = 2200          # sizeof(struct malloc_state)
MB = 1 << 20


def smaps(pid):
    maps, cur = [], None
    with open(f"/proc/{pid}/smaps") as f:
        for line in f:
            m = re.match(r"^([0-9a-f]+)-([0-9a-f]+) (\S+) \S+ \S+ \d+\s*(.*)$", line)
            if m:
                cur = {"start": int(m[1], 16), "end": int(m[2], 16), "perms": m[3],
                       "path": m[4].strip(), "Rss": 0}
                maps.append(cur)
            elif cur is not None and line.startswith("Rss:"):
                cur["Rss"] = int(line.split()[1]) * 1024
    return maps


class Mem:
    def __init__(self, pid):
        self.f = open(f"/proc/{pid}/mem", "rb", buffering=0)
        self.pm = open(f"/proc/{pid}/pagemap", "rb", buffering=0)

    def read(self, addr, n):
        self.f.seek(addr)
        out = bytearray()
        while len(out) < n:
            b = self.f.read(min(n - len(out), 64 << 20))
            if not b:
                break
            out += b
        return bytes(out)

    def u64(self, addr):
        return struct.unpack("<Q", self.read(addr, 8))[0]

    def present(self, addr, n):
        """Set of present page numbers in [addr, addr+n)."""
        first, last = addr // PAGE, (addr + n - 1) // PAGE
        self.pm.seek(first * 8)
        raw = self.pm.read((last - first + 1) * 8)
        out = set()
        for i, (v,) in enumerate(struct.iter_unpack("<Q", raw)):
            if v >> 63:
                out.add(first + i)
        return out


def walk(mem, start, end, top_addr=None):
    """Chunks of one heap from start (a chunk header) to end. Returns
    in_use bytes, free chunks [(addr, size)], top (addr, size), size counter."""
    buf = mem.read(start, end - start)
    p, n = 0, len(buf)
    in_use, free, sizes, top = 0, [], collections.Counter(), None
    while p + 16 <= n:
        size = struct.unpack_from("<Q", buf, p + 8)[0] & ~7
        if size < 16 or p + size > n:
            break
        nxt = p + size
        if (top_addr is not None and start + p == top_addr) or nxt + 16 > n:
            top = (start + p, size)
            break
        if struct.unpack_from("<Q", buf, nxt + 8)[0] & 1:
            in_use += size
            sizes[size] += 1
        else:
            free.append((start + p, size))
        p = nxt
    return in_use, free, top, sizes


def free_resident(free, pages):
    """Bytes of present pages lying wholly inside free chunks (and the top)."""
    total = 0
    for addr, size in free:
        a = (addr + 32 + PAGE - 1) // PAGE  # after the chunk's header and links
        b = (addr + size) // PAGE
        total += sum(PAGE for pg in range(a, b) if pg in pages)
    return total


def gdb_arenas(pid):
    """arena address -> thread names, and main_arena's address (or {}, None)."""
    if not shutil.which("gdb"):
        return {}, None
    try:
        out = subprocess.run(
            ["gdb", "-p", str(pid), "-batch", "-nx",
             "-ex", "thread apply all print (void *)thread_arena",
             "-ex", "print (void *)&main_arena"],
            capture_output=True, text=True, timeout=120).stdout
    except (OSError, subprocess.TimeoutExpired):
        return {}, None
    arenas, lwp, main = collections.defaultdict(list), None, None
    for line in out.splitlines():
        m = re.match(r'^Thread \d+ .*\(LWP (\d+)\)(?: "([^"]*)")?', line)
        if m:
            lwp = m[2] or m[1]
            continue
        m = re.match(r"^\$\d+ = \(void \*\) (0x[0-9a-f]+)", line)
        if m and lwp is not None:
            arenas[int(m[1], 16)].append(lwp)
            lwp = None
        elif m:
            main = int(m[1], 16)
    return arenas, main


def main():
    p = argparse.ArgumentParser()
    p.add_argument("pid", type=int)
    p.add_argument("--stop", action="store_true")
    p.add_argument("--gdb", action="store_true")
    p.add_argument("--top", type=int, default=6)
    a = p.parse_args()
    names, main_arena = gdb_arenas(a.pid) if a.gdb else ({}, None)
    if a.stop:
        os.kill(a.pid, signal.SIGSTOP)
    try:
        maps = smaps(a.pid)
        mem = Mem(a.pid)
        report, cat = [], collections.Counter()
        files = collections.Counter()
        arenas = []  # (label, heaps [(start, end)], first chunk addr, top addr)
        by_start = {m["start"]: m for m in maps}
        heap_of = {}
        for i, m in enumerate(maps):
            if m["path"] == "[heap]":
                main_heap = next((x for x in arenas if x[0] == "main"), None)
                if main_heap and main_heap[1][0][1] == m["start"]:  # [heap] split in two VMAs
                    main_heap[1][0] = (main_heap[1][0][0], m["end"])
                    main_heap[4].append(m)
                else:
                    arenas.append(["main", [(m["start"], m["end"])], m["start"], None, [m]])
                heap_of[m["start"]] = next(x for x in arenas if x[0] == "main")
            elif not m["path"] and "rw" in m["perms"] and m["start"] % HEAP_MAX == 0:
                ar = mem.u64(m["start"])
                hsize = mem.u64(m["start"] + 16)
                if not (0 < hsize <= HEAP_MAX):
                    continue
                end = m["start"] + hsize
                if ar == m["start"] + HEAP_INFO:  # the arena's first heap
                    first = m["start"] + HEAP_INFO + MALLOC_STATE
                    first += (-(first + 16)) % 16
                    top = mem.u64(ar + 96)  # malloc_state.top
                    arenas.append([f"0x{ar:x}", [(first, end)], first, top, [m]])
                else:  # a later heap of a grown arena
                    first = m["start"] + HEAP_INFO
                    arenas.append([f"0x{ar:x}+", [(first, end)], first, None, [m]])
                heap_of[m["start"]] = arenas[-1]
        # Classify every mapping.
        prev = None
        for m in maps:
            rss = m["Rss"]
            if m["start"] in heap_of:
                cat["arenas" if heap_of[m["start"]][0] != "main" else "heap"] += rss
            elif m["path"] == "[stack]":
                cat["stacks"] += rss
            elif m["path"].startswith("/"):
                files[os.path.basename(m["path"])] += rss
                cat["files"] += rss
            elif m["path"]:
                cat["other"] += rss
            elif prev and prev["end"] == m["start"] and prev["perms"].startswith("---") \
                    and not prev["path"] and (prev["end"] - prev["start"]) <= 64 << 10:
                cat["stacks"] += rss  # a thread stack above its guard page
            else:
                cat["anon_other"] += rss
                if rss >= MB:
                    report.append(f"  anonymous mapping 0x{m['start']:x} size {(m['end'] - m['start']) / MB:.1f} MiB rss {rss / MB:.1f} MiB")
            prev = m
        total = sum(m["Rss"] for m in maps)
        print(f"mem_rss_mb={total / MB:.1f}")
        for k in ("heap", "arenas", "stacks", "anon_other", "files", "other"):
            print(f"mem_{k}_mb={cat[k] / MB:.1f}")
        # Walk every arena. Which pages are resident is read first: reading
        # a never-touched page through /proc/PID/mem maps the zero page
        # there, which pagemap then shows as present.
        lines = []
        sum_free_res = 0
        present = [mem.present(h[1][0][0], h[1][0][1] - h[1][0][0]) for h in arenas]
        for (label, heaps, first, top, ms), pages in zip(arenas, present):
            (start, end), = heaps
            rss = sum(x["Rss"] for x in ms)
            in_use, free, topc, sizes = walk(mem, first, end, top)
            fr = free_resident(free + ([topc] if topc else []), pages)
            sum_free_res += fr
            addr = int(label.rstrip("+"), 16) if label.startswith("0x") else main_arena
            who = ",".join(sorted(set(names.get(addr, [])))) if addr else ""
            lines.append(f"arena {label}{' [' + who + ']' if who else ''}: rss {rss / MB:.1f} MiB, "
                         f"in use {in_use / MB:.1f} MiB, free {sum(s for _, s in free) / MB:.1f} MiB "
                         f"(+top {(topc[1] if topc else 0) / MB:.1f}), free and resident {fr / MB:.1f} MiB")
            big = sorted(sizes.items(), key=lambda kv: -kv[0] * kv[1])[:a.top]
            lines.append("    most bytes in chunks of: " +
                         ", ".join(f"{s} B x {c} = {s * c / MB:.1f} MiB" for s, c in big))
        print(f"mem_free_resident_mb={sum_free_res / MB:.1f}")
        print(f"mem_arena_count={sum(1 for x in arenas if not x[0].endswith('+'))}")
        print("--- report")
        print("\n".join(lines))
        print("files with the most resident memory: " +
              ", ".join(f"{k} {v / MB:.1f} MiB" for k, v in files.most_common(a.top)))
        print("\n".join(report))
    finally:
        if a.stop:
            os.kill(a.pid, signal.SIGCONT)
    return 0


if __name__ == "__main__":
    sys.exit(main())
