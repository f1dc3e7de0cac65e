#!/usr/bin/env bash
# policy.sh - what the line's policies (issue 20: --priority, --supersede,
# --once-per) cost, in one run on one machine:
#
#   1  drain: N processes started together on one name, each
#      "rlock run -w 300 KEY -- true"; plain (no option) against mixed
#      priorities (process i gives --priority i%21-10), the two taking
#      turns; wall time from the gate opening to the last exit, every exit
#      status checked, and from INFO commandstats the scripts (EVALSHA +
#      EVAL) and the wake-ups (PUBLISH, called by the scripts) per process,
#      that is per hand-off, and the server's CPU;
#   2  uncontended "rlock run KEY -- true": BEFORE (a binary without the
#      policies) against AFTER, hyperfine -N in rounds whose order
#      alternates;
#   3  the server's time per uncontended acquire + release: commandstats
#      usec of the scripts around "rlock bench -c 1 -k 1 -n CYCLES", BEFORE
#      and AFTER alternating, and the same for AFTER with --once-per (the
#      acquire reads the period's record, the release writes it);
#   4  the same cycle in instructions, which noise does not move, client
#      and server, by bench/perf.sh (valgrind needed).
#
# Environment:
#   AFTER=PATH     the binary measured (default ./build/rlock), copied first
#   BEFORE=PATH    the binary to compare with in 2 and 3 (none: skipped)
#   N=600          processes per drain; REPS=3 drains of each kind
#   CYCLES=20000   cycles per sample in 3; SAMPLES=3
#   QUICK=1        N=60, REPS=1, few samples: to try the script
#
# It starts a private redis-server (maxclients 10000) on a free loopback
# port, never 6379, and stops it by PID.  Results go to stdout as Markdown;
# bench/RESULTS-policy.md keeps the last run's.  make test never runs this.

set -uo pipefail
cd "$(dirname "$0")/.." || exit 1
ROOT=$PWD
QUICK=${QUICK:-0}
N=${N:-600}
REPS=${REPS:-3}
CYCLES=${CYCLES:-20000}
SAMPLES=${SAMPLES:-3}
if ((QUICK)); then N=60 REPS=1 CYCLES=2000 SAMPLES=1; fi
PY=/usr/bin/python3

die() { echo "policy.sh: $*" >&2; exit 1; }
say() { echo "policy.sh: $*" >&2; }

tmp=$(mktemp -d /tmp/rlock-policy.XXXXXX) || die "mktemp failed"
who=policy.sh
# shellcheck source=bench/private-redis.sh
. "$ROOT/bench/private-redis.sh"
trap 'stop_server' EXIT

[[ -x ${AFTER:-./build/rlock} ]] || make -s build/rlock >/dev/null || die "build failed"
cp "${AFTER:-./build/rlock}" "$tmp/after" || die "no binary"
if [[ -n ${BEFORE:-} ]]; then
	cp "$BEFORE" "$tmp/before" || die "cannot copy $BEFORE"
fi
command -v hyperfine >/dev/null || die "hyperfine is missing (apt-get install hyperfine)"
ulimit -n 16384 2>/dev/null
start_server || die "redis-server did not start"
redis-cli -p "$port" CONFIG SET maxclients 10000 >/dev/null
URL=redis://127.0.0.1:$port

# stats: "scripts publishes cpu_s" from the server, now.
stats() {
	redis-cli -p "$port" INFO all | tr -d '\r' | awk -F'[:,=]' '
		/^cmdstat_(evalsha|eval):/ { s += $3 }
		/^cmdstat_publish:/ { p += $3 }
		/^used_cpu_(sys|user):/ { c += $2 }
		END { printf "%d %d %.3f\n", s, p, c }'
}

# usec: the scripts' usec so far.
usec() {
	redis-cli -p "$port" INFO commandstats | tr -d '\r' | awk -F'[:,=]' '
		/^cmdstat_(evalsha|eval):/ { u += $5 }
		END { printf "%d\n", u }'
}

# ---- 1. drain ---------------------------------------------------------

# drain.py N LIMIT PRIO COMMAND...: spawn N copies of COMMAND, each held
# at a gate (sh reading its stdin) until all exist, "{p}" in COMMAND
# replaced by process i's priority (i%21-10 when PRIO is 1, else 0); open
# the gate, wait for all.  Prints the wall seconds from the gate to the
# last exit and the number that did not exit 0.
cat >"$tmp/drain.py" <<'EOF'
import os, signal, sys, time

n, limit, prio, cmd = int(sys.argv[1]), float(sys.argv[2]), sys.argv[3] == "1", sys.argv[4:]
null = os.open("/dev/null", os.O_WRONLY)
r, w = os.pipe()
acts = [(os.POSIX_SPAWN_DUP2, r, 0), (os.POSIX_SPAWN_DUP2, null, 1),
        (os.POSIX_SPAWN_DUP2, null, 2)]
