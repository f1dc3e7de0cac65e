#!/usr/bin/python3
"""report.py - turn the raw measurements of bench/compare.sh (a work
directory of .tsv/.json files) into bench/RESULTS.md on stdout."""

import json
import os
import statistics
import sys

W = sys.argv[1]
TOOLS = ["flock", "etcdctl", "cronlock", "redis-py", "node-redlock", "rlock"]
NAMES = {
    "true": "`true` (no lock)",
    "flock": "flock(1)",
    "etcdctl": "etcdctl lock",
    "cronlock": "cronlock-style (redis-cli)",
    "redis-py": "redis-py Lock",
    "node-redlock": "node-redlock",
    "rlock": "**rlock**",
    "SET/2": "redis-benchmark SET / 2",
}


def path(name):
    return os.path.join(W, name)


def rows(name):
    try:
        with open(path(name)) as f:
            return [l.rstrip("\n").split("\t") for l in f if l.strip()]
    except FileNotFoundError:
        return []


def med(xs):
    return statistics.median(xs) if xs else None


def ratio(a, b):
    if a is None or b is None or b == 0:
        return "–"
    return "%.2f×" % (a / b)


def ms(x):
    if x is None:
        return "–"
    return "%.1f ms" % x if x >= 10 else "%.2f ms" % x


def num(x, fmt="%.0f"):
    return "–" if x is None else fmt % x


out = []
p = out.append

kv = dict((r[0], r[1]) for r in rows("machine.tsv"))
ver = rows("versions.tsv")
p("# rlock next to its peers")
p("")
p("Measured by `bench/compare.sh` in one run on %s%s." %
  (kv.get("date", "?"), " (QUICK=1: fewer samples)" if kv.get("quick") == "1" else ""))
p("Machine: %s; %s; %s; load average %s." %
  (kv.get("kernel", "?"), kv.get("cpu", "?"), kv.get("memory", "?"), kv.get("load", "?")))
p("A private redis-server (persistence off) and a one-member etcd (data in")
p("/dev/shm) on loopback; every client on the same machine.  The machine has")
p("2 cores shared by the servers and the clients, so absolute numbers are")
p("modest and somewhat noisy; the ratios come from one run and are the point.")
p("")
p("| software | version |")
p("|---|---|")
for r in ver:
    p("| %s | %s |" % (r[0], r[1] if len(r) > 1 else "?"))
p("")
p("How each peer is driven: flock on a file; `etcdctl lock KEY CMD` (a")
p("session lease kept alive); a cronlock-style bash script around redis-cli")
p("(`SET NX PX`, polls every 50ms, compare-and-delete, no renewal); a")
p("redis-py `Lock` wrapper (library defaults: polls every 100ms, no renewal);")
p("a node-redlock wrapper (`redlock.using()`, which extends the lease while")
p("the command runs; retry delay 200ms ± 100ms); `rlock run KEY -- CMD`.")
p("The wrappers are in bench/compare.sh.")
p("")

# ---- 1. overhead
p("## 1. Overhead of `<tool> KEY -- true`")
p("")
ov = {}
try:
    with open(path("overhead.json")) as f:
        for r in json.load(f)["results"]:
            ov[r["command"]] = r
except (FileNotFoundError, ValueError):
    pass
runs = next(iter(ov.values()))["times"] if ov else []
p("hyperfine, no shell, 3 warm-up runs, %d runs each, uncontended." % len(runs))
p("")
p("| tool | median | mean ± σ | minus `true` | × flock |")
p("|---|---:|---:|---:|---:|")
base = ov.get("true", {}).get("median")
fl = ov.get("flock", {}).get("median")
for t in ["true"] + TOOLS:
    r = ov.get(t)
    if r is None:
        continue
    p("| %s | %s | %.2f ± %.2f ms | %s | %s |" % (
        NAMES[t], ms(r["median"] * 1000), r["mean"] * 1000, r["stddev"] * 1000,
        ms((r["median"] - base) * 1000) if base is not None and t != "true" else "–",
        ratio(r["median"], fl) if t != "true" else "–"))
