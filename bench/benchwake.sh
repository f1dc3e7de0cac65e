#!/usr/bin/env bash
# benchwake.sh - "rlock bench" contended, with its waiters waiting as rlock
# waits (issue 46), for rlock binaries side by side on one private
# redis-server (bench/RESULTS-wake.md, "rlock bench"):
#
#   rate          "rlock bench -c C -k K -d DUR --no-ping" for each workload
#                 (default -c 50 -k 5 and -c 500 -k 10, 10s each), the
#                 binaries in turn, ROUNDS (3) rounds: the medians of cycles
#                 per second, the server's CPU per cycle (INFO cpu, as
#                 bench reports it), the hand-off's p50, the wake-ups,
#                 timer wake-ups and batons per cycle, and the server's
#                 connected and blocked clients half-way through a run;
#   instructions  the instructions of the whole redis-server (callgrind)
#                 per cycle of "rlock bench -c 50 -k 5 --no-ping", N2
#                 cycles less N1 over N2 - N1 (default 2000 and 1000), so
#                 that what a run pays once cancels out (only with
#                 INSTR=1; needs valgrind).
#
# Usage: bench/benchwake.sh LABEL=PATH...   (default: current=./build/rlock)
# e.g.   ROUNDS=3 INSTR=1 bench/benchwake.sh before=/tmp/old/rlock after=./build/rlock
#        WORKLOADS="-c 50 -k 5;-c 500 -k 10" DUR=10s ...
#
# Starts its own redis-servers on free loopback ports (never 6379) and
# stops them by PID.  make test never runs this.

set -uo pipefail
cd "$(dirname "$0")/.." || exit 1
ROOT=$PWD
ROUNDS=${ROUNDS:-3}
DUR=${DUR:-10s}
WORKLOADS=${WORKLOADS:-"-c 50 -k 5;-c 500 -k 10"}
INSTR=${INSTR:-0}
N1=${N1:-1000}
N2=${N2:-2000}

die() { echo "benchwake.sh: $*" >&2; exit 1; }
# Half of DUR, in seconds: when the clients are counted.
half=$(python3 -c '
import re, sys
m = re.fullmatch(r"([0-9.]+)(ms|s)", sys.argv[1])
print(float(m[1]) / (1000 if m[2] == "ms" else 1) / 2)' "$DUR") ||
	die "DUR: give ms or s (e.g. 10s)"
(($#)) || set -- "current=$ROOT/build/rlock"

tmp=$(mktemp -d /tmp/rlock-benchwake.XXXXXX) || die "mktemp failed"
who=benchwake.sh
# shellcheck source=bench/private-redis.sh
. "$ROOT/bench/private-redis.sh"
vpid=
cleanup() {
	[[ -n $vpid ]] && kill "$vpid" 2>/dev/null && wait "$vpid" 2>/dev/null
	stop_server
}
trap cleanup EXIT
start_server || die "redis-server did not start"
ulimit -n "$(ulimit -Hn)" 2>/dev/null

labels=()
for arg in "$@"; do
	label=${arg%%=*}
	bin=${arg#*=}
	[[ -x $bin ]] || die "$bin is not executable"
	cp "$bin" "$tmp/bin-$label" || die "cannot copy $bin"
	labels+=("$label")
done

# clients FIELD: FIELD of the server's INFO clients.
clients() {
	redis-cli -p "$port" INFO clients | tr -d '\r' | sed -n "s/^$1://p"
}

# one LABEL WORKLOAD ROUND: a run, its JSON in $tmp, and the clients the
# server counted half-way (less redis-cli's own connection).
one() {
	local out p
	out="$tmp/$1.$3.$(echo "$2" | tr -dc '0-9')"
	# shellcheck disable=SC2086 # the workload's words
	"$tmp/bin-$1" -u "redis://127.0.0.1:$port" bench $2 -d "$DUR" \
		--no-ping --json >"$out.json" &
	p=$!
	sleep "$half"
	echo "$(($(clients connected_clients) - 1)) $(clients blocked_clients)" >"$out.clients"
	wait "$p" || die "$1: rlock bench $2 failed"
}

echo "| workload | binary | cycles/s | server CPU µs/cycle | hand-off p50 µs | wake-ups/cycle | timer wake-ups/cycle | batons/cycle | connections (blocked) | violations |"
echo "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|"
IFS=';' read -r -a wls <<<"$WORKLOADS"
for wl in "${wls[@]}"; do
	for ((r = 0; r < ROUNDS; r++)); do
		for label in "${labels[@]}"; do
			one "$label" "$wl" "$r"
		done
	done
	for label in "${labels[@]}"; do
		python3 - "$tmp" "$label" "$(echo "$wl" | tr -dc '0-9')" "$wl" <<'EOF'
import glob, json, statistics as st, sys
tmp, label, tag, wl = sys.argv[1:]
runs, conns = [], []
for f in sorted(glob.glob(f"{tmp}/{label}.*.{tag}.json")):
    runs.append(json.load(open(f)))
    conns.append(open(f[:-5] + ".clients").read().split())
med = lambda xs: st.median(xs) if xs else 0
per = lambda k: med([d[k] / d["cycles"] for d in runs if d["cycles"]])
cpu = med([d["cpu_s"]["server"] * 1e6 / d["cycles"] for d in runs if d["cycles"]])
hand = med([d["latency_us"]["handoff"]["p50"] for d in runs])
viol = sum(d["violations"]["total"] for d in runs)
c = sorted(conns, key=lambda x: int(x[0]))[len(conns) // 2]
print(f"| {wl} | {label} | {med([d['cycles_per_s'] for d in runs]):.0f} | {cpu:.0f} "
      f"| {hand:.0f} | {per('wakeups'):.2f} | {per('timer_wakeups'):.2f} "
      f"| {per('batons') if 'batons' in runs[0] else 0:.2f} | {c[0]} ({c[1]}) | {viol} |")
EOF
	done
done

((INSTR)) || exit 0
command -v valgrind >/dev/null && command -v callgrind_annotate >/dev/null ||
	die "valgrind is missing (apt-get install valgrind)"

# instr BIN N: the whole server's instructions over a run of N cycles.
instr() {
	local p i
	for ((i = 0; i < 20; i++)); do
		p=$((20000 + (RANDOM * 32768 + RANDOM) % 12000))
		listening "$p" || break
	done
	valgrind --tool=callgrind --callgrind-out-file="$tmp/s.out" \
		redis-server --port "$p" --bind 127.0.0.1 --save '' \
		--appendonly no --dir "$tmp" >/dev/null 2>&1 &
	vpid=$!
	poll 60 redis-cli -p "$p" PING >/dev/null 2>&1 || return 1
	"$1" -u "redis://127.0.0.1:$p" --io-timeout 30s bench -c 50 -k 5 \
		-n "$2" --no-ping >/dev/null || return 1
	redis-cli -p "$p" SHUTDOWN NOSAVE >/dev/null 2>&1
	wait "$vpid"
	vpid=
	callgrind_total "$tmp/s.out"
}

echo
echo "| server instructions per cycle, -c 50 -k 5 ($N2 − $N1 cycles) | whole redis-server |"
echo "|---|---:|"
for label in "${labels[@]}"; do
	a=$(instr "$tmp/bin-$label" "$N1") || die "$label: measure failed"
	b=$(instr "$tmp/bin-$label" "$N2") || die "$label: measure failed"
	echo "| $label | $(((b - a) / (N2 - N1))) |"
done
