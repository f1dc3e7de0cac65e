#!/usr/bin/env bash
# lean.sh - the server's work per lock cycle (issue 34), in instructions
# callgrind counts inside the script commands (EVALSHA, EVAL, FCALL), which
# noise does not move, for rlock binaries and node-redlock's scripts side
# by side on the same redis-server:
#
#   cycle      an uncontended acquire + release: "rlock bench -c 1 -k 1
#              --no-ping", 2000 cycles; node-redlock's two scripts (taken
#              from an installed redlock package) on a key of the same
#              length as rlock bench's, through redis-cli, 2000 cycles;
#   steady     the same, 6000 cycles less 2000, over 4000: what is paid
#              once per server cancels out (rlock's first EVAL compiles
#              its scripts inside the count, where node-redlock's SCRIPT
#              LOAD is outside it; the history stream's first 1000 entries
#              grow it before trims keep it level);
#   replica    what one replica attached adds to the cycle: the server's
#              instructions in processCommand (the command, its effects'
#              propagation, its reply) with a replica less without one;
#   contended  "rlock bench -c N -k 1" for N = 10 and 100: N clients on
#              one lock, per completed cycle (a hand-off each).
#
# Usage: bench/lean.sh LABEL=PATH...   (default: current=./build/rlock)
#
# node-redlock's scripts are read from NODE_PATH's redlock (npm install
# redlock@5.0.0-beta.2 into a temporary directory when it is missing, as
# bench/lib50.sh does); without node, its rows are left out.  Starts its own
# servers on free loopback ports and stops them by PID.  make test never
# runs this.

set -uo pipefail
cd "$(dirname "$0")/.." || exit 1
ROOT=$PWD

die() { echo "lean.sh: $*" >&2; exit 1; }
command -v valgrind >/dev/null && command -v callgrind_annotate >/dev/null ||
	die "valgrind is missing (apt-get install valgrind)"
(($#)) || set -- "current=$ROOT/build/rlock"

tmp=$(mktemp -d /tmp/rlock-lean.XXXXXX) || die "mktemp failed"
pids=()
cleanup() {
	local p
	for p in "${pids[@]}"; do kill "$p" 2>/dev/null; done
	wait 2>/dev/null
	rm -rf "$tmp"
}
trap cleanup EXIT

who=lean.sh
# shellcheck source=bench/private-redis.sh
. "$ROOT/bench/private-redis.sh"
free_port() {
	local p i
	for ((i = 0; i < 50; i++)); do
		p=$((20000 + (RANDOM * 32768 + RANDOM) % 12000))
		listening "$p" || { echo "$p"; return 0; }
	done
	return 1
}
up() { poll 30 redis-cli -p "$1" PING >/dev/null 2>&1; }

# measured [--replica] [--commands] DRIVER...: start a redis-server under
# callgrind (counting inside the script commands only, or with --commands
# in processCommand, which propagation happens in), with a replica
# attached with --replica, run DRIVER PORT, stop the server; print the
# instructions counted.
measured() {
	local rep=0 p rp vp rpid= ir
	local -a toggle=(--toggle-collect=evalShaCommand
		--toggle-collect=evalCommand --toggle-collect=fcallCommand)
	while [[ $1 == --* ]]; do
		case $1 in
		--replica) rep=1 ;;
		--commands) toggle=(--toggle-collect=processCommand) ;;
		esac
		shift
	done
	p=$(free_port) || return 1
	valgrind --tool=callgrind --callgrind-out-file="$tmp/s.out" \
		"${toggle[@]}" \
		redis-server --port "$p" --bind 127.0.0.1 --save '' \
		--appendonly no --dir "$tmp" >/dev/null 2>&1 &
	vp=$!
	pids+=("$vp")
	up "$p" || return 1
	if ((rep)); then
		rp=$(free_port) || return 1
		redis-server --port "$rp" --bind 127.0.0.1 --save '' \
			--appendonly no --dir "$tmp" --replicaof 127.0.0.1 "$p" \
			>/dev/null 2>&1 &
		rpid=$!
		pids+=("$rpid")
		up "$rp" || return 1
		for ((i = 0; i < 3000; i++)); do
			[[ $(redis-cli -p "$rp" INFO replication) == *master_link_status:up* ]] &&
				break
			sleep 0.01
		done
	fi
	"$@" "$p" >/dev/null || return 1
	redis-cli -p "$p" SHUTDOWN NOSAVE >/dev/null 2>&1
	wait "$vp"
	[[ -n $rpid ]] && kill "$rpid" 2>/dev/null && wait "$rpid" 2>/dev/null
	ir=$(callgrind_total "$tmp/s.out")
	echo "$ir"
}