gate = 'read _ || :; exec "$@" </dev/null'
pids, bad = set(), 0
for i in range(n):
    p = str(i % 21 - 10) if prio else "0"
    argv = [a.replace("{p}", p) for a in cmd]
    pids.add(os.posix_spawn("/bin/sh", ["sh", "-c", gate, "sh", *argv],
                            os.environ, file_actions=acts))
os.close(r)
signal.alarm(int(limit))
t0 = time.monotonic()
os.close(w)
while pids:
    pid, st = os.wait()
    pids.discard(pid)
    bad += os.waitstatus_to_exitcode(st) != 0
print("%.3f %d" % (time.monotonic() - t0, bad))
EOF

declare -A WALL SCR PUB CPU
drain_one() {
	local kind=$1 rep=$2 key="drain-$1-$2" s0 s1 out wall bad
	s0=$(stats)
	out=$($PY "$tmp/drain.py" "$N" 400 "$([[ $kind == mixed ]] && echo 1)" \
		"$tmp/after" -u "$URL" run -w 300 --priority "{p}" "$key" -- true) ||
		die "drain driver failed"
	s1=$(stats)
	read -r wall bad <<<"$out"
	read -r c0 p0 u0 <<<"$s0"
	read -r c1 p1 u1 <<<"$s1"
	WALL[$kind]+="$wall "
	SCR[$kind]+="$(awk -v a="$c0" -v b="$c1" -v n="$N" 'BEGIN { printf "%.2f", (b - a) / n }') "
	PUB[$kind]+="$(awk -v a="$p0" -v b="$p1" -v n="$N" 'BEGIN { printf "%.2f", (b - a) / n }') "
	CPU[$kind]+="$(awk -v a="$u0" -v b="$u1" 'BEGIN { printf "%.2f", b - a }') "
	say "drain $kind #$rep: ${wall}s, $bad did not exit 0"
	((bad == 0)) || die "$bad processes failed"
}

# med LIST: the median of the numbers in LIST, and (min-max).
med() {
	tr ' ' '\n' <<<"$1" | grep . | sort -g | awk '
		{ v[NR] = $1 }
		END { m = NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2
		      if (NR > 1) printf "%g (%g-%g)", m, v[1], v[NR]; else printf "%g", m }'
}
medv() { med "$1" | cut -d' ' -f1; }

for ((rep = 1; rep <= REPS; rep++)); do
	if ((rep % 2)); then order="plain mixed"; else order="mixed plain"; fi
	for kind in $order; do
		drain_one "$kind" "$rep"
		sleep 3
	done
done

# ---- 2. uncontended run, and 3. server time ----------------------------

