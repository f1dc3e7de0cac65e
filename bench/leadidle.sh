#!/usr/bin/env bash
# leadidle.sh - what an idle leader costs next to `rlock run` (issue 45):
# each of `rlock run NAME -- sleep`, `rlock lead NAME -- sleep` (the
# leader), a second `rlock lead` waiting in line behind it (a standby) and
# an `rlock run` waiting there instead,
# runs alone for DUR seconds, and the script reports for each the CPU time
# rlock used (utime + stime of /proc/PID/stat), its RSS at the end (VmRSS)
# and the commands per second the server executed meanwhile (INFO stats,
# total_commands_processed, less this script's own INFO).
#
# Usage: bench/leadidle.sh [-d DUR] [-t TTL] [RLOCK]
#        (default: 60 seconds, -t 3s: a renewal a second; ./build/rlock)
#
# It starts its own redis-server on a free loopback port (never 6379) and
# stops it by PID.  make test never runs this.

set -uo pipefail
cd "$(dirname "$0")/.." || exit 1
ROOT=$PWD

die() { echo "leadidle.sh: $*" >&2; exit 1; }
dur=60 ttl=3s
while (($#)); do
	case $1 in
	-d) dur=${2:?-d needs seconds}; shift 2 ;;
	-t) ttl=${2:?-t needs a duration}; shift 2 ;;
	*) break ;;
	esac
done
rlock=${1:-$ROOT/build/rlock}
[[ -x $rlock ]] || die "$rlock is not executable"
[[ $dur =~ ^[0-9]+$ ]] && ((dur >= 5)) || die "-d needs 5 seconds or more"

tmp=$(mktemp -d /tmp/rlock-leadidle.XXXXXX) || die "mktemp failed"
who=leadidle.sh
# shellcheck source=bench/private-redis.sh
. "$ROOT/bench/private-redis.sh"
pids=()
cleanup() {
	local p
	for p in "${pids[@]}"; do kill -TERM "$p" 2>/dev/null; done
	stop_server
}
trap cleanup EXIT
start_server || die "redis-server did not start"
export RLOCK_URL=redis://127.0.0.1:$port RLOCK_PREFIX=leadidle:
tck=$(getconf CLK_TCK)

commands() { redis-cli -p "$port" INFO stats | tr -d '\r' | awk -F: '$1 == "total_commands_processed" { print $2 }'; }
cpu_ms() { awk -v t="$tck" '{ sub(/^.*\) /, ""); print ($12 + $13) * 1000 / t }' "/proc/$1/stat"; }
rss_kb() { awk '$1 == "VmRSS:" { print $2 }' "/proc/$1/status"; }

# measure LABEL PID: PID's CPU and RSS and the server's commands over dur.
measure() {
	local label=$1 pid=$2 c0 c1 t0 t1
	sleep 1
	c0=$(commands) t0=$(cpu_ms "$pid")
	sleep "$dur"
	c1=$(commands) t1=$(cpu_ms "$pid")
	# Less the INFO of this script (one per reading).
	printf '| %s | %s | %s | %.2f |\n' "$label" "$((t1 - t0))" "$(rss_kb "$pid")" \
		"$(echo "($c1 - $c0 - 1) / $dur" | bc -l)"
}

echo "rlock idle cost over ${dur}s, -t $ttl ($(redis-server --version | awk '{ print $3 }'), $(nproc) CPUs)"
echo
echo "| process | CPU ms | RSS KB | server commands/s |"
echo "|---|---:|---:|---:|"
"$rlock" run -t "$ttl" a -- sleep $((dur + 5)) &
pids+=($!)
measure "run (holding)" "${pids[-1]}"
kill -TERM "${pids[-1]}"
wait "${pids[-1]}" 2>/dev/null
"$rlock" lead -q -t "$ttl" b -- sleep $((dur * 6)) &
pids+=($!)
leader=${pids[-1]}
measure "lead (leading)" "$leader"
"$rlock" lead -q -t "$ttl" b -- sleep $((dur * 6)) &
pids+=($!)
# The leader renews meanwhile: its share is taken off with the line's.
measure "lead (standby; commands: its and the leader's)" "${pids[-1]}"
kill -TERM "${pids[-1]}"
wait "${pids[-1]}" 2>/dev/null
# What a `run` waiting in line behind the same leader costs, for the
# standby's comparison.
"$rlock" run -q -t "$ttl" b -- true &
pids+=($!)
measure "run (waiting in line; commands: its and the leader's)" "${pids[-1]}"
