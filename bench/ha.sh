#!/usr/bin/env bash
# ha.sh - what Sentinel and Cluster cost rlock, in one run on one machine,
# against private servers on free loopback ports (never 6379), all stopped
# by PID on exit: a master with one replica and three sentinels, and a
# cluster of three masters.
#
#   1  `rlock run k -- true` on the master directly (the baseline), through
#      the sentinel URL, through the cluster node that owns k's slot, and
#      through one that does not (MOVED, then the owner);
#   2  hand-off from a holder's command to a waiting `rlock run`: the
#      baseline, through the sentinels, and through the cluster with the
#      holder and the waiter on two nodes that do not own the slot;
#   3  `rlock bench -c 50 -d 3s` (50 names, and 1 name) on the master and
#      through a cluster node;
#   4  the release message: PUBLISH (what rlock sends: the cluster bus
#      carries it to every node) against SPUBLISH (only the slot's shard),
#      as the CPU all three masters spend per message.
#
# The timed commands of 1 run in ONE loop, each round in a new random
# order, so that the noise of a shared machine falls on all alike; figures
# are medians, ratios are medians of the per-round ratios.
#
#   bench/ha.sh             the full run (2-4 minutes)
#   QUICK=1 bench/ha.sh     fewer rounds, to try it
#
# Writes bench/RESULTS-ha.md and prints it.  Needs redis-server,
# redis-sentinel, redis-cli, redis-benchmark and python3; installs nothing;
# make test never runs this.

set -u
cd "$(dirname "$0")/.." || exit 1
ROOT=$PWD
OUT=$ROOT/bench/RESULTS-ha.md
QUICK=${QUICK:-0}
if ((QUICK)); then
	ROUNDS=30 HANDOFFS=5 BENCH_DUR=1s PUBS=20000
else
	ROUNDS=${ROUNDS:-200} HANDOFFS=${HANDOFFS:-20} BENCH_DUR=3s PUBS=200000
fi

say() { printf 'ha-bench: [%3ds] %s\n' "$SECONDS" "$*" >&2; }
die() {
	say "$*"
	exit 1
}

for t in redis-server redis-sentinel redis-cli redis-benchmark python3; do
	command -v "$t" >/dev/null || die "$t is needed (apt-get install redis-server redis-sentinel redis-tools python3)"
done
[[ -x ./build/rlock ]] || make build/rlock >&2 || die "cannot build ./build/rlock"
for v in $(compgen -e); do
	case $v in REDIS_* | RLOCK_* | REDISCLI_*) unset "$v" ;; esac
done

