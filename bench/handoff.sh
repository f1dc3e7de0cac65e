#!/usr/bin/env bash
# handoff.sh - the hand-off next to flock's, for one or more rlock
# binaries side by side (issue 21): a holder's command stamps its end and
# exits while a waiter is blocked; the waiter's command stamps its start.
# Samples alternate between the tools, so that the machine's drift hits
# them alike; the median, minimum and maximum of each are printed (ms).
#
# Usage: bench/handoff.sh [-n SAMPLES] [-d MS] [-s MODE] LABEL=PATH...
#        (default: 30 samples, current=./build/rlock)
# e.g.   bench/handoff.sh -n 30 before=/tmp/old/rlock after=./build/rlock
#
# -s MODE hands off sets of locks (--with, issue 42): "sets", the holder
# and the waiter each take KEY --with KEY-b; "single-set", the holder takes
# KEY alone and the waiter KEY --with KEY-b; "set-single", the holder takes
# KEY --with KEY-b and the waiter KEY alone.  flock takes a set as one
# flock inside the other.
#
# -d MS puts build/helpers/faultproxy (make build/helpers/faultproxy)
# between rlock and the server, holding every chunk MS ms each way: a
# network with a round trip of 2 x MS, as between hosts (flock, local
# only, runs as always).
#
# It starts its own redis-server on a free loopback port (never 6379) and
# stops it by PID.  make test never runs this.

set -uo pipefail
cd "$(dirname "$0")/.." || exit 1
ROOT=$PWD

die() { echo "handoff.sh: $*" >&2; exit 1; }
n=30
delay=0
mode=single
while [[ ${1:-} == -[nds] ]]; do
	case $1 in
	-n) n=${2:?-n needs a number} ;;
	-d) delay=${2:?-d needs a number of ms} ;;
	-s) mode=${2:?-s needs a mode} ;;
	esac
	shift 2
done
case $mode in
single) hset=0 wset=0 ;;
sets) hset=1 wset=1 ;;
single-set) hset=0 wset=1 ;;
set-single) hset=1 wset=0 ;;
*) die "-s: no mode '$mode' (sets, single-set, set-single)" ;;
esac
(($#)) || set -- "current=$ROOT/build/rlock"
command -v flock >/dev/null || die "flock is missing (util-linux)"

tmp=$(mktemp -d /tmp/rlock-handoff.XXXXXX) || die "mktemp failed"
who=handoff.sh
# shellcheck source=bench/private-redis.sh
. "$ROOT/bench/private-redis.sh"
proxy_pid=
trap '[[ -n $proxy_pid ]] && kill "$proxy_pid"; stop_server' EXIT
start_server || die "redis-server did not start"
url=redis://127.0.0.1:$port
if ((delay > 0)); then
	fp=$ROOT/build/helpers/faultproxy
	[[ -x $fp ]] || die "$fp is missing: make build/helpers/faultproxy"
	"$fp" serve -t "$port" -s "$tmp/ctl" -p "$tmp/pport" -T 3600 \
		</dev/null >/dev/null 2>&1 &
	proxy_pid=$!
	poll 5 test -s "$tmp/pport" || die "the proxy did not start"
	"$fp" ctl "$tmp/ctl" delay both "$delay" >/dev/null ||
		die "the proxy refused the delay"
	url=redis://127.0.0.1:$(<"$tmp/pport")
fi

labels=(flock)
bins=(flock)
for arg in "$@"; do
	labels+=("${arg%%=*}")
	bins+=("${arg#*=}")
	[[ -x ${arg#*=} ]] || die "${arg#*=} is not executable"
done

# lk BIN SET KEY CMD...: CMD under lock KEY (SET 1: and KEY-b with it),
# taken by flock or by rlock BIN.
lk() {
	local bin=$1 set=$2 key=$3
	shift 3
	if [[ $bin == flock && $set == 1 ]]; then
		flock "$tmp/$key.lock" flock "$tmp/$key-b.lock" "$@"
	elif [[ $bin == flock ]]; then
		flock "$tmp/$key.lock" "$@"
	elif [[ $set == 1 ]]; then
		"$bin" -u "$url" run "$key" --with "$key-b" -- "$@"
	else
		"$bin" -u "$url" run "$key" -- "$@"
	fi
}

# once BIN KEY: one hand-off, in ms.
once() {
	local d=$tmp/ho hp wp i
	rm -rf "$d"
	mkdir -p "$d"
	lk "$1" "$hset" "$2" bash -c "echo \$EPOCHREALTIME >$d/held; n=0; while [ ! -e $d/go ] && [ \$n -lt 2000 ]; do sleep 0.005; n=\$((n+1)); done; echo \$EPOCHREALTIME >$d/end" &
	hp=$!
	for ((i = 0; i < 3000; i++)); do
		[[ -s $d/held ]] && break
		sleep 0.01
	done
	lk "$1" "$wset" "$2" bash -c "echo \$EPOCHREALTIME >$d/start" &
	wp=$!
	sleep 0.4	# the waiter waits by now (a timing, not a sync: a
			# late waiter only makes that sample a plain run)
	touch "$d/go"
	wait "$hp"
	wait "$wp"
	[[ -s $d/end && -s $d/start ]] || return 1
	awk -v a="$(<"$d/end")" -v b="$(<"$d/start")" 'BEGIN { printf "%.3f\n", (b - a) * 1000 }'
}

# publishes: the PUBLISHes the server ran so far (the scripts' wake-ups
# among them: INFO commandstats counts a script's commands too).
publishes() {
	redis-cli -p "$port" INFO commandstats | tr -d '\r' |
		awk -F'[:,=]' '/^cmdstat_publish:/ { c += $3 } END { print c + 0 }'
}

declare -a calls usec pubs
for ((s = 0; s < n; s++)); do
	for i in "${!bins[@]}"; do
		read -r c0 u0 < <(script_stats)
		p0=$(publishes)
		once "${bins[i]}" "ho$s" >>"$tmp/samples.$i" ||
			echo "handoff.sh: a ${labels[i]} sample failed" >&2
		read -r c1 u1 < <(script_stats)
		p1=$(publishes)
		calls[i]=$((${calls[i]:-0} + c1 - c0))
		usec[i]=$((${usec[i]:-0} + u1 - u0))
		pubs[i]=$((${pubs[i]:-0} + p1 - p0))
	done
done
# The scripts per sample are the holder's and the waiter's whole runs:
# both acquires, the waiter's place in line, the renewal, both releases.
echo "| hand-off ($mode), $n samples | median ms | min | max | scripts per sample | server µs per sample | PUBLISH per sample |"
echo "|---|---:|---:|---:|---:|---:|---:|"
for i in "${!bins[@]}"; do
	sort -n "$tmp/samples.$i" | awk -v l="${labels[i]}" -v c="${calls[i]}" \
		-v u="${usec[i]}" -v n="$n" -v f="${bins[i]}" -v p="${pubs[i]}" '{ a[NR] = $1 }
		END { printf "| %s | %.3f | %.3f | %.3f | %s | %s | %s |\n", l,
			a[int((NR + 1) / 2)], a[1], a[NR],
			f == "flock" ? "" : sprintf("%.1f", c / n),
			f == "flock" ? "" : sprintf("%.0f", u / n),
			f == "flock" ? "" : sprintf("%.1f", p / n) }'
done