p("")

# ---- 2. hand-off
ho = {}
for r in rows("handoff.tsv"):
    ho.setdefault(r[0], []).append(float(r[1]))
n_ho = max((len(v) for v in ho.values()), default=0)
p("## 2. Hand-off")
p("")
p("From the moment the holder's command ends (its last act is to stamp the")
p("time) to the moment the waiter's command starts (its first act), the")
p("waiter having waited 0.4s; both commands are `bash -c`.  %d samples each." % n_ho)
p("")
p("| tool | median | min | max | × flock |")
p("|---|---:|---:|---:|---:|")
flh = med(ho.get("flock", []))
for t in TOOLS:
    v = ho.get(t)
    if not v:
        continue
    p("| %s | %s | %s | %s | %s |" % (NAMES[t], ms(med(v)), ms(min(v)), ms(max(v)),
                                       ratio(med(v), flh)))
p("")

# ---- 3. throughput
tp = {}
for r in rows("tput.tsv"):
    tp[(r[0], int(r[1]))] = float(r[2])
p("## 3. CLI throughput")
p("")
p("`<tool> KEY -- true` in a loop, as fast as it goes, by 1 and by 8")
p("concurrent loops on the same key; completed runs per second.")
p("")
p("| tool | C = 1 | C = 8 | C = 8, × flock |")
p("|---|---:|---:|---:|")
for t in ["true"] + TOOLS:
    if (t, 1) not in tp:
        continue
    p("| %s | %s | %s | %s |" % (NAMES[t], num(tp.get((t, 1)), "%.1f"),
                                 num(tp.get((t, 8)), "%.1f"),
                                 ratio(tp.get((t, 8)), tp.get(("flock", 8))) if t != "true" else "–"))
p("")

# ---- 4. RSS
rs = {}
for r in rows("rss.tsv"):
    try:
        rs.setdefault(r[0], []).append(int(r[1]))
    except (IndexError, ValueError):
        pass
p("## 4. Peak RSS")
p("")
p("`/usr/bin/time -f %M <tool> KEY -- true` (the largest process: for the")
p("wrappers, the interpreter); median of %d." % max((len(v) for v in rs.values()), default=0))
p("")
p("| tool | peak RSS | × flock |")
p("|---|---:|---:|")
flr = med(rs.get("flock", []))
for t in ["true"] + TOOLS:
    v = rs.get(t)
    if not v:
        continue
    p("| %s | %d KiB | %s |" % (NAMES[t], med(v), ratio(med(v), flr) if t != "true" else "–"))
p("")

# ---- 5. exclusion
ex = {}
for r in rows("excl.tsv"):
    final, fails = r[3].split()
    ex[(r[0], r[1])] = (int(r[2]), int(final), int(fails))
