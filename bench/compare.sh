#!/usr/bin/env bash
# compare.sh - rlock next to the tools people use for the same job, in one
# run on one machine so that the ratios are fair:
#
#   flock(1)          a kernel file lock (one machine only; the floor)
#   etcdctl lock      etcd's lock, with a session lease kept alive
#   cronlock-style    a shell script around redis-cli: SET NX PX, poll every
#                     50ms, compare-and-delete (written below)
#   redis-py Lock     python3-redis' Lock: SET NX PX, polls every 100ms
#   node-redlock      redlock@5 + ioredis, redlock.using() (auto-extends)
#   rlock             rlock run / rlock bench
#
# Sections: 1 overhead of "<tool> KEY -- true" (hyperfine); 2 hand-off from
# the holder's command ending to the waiter's command starting; 3 CLI
# throughput with 1 and 8 concurrent loops on one key; 4 peak RSS;
# 5 mutual exclusion (20 processes x 3 read-modify-write rounds, and 3
# holders that keep the lock 1.75x its TTL); 6 library level: cycles/s of
# rlock bench, node-redlock and redis-py at C = 1, 8, 50 against
# redis-benchmark's SET/2; 7 rlock bench across clients and contention.
#
# It starts a private redis-server and etcd on free loopback ports (never
# 6379/2379), stops them by PID, and writes bench/RESULTS.md.  Peers that
# are missing are installed: Debian packages with apt-get (hyperfine, etcd,
# python3-redis, nodejs, npm, time), redlock and ioredis with npm into a
# temporary directory.  make test never runs this.
#
#   bench/compare.sh            the full run (about 10 minutes)
#   QUICK=1 bench/compare.sh    fewer samples and shorter runs, to try it
#   KEEP=1 bench/compare.sh     keep the raw measurements (a /tmp directory)
#
# The numbers are only as quiet as the machine: run it with nothing else
# busy.

set -uo pipefail
cd "$(dirname "$0")/.." || exit 1
ROOT=$PWD
OUT=$ROOT/bench/RESULTS.md
QUICK=${QUICK:-0}

if ((QUICK)); then
	HF_RUNS=10 HANDOFFS=5 TPUT_SECS=1 LIB_SECS=1 LIB_REPS=1 BENCH_REPS=1
	RMW_PROCS=6 RSS_RUNS=3
else
	HF_RUNS=40 HANDOFFS=20 TPUT_SECS=3 LIB_SECS=2 LIB_REPS=3 BENCH_REPS=3
	RMW_PROCS=20 RSS_RUNS=5
fi
RMW_ROUNDS=3
TTL_SECS=2			# section 5b: leases of 2s held for 3.5s
HOLD_SECS=3.5
PY=/usr/bin/python3		# Debian's, where python3-redis lives

say() { printf 'compare: %s\n' "$*" >&2; }
die() {
	say "$*"
	exit 1
}

# ---- tools -------------------------------------------------------------------

