#!/usr/bin/env bash
# history.sh - what keeping a lock's history (issue 19) costs, measured side
# by side in one run against a build without it, on a private redis-server
# on a free loopback port:
#
#   server    the scripts' time per uncontended acquire + release: INFO
#             commandstats usec of EVALSHA/EVAL around
#             "rlock bench -c 1 -k 1 -n CYCLES --no-ping", divided by CYCLES
#             (before; after; after with --no-log), rounds alternating;
#   instr     the same cycle's server instructions inside EVALSHA/EVAL,
#             counted by callgrind (valgrind --toggle-collect) on a
#             redis-server of its own: what the noise of a shared machine
#             does not move;
#   bench     "rlock bench -c 50 -k 50 -d 3s" cycles/s, rounds alternating;
#   run       "rlock run k -- true", hyperfine -N, before and after in one
#             invocation per round;
#   memory    MEMORY USAGE of one lock's full history: 1100 "rlock run"s,
#             then the stream's entries (XLEN) and bytes, with and without a
#             note of 40 bytes.
#
#   BEFORE=/path/to/old/rlock bench/history.sh [ROUNDS]
#
# BEFORE defaults to a build of the commit before the history landed, made
# in a temporary git worktree.  Writes bench/RESULTS-history.md.  Run it on
# a quiet machine: it is only as steady as the machine is.

set -u
cd "$(dirname "$0")/.." || exit 1

ROUNDS=${1:-3}
CYCLES=${CYCLES:-20000}
OUT=bench/RESULTS-history.md
if ! [[ $ROUNDS =~ ^[0-9]+$ ]] || ((ROUNDS < 1)); then
	echo "history: ROUNDS must be a number >= 1" >&2
	exit 64
fi
command -v hyperfine >/dev/null || {
	echo "history: hyperfine is needed (apt-get install hyperfine)" >&2
	exit 69
}

tmp=$(mktemp -d)
who=history
# shellcheck source=bench/private-redis.sh
. bench/private-redis.sh
trap 'stop_server; git worktree remove --force "$tmp/base" 2>/dev/null' EXIT

[[ -x ./build/rlock ]] || make build/rlock >&2 || exit 1
cp ./build/rlock "$tmp/after"
if [[ -n ${BEFORE:-} ]]; then
	cp "$BEFORE" "$tmp/before" || exit 1
else
	base=$(git log --format=%H --diff-filter=A -1 -- lib/status.c)
	base=$(git rev-parse "$base^")
	git worktree add -q --detach "$tmp/base" "$base" >&2 &&
		make -s -C "$tmp/base" rlock >&2 || exit 1
	cp "$tmp/base/rlock" "$tmp/before"
fi
start_server || exit 1
export RLOCK_URL="redis://127.0.0.1:$port" RLOCK_PREFIX="hb:"
rcli() { redis-cli -p "$port" "$@"; }

scripts_usec() {
	rcli INFO commandstats | tr -d '\r' | awk -F'[:,=]' '
		/^cmdstat_(eval|evalsha):/ { c += $3; u += $5 }
		END { printf "%d %d\n", c, u }'
}

# server BIN [ARGS...]: the scripts' µs per cycle.
server() {
	local bin=$1 c0 u0 c1 u1
	shift
	rcli FLUSHALL >/dev/null
	read -r c0 u0 < <(scripts_usec)
	"$tmp/$bin" "$@" bench -c 1 -k 1 -n "$CYCLES" --no-ping >/dev/null ||
		return 1
	read -r c1 u1 < <(scripts_usec)
	awk -v u=$((u1 - u0)) -v n="$CYCLES" 'BEGIN { printf "%.2f", u / n }'
}

# throughput BIN: cycles/s of 50 clients on 50 names.
throughput() {
	rcli FLUSHALL >/dev/null
	"$tmp/$1" bench -c 50 -k 50 -d 3s --json |
		python3 -c 'import json,sys; print(round(json.load(sys.stdin)["cycles_per_s"]))'
}

