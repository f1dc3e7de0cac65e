#!/usr/bin/env bash
# herd.sh - a fleet's worth on one Redis (issue 46): N processes started
# at once against one private redis-server with a small maxclients, each
# a cron host's `rlock run`, next to flock(1) for the same herd on one
# host.  For each tool and mode it prints how long the herd took to drain
# (first start to last exit), the exit statuses, the connections the
# server refused (INFO stats rejected_connections), the most it held at
# once (connected_clients, sampled every 20ms) and the server's memory.
#
# Usage: bench/herd.sh [-n N] [-m MAXCLIENTS] [-t] [LABEL=PATH...]
#        (default: -n 600 -m 1000, current=./build/rlock)
# e.g.   bench/herd.sh -n 2000 -m 3000 before=/tmp/old/rlock after=./build/rlock
#
# Modes, each herd against a fresh name:
#   once   rlock run -q -w 60s --once-per 1d job -- true  (one runs, the
#          rest find the day's run done and exit 0)
#   line   rlock run -q -w 300s job -- true  (every one runs, in turn)
#   flock  flock -w 300 FILE true  (every one runs, in turn; one host)
# -t runs the rlock herds over TLS too (rediss://, a CA of its own).
#
# It starts its own redis-server on a free loopback port (never 6379) and
# stops it by PID.  make test never runs this: it takes minutes.

set -uo pipefail
cd "$(dirname "$0")/.." || exit 1
ROOT=$PWD

die() { echo "herd.sh: $*" >&2; exit 1; }
n=600
maxc=1000
tls=0
while [[ ${1:-} == -[nmt] ]]; do
	case $1 in
	-n) n=${2:?-n needs a number}; shift 2 ;;
	-m) maxc=${2:?-m needs a number}; shift 2 ;;
	-t) tls=1; shift ;;
	esac