install_peers() {
	local -a missing=()
	command -v hyperfine >/dev/null || missing+=(hyperfine)
	command -v etcd >/dev/null || missing+=(etcd-server)
	command -v etcdctl >/dev/null || missing+=(etcd-client)
	command -v redis-server >/dev/null || missing+=(redis-server)
	command -v redis-benchmark >/dev/null || missing+=(redis-tools)
	command -v flock >/dev/null || missing+=(util-linux)
	command -v node >/dev/null || missing+=(nodejs)
	command -v npm >/dev/null || missing+=(npm)
	[[ -x /usr/bin/time ]] || missing+=(time)
	$PY -c 'import redis' 2>/dev/null || missing+=(python3-redis)
	if ((${#missing[@]} > 0)); then
		say "installing ${missing[*]}"
		local sudo=
		(($(id -u) == 0)) || sudo=sudo
		$sudo apt-get update -qq &&
			DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq \
				--no-install-recommends "${missing[@]}" >/dev/null ||
			die "cannot install ${missing[*]}"
	fi
	# redlock 5 exists only as 5.0.0-beta.2 (a plain "redlock@5" does not
	# resolve); it is the version whose README uses ioredis 5.
	NPM_DIR=$W/npm
	mkdir -p "$NPM_DIR"
	(cd "$NPM_DIR" && timeout 300 npm install --no-audit --no-fund \
		--loglevel=error redlock@5.0.0-beta.2 ioredis@5 >/dev/null 2>&1) ||
		die "npm install redlock ioredis failed"
	export NODE_PATH=$NPM_DIR/node_modules
}

# ---- servers -----------------------------------------------------------------

free_port() {
	local p i
	for ((i = 0; i < 100; i++)); do
		p=$((20000 + (RANDOM * 32768 + RANDOM) % 12000))
		if ! (exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null; then
			echo "$p"
			return 0
		fi
	done
	return 1
}

# wait_for SECS COMMAND...: poll every 50ms, bounded.
wait_for() {
	local n=$(($1 * 20))
	shift
	while ((n-- > 0)); do
		"$@" >/dev/null 2>&1 && return 0
		sleep 0.05
	done
	return 1
}

start_servers() {
	REDIS_PORT=$(free_port) || die "no free port"
	redis-server --bind 127.0.0.1 --port "$REDIS_PORT" --save '' \
		--appendonly no --dir "$W" --logfile "$W/redis.log" \
		--daemonize no </dev/null >/dev/null 2>&1 &
	REDIS_PID=$!
	wait_for 10 redis-cli -p "$REDIS_PORT" ping || die "redis-server did not start"

	ETCD_PORT=$(free_port) || die "no free port"
	ETCD_PEER=$(free_port) || die "no free port"
	# Data in memory, as Redis' is here: neither pays for a disk.
	ETCD_DIR=$(mktemp -d /dev/shm/rlock-etcd.XXXXXX)
	etcd --name rlb --data-dir "$ETCD_DIR" \
		--listen-client-urls "http://127.0.0.1:$ETCD_PORT" \
		--advertise-client-urls "http://127.0.0.1:$ETCD_PORT" \
		--listen-peer-urls "http://127.0.0.1:$ETCD_PEER" \
		--initial-advertise-peer-urls "http://127.0.0.1:$ETCD_PEER" \
		--initial-cluster "rlb=http://127.0.0.1:$ETCD_PEER" \
		--logger zap --log-level error </dev/null >"$W/etcd.log" 2>&1 &
	ETCD_PID=$!
	export ETCDCTL_API=3
	ETCD_URL=http://127.0.0.1:$ETCD_PORT
	wait_for 20 etcdctl --endpoints="$ETCD_URL" endpoint health ||
		die "etcd did not start (see $W/etcd.log)"
	export REDIS_PORT ETCD_URL
	REDIS_URL_=redis://127.0.0.1:$REDIS_PORT
}

stop_pid() {
	local pid=$1 i
	[[ -n $pid ]] || return 0
	kill -TERM "$pid" 2>/dev/null || return 0
	for ((i = 0; i < 100; i++)); do
		kill -0 "$pid" 2>/dev/null || break
		sleep 0.05
	done
	kill -KILL "$pid" 2>/dev/null
	wait "$pid" 2>/dev/null
	return 0
}

cleanup() {
	stop_pid "${REDIS_PID:-}"
	stop_pid "${ETCD_PID:-}"
	[[ -n ${ETCD_DIR:-} && $ETCD_DIR == /dev/shm/rlock-etcd.* ]] && rm -rf "$ETCD_DIR"
	if [[ -n ${W:-} && -d $W ]]; then
		if [[ -n ${KEEP:-} ]]; then
			say "raw measurements kept in $W"
		else
			rm -rf "$W"
		fi
	fi
}

# ---- the peers' wrappers -------------------------------------------------------
# Each takes KEY COMMAND [ARG...], runs COMMAND while holding KEY and exits
# with its status; LOCK_TTL_MS sets the lease (default 30s).

write_wrappers() {
	cat >"$W/cronlock.sh" <<'EOF'
#!/bin/bash
# cronlock-style: redis-cli SET NX PX, poll every 50ms (at most 60s),
# run the command, then compare-and-delete.  No renewal.
key=$1
shift
tok=$HOSTNAME.$$.$RANDOM$RANDOM
ttl=${LOCK_TTL_MS:-30000}
rc() { redis-cli -h 127.0.0.1 -p "$REDIS_PORT" "$@"; }
n=0
until [[ $(rc SET "cl:$key" "$tok" NX PX "$ttl") == OK ]]; do
	((++n > 1200)) && { echo "cronlock: $key: timed out" >&2; exit 75; }
	sleep 0.05
done
"$@"
code=$?
rc EVAL "if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('del', KEYS[1]) end return 0" \
	1 "cl:$key" "$tok" >/dev/null
exit $code
EOF
	cat >"$W/lk.py" <<'EOF'
# redis-py Lock around a command: blocking acquire with the library's
# defaults (SET NX PX, a 100ms sleep between tries), no renewal.
import os, subprocess, sys
import redis

key, cmd = sys.argv[1], sys.argv[2:]
ttl = int(os.environ.get("LOCK_TTL_MS", "30000")) / 1000.0
r = redis.Redis(host="127.0.0.1", port=int(os.environ["REDIS_PORT"]))
lock = r.lock("py:" + key, timeout=ttl, blocking_timeout=60)
if not lock.acquire():
    sys.exit(75)
code = 1
try:
    code = subprocess.call(cmd)
finally:
    try:
        lock.release()
    except redis.exceptions.LockError as e:
        print("lk.py: %s" % e, file=sys.stderr)
        code = code or 1
sys.exit(code)
EOF
	cat >"$W/lk.js" <<'EOF'
// node-redlock around a command: redlock.using() keeps extending the
// lease while the command runs; retries without limit (a 200ms delay and
// 100ms jitter between tries, the library's defaults).
const Redis = require("ioredis");
const Redlock = require("redlock").default;
const { spawn } = require("child_process");
const [key, ...cmd] = process.argv.slice(2);
const ttl = Number(process.env.LOCK_TTL_MS || 30000);
const client = new Redis({ host: "127.0.0.1", port: Number(process.env.REDIS_PORT) });
const redlock = new Redlock([client], { retryCount: -1 });
redlock.on("error", () => {});
(async () => {
  let code = 1;
  try {
    await redlock.using(["rl:" + key], ttl, async (signal) => {
      code = await new Promise((resolve) => {
        const p = spawn(cmd[0], cmd.slice(1), { stdio: "inherit" });
        p.on("exit", (c, s) => resolve(c === null ? 128 : c));
        p.on("error", () => resolve(127));
      });
      if (signal.aborted) throw signal.error;
    });
  } catch (e) {
    console.error("lk.js: " + e.message);
    if (code === 0) code = 1;
  }
  client.disconnect();
  process.exit(code);
})();
EOF
	cat >"$W/libbench.py" <<'EOF'
# C threads, each with its own connection and a key of its own, doing
# Lock acquire/release cycles for SECS seconds.
import os, sys, threading, time
import redis

C, secs = int(sys.argv[1]), float(sys.argv[2])
port = int(os.environ["REDIS_PORT"])
counts = [0] * C
stop = threading.Event()

def loop(i):
    r = redis.Redis(host="127.0.0.1", port=port)
    r.ping()
    lock = r.lock("lbpy:%d:%d" % (os.getpid(), i), timeout=10)
    ready.wait()
    n = 0
    while not stop.is_set():
        lock.acquire(blocking=False)
        lock.release()
        n += 1
    counts[i] = n

ready = threading.Event()
ts = [threading.Thread(target=loop, args=(i,)) for i in range(C)]
for t in ts:
    t.start()
time.sleep(0.2)
t0 = time.monotonic()
ready.set()
time.sleep(secs)
stop.set()
for t in ts:
    t.join()
print("%.1f 0" % (sum(counts) / (time.monotonic() - t0)))
EOF
}

# lk TOOL KEY COMMAND...: run COMMAND under TOOL's lock KEY (bounded).
lk() {
	local tool=$1 key=$2 ttl=${LOCK_TTL_MS:-30000}
	shift 2
	case $tool in
	true) timeout 120 "$@" ;;
	flock) timeout 120 flock "$W/locks/$key" "$@" ;;
	etcdctl) timeout 120 etcdctl --endpoints="$ETCD_URL" lock \
		--ttl=$(((ttl + 999) / 1000)) "ec:$key" -- "$@" ;;
	cronlock) timeout 120 bash "$W/cronlock.sh" "$key" "$@" ;;
	redis-py) timeout 120 $PY "$W/lk.py" "$key" "$@" ;;
	node-redlock) timeout 120 node "$W/lk.js" "$key" "$@" ;;
	rlock) timeout 120 "$RLOCK" -u "$REDIS_URL_" run -t "${ttl}ms" "$key" -- "$@" ;;
	esac
}

