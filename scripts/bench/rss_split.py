#!/usr/bin/env python3
"""Where a serve process's resident set is at its peak (docs/benchmarks.md, "RSS against the budget").

Waits for the java process whose command line holds PATTERN (e.g. build/pool-flood), then until it
exits reads /proc/PID/smaps_rollup every 10 ms, keeping the split (anonymous, file) at the highest
RSS; at each new high 20 MB over the last it also reads /proc/PID/smaps for the ten largest
anonymous mappings and the anonymous bytes by kind of mapping (glibc's 64 MiB arenas, the main
heap, other mappings; the JVM's heap is one of the others). Its first read comes as the JVM
starts, before the heap is touched: compare splits at the peak, not growth over that read. With --nmt it also runs `jcmd PID VM.native_memory
summary` every 3 s (the server must run with -XX:NativeMemoryTracking=summary) and keeps the
report with the largest committed total. Prints the peak's split in MB.

    scripts/bench/rss_split.py build/pool-flood [--nmt] > build/bench/rss_split.log
"""
import os, subprocess, sys, time

def find(pattern):
    me = os.getpid()
    for d in os.listdir('/proc'):
        if not d.isdigit() or int(d) == me:
            continue
        try:
            cmd = open(f'/proc/{d}/cmdline', 'rb').read().replace(b'\0', b' ').decode()
        except OSError:
            continue
        if pattern in cmd and 'dev.mlxring.ingress.cli.Main' in cmd and ' serve ' in cmd:
            return int(d)
    return None

def rollup(pid):
    out = {}
    for line in open(f'/proc/{pid}/smaps_rollup'):
        parts = line.split()
        if len(parts) >= 3 and parts[-1] == 'kB':
            out[parts[0].rstrip(':')] = int(parts[1]) * 1024
    return out

ARENA = 64 << 20  # glibc's non-main arenas: heaps of at most 64 MiB at 64 MiB-aligned addresses

def kind(line):
    parts = line.split()
    start, end = (int(x, 16) for x in parts[0].split('-'))
    if len(parts) > 5:
        return parts[5]
    if start % ARENA == 0 and end - start <= ARENA:
        return 'glibc arena (64 MiB-aligned heap)'
    return 'other anonymous mapping'

def top_anon(pid, n=10):
    """The n largest anonymous mappings and the anonymous bytes by kind of mapping."""
    regions, cur = [], None
    for line in open(f'/proc/{pid}/smaps'):
        first = line.split()[0]
        if '-' in first and not first.endswith(':'):
            cur = [line.strip(), 0]
            regions.append(cur)
        elif first == 'Anonymous:' and cur is not None:
            cur[1] = int(line.split()[1]) * 1024
    by_kind = {}
    for line, anon in regions:
        by_kind[kind(line)] = by_kind.get(kind(line), 0) + anon
    regions.sort(key=lambda r: -r[1])
    return regions[:n], by_kind

def main():
    pattern, nmt = sys.argv[1], '--nmt' in sys.argv
    pid = None
    while pid is None:
        pid = find(pattern)
        time.sleep(0.05)
    base = rollup(pid)
    peak, peak_split, peak_regions, best_nmt, best_committed = base['Rss'], base, ([], {}), '', 0
    last_jcmd = 0.0
    regions_at = base['Rss']
    try:
        while True:
            r = rollup(pid)
            if r['Rss'] > peak:
                peak, peak_split = r['Rss'], r
                if r['Rss'] > regions_at + (20 << 20):
                    regions_at = r['Rss']
                    peak_regions = top_anon(pid)
            if nmt and time.time() - last_jcmd > 3:
                last_jcmd = time.time()
                rep = subprocess.run(['jcmd', str(pid), 'VM.native_memory', 'summary', 'scale=MB'],
                                     capture_output=True, text=True).stdout
                for line in rep.splitlines():
                    if line.startswith('Total:'):
                        c = int(line.split('committed=')[1].split('MB')[0])
                        if c > best_committed:
                            best_committed, best_nmt = c, rep
            time.sleep(0.01)
    except (OSError, KeyError):
        pass
    mb = lambda b: f'{b / 1e6:.1f}'
    for k in ('Rss', 'Anonymous', 'Pss_File', 'Pss_Shmem'):
        print(f'{k:10s} at peak {mb(peak_split.get(k, 0)):>8s} MB')
    print('largest anonymous mappings at the last 20 MB step of the peak:')
    for line, anon in peak_regions[0]:
        print(f'  {mb(anon):>8s} MB  {line}')
    print('anonymous bytes by kind of mapping there:')
    for k, b in sorted(peak_regions[1].items(), key=lambda kv: -kv[1]):
        if b >= 1 << 20:
            print(f'  {mb(b):>8s} MB  {k}')
    if best_nmt:
        print('JVM native memory, the report with the largest committed total:')
        print(best_nmt)

main()