p("## 5. Mutual exclusion")
p("")
rmw = next((v for (t, k), v in ex.items() if k == "rmw"), None)
p("*Read-modify-write*: %s processes × 3 rounds, each round takes the lock," %
  (rmw[0] // 3 if rmw else "?"))
p("reads a counter file, sleeps 10ms and writes counter + 1 (TTL 30s).")
p("*Held past the TTL*: 3 processes, each holds the lock for 3.5s with a 2s")
p("TTL (1.75×) around the same read-modify-write.  A tool that does not")
p("renew its lease lets the next holder in while the first still works, and")
p("updates are lost.")
p("")
p("| tool | read-modify-write: final / expected | failed runs | held past TTL: final / expected | lost updates | failed runs |")
p("|---|---:|---:|---:|---:|---:|")
for t in TOOLS:
    a = ex.get((t, "rmw"))
    b = ex.get((t, "ttl"))
    if a is None or b is None:
        continue
    p("| %s | %d / %d | %d | %d / %d | %d | %d |" % (
        NAMES[t], a[1], a[0], a[2], b[1], b[0], b[0] - b[1], b[2]))
p("")

nb = ex.get(("node-redlock", "ttl"))
if nb and nb[1] < nb[0]:
    p("node-redlock renews with `using()`, yet loses updates here: in")
    p("5.0.0-beta.2 `acquire()` dates the lease from its *first* attempt")
    p("(`start + duration - drift`), so a holder that waited longer than the")
    p("TTL gets a lock whose expiration is already past; the first automatic")
    p("extension then refuses (\"Cannot extend an already-expired lock\") and")
    p("the command runs without a lease.")
    p("")

# ---- 6. library level
lib = {}
cpu = {}
srv = {}
for r in rows("lib.tsv"):
    try:
        lib.setdefault((r[0], int(r[1])), []).append(float(r[2]))
        srv.setdefault((r[0], int(r[1])), []).append(float(r[3]))
        if r[0] == "rlock":
            f = r[4].split()
            cpu.setdefault(int(r[1]), []).append((float(f[0]), float(f[1])))
    except (IndexError, ValueError):
        pass
reps = max((len(v) for v in lib.values()), default=0)
p("## 6. Library level: lock cycles per second")
p("")
p("C clients in one process, each with its own connection and a lock name of")
p("its own (no contention), doing acquire then release as fast as they go:")
p("`rlock bench -c C` (the acquire and release scripts `rlock run` uses),")
p("node-redlock (`acquire`/`release`, one Redlock and one ioredis client per")
p("loop, async) and redis-py (`Lock.acquire`/`release`, one thread and one")
p("connection per client).  The ceiling is `redis-benchmark -t set -c C`")
p("divided by 2, a cycle being two round trips.  Median of %d rounds." % reps)
p("Below, the server's CPU time per cycle (INFO cpu before and after each")
p("run, so it includes connecting): the ceiling's cycle is two SETs.")
p("")
p("| C | SET/2 | rlock | % of SET/2 | node-redlock | % | redis-py | % |")
p("|---:|---:|---:|---:|---:|---:|---:|---:|")
for c in (1, 8, 50):
    s2 = med(lib.get(("SET/2", c), []))
    cells = []
    for t in ("rlock", "node-redlock", "redis-py"):
        v = med(lib.get((t, c), []))
        cells.append(num(v))
        cells.append("–" if v is None or not s2 else "%.0f%%" % (100 * v / s2))
    p("| %d | %s | %s |" % (c, num(s2), " | ".join(cells)))
p("")
p("| C | server µs per cycle: 2 × SET | rlock | node-redlock | redis-py |")
p("|---:|---:|---:|---:|---:|")
for c in (1, 8, 50):
    p("| %d | %s |" % (c, " | ".join(num(med(srv.get((t, c), [])), "%.1f")
                                     for t in ("SET/2", "rlock", "node-redlock", "redis-py"))))
p("")
if 50 in cpu:
    b = med([x[0] for x in cpu[50]])
    s = med([x[1] for x in cpu[50]])
    p("CPU during `rlock bench -c 50` (median): the bench process %.2fs, "
      "redis-server %.2fs, for %ss runs." % (b, s, "2"))
    p("")

# ---- 7. rlock bench
bj = []
try:
    with open(path("bench.jsonl")) as f:
        for l in f:
            l = l.strip()
            if l:
                bj.append(json.loads(l))
except FileNotFoundError:
    pass
p("## 7. rlock bench across clients and contention")
p("")
p("`rlock bench -c C -k K -d 2s` (K = C: no contention; K = 1: every client")
p("contends for one lock, waiting on the release channel).  Efficiency is")
p("cycles/s ÷ (PING/s ÷ 2) with the same clients.  Median run of each by")
p("cycles/s.")
p("")
p("| C | K | cycles/s | PING/s | efficiency | acquire tries per cycle | acquire p50 / p99 | hand-off p50 / p99 | longest wait | errors | violations | cpu bench / server |")
p("|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
groups = {}
for d in bj:
    groups.setdefault((d["clients"], d["keys"]), []).append(d)
for (c, k) in sorted(groups, key=lambda x: (x[0], -x[1])):
    g = sorted(groups[(c, k)], key=lambda d: d["cycles_per_s"])
    d = g[len(g) // 2]
    L = d["latency_us"]

    def us(x):
        return "%.0fµs" % x if x < 1000 else "%.1fms" % (x / 1000)
    ho_ = "%s / %s" % (us(L["handoff"]["p50"]), us(L["handoff"]["p99"])) if L["handoff"]["count"] else "–"
    p("| %d | %d | %.0f | %.0f | %.0f%% | %.1f | %s / %s | %s | %s | %d | %d | %.2fs / %s |" % (
        c, k, d["cycles_per_s"], d["ping"]["per_s"] if d["ping"] else 0,
        100 * (d["efficiency"] or 0), d["attempts"] / max(d["cycles"], 1),
        us(L["acquire"]["p50"]), us(L["acquire"]["p99"]),
        ho_, us(d["longest_wait_us"]), d["errors"]["total"], d["violations"]["total"],
        d["cpu_s"]["bench"],
        "%.2fs" % d["cpu_s"]["server"] if d["cpu_s"]["server"] is not None else "?"))
p("")
p("Under contention every waiter is subscribed to the release channel and")
p("tries again on each release, as `rlock run` does: a hand-off costs one")
p("acquire try per waiter (the tries-per-cycle column), which is what limits")
p("K = 1 at large C.")
p("")

# ---- targets
p("## Targets (issue 3)")
p("")


def mark(ok):
    return "met" if ok else "**missed**"


rl = ov.get("rlock", {}).get("median")
if rl and fl:
    p("- `rlock run k -- true` ≤ 1.25× flock: %.2f× — %s" % (rl / fl, mark(rl / fl <= 1.25)))
rh = med(ho.get("rlock", []))
eh = med(ho.get("etcdctl", []))
if rh and flh:
    p("- hand-off ≤ 1.5× flock and below etcdctl: %.2f× flock, %s vs %s for etcdctl — %s" % (
        rh / flh, ms(rh), ms(eh), mark(rh / flh <= 1.5 and (eh is None or rh < eh))))
rr = med(rs.get("rlock", []))
if rr and flr:
    p("- peak RSS ≤ 2× flock: %.2f× — %s" % (rr / flr, mark(rr / flr <= 2)))
s2 = med(lib.get(("SET/2", 50), []))
r50 = med(lib.get(("rlock", 50), []))
n50 = med(lib.get(("node-redlock", 50), []))
if s2 and r50:
    p("- bench at C=50, K=C ≥ 90%% of SET/2: %.0f%% (node-redlock %s) — %s" % (
        100 * r50 / s2, "%.0f%%" % (100 * n50 / s2) if n50 else "?", mark(r50 / s2 >= 0.9)))
    a = med(srv.get(("rlock", 50), []))
    z = med(srv.get(("SET/2", 50), []))
    n = med(srv.get(("node-redlock", 50), []))
    if a and z and r50 / s2 < 0.9:
        p("  The server, not the bench, sets this rate: it spends %.1fµs of CPU per"
          % a)
        p("  rlock cycle against %.1fµs for two SETs (%.2f×; node-redlock's scripts"
          % (z, a / z))
        p("  %s), while the bench process uses about half the server's CPU." %
          ("%.1fµs, %.2f×" % (n, n / z) if n else "?"))
if 50 in cpu:
    b = med([x[0] for x in cpu[50]])
    s = med([x[1] for x in cpu[50]])
    p("- the bench process uses less CPU than redis-server: %.2fs vs %.2fs — %s" % (b, s, mark(b < s)))
ok = all(d["violations"]["total"] == 0 for d in bj)
p("- no violation in any rlock bench run: %s" % mark(ok))
a = ex.get(("rlock", "rmw"))
b = ex.get(("rlock", "ttl"))
if a and b:
    p("- rlock loses no update in section 5: %s" % mark(a[1] == a[0] and b[1] == b[0]))
p("")
print("\n".join(out))