# The command line hyperfine runs for TOOL (no shell in between).
hf_cmd() {
	case $1 in
	true) echo "true" ;;
	flock) echo "flock $W/locks/hf true" ;;
	etcdctl) echo "etcdctl --endpoints=$ETCD_URL lock ec:hf -- true" ;;
	cronlock) echo "bash $W/cronlock.sh hf true" ;;
	redis-py) echo "$PY $W/lk.py hf true" ;;
	node-redlock) echo "node $W/lk.js hf true" ;;
	rlock) echo "$RLOCK -u $REDIS_URL_ run hf -- true" ;;
	esac
}

TOOLS=(flock etcdctl cronlock redis-py node-redlock rlock)

# ---- 1. overhead ---------------------------------------------------------------

overhead() {
	local -a cmds=() names=()
	local t
	say "1. overhead (hyperfine, $HF_RUNS runs each)"
	for t in true "${TOOLS[@]}"; do
		cmds+=("$(hf_cmd "$t")")
		names+=(-n "$t")
	done
	timeout 900 hyperfine -N --warmup 3 --runs "$HF_RUNS" --style none \
		--export-json "$W/overhead.json" "${names[@]}" "${cmds[@]}" \
		>"$W/overhead.txt" 2>&1 || die "hyperfine failed: $(tail -5 "$W/overhead.txt")"
}

