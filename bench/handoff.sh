#!/usr/bin/env bash
# handoff.sh - the hand-off next to flock's, for one or more rlock
# binaries side by side (issue 21): a holder's command stamps its end and
# exits while a waiter is blocked; the waiter's command stamps its start.
# Samples alternate between the tools, so that the machine's drift hits
# them alike; the median, minimum and maximum of each are printed (ms).
#
# Usage: bench/handoff.sh [-n SAMPLES] LABEL=PATH...
#        (default: 30 samples, current=./rlock)
# e.g.   bench/handoff.sh -n 30 before=/tmp/old/rlock after=./rlock
#
# It starts its own redis-server on a free loopback port (never 6379) and
# stops it by PID.  make test never runs this.

set -uo pipefail
cd "$(dirname "$0")/.." || exit 1
ROOT=$PWD

die() { echo "handoff.sh: $*" >&2; exit 1; }
n=30
if [[ ${1:-} == -n ]]; then
	n=${2:?-n needs a number}
	shift 2
fi
(($#)) || set -- "current=$ROOT/rlock"
command -v flock >/dev/null || die "flock is missing (util-linux)"

tmp=$(mktemp -d /tmp/rlock-handoff.XXXXXX) || die "mktemp failed"
who=handoff.sh
# shellcheck source=bench/private-redis.sh
. "$ROOT/bench/private-redis.sh"
trap 'stop_server' EXIT
start_server || die "redis-server did not start"

labels=(flock)
bins=(flock)
for arg in "$@"; do
	labels+=("${arg%%=*}")
	bins+=("${arg#*=}")
	[[ -x ${arg#*=} ]] || die "${arg#*=} is not executable"
done

# lk BIN KEY CMD...: CMD under lock KEY, taken by flock or by rlock BIN.
lk() {
	local bin=$1 key=$2
	shift 2
	if [[ $bin == flock ]]; then
		flock "$tmp/$key.lock" "$@"
	else
		"$bin" -u "redis://127.0.0.1:$port" run "$key" -- "$@"
	fi
}

# once BIN KEY: one hand-off, in ms.
once() {
	local d=$tmp/ho hp wp i
	rm -rf "$d"
	mkdir -p "$d"
	lk "$1" "$2" bash -c "echo \$EPOCHREALTIME >$d/held; n=0; while [ ! -e $d/go ] && [ \$n -lt 2000 ]; do sleep 0.005; n=\$((n+1)); done; echo \$EPOCHREALTIME >$d/end" &
	hp=$!
	for ((i = 0; i < 3000; i++)); do
		[[ -s $d/held ]] && break
		sleep 0.01
	done
	lk "$1" "$2" bash -c "echo \$EPOCHREALTIME >$d/start" &
	wp=$!
	sleep 0.4	# the waiter waits by now (a timing, not a sync: a
			# late waiter only makes that sample a plain run)
	touch "$d/go"
	wait "$hp"
	wait "$wp"
	[[ -s $d/end && -s $d/start ]] || return 1
	awk -v a="$(<"$d/end")" -v b="$(<"$d/start")" 'BEGIN { printf "%.3f\n", (b - a) * 1000 }'
}

for ((s = 0; s < n; s++)); do
	for i in "${!bins[@]}"; do
		once "${bins[i]}" "ho$s" >>"$tmp/samples.$i" ||
			echo "handoff.sh: a ${labels[i]} sample failed" >&2
	done
done
echo "| hand-off, $n samples | median ms | min | max |"
echo "|---|---:|---:|---:|"
for i in "${!bins[@]}"; do
	sort -n "$tmp/samples.$i" | awk -v l="${labels[i]}" '{ a[NR] = $1 }
		END { printf "| %s | %.3f | %.3f | %.3f |\n", l, a[int((NR + 1) / 2)], a[1], a[NR] }'
done
