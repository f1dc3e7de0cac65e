#!/usr/bin/env bash
# runcost.sh - what an uncontended `rlock run NAME -- true` costs next to
# `flock FILE true`, for one or more rlock binaries side by side (issue
# 21):
#
#   time   wall time of one run, µs, with USER set: spawned and reaped by
#          python (posix_spawn, no shell in between), the tools taking
#          turns sample by sample, so that the machine's drift hits them
#          alike (median, p25, p75);
#   RSS    peak RSS, KB (/usr/bin/time -f %M), runs alternating between
#          the tools, with USER set (as in a login shell, cron or a unit
#          with User=) and without (rlock then asks NSS for the name);
#   conns  the connections the server accepted per run.
#
# Usage: bench/runcost.sh [-n SAMPLES] LABEL=PATH...
#        (default: 300 time samples and 31 RSS ones per tool, ./build/rlock)
# e.g.   bench/runcost.sh before=/tmp/old/rlock after=./build/rlock
#
# It starts its own redis-server on a free loopback port (never 6379) and
# stops it by PID.  make test never runs this.

set -uo pipefail
cd "$(dirname "$0")/.." || exit 1
ROOT=$PWD

die() { echo "runcost.sh: $*" >&2; exit 1; }
n=300
if [[ ${1:-} == -n ]]; then
	n=${2:?-n needs a number}
	shift 2
fi
[[ $n =~ ^[0-9]+$ ]] && ((n >= 10)) || die "-n needs a number of 10 or more"
(($#)) || set -- "current=$ROOT/build/rlock"
for c in flock python3; do
	command -v "$c" >/dev/null || die "$c is missing"
done
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

# median: the median of the numbers on stdin.
median() {
	sort -n | awk '{ a[NR] = $1 } END { print a[int((NR + 1) / 2)] }'
}

accepted() {
	redis-cli -p "$port" INFO stats | tr -d '\r' |
		awk -F: '$1 == "total_connections_received" { print $2 }'
}

USER=root python3 - "$n" "${labels[@]}" -- "${cmds[@]}" <<'PY'
import os, sys, time
n = int(sys.argv[1])
sep = sys.argv.index("--")
labels, cmds = sys.argv[2:sep], [c.split() for c in sys.argv[sep + 1:]]
null = os.open(os.devnull, os.O_WRONLY)
acts = [(os.POSIX_SPAWN_DUP2, null, 1), (os.POSIX_SPAWN_DUP2, null, 2)]
us = [[] for _ in cmds]
for i in range(5 + n):
    for j, c in enumerate(cmds):
        t0 = time.perf_counter_ns()
        pid = os.posix_spawnp(c[0], c, os.environ, file_actions=acts)
        os.waitpid(pid, 0)
        if i >= 5:
            us[j].append((time.perf_counter_ns() - t0) // 1000)
q = lambda v, f: sorted(v)[int(len(v) * f)]
print("| tool | µs median | p25 | p75 | ÷ flock |")
print("|---|---:|---:|---:|---:|")
for label, v in zip(labels, us):
    print(f"| {label} | {q(v, .5)} | {q(v, .25)} | {q(v, .75)} | {q(v, .5) / q(us[0], .5):.2f}× |")
PY

declare -A rss rss_nouser
for ((i = 0; i < 31; i++)); do
	for j in "${!cmds[@]}"; do
		rss[$j]+="$(USER=root /usr/bin/time -f %M ${cmds[j]} 2>&1 >/dev/null | tail -1) "
		rss_nouser[$j]+="$(env -u USER -u LOGNAME /usr/bin/time -f %M ${cmds[j]} 2>&1 >/dev/null | tail -1) "
	done
done

echo
echo "| tool | peak RSS KB, USER set | ÷ flock | without USER | ÷ flock | connections per run |"
echo "|---|---:|---:|---:|---:|---:|"
for j in "${!cmds[@]}"; do
	r=$(tr ' ' '\n' <<<"${rss[$j]}" | grep . | median)
	rn=$(tr ' ' '\n' <<<"${rss_nouser[$j]}" | grep . | median)
	if ((j == 0)); then
		r0=$r rn0=$rn c=-
	else
		a=$(accepted)
		${cmds[j]} >/dev/null 2>&1
		c=$(($(accepted) - a - 1)) # less INFO's own
	fi
	echo "| ${labels[j]} | $r | $(awk -v a="$r" -v b="$r0" 'BEGIN { printf "%.2f×", a / b }') | $rn | $(awk -v a="$rn" -v b="$rn0" 'BEGIN { printf "%.2f×", a / b }') | $c |"
done