# ---- 2. hand-off -----------------------------------------------------------------

# handoff_once TOOL KEY: the holder's command stamps its end and exits; the
# waiter (blocked meanwhile) stamps its start.  Prints the gap in ms.
handoff_once() {
	local tool=$1 key=$2 d=$W/ho hp wp
	rm -rf "$d"
	mkdir -p "$d"
	lk "$tool" "$key" bash -c "echo \$EPOCHREALTIME > $d/held; n=0; while [ ! -e $d/go ] && [ \$n -lt 2000 ]; do sleep 0.005; n=\$((n+1)); done; echo \$EPOCHREALTIME > $d/end" &
	hp=$!
	wait_for 30 test -s "$d/held" || { wait $hp; return 1; }
	lk "$tool" "$key" bash -c "echo \$EPOCHREALTIME > $d/start" &
	wp=$!
	sleep 0.4		# the waiter is waiting now
	touch "$d/go"
	wait $hp
	wait $wp
	[[ -s $d/end && -s $d/start ]] || return 1
	echo "$(cat "$d/end") $(cat "$d/start")" | awk '{ printf "%.3f\n", ($2 - $1) * 1000 }'
}

handoff() {
	local t i v
	say "2. hand-off ($HANDOFFS each)"
	: >"$W/handoff.tsv"
	for ((i = 0; i < HANDOFFS; i++)); do
		for t in "${TOOLS[@]}"; do
			v=$(handoff_once "$t" "ho$i") || { say "hand-off failed for $t"; continue; }
			printf '%s\t%s\n' "$t" "$v" >>"$W/handoff.tsv"
		done
	done
}

# ---- 3. CLI throughput -------------------------------------------------------------

# tput TOOL C: C loops of "TOOL KEY -- true" on one key for TPUT_SECS;
# prints completed runs per second.
tput_one() {
	local tool=$1 c=$2 i t0 t1 total=0 d=$W/tp
	rm -rf "$d"
	mkdir -p "$d"
	t0=$EPOCHREALTIME
	for ((i = 0; i < c; i++)); do
		(
			n=0
			end=$(awk -v t="$t0" -v s="$TPUT_SECS" 'BEGIN { printf "%.6f", t + s }')
			while awk -v a="$EPOCHREALTIME" -v b="$end" 'BEGIN { exit !(a < b) }'; do
				lk "$tool" tput true && n=$((n + 1))
			done
			echo "$n" >"$d/$i"
		) &
	done
	wait
	t1=$EPOCHREALTIME
	for ((i = 0; i < c; i++)); do
		total=$((total + $(cat "$d/$i")))
	done
	awk -v n="$total" -v a="$t0" -v b="$t1" 'BEGIN { printf "%.1f\n", n / (b - a) }'
}

throughput() {
	local t c
	say "3. CLI throughput (${TPUT_SECS}s per tool and C)"
	: >"$W/tput.tsv"
	for c in 1 8; do
		for t in true "${TOOLS[@]}"; do
			printf '%s\t%s\t%s\n' "$t" "$c" "$(tput_one "$t" "$c")" >>"$W/tput.tsv"
		done
	done
}

# ---- 4. peak RSS ----------------------------------------------------------------------