declare -a s_before=() s_after=() s_nolog=() t_before=() t_after=()
declare -a r_before=() r_after=()
for ((r = 1; r <= ROUNDS; r++)); do
	echo "history: round $r of $ROUNDS" >&2
	if ((r % 2)); then order=(before after); else order=(after before); fi
	for b in "${order[@]}"; do
		v=$(server "$b") || exit 1
		if [[ $b == before ]]; then s_before+=("$v"); else s_after+=("$v"); fi
	done
	s_nolog+=("$(server after --no-log)")
	for b in "${order[@]}"; do
		v=$(throughput "$b") || exit 1
		if [[ $b == before ]]; then t_before+=("$v"); else t_after+=("$v"); fi
	done
	rcli FLUSHALL >/dev/null
	hyperfine -N -w 20 -r 200 --export-json "$tmp/hf.json" \
		"$tmp/${order[0]} run k -- true" "$tmp/${order[1]} run k -- true" \
		>/dev/null 2>&1 || exit 1
	read -r m0 m1 < <(python3 -c '
import json, sys
r = json.load(open(sys.argv[1]))["results"]
print(" ".join("%.3f" % (x["median"] * 1000) for x in r))' "$tmp/hf.json")
	if [[ ${order[0]} == before ]]; then
		r_before+=("$m0") r_after+=("$m1")
	else
		r_before+=("$m1") r_after+=("$m0")
	fi
done

# instr BIN [ARGS...]: the server's instructions per cycle inside the
# scripts, by callgrind, on a redis-server of its own.
instr() {
	local bin=$1 p vp i ir n=2000
	shift
	command -v valgrind >/dev/null || { echo "-"; return 0; }
	p=$((port + 1))
	while listening "$p"; do p=$((p + 1)); done
	valgrind --tool=callgrind --callgrind-out-file="$tmp/cg.out" \
		--toggle-collect=evalShaCommand --toggle-collect=evalCommand \
		redis-server --port "$p" --bind 127.0.0.1 --save '' \
		--appendonly no >/dev/null 2>&1 &
	vp=$!
	for ((i = 0; i < 300; i++)); do
		redis-cli -p "$p" PING >/dev/null 2>&1 && break
		sleep 0.1
	done
	RLOCK_URL="redis://127.0.0.1:$p" "$tmp/$bin" "$@" bench -c 1 -k 1 \
		-n "$n" --no-ping >/dev/null
	redis-cli -p "$p" SHUTDOWN NOSAVE >/dev/null 2>&1
	wait "$vp"
	ir=$(callgrind_annotate "$tmp/cg.out" 2>/dev/null |
		awk '/PROGRAM TOTALS/ { gsub(",", "", $1); print $1 }')
	echo $((ir / n))
}
i_before=$(instr before)
i_after=$(instr after)
i_nolog=$(instr after --no-log)

# Memory: a full history, as 1100 runs leave it.
mem() {
	local note=$1 i
	rcli FLUSHALL >/dev/null
	for ((i = 0; i < 1100; i++)); do
		"$tmp/after" run ${note:+--note "$note"} nightly -- true || return 1
	done
	echo "$(rcli XLEN 'hb:{nightly}:log') $(rcli MEMORY USAGE 'hb:{nightly}:log' SAMPLES 0)"
}
read -r n_plain b_plain < <(mem "")
read -r n_note b_note < <(mem "https://ci.example.com/jobs/123456789")

join() { local IFS=' / '; echo "$*"; }
ratio() { python3 -c 'import sys,statistics as s; a=[float(x) for x in sys.argv[1].split()]; b=[float(x) for x in sys.argv[2].split()]; print("%.2f" % (s.median(b)/s.median(a)))' "$1" "$2"; }

# What was written by hand after the tables (from "## Notes" on) stays.
notes=$(sed -n '/^## Notes/,$p' "$OUT" 2>/dev/null)
{
	echo "# The history's cost (issue 19)"
	echo
	echo "Measured by \`bench/history.sh $ROUNDS\` on $(nproc) cores, Redis $(redis-server --version | sed 's/.*v=\([^ ]*\).*/\1/'), $(date -u +%Y-%m-%d)."
	echo "*before*: the build without the history; *after*: with it (the default); rounds alternate which goes first."
	echo
	echo "| | before | after | after/before |"
	echo "|---|---:|---:|---:|"
	echo "| scripts' µs per uncontended acquire + release (\`bench -c 1 -k 1 -n $CYCLES\`) | $(join "${s_before[@]}") | $(join "${s_after[@]}") | $(ratio "${s_before[*]}" "${s_after[*]}") |"
	echo "| the same, after with \`--no-log\` | | $(join "${s_nolog[@]}") | $(ratio "${s_before[*]}" "${s_nolog[*]}") |"
	echo "| server instructions per cycle in the scripts (callgrind, 2000 cycles) | $i_before | $i_after | $(ratio "$i_before" "$i_after") |"
	echo "| the same, after with \`--no-log\` | | $i_nolog | $(ratio "$i_before" "$i_nolog") |"
	echo "| \`bench -c 50 -k 50 -d 3s\` cycles/s | $(join "${t_before[@]}") | $(join "${t_after[@]}") | $(ratio "${t_before[*]}" "${t_after[*]}") |"
	echo "| \`run k -- true\`, hyperfine median ms | $(join "${r_before[@]}") | $(join "${r_after[@]}") | $(ratio "${r_before[*]}" "${r_after[*]}") |"
	echo
	echo "Memory of one lock's full history after 1100 runs (\`MEMORY USAGE\` of \`P{nightly}:log\`, \`SAMPLES 0\`: every entry counted):"
	echo
	echo "| | entries kept | bytes | bytes per entry |"
	echo "|---|---:|---:|---:|"
	echo "| \`rlock run nightly -- true\` | $n_plain | $b_plain | $((b_plain / n_plain)) |"
	echo "| the same with a 36-byte \`--note\` | $n_note | $b_note | $((b_note / n_note)) |"
	if [[ -n $notes ]]; then
		echo
		echo "$notes"
	fi
} >"$OUT"
cat "$OUT"
