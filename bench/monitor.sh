#!/usr/bin/env bash
# monitor.sh - what a monitoring read costs on a long history (issue 32),
# for one or more rlock binaries side by side:
#
#   last     rlock last over a lock whose history is N "lost" entries and
#            no success (the worst case: nothing to stop at): peak RSS
#            (GNU time's %M) and wall time;
#   log3     rlock log -n M over three masters that each recorded the same
#            M events (one history merged from three): wall time;
#   logmax   rlock log -n 100000 (the most -n allows) over the first
#            history: peak RSS, the bound of any history read.
#
# Usage: bench/monitor.sh [-n N] [-m M] LABEL=PATH...
# e.g.   bench/monitor.sh before=/tmp/old/rlock after=./build/rlock
#
# It starts its own redis-servers on free loopback ports (never 6379) and
# stops them by PID.  make test never runs this.

set -uo pipefail
cd "$(dirname "$0")/.." || exit 1
ROOT=$PWD
N=200000
M=40000
while getopts n:m: o; do
	case $o in
	n) N=$OPTARG ;;
	m) M=$OPTARG ;;
	*) exit 64 ;;
	esac
done
shift $((OPTIND - 1))
(($#)) || set -- "current=$ROOT/build/rlock"

die() { echo "monitor.sh: $*" >&2; exit 1; }
[[ -x /usr/bin/time ]] || die "GNU time is missing (apt-get install time)"
who=monitor.sh
base=$(mktemp -d /tmp/rlock-monitor.XXXXXX) || die "mktemp failed"
# shellcheck source=bench/private-redis.sh
. "$ROOT/bench/private-redis.sh"
ports=()
pids=()
cleanup() {
	local p
	for p in "${pids[@]}"; do
		kill "$p" 2>/dev/null
	done
	rm -rf "$base"
}
trap cleanup EXIT
for i in 1 2 3; do
	tmp=$base/s$i
	mkdir -p "$tmp"
	start_server || die "redis-server did not start"
	ports+=("$port")
	pids+=("$server_pid")
done

# fill PORT KEY COUNT EVENT: COUNT entries of EVENT, one token each.
fill() {
	awk -v k="$2" -v n="$3" -v ev="$4" 'BEGIN {
		for (i = 1; i <= n; i++)
			printf "XADD %s * event %s host h user u pid 1 kind x fence %d token %08x held 5 reason r\n", k, ev, i, i
	}' | redis-cli -p "$1" --pipe >/dev/null
}

fill "${ports[0]}" 'rlock:{long}:log' "$N" lost
for p in "${ports[@]}"; do
	fill "$p" 'rlock:{three}:log' "$M" released
done

printf '| binary | last over %d lost entries: peak RSS | time | log -n %d over 3 masters: time | log -n 100000: peak RSS |\n' "$N" "$M"
printf '|---|---:|---:|---:|---:|\n'
for arg; do
	label=${arg%%=*}
	bin=${arg#*=}
	/usr/bin/time -f '%M %e' -o "$base/t.last" "$bin" \
		-u "redis://127.0.0.1:${ports[0]}" last long >/dev/null 2>&1
	read -r rss el <"$base/t.last"
	/usr/bin/time -f '%e' -o "$base/t.log" "$bin" \
		-u "redis://127.0.0.1:${ports[0]}" -u "redis://127.0.0.1:${ports[1]}" \
		-u "redis://127.0.0.1:${ports[2]}" --io-timeout 120s \
		log -n "$M" three >/dev/null 2>&1
	read -r el3 <"$base/t.log"
	/usr/bin/time -f '%M' -o "$base/t.max" "$bin" \
		-u "redis://127.0.0.1:${ports[0]}" log -n 100000 long >/dev/null 2>&1
	read -r rssmax <"$base/t.max"
	printf '| %s | %s MB | %s s | %s s | %s MB |\n' "$label" \
		"$(awk -v k="$rss" 'BEGIN { printf "%.1f", k / 1024 }')" "$el" "$el3" \
		"$(awk -v k="$rssmax" 'BEGIN { printf "%.1f", k / 1024 }')"
done
