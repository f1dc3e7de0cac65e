#!/usr/bin/env bash
# runcost.sh - what an uncontended `rlock run NAME -- true` costs next to
# `flock FILE true`, for one or more rlock binaries side by side (issue
# 21):
#
#   time   wall time of one run, µs: samples alternate between the tools,
#          so that the machine's drift hits them alike (median, p25, p75);
#   RSS    peak RSS, KB (/usr/bin/time -f %M), alternating the same way,
#          with USER set (as in a login shell, cron or a unit with User=)
#          and without (rlock then asks NSS for the user's name);
#   conns  the connections the server accepted per run.
#
# Usage: bench/runcost.sh [-n SAMPLES] LABEL=PATH...
#        (default: 200 time samples, a quarter as many RSS ones, ./rlock)
# e.g.   bench/runcost.sh before=/tmp/old/rlock after=./rlock
#
# It starts its own redis-server on a free loopback port (never 6379) and
# stops it by PID.  make test never runs this.

set -uo pipefail
cd "$(dirname "$0")/.." || exit 1
ROOT=$PWD

die() { echo "runcost.sh: $*" >&2; exit 1; }
n=200
if [[ ${1:-} == -n ]]; then
	n=${2:?-n needs a number}
	shift 2
fi
[[ $n =~ ^[0-9]+$ ]] && ((n >= 8)) || die "-n needs a number of 8 or more"
(($#)) || set -- "current=$ROOT/rlock"
command -v flock >/dev/null || die "flock is missing (util-linux)"
[[ -x /usr/bin/time ]] || die "/usr/bin/time is missing (apt-get install time)"

tmp=$(mktemp -d /tmp/rlock-runcost.XXXXXX) || die "mktemp failed"
who=runcost.sh
# shellcheck source=bench/private-redis.sh
. "$ROOT/bench/private-redis.sh"
trap 'stop_server' EXIT
start_server || die "redis-server did not start"
url=redis://127.0.0.1:$port

labels=(flock)
cmds=("flock $tmp/f true")
for arg in "$@"; do
	[[ -x ${arg#*=} ]] || die "${arg#*=} is not executable"
	labels+=("${arg%%=*}")
	cmds+=("${arg#*=} -u $url run k -- true")
done

# stats: median, p25 and p75 of the numbers on stdin.
stats() {
	sort -n | awk '{ a[NR] = $1 } END {
		printf "%d | %d | %d", a[int(NR / 2) + 1], a[int(NR / 4) + 1],
		       a[int(3 * NR / 4) + 1] }'
}

accepted() {
	redis-cli -p "$port" INFO stats | tr -d '\r' |
		awk -F: '$1 == "total_connections_received" { print $2 }'
}

declare -A us rss rss_nouser
for ((i = 0; i < 5; i++)); do # warm up
	for c in "${cmds[@]}"; do $c >/dev/null 2>&1; done
done
for ((i = 0; i < n; i++)); do
	for j in "${!cmds[@]}"; do
		s=$EPOCHREALTIME
		${cmds[j]} >/dev/null 2>&1
		e=$EPOCHREALTIME
		us[$j]+="$((${e/./} - ${s/./})) "
		((i % 4 == 0)) || continue
		rss[$j]+="$(USER=root /usr/bin/time -f %M ${cmds[j]} 2>&1 >/dev/null | tail -1) "
		rss_nouser[$j]+="$(env -u USER -u LOGNAME /usr/bin/time -f %M ${cmds[j]} 2>&1 >/dev/null | tail -1) "
	done
done

echo "| tool | µs median | p25 | p75 | ÷ flock | peak RSS KB, USER set | ÷ flock | without USER | connections per run |"
echo "|---|---:|---:|---:|---:|---:|---:|---:|---:|"
for j in "${!cmds[@]}"; do
	t=$(tr ' ' '\n' <<<"${us[$j]}" | grep . | stats)
	r=$(tr ' ' '\n' <<<"${rss[$j]}" | grep . | stats | cut -d' ' -f1)
	rn=$(tr ' ' '\n' <<<"${rss_nouser[$j]}" | grep . | stats | cut -d' ' -f1)
	if ((j == 0)); then
		t0=${t%% *} r0=$r c=-
	else
		a=$(accepted)
		${cmds[j]} >/dev/null 2>&1
		c=$(($(accepted) - a - 1)) # less INFO's own
	fi
	echo "| ${labels[j]} | $t | $(awk -v a="${t%% *}" -v b="$t0" 'BEGIN { printf "%.2f×", a / b }') | $r | $(awk -v a="$r" -v b="$r0" 'BEGIN { printf "%.2f×", a / b }') | $rn | $c |"
done