done
(($# > 0)) || set -- "current=$ROOT/build/rlock"
for t in redis-server redis-cli flock python3; do
	command -v "$t" >/dev/null || die "$t is needed"
done
# The server needs maxclients + 32 descriptors; the herd, one each.
ulimit -n $((maxc + n + 1024)) 2>/dev/null || ulimit -n "$(ulimit -Hn)"

tmp=$(mktemp -d /tmp/rlock-herd.XXXXXX) || die "mktemp failed"
who=herd.sh
# shellcheck source=bench/private-redis.sh
source "$ROOT/bench/private-redis.sh"
tls_pid=
cleanup() {
	[[ -n $tls_pid ]] && kill "$tls_pid" 2>/dev/null && wait "$tls_pid" 2>/dev/null
	stop_server
}
trap cleanup EXIT
start_server || exit 1
redis-cli -p "$port" CONFIG SET maxclients "$maxc" >/dev/null ||
	die "CONFIG SET maxclients $maxc refused"
URL="redis://127.0.0.1:$port"

if ((tls)); then
	make_certs "$tmp" || die "openssl failed: $(cat "$tmp/openssl.log")"
	for ((try = 0; try < 20; try++)); do
		tport=$((20000 + (RANDOM * 32768 + RANDOM) % 12000))
		listening "$tport" && continue
		redis-server --port 0 --tls-port "$tport" --bind 127.0.0.1 \
			--tls-cert-file "$tmp/server.crt" --tls-key-file "$tmp/server.key" \
			--tls-ca-cert-file "$tmp/ca.crt" --tls-auth-clients no \
			--maxclients "$maxc" --save '' --appendonly no --dir "$tmp" \
			--logfile "$tmp/tls.log" </dev/null >/dev/null 2>&1 &
		tls_pid=$!
		poll 5 listening "$tport" && kill -0 "$tls_pid" 2>/dev/null && break
		kill "$tls_pid" 2>/dev/null; wait "$tls_pid" 2>/dev/null; tls_pid=
	done
	[[ -n $tls_pid ]] || die "could not start a TLS redis-server"
	TLS_URL="rediss://127.0.0.1:$tport"
fi

# info CLI... FIELD: one INFO field of the server the redis-cli words reach.
info() {
	local f=${*: -1}
	"${@:1:$#-1}" INFO all 2>/dev/null | tr -d '\r' | sed -n "s/^$f://p"
}

# herd LABEL MODE BIN URL: run the herd, print one row.
herd() {
	local label=$1 mode=$2 bin=$3 url=$4 name i st t0 t1 peak rej0 rej1
	local -a cli pids=()
	declare -A count=()
	name="herd-$mode-$RANDOM$RANDOM"
	if [[ $url == rediss://* ]]; then
		cli=(redis-cli --tls --cacert "$tmp/ca.crt" -p "$tport")
	else
		cli=(redis-cli -p "$port")
	fi
	rej0=$(info "${cli[@]}" rejected_connections)
	: >"$tmp/peak"
	(
		p=0
		while [[ ! -e $tmp/stop ]]; do
			c=$(info "${cli[@]}" connected_clients)
			((c > p)) && p=$c
			echo "$p" >"$tmp/peak"
			sleep 0.02
		done
	) &
	local sampler=$!
	t0=$(date +%s%N)
	for ((i = 0; i < n; i++)); do
		case $mode in
		once) RLOCK_URL=$url RLOCK_CACERT=$tmp/ca.crt "$bin" run -q -w 60s \
			--once-per 1d "$name" -- true </dev/null >/dev/null 2>>"$tmp/err.$label.$mode" & ;;
		line) RLOCK_URL=$url RLOCK_CACERT=$tmp/ca.crt "$bin" run -q -w 300s \
			"$name" -- true </dev/null >/dev/null 2>>"$tmp/err.$label.$mode" & ;;
		flock) flock -w 300 "$tmp/$name" true </dev/null >/dev/null 2>&1 & ;;
		esac
		pids+=($!)
	done
	for i in "${pids[@]}"; do
		wait "$i"
		st=$?
		count[$st]=$((${count[$st]:-0} + 1))
	done
	t1=$(date +%s%N)
	touch "$tmp/stop"
	wait "$sampler" 2>/dev/null
	rm -f "$tmp/stop"
	peak=$(cat "$tmp/peak")
	rej1=$(info "${cli[@]}" rejected_connections)
	local exits="" k
	for k in $(printf '%s\n' "${!count[@]}" | sort -n); do
		exits+="$k:${count[$k]} "
	done
	printf '| %s | %s | %d | %.2f | %s| %s | %s | %s |\n' "$label" "$mode" "$n" \
		"$(echo "($t1 - $t0) / 1000000000" | bc -l)" "$exits" \
		"$((rej1 - rej0))" "${peak:-?}" "$(info "${cli[@]}" used_memory_human)"
}

echo "| tool | mode | herd | drain s | exits (status:count) | rejected | peak connections | server memory |"
echo "|---|---|---:|---:|---|---:|---:|---:|"
herd flock flock flock "$URL"
for spec in "$@"; do
	label=${spec%%=*} bin=${spec#*=}
	[[ -x $bin ]] || die "$bin is not a program"
	herd "$label" once "$bin" "$URL"
	herd "$label" line "$bin" "$URL"
	if ((tls)); then
		herd "$label-tls" once "$bin" "$TLS_URL"
		herd "$label-tls" line "$bin" "$TLS_URL"
	fi
done
for f in "$tmp"/err.*; do
	[[ -s $f ]] || continue
	echo
	echo "${f##*/err.}: $(wc -l <"$f") lines on stderr, the first:"
	sed -E "s/[0-9.]+m?s/N/g; s/:[0-9]+:/:PORT:/" "$f" | sort | uniq -c | sort -rn | head -n 5
done
echo
echo "maxclients $maxc; $(nproc) cores; load $(cut -d' ' -f1-3 /proc/loadavg)"