declare -A RUN US
bins=(after)
[[ -n ${BEFORE:-} ]] && bins=(before after)
hf_json=$tmp/hf.json
for ((round = 1; round <= 4; round++)); do
	if ((round % 2)); then list=("${bins[@]}"); else list=(); for ((i = ${#bins[@]} - 1; i >= 0; i--)); do list+=("${bins[i]}"); done; fi
	for b in "${list[@]}"; do
		hyperfine -N -w 2 -r $((QUICK ? 3 : 10)) --export-json "$hf_json" \
			"$tmp/$b -u $URL run k-$b -- true" >/dev/null 2>&1 ||
			die "hyperfine failed for $b"
		RUN[$b]+="$($PY -c 'import json,sys; print(" ".join("%.3f" % (x * 1000) for x in json.load(open(sys.argv[1]))["results"][0]["times"]))' "$hf_json") "
	done
done
for ((s = 1; s <= SAMPLES; s++)); do
	for v in "${bins[@]}" once; do
		b=$v opt=()
		[[ $v == once ]] && b=after opt=(--once-per 30d)
		# bench has no --once-per: a run loop measures the scripts of
		# a real run instead, for "once" and "after" alike.
		if [[ $v == once ]]; then
			u0=$(usec)
			for ((i = 0; i < CYCLES / 20; i++)); do
				"$tmp/after" -u "$URL" run "${opt[@]}" "o$s-$i" -- true || die "run --once-per failed"
			done
			u1=$(usec)
			US[once]+="$(awk -v a="$u0" -v b="$u1" -v n=$((CYCLES / 20)) 'BEGIN { printf "%.2f", (b - a) / n }') "
			u0=$(usec)
			for ((i = 0; i < CYCLES / 20; i++)); do
				"$tmp/after" -u "$URL" run "p$s-$i" -- true || die "run failed"
			done
			u1=$(usec)
			US[run]+="$(awk -v a="$u0" -v b="$u1" -v n=$((CYCLES / 20)) 'BEGIN { printf "%.2f", (b - a) / n }') "
			continue
		fi
		u0=$(usec)
		"$tmp/$b" -u "$URL" bench -c 1 -k 1 -n "$CYCLES" --no-ping >/dev/null ||
			die "bench failed for $b"
		u1=$(usec)
		US[$b]+="$(awk -v a="$u0" -v b="$u1" -v n="$CYCLES" 'BEGIN { printf "%.2f", (b - a) / n }') "
	done
done

# ---- 4. instructions (callgrind, by bench/perf.sh) ------------------------

perf_args=()
for b in "${bins[@]}"; do perf_args+=("$b=$tmp/$b"); done
if command -v valgrind >/dev/null; then
	IR_TABLE=$("$ROOT/bench/perf.sh" "${perf_args[@]}") ||
		die "bench/perf.sh failed"
else
	IR_TABLE="(not measured: valgrind is missing)"
fi

# ---- report --------------------------------------------------------------

ratio() { awk -v a="$(medv "$1")" -v b="$(medv "$2")" 'BEGIN { printf "%.2f×", a / b }'; }
cat <<EOF
# The line's policies: what they cost (issue 20)

Measured by \`bench/policy.sh\` on $(date -u '+%Y-%m-%d %H:%M UTC'), $(nproc) CPUs,
redis-server $(redis-server --version | sed 's/.*v=\([^ ]*\).*/\1/'), every client on the
same machine; load average at the end: $(cut -d' ' -f1-3 /proc/loadavg).
Figures are medians, with (min-max).  AFTER: $("$tmp/after" --version | head -1).
BEFORE: $([[ -n ${BEFORE:-} ]] && "$tmp/before" --version | head -1 || echo none).

## 1. Drain: $N processes on one name, plain against mixed priorities

Each "rlock run -w 300 KEY -- true", all held at a gate and let go
together; mixed: process i gives --priority i%21-10.  $REPS drains of each,
taking turns.

| | plain | mixed priorities | mixed ÷ plain |
|---|---:|---:|---:|
| wall time (s) | $(med "${WALL[plain]}") | $(med "${WALL[mixed]}") | $(ratio "${WALL[mixed]}" "${WALL[plain]}") |
| scripts per hand-off | $(med "${SCR[plain]}") | $(med "${SCR[mixed]}") | $(ratio "${SCR[mixed]}" "${SCR[plain]}") |
| wake-ups (PUBLISH) per hand-off | $(med "${PUB[plain]}") | $(med "${PUB[mixed]}") | $(ratio "${PUB[mixed]}" "${PUB[plain]}") |
| redis-server CPU (s) | $(med "${CPU[plain]}") | $(med "${CPU[mixed]}") | $(ratio "${CPU[mixed]}" "${CPU[plain]}") |

## 2. Uncontended \`rlock run KEY -- true\`

hyperfine -N, 4 rounds alternating the order.

| ms | $(printf '%s | ' "${bins[@]}")
|---|$(printf -- '---:|%.0s' "${bins[@]}")
| median (min-max) | $(for b in "${bins[@]}"; do printf '%s | ' "$(med "${RUN[$b]}")"; done)
$([[ -n ${BEFORE:-} ]] && echo "
after ÷ before: $(ratio "${RUN[after]}" "${RUN[before]}")")

## 3. Server time per uncontended acquire + release (µs of scripts)

\`rlock bench -c 1 -k 1 -n $CYCLES --no-ping\`, $SAMPLES samples each,
alternating; and $((CYCLES / 20)) \`rlock run\` each, with and without
\`--once-per 30d\` (each on a new name, so each runs).

| µs per cycle | $(printf '%s | ' "${bins[@]}")run | run --once-per |
|---|$(printf -- '---:|%.0s' "${bins[@]}")---:|---:|
| median (min-max) | $(for b in "${bins[@]}"; do printf '%s | ' "$(med "${US[$b]}")"; done)$(med "${US[run]}") | $(med "${US[once]}") |
$([[ -n ${BEFORE:-} ]] && echo "
bench, after ÷ before: $(ratio "${US[after]}" "${US[before]}")")
run --once-per ÷ run: $(ratio "${US[once]}" "${US[run]}")

## 4. The same cycle in instructions (callgrind, bench/perf.sh)

\`rlock bench -c 1 -k 1 --no-ping\`: the client's instructions per cycle
(the difference between 4000 and 2000 cycles), the server's inside
EVALSHA/EVAL.

$IR_TABLE

Commands: \`BEFORE=${BEFORE:-} bench/policy.sh\` (N=$N, REPS=$REPS, CYCLES=$CYCLES, SAMPLES=$SAMPLES).
EOF