rlock_bench() { # BIN CLIENTS CYCLES PORT
	"$1" -u "redis://127.0.0.1:$4" bench -c "$2" -k 1 -n "$3" --no-ping
}

# node-redlock's acquire and release scripts, from its package.
nr_scripts() {
	local d
	if ! node -e 'require("redlock")' 2>/dev/null; then
		mkdir -p "$tmp/npm" &&
			(cd "$tmp/npm" && timeout 300 npm install --no-audit --no-fund \
				--loglevel=error redlock@5.0.0-beta.2 >/dev/null 2>&1) ||
			return 1
		export NODE_PATH=$tmp/npm/node_modules
	fi
	d=$(node -e 'console.log(require.resolve("redlock"))') || return 1
	node -e '
		const s = require("fs").readFileSync(process.argv[1], "utf8");
		const g = (n) => s.split("const " + n + " = `")[1].split("`;")[0];
		require("fs").writeFileSync(process.argv[2], g("ACQUIRE_SCRIPT"));
		require("fs").writeFileSync(process.argv[3], g("RELEASE_SCRIPT"));
	' "$d" "$tmp/nr_acq.lua" "$tmp/nr_rel.lua"
}

# nr_cycles [N] PORT: N (2000) acquire + release cycles of node-redlock's
# scripts, on a key as long as rlock bench's ("rlock:{bench-XXXXXXXX-0}").
nr_cycles() {
	local sa sr i n=2000 key='rlock:{bench-0123abcd-0}'
	(($# == 2)) && n=$1 && shift
	sa=$(redis-cli -p "$1" SCRIPT LOAD "$(cat "$tmp/nr_acq.lua")") || return 1
	sr=$(redis-cli -p "$1" SCRIPT LOAD "$(cat "$tmp/nr_rel.lua")") || return 1
	for ((i = 0; i < n; i++)); do
		printf 'EVALSHA %s 1 %s %032x 10000\nEVALSHA %s 1 %s %032x\n' \
			"$sa" "$key" "$i" "$sr" "$key" "$i"
	done | redis-cli -p "$1" >/dev/null
}

nr=0
if command -v node >/dev/null && nr_scripts; then
	nr=1
fi

echo "| server instructions | uncontended cycle (scripts) | steady (6000 − 2000 cycles) | a replica adds (commands) | per cycle, 10 clients on one lock | per cycle, 100 clients |"
echo "|---|---:|---:|---:|---:|---:|"
if ((nr)); then
	a=$(measured nr_cycles) || die "node-redlock measure failed"
	a6=$(measured nr_cycles 6000) || die "node-redlock measure failed"
	p0=$(measured --commands nr_cycles) || die "node-redlock measure failed"
	p1=$(measured --commands --replica nr_cycles) || die "node-redlock measure failed"
	echo "| node-redlock (EXISTS + SET PX; GET + DEL) | $((a / 2000)) | $(((a6 - a) / 4000)) | $(((p1 - p0) / 2000)) | | |"
fi
for arg in "$@"; do
	label=${arg%%=*}
	bin=${arg#*=}
	[[ -x $bin ]] || die "$bin is not executable"
	cp "$bin" "$tmp/bin-$label" || die "cannot copy $bin"
	b="$tmp/bin-$label"
	c=$(measured rlock_bench "$b" 1 2000) || die "measure failed for $label"
	c6=$(measured rlock_bench "$b" 1 6000) || die "measure failed for $label"
	p0=$(measured --commands rlock_bench "$b" 1 2000) || die "measure failed for $label"
	p1=$(measured --commands --replica rlock_bench "$b" 1 2000) ||
		die "measure failed for $label"
	c10=$(measured rlock_bench "$b" 10 2000) || die "measure failed for $label"
	c100=$(measured rlock_bench "$b" 100 2000) || die "measure failed for $label"
	echo "| $label ($("$b" --version | head -1)) | $((c / 2000)) | $(((c6 - c) / 4000)) | $(((p1 - p0) / 2000)) | $((c10 / 2000)) | $((c100 / 2000)) |"
done