tmp=$(mktemp -d "${TMPDIR:-/tmp}/rlock-ha.XXXXXX") || exit 1
pids=()
cleanup() {
	local p
	for p in "${pids[@]}"; do
		kill "$p" 2>/dev/null
	done
	for p in "${pids[@]}"; do
		wait "$p" 2>/dev/null
	done
	rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

free_port() {
	! (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null
}

# A port whose +10000 (a cluster bus) is free too: 20000-31999.
pick_port() {
	local p
	while :; do
		p=$((20000 + (RANDOM * 32768 + RANDOM) % 12000))
		free_port "$p" && free_port $((p + 10000)) && break
	done
	echo "$p"
}

# start NAME PORT ARGS...: a redis-server in $tmp/NAME, in the foreground
# of a background job, so that its PID is ours.
start() {
	local name=$1 port=$2 n
	shift 2
	mkdir -p "$tmp/$name"
	redis-server --bind 127.0.0.1 --port "$port" --save '' --appendonly no \
		--dir "$tmp/$name" --logfile "$tmp/$name/log" "$@" </dev/null >/dev/null 2>&1 &
	pids+=($!)
	for ((n = 0; n < 500; n++)); do
		redis-cli -p "$port" PING >/dev/null 2>&1 && return 0
		sleep 0.01
	done
	die "redis-server $name did not start: $(tail -3 "$tmp/$name/log")"
}

poll() {
	local n=$(($1 * 50))
	shift
	while ((n-- > 0)); do
		"$@" && return 0
		sleep 0.02
	done
	return 1
}

say "starting a master, a replica and three sentinels"
M=$(pick_port)
start master "$M" --repl-diskless-sync-delay 0
R=$(pick_port)
start replica "$R" --repl-diskless-sync-delay 0 --replicaof 127.0.0.1 "$M"
S=()
for i in 1 2 3; do
	p=$(pick_port)
	mkdir -p "$tmp/s$i"
	printf 'port %s\nbind 127.0.0.1\ndir %s\nsentinel resolve-hostnames no\nsentinel monitor m 127.0.0.1 %s 2\nsentinel down-after-milliseconds m 1000\nsentinel failover-timeout m 4000\n' \
		"$p" "$tmp/s$i" "$M" >"$tmp/s$i/conf"
	redis-sentinel "$tmp/s$i/conf" --logfile "$tmp/s$i/log" </dev/null >/dev/null 2>&1 &
	pids+=($!)
	S+=("$p")
done
for p in "${S[@]}"; do
	poll 10 redis-cli -p "$p" PING >/dev/null 2>&1 || die "sentinel $p did not start"
done
poll 20 bash -c "redis-cli -p ${S[0]} SENTINEL GET-MASTER-ADDR-BY-NAME m | grep -qx $M" ||
	die "the sentinels do not know the master"
SURL="redis-sentinel://127.0.0.1:${S[0]},127.0.0.1:${S[1]},127.0.0.1:${S[2]}#m"

say "starting a cluster of three masters"
C=()
for i in 1 2 3; do
	p=$(pick_port)
	start "c$i" "$p" --cluster-enabled yes --cluster-config-file "$tmp/c$i/nodes.conf" \
		--cluster-node-timeout 2000
	C+=("$p")
done
redis-cli --cluster create "127.0.0.1:${C[0]}" "127.0.0.1:${C[1]}" "127.0.0.1:${C[2]}" \
	--cluster-replicas 0 --cluster-yes >"$tmp/create.log" 2>&1 || die "cluster create failed: $(tail -3 "$tmp/create.log")"
for p in "${C[@]}"; do
	poll 20 bash -c "redis-cli -p $p CLUSTER INFO | grep -q cluster_state:ok" || die "cluster not ok on $p"
done

export ROOT M R SURL ROUNDS HANDOFFS BENCH_DUR PUBS QUICK OUT
export C1=${C[0]} C2=${C[1]} C3=${C[2]} TMPD=$tmp
say "measuring"
python3 - <<'EOF'
import json, os, random, statistics as st, subprocess as sp, time

E = os.environ
rlock = E["ROOT"] + "/build/rlock"
M, R, SURL = E["M"], E["R"], E["SURL"]
C = [E["C1"], E["C2"], E["C3"]]
tmp = E["TMPD"]
rounds, handoffs = int(E["ROUNDS"]), int(E["HANDOFFS"])

def cli(port, *args):
    return sp.run(["redis-cli", "-p", str(port), *args], capture_output=True,
                  text=True).stdout.strip()

def owner(key):
    slot = int(cli(C[0], "CLUSTER", "KEYSLOT", key))
    for p in C:
        for line in cli(p, "CLUSTER", "NODES").splitlines():
            f = line.split()
            if "myself" not in f[2]:
                continue
            for r in f[8:]:
                lo, _, hi = r.partition("-")
                if lo.isdigit() and int(lo) <= slot <= int(hi or lo):
                    return p
    raise SystemExit("no owner for " + key)

own = owner("rlock:{k}")
other = [p for p in C if p != own]
variants = {
    "single": ["-u", f"redis://127.0.0.1:{M}"],
    "sentinel": ["-u", SURL],
    "cluster-owner": ["-u", f"redis://127.0.0.1:{own}"],
    "cluster-moved": ["-u", f"redis://127.0.0.1:{other[0]}"],
}

def timed(argv):
    t = time.perf_counter()
    rc = sp.run(argv, stdout=sp.DEVNULL, stderr=sp.DEVNULL).returncode
    if rc != 0:
        raise SystemExit(f"failed ({rc}): {' '.join(argv)}")
    return (time.perf_counter() - t) * 1000

runs = {v: [] for v in variants}
for v, u in variants.items():
    for _ in range(5):
        timed([rlock, *u, "run", "k", "--", "true"])
for _ in range(rounds):
    order = list(variants)
    random.shuffle(order)
    for v in order:
        runs[v].append(timed([rlock, *variants[v], "run", "k", "--", "true"]))

def ratio(a, b):
    return st.median([y / x for x, y in zip(runs[a], runs[b])])

# The same runs under callgrind: instructions of rlock's own process
# (threads included), which the machine's noise does not touch.
instr = {}
if sp.run(["sh", "-c", "command -v valgrind"], capture_output=True).returncode == 0:
    for v, u in variants.items():
        out = sp.run(["valgrind", "--tool=callgrind", f"--callgrind-out-file={tmp}/cg.%p",
                      rlock, *u, "run", "k", "--", "true"], capture_output=True, text=True)
        m = [l for l in out.stderr.splitlines() if "Collected" in l or "refs:" in l]
        if m:
            instr[v] = int(m[-1].split()[-1].replace(",", ""))

# 2. hand-off: the holder's command stamps its end, the waiter's its start.
def handoff(hold_url, wait_url, key):
    d = f"{tmp}/ho"
    sp.run(["rm", "-rf", d]); os.makedirs(d)
    h = sp.Popen([rlock, "-u", hold_url, "run", key, "--", "bash", "-c",
                  f"echo $EPOCHREALTIME > {d}/held; while [ ! -e {d}/go ]; do sleep 0.005; done; echo $EPOCHREALTIME > {d}/end"])
    while not os.path.exists(f"{d}/held") or os.path.getsize(f"{d}/held") == 0:
        time.sleep(0.005)
    w = sp.Popen([rlock, "-u", wait_url, "run", key, "--", "bash", "-c",
                  f"echo $EPOCHREALTIME > {d}/start"])
    time.sleep(0.4)          # the waiter is waiting now
    open(f"{d}/go", "w").close()
    h.wait(); w.wait()
    if h.returncode or w.returncode:
        raise SystemExit("hand-off failed")
    return (float(open(f"{d}/start").read()) - float(open(f"{d}/end").read())) * 1000

ho = {"single": [], "sentinel": [], "cluster": []}
for i in range(handoffs):
    ho["single"].append(handoff(f"redis://127.0.0.1:{M}", f"redis://127.0.0.1:{M}", f"h{i}"))
    ho["sentinel"].append(handoff(SURL, SURL, f"h{i}"))
    o = owner("rlock:{" + f"c{i}" + "}")
    a, b = [p for p in C if p != o]
    ho["cluster"].append(handoff(f"redis://127.0.0.1:{a}", f"redis://127.0.0.1:{b}", f"c{i}"))

# 3. rlock bench, alternating.
def bench(url, keys):
    out = sp.run([rlock, "-u", url, "bench", "-c", "50", "-k", str(keys), "-d",
                  E["BENCH_DUR"], "--no-ping", "--json"], capture_output=True, text=True)
    if out.returncode:
        raise SystemExit("bench failed: " + out.stderr)
    return json.loads(out.stdout)

b = {}
for name, url in (("single", f"redis://127.0.0.1:{M}"), ("cluster", f"redis://127.0.0.1:{C[0]}")):
    for keys in (50, 1):
        b[(name, keys)] = bench(url, keys)

# 4. PUBLISH against SPUBLISH: CPU of all masters per message.
def cpu():
    t = 0.0
    for p in C:
        for line in cli(p, "INFO", "cpu").splitlines():
            if line.startswith(("used_cpu_sys:", "used_cpu_user:")):
                t += float(line.split(":")[1])
    return t

chan = "rlock:{k}:released"
pub = {}
for cmd in ("PUBLISH", "SPUBLISH"):
    sub = sp.Popen(["redis-cli", "-p", own, "SSUBSCRIBE" if cmd == "SPUBLISH" else "SUBSCRIBE", chan],
                   stdout=sp.DEVNULL)
    time.sleep(0.3)
    c0, t0 = cpu(), time.perf_counter()
    sp.run(["redis-benchmark", "-p", own, "-c", "10", "-n", E["PUBS"], "-q", cmd, chan, "released"],
           stdout=sp.DEVNULL, check=True)
    el = time.perf_counter() - t0
    pub[cmd] = ((cpu() - c0) / int(E["PUBS"]) * 1e6, int(E["PUBS"]) / el)
    sub.kill(); sub.wait()

med = lambda xs: st.median(xs)
ver = sp.run([rlock, "--version"], capture_output=True, text=True).stdout.split("\n")[0]
srv = sp.run(["redis-server", "--version"], capture_output=True, text=True).stdout.split()[2]
L = []
w = L.append
w("# Sentinel and Cluster: what they cost rlock\n")
w(f"`bench/ha.sh`{' (QUICK=1)' if E['QUICK'] == '1' else ''}, one run, {time.strftime('%Y-%m-%d %H:%M')}; "
  f"{ver}; redis-server {srv}; {os.cpu_count()} CPUs, shared VM: the timed figures are medians "
  "of commands run in one interleaved loop, ratios the medians of per-round ratios.\n")
w("Servers on loopback: a master with one replica and three sentinels, a cluster of three masters "
  "(no replicas).  The baseline is the same master reached directly.\n")
w(f"## 1. `rlock run k -- true` ({rounds} rounds)\n")
w("| URL | median | ratio to single | goal | instructions (callgrind) |")
w("|---|---|---|---|---|")
for v, goal in (("single", ""), ("sentinel", "≤ 1.5×"), ("cluster-owner", ""), ("cluster-moved", "≤ 1.5×")):
    r = "1" if v == "single" else f"{ratio('single', v):.2f}×"
    ins = f"{instr[v] / 1000:.0f}k ({instr[v] / instr['single']:.2f}×)" if v in instr and "single" in instr else "n/a"
    w(f"| {v} | {med(runs[v]):.2f} ms | {r} | {goal} | {ins} |")
w("\nWall times on this VM include a process start of several milliseconds (flock(1) itself "
  "takes as long here), which the ratios share; the instruction counts are rlock's own work.  ")
w("`sentinel` asks a sentinel for the master (one more connection and round trip), then checks "
  "the master with `HELLO` (one more round trip); the renewal thread's handle asks only when it "
  "first renews, which a short command never reaches.  `cluster-moved` starts at a node that "
  "does not own the slot, is redirected once (MOVED: one more round trip and connection), and "
  "sends the release straight to the owner.\n")
w(f"## 2. Hand-off to a waiting `rlock run` ({handoffs} each)\n")
w("| setup | median | ratio | goal |")
w("|---|---|---|---|")
for v, goal in (("single", ""), ("sentinel", ""), ("cluster", "≤ 1.5×")):
    r = "1" if v == "single" else f"{med(ho[v]) / med(ho['single']):.2f}×"
    w(f"| {v} | {med(ho[v]):.2f} ms | {r} | {goal} |")
w("\nCluster: the holder and the waiter each start at a node that does not own the slot; the "
  "waiter subscribes on the owner, where the release is published.\n")
w(f"## 3. `rlock bench -c 50 -d {E['BENCH_DUR']}`\n")
w("| keys | single cycles/s | cluster cycles/s | ratio | cluster acquire p50 |")
w("|---|---|---|---|---|")
for keys in (50, 1):
    s1, c1 = b[("single", keys)], b[("cluster", keys)]
    w(f"| {keys} | {s1['cycles_per_s']:.0f} | {c1['cycles_per_s']:.0f} | "
      f"{c1['cycles_per_s'] / s1['cycles_per_s']:.2f}× | {c1['latency_us']['acquire']['p50']:.0f} µs |")
w("\nWith 50 names the cluster spreads them over three masters (three server processes on two "
  "cores); with one name every client contends on one master, as on a single server.  Errors "
  f"and violations in the four runs: {sum(x['errors']['total'] for x in b.values())} and "
  f"{sum(x['violations']['total'] for x in b.values())}.\n")
w(f"## 4. The release message: PUBLISH against SPUBLISH ({E['PUBS']} messages, one subscriber)\n")
w("| command | CPU of the three masters per message | messages/s |")
w("|---|---|---|")
for cmd in ("PUBLISH", "SPUBLISH"):
    w(f"| {cmd} | {pub[cmd][0]:.1f} µs | {pub[cmd][1]:.0f} |")
w(f"\nrlock releases with `PUBLISH`.  The cluster bus carries it to every node, so a waiter is "
  "woken whichever node it is connected to, servers older than 7.0 work, and a slot migration "
  "or failover needs no re-subscription (SSUBSCRIBE is dropped with an unsolicited "
  f"`sunsubscribe` when a slot moves).  The broadcast costs {pub['PUBLISH'][0] - pub['SPUBLISH'][0]:.0f} µs "
  "more server CPU per release on three masters, growing with the number of nodes; a release "
  "happens once per hand-off, so it matters only on large clusters with very frequent releases, "
  "where SPUBLISH would be the better trade.\n")
w("Reproduce: `bench/ha.sh` (QUICK=1 for a short run).")
text = "\n".join(L) + "\n"
open(E["OUT"], "w").write(text)
print(text)
EOF