rss() {
	local t i
	say "4. peak RSS ($RSS_RUNS each)"
	: >"$W/rss.tsv"
	for ((i = 0; i < RSS_RUNS; i++)); do
		for t in true "${TOOLS[@]}"; do
			# The tool itself, no shell in between (hf_cmd's words).
			# shellcheck disable=SC2046
			/usr/bin/time -f '%M' -o "$W/rss.one" $(hf_cmd "$t") >/dev/null 2>&1
			printf '%s\t%s\n' "$t" "$(tail -n 1 "$W/rss.one")" >>"$W/rss.tsv"
		done
	done
}

# ---- 5. mutual exclusion -----------------------------------------------------------------

# rmw TOOL KEY PROCS ROUNDS HOLD: PROCS processes, each ROUNDS times: take
# the lock, read the counter, sleep HOLD, write counter+1.  Prints the
# final counter and the number of failed runs.
rmw() {
	local tool=$1 key=$2 procs=$3 rounds=$4 hold=$5 d=$W/rmw i
	rm -rf "$d"
	mkdir -p "$d"
	echo 0 >"$d/counter"
	for ((i = 0; i < procs; i++)); do
		(
			fail=0
			for ((r = 0; r < rounds; r++)); do
				lk "$tool" "$key" sh -c "v=\$(cat $d/counter); sleep $hold; echo \$((v + 1)) > $d/counter" \
					2>>"$d/err" || fail=$((fail + 1))
			done
			echo "$fail" >"$d/fail.$i"
		) &
	done
	wait
	local fails=0
	for ((i = 0; i < procs; i++)); do
		fails=$((fails + $(cat "$d/fail.$i")))
	done
	echo "$(cat "$d/counter") $fails"
}

exclusion() {
	local t v
	say "5. mutual exclusion"
	: >"$W/excl.tsv"
	for t in "${TOOLS[@]}"; do
		v=$(LOCK_TTL_MS=30000 rmw "$t" "rmw" "$RMW_PROCS" "$RMW_ROUNDS" 0.01)
		printf '%s\trmw\t%s\t%s\n' "$t" "$((RMW_PROCS * RMW_ROUNDS))" "$v" >>"$W/excl.tsv"
		v=$(LOCK_TTL_MS=$((TTL_SECS * 1000)) rmw "$t" "ttl" 3 1 "$HOLD_SECS")
		printf '%s\tttl\t3\t%s\n' "$t" "$v" >>"$W/excl.tsv"
	done
}

# ---- 6. library level -------------------------------------------------------------------

# The server's CPU seconds so far (user + system).
server_cpu() {
	redis-cli -p "$REDIS_PORT" INFO cpu |
		awk -F: '/^used_cpu_(sys|user):/ { s += $2 } END { printf "%.6f\n", s }'
}

# lib_row TOOL C RATE CPU0 SECS [EXTRA]: one line of lib.tsv, with the
# server's CPU microseconds per cycle (per SET for the ceiling).
lib_row() {
	local cpu1
	cpu1=$(server_cpu)
	awk -v t="$1" -v c="$2" -v r="$3" -v a="$4" -v b="$cpu1" -v s="$5" -v x="${6:-}" \
		'BEGIN { printf "%s\t%s\t%s\t%.2f\t%s\n", t, c, r, (r > 0 ? (b - a) * 1e6 / (r * s) : 0), x }' \
		>>"$W/lib.tsv"
}

library() {
	local rep c n v cpu0 t0 el
	say "6. library level (${LIB_SECS}s runs, $LIB_REPS rounds)"
	: >"$W/lib.tsv"
	for ((rep = 0; rep < LIB_REPS; rep++)); do
		for c in 1 8 50; do
			n=$((c == 1 ? 20000 : 60000))
			cpu0=$(server_cpu)
			t0=$EPOCHREALTIME
			v=$(timeout 120 redis-benchmark -p "$REDIS_PORT" -t set -c "$c" -n "$n" --csv 2>/dev/null |
				awk -F'"' '$2 == "SET" { print $4 }')
			el=$(awk -v a="$t0" -v b="$EPOCHREALTIME" 'BEGIN { print b - a }')
			# A cycle of the ceiling is two SETs: n/2 of them in n/v s.
			lib_row SET/2 "$c" "$(awk -v v="$v" 'BEGIN { print v / 2 }')" "$cpu0" \
				"$(awk -v n="$n" -v v="$v" 'BEGIN { print n / v }')"
			cpu0=$(server_cpu)
			v=$(timeout 120 "$RLOCK" -u "$REDIS_URL_" bench -c "$c" -d "${LIB_SECS}s" --no-ping --json |
				$PY -c 'import json,sys; d=json.load(sys.stdin); print(d["cycles_per_s"], d["elapsed_s"], d["cpu_s"]["bench"], d["cpu_s"]["server"])')
			lib_row rlock "$c" "${v%% *}" "$cpu0" "$(echo "$v" | awk '{ print $2 }')" \
				"$(echo "$v" | awk '{ print $3, $4 }')"
			cpu0=$(server_cpu)
			v=$(timeout 120 node "$ROOT/bench/libbench.js" "$c" "$LIB_SECS" | awk '{ print $1 }')
			lib_row node-redlock "$c" "$v" "$cpu0" "$LIB_SECS"
			cpu0=$(server_cpu)
			v=$(timeout 120 $PY "$W/libbench.py" "$c" "$LIB_SECS" | awk '{ print $1 }')
			lib_row redis-py "$c" "$v" "$cpu0" "$LIB_SECS"
		done
	done
}

