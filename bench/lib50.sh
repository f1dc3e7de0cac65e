#!/usr/bin/env bash
# lib50.sh - library-level throughput at 50 clients on 50 names, side by
# side in one run (issue 21): redis-benchmark's SET/2 ceiling, "rlock bench
# -c 50 -k 50 -d 3s --no-ping" of each rlock binary (with the server's
# script time per cycle, from INFO commandstats), and node-redlock (redlock
# 5 + ioredis 5, each client acquire/release on a key of its own, as
# bench/compare.sh section 6 runs it).  ROUNDS rounds, alternating.
#
# Usage: bench/lib50.sh [-r ROUNDS] LABEL=PATH...   (default: 3, ./build/rlock)
#
# node-redlock is installed with npm into a temporary directory unless
# NODE_PATH already has redlock and ioredis.  It starts its own
# redis-server on a free loopback port and stops it by PID.  make test
# never runs this.

set -uo pipefail
cd "$(dirname "$0")/.." || exit 1
ROOT=$PWD

die() { echo "lib50.sh: $*" >&2; exit 1; }
rounds=3
if [[ ${1:-} == -r ]]; then
	rounds=${2:?-r needs a number}
	shift 2
fi
(($#)) || set -- "current=$ROOT/build/rlock"
for c in node npm redis-benchmark python3; do
	command -v "$c" >/dev/null || die "$c is missing"
done

tmp=$(mktemp -d /tmp/rlock-lib50.XXXXXX) || die "mktemp failed"
who=lib50.sh
# shellcheck source=bench/private-redis.sh
. "$ROOT/bench/private-redis.sh"
trap 'stop_server' EXIT
start_server || die "redis-server did not start"

if ! node -e 'require("redlock"); require("ioredis")' 2>/dev/null; then
	(cd "$tmp" && timeout 300 npm install --no-audit --no-fund \
		--loglevel=error redlock@5.0.0-beta.2 ioredis@5 >/dev/null 2>&1) ||
		die "npm install redlock ioredis failed"
	export NODE_PATH=$tmp/node_modules
fi
export REDIS_PORT=$port

echo "| round | tool | cycles/s | server µs per cycle |"
echo "|---:|---|---:|---:|"
for ((r = 1; r <= rounds; r++)); do
	v=$(redis-benchmark -p "$port" -t set -c 50 -n 200000 --csv 2>/dev/null |
		awk -F'"' '$2 == "SET" { printf "%.0f", $4 / 2 }')
	echo "| $r | SET/2 ceiling | $v | |"
	for arg in "$@"; do
		read -r _ u0 < <(script_stats)
		read -r rate cycles < <("${arg#*=}" -u "redis://127.0.0.1:$port" bench \
			-c 50 -k 50 -d 3s --no-ping --json |
			python3 -c 'import json,sys; d=json.load(sys.stdin); print(round(d["cycles_per_s"]), d["cycles"])')
		read -r _ u1 < <(script_stats)
		echo "| $r | ${arg%%=*} | $rate | $(awk -v u=$((u1 - u0)) -v n="$cycles" 'BEGIN { printf "%.1f", u / n }') |"
	done
	echo "| $r | node-redlock | $(timeout 120 node "$ROOT/bench/libbench.js" 50 3 | awk '{ print $1 }') | |"
done
