#!/usr/bin/env bash
# perf.sh - the uncontended lock cycle in instructions, which noise does
# not move (issue 21), for one or more rlock binaries side by side:
#
#   client  the instructions "rlock bench -c 1 -k 1 --no-ping" runs per
#           acquire + release cycle: callgrind over the whole process at
#           2000 and at 4000 cycles, the difference divided by 2000, so
#           that start-up and exit cancel out;
#   server  the instructions a redis-server spends inside EVALSHA/EVAL per
#           cycle (callgrind with --toggle-collect), for 2000 cycles;
#   steady  the same at 6000 cycles less 2000, over 4000: what a server
#           pays once (the first EVAL compiles the scripts) cancels out.
#
# Usage: bench/perf.sh LABEL=PATH...   (default: current=./build/rlock)
# e.g.   bench/perf.sh before=/tmp/old/rlock after=./build/rlock
#
# It starts its own redis-server on a free loopback port (never 6379) and
# stops it by PID.  Needs valgrind.  make test never runs this.

set -uo pipefail
cd "$(dirname "$0")/.." || exit 1
ROOT=$PWD

die() { echo "perf.sh: $*" >&2; exit 1; }
command -v valgrind >/dev/null && command -v callgrind_annotate >/dev/null ||
	die "valgrind is missing (apt-get install valgrind)"
(($#)) || set -- "current=$ROOT/build/rlock"

tmp=$(mktemp -d /tmp/rlock-perf.XXXXXX) || die "mktemp failed"
who=perf.sh
# shellcheck source=bench/private-redis.sh
. "$ROOT/bench/private-redis.sh"
trap 'stop_server' EXIT
start_server || die "redis-server did not start"

# client BIN: instructions per cycle in the rlock process.
client() {
	local n a b
	for n in 2000 4000; do
		valgrind --tool=callgrind --callgrind-out-file="$tmp/c.$n" \
			"$1" -u "redis://127.0.0.1:$port" bench -c 1 -k 1 \
			-n "$n" --no-ping >/dev/null 2>&1 || return 1
	done
	a=$(callgrind_total "$tmp/c.2000")
	b=$(callgrind_total "$tmp/c.4000")
	echo $(((b - a) / 2000))
}

# server BIN [N]: instructions inside the server's scripts for N (2000)
# cycles.
server() {
	local p vp ir i n=${2:-2000}
	for ((i = 0; i < 20; i++)); do
		p=$((20000 + (RANDOM * 32768 + RANDOM) % 12000))
		listening "$p" || break
	done
	valgrind --tool=callgrind --callgrind-out-file="$tmp/s.out" \
		--toggle-collect=evalShaCommand --toggle-collect=evalCommand \
		redis-server --port "$p" --bind 127.0.0.1 --save '' \
		--appendonly no --dir "$tmp" >/dev/null 2>&1 &
	vp=$!
	poll 30 redis-cli -p "$p" PING >/dev/null 2>&1 || { kill "$vp"; return 1; }
	"$1" -u "redis://127.0.0.1:$p" bench -c 1 -k 1 -n "$n" --no-ping \
		>/dev/null || return 1
	redis-cli -p "$p" SHUTDOWN NOSAVE >/dev/null 2>&1
	wait "$vp"
	ir=$(callgrind_total "$tmp/s.out")
	echo "$ir"
}

echo "| instructions per uncontended cycle | client (rlock) | server (scripts) | server, steady |"
echo "|---|---:|---:|---:|"
for arg in "$@"; do
	label=${arg%%=*}
	bin=${arg#*=}
	[[ -x $bin ]] || die "$bin is not executable"
	cp "$bin" "$tmp/bin" || die "cannot copy $bin"
	c=$(client "$tmp/bin") || die "client measure failed for $label"
	s=$(server "$tmp/bin") || die "server measure failed for $label"
	s6=$(server "$tmp/bin" 6000) || die "server measure failed for $label"
	echo "| $label ($("$tmp/bin" --version | head -1)) | $c | $((s / 2000)) |" \
		"$(((s6 - s) / 4000)) |"
done