# ---- 7. rlock bench across C and K -------------------------------------------------------

rlock_bench() {
	local rep c k
	say "7. rlock bench across clients and contention ($BENCH_REPS rounds)"
	: >"$W/bench.jsonl"
	for ((rep = 0; rep < BENCH_REPS; rep++)); do
		for c in 1 8 50 1000; do
			for k in "$c" 1; do
				((c == 1 && k == 1 && rep > 0)) && continue
				timeout 120 "$RLOCK" -u "$REDIS_URL_" bench -c "$c" -k "$k" \
					-d "${LIB_SECS}s" --json >>"$W/bench.jsonl" ||
					say "rlock bench -c $c -k $k failed"
			done
		done
	done
}

# ---- report ------------------------------------------------------------------------------

versions() {
	{
		echo "rlock	$("$RLOCK" --version | awk '{ print $2 }')"
		echo "redis-server	$(redis-server --version | sed 's/.*v=\([^ ]*\).*/\1/')"
		echo "etcd	$(etcd --version | awk '/etcd Version/ { print $3 }')"
		echo "etcdctl	$(etcdctl version | awk '/etcdctl version/ { print $3 }')"
		echo "flock	$(flock --version | awk '{ print $NF }')"
		echo "python3	$($PY --version | awk '{ print $2 }')"
		echo "redis-py	$($PY -c 'import redis; print(redis.__version__)')"
		echo "node	$(node --version)"
		echo "redlock	$(node -e 'console.log(require("redlock/package.json").version)' 2>/dev/null ||
			grep -m1 '"version"' "$NPM_DIR/node_modules/redlock/package.json" | cut -d'"' -f4)"
		echo "ioredis	$(node -e 'console.log(require("ioredis/package.json").version)')"
		echo "hyperfine	$(hyperfine --version | awk '{ print $2 }')"
	} >"$W/versions.tsv"
	{
		echo "date	$(date -u '+%Y-%m-%d %H:%M UTC')"
		echo "kernel	$(uname -sr) $(uname -m)"
		echo "cpu	$(awk -F': ' '/model name/ { print $2; exit }' /proc/cpuinfo), $(nproc) CPUs"
		echo "memory	$(awk '/MemTotal/ { printf "%.0f GiB", $2 / 1048576 }' /proc/meminfo)"
		echo "load	$(cut -d' ' -f1-3 /proc/loadavg) (1, 5, 15 min, at the end)"
		echo "quick	$QUICK"
	} >"$W/machine.tsv"
}

main() {
	W=$(mktemp -d /tmp/rlock-compare.XXXXXX)
	trap cleanup EXIT
	trap 'exit 130' INT TERM
	mkdir -p "$W/locks"
	install_peers
	say "building rlock"
	make -s -C "$ROOT" build/rlock >/dev/null || die "make build/rlock failed"
	# A copy: a rebuild in the tree during the run must not change it.
	cp "$ROOT/build/rlock" "$W/rlock" || die "cannot copy rlock"
	RLOCK=$W/rlock
	start_servers
	write_wrappers
	overhead
	handoff
	throughput
	rss
	exclusion
	library
	rlock_bench
	versions
	$PY "$ROOT/bench/report.py" "$W" >"$OUT.tmp" || die "report failed"
	mv "$OUT.tmp" "$OUT"
	say "wrote $OUT"
}

main "$@"
