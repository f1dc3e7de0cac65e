#!/usr/bin/env bash
# fifo.sh - what a queue of waiters costs rlock (issue 9: waiters in FIFO
# order, each release waking only the next one, instead of every waiter
# retrying on every release), next to flock(1) and etcdctl lock, in one run
# on one machine:
#
#   1  drain: N processes (300 and 600) started together on one name, each
#      "rlock run -w 300 KEY -- true"; wall time until the last has exited,
#      every exit status checked; the same with "flock -w 300 FILE true" and
#      "etcdctl lock --ttl=30 KEY -- true" (in the first repetition only:
#      it is the slowest); for rlock also the scripts the server ran
#      (INFO commandstats) per process, that is per hand-off, and its CPU;
#   2  uncontended "rlock run KEY -- true" against "flock FILE true"
#      (hyperfine -N, in rounds whose order alternates);
#   3  hand-off to one waiter: from the holder's command ending to the
#      waiter's command starting, the waiter having waited 0.4s (as section 2
#      of bench/compare.sh);
#   4  the server's time per uncontended acquire + release: commandstats
#      usec of the scripts around "rlock bench -c 1 -k 1 -n CYCLES";
#   5  "rlock bench -c 1000 -k 1 -d 5s --json", every field it reports.
#
# They run in the order 2, 3, 4 (light and noise-sensitive, on a calm
# machine), 1, then 5 once the machine has settled again.
#
# Each run is labelled; its raw results go to bench/fifo-LABEL.tsv, and
# bench/RESULTS-fifo.md is written from every bench/fifo-*.tsv there is, the
# labels side by side ("before", then "after", then the others), so that
#
#   RLOCK=/path/to/old/rlock LABEL=before bench/fifo.sh
#   RLOCK=./build/rlock LABEL=after bench/fifo.sh
#
# shows the change.  Environment:
#
#   RLOCK=PATH      the binary to measure (default ./build/rlock, built if missing);
#                   copied first, so that a rebuild during the run is harmless
#   LABEL=NAME      the run's label (default "current"; letters, digits . _ -)
#   QUICK=1         small N, few samples, short runs: to try the script
#   REPORT_ONLY=1   measure nothing, rewrite RESULTS-fifo.md from the TSVs
#   DRAIN_NS, DRAIN_REPS, ETCD_REPS
#                   the drains' N ("300 600"), repetitions (3) and how many
#                   of those have etcdctl (1)
#   KEEP=1          keep the work directory (logs, raw JSON)
#
# It starts a private redis-server (maxclients 10000) and a one-member etcd
# (data in /dev/shm) on free loopback ports, never 6379/2379, and stops
# them by PID.  Missing Debian packages (hyperfine, etcd-server,
# etcd-client, redis-server, redis-tools) are installed with apt-get.
# A full run takes 8-9 minutes with a binary that wakes every waiter; the
# machine should be otherwise idle.
# make test never runs this.

set -uo pipefail
cd "$(dirname "$0")/.." || exit 1
ROOT=$PWD
OUT=$ROOT/bench/RESULTS-fifo.md
QUICK=${QUICK:-0}
LABEL=${LABEL:-current}
RLOCK_SRC=${RLOCK:-$ROOT/build/rlock}
PY=/usr/bin/python3

if ((QUICK)); then
	DRAIN_NS=${DRAIN_NS:-"50 100"} DRAIN_REPS=${DRAIN_REPS:-1} ETCD_REPS=${ETCD_REPS:-1}
	HF_ROUNDS=2 HF_PER_ROUND=5 HANDOFFS=5 CYCLES=500 CYCLE_REPS=1
	BENCH_DUR=1s
else
	DRAIN_NS=${DRAIN_NS:-"300 600"} DRAIN_REPS=${DRAIN_REPS:-3}
	# etcdctl's drains are the longest (90s at N=600 here): only the
	# first repetition has them, to keep the run within 10 minutes.
	ETCD_REPS=${ETCD_REPS:-1}
	HF_ROUNDS=4 HF_PER_ROUND=10 HANDOFFS=20 CYCLES=2000 CYCLE_REPS=3
	BENCH_DUR=5s
fi
DRAIN_WAIT=300		# the -w of every drained process, in seconds
ETCD_TTL=30		# etcdctl lock's session lease: rlock run's default TTL
BENCH_C=1000
NOFILE=16384		# redis-server: maxclients 10000 + 32; bench -c 1000

say() { printf 'fifo-bench: [%3ds] %s\n' "$SECONDS" "$*" >&2; }
die() {
	say "$*"
	exit 1
}

[[ $LABEL =~ ^[A-Za-z0-9._-]+$ ]] || die "LABEL must be letters, digits, '.', '_' or '-'"
TSV=$ROOT/bench/fifo-$LABEL.tsv

# ---- tools and servers -------------------------------------------------------

install_missing() {
	local -a missing=() sudo=()
	command -v hyperfine >/dev/null || missing+=(hyperfine)
	command -v etcd >/dev/null || missing+=(etcd-server)
	command -v etcdctl >/dev/null || missing+=(etcd-client)
	command -v redis-server >/dev/null || missing+=(redis-server)
	command -v redis-cli >/dev/null || missing+=(redis-tools)
	command -v flock >/dev/null || missing+=(util-linux)
	[[ -x $PY ]] || missing+=(python3)
	((${#missing[@]} == 0)) && return 0
	(($(id -u) == 0)) || sudo=(sudo)
	say "installing ${missing[*]}"
	"${sudo[@]}" apt-get update -qq &&
		DEBIAN_FRONTEND=noninteractive "${sudo[@]}" apt-get install -y -qq \
			--no-install-recommends "${missing[@]}" >/dev/null ||
		die "cannot install ${missing[*]}"
}

# A port below the kernel's ephemeral range, never 6379 or 2379.
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

# Up, and the server on the port is the one we started.
redis_ours() {
	[[ $(redis-cli -p "$REDIS_PORT" INFO server 2>/dev/null) == *"process_id:$REDIS_PID"* ]]
}

start_servers() {
	REDIS_PORT=$(free_port) || die "no free port"
	redis-server --bind 127.0.0.1 --port "$REDIS_PORT" --save '' \
		--appendonly no --maxclients 10000 --dir "$W" \
		--logfile "$W/redis.log" --daemonize no </dev/null >/dev/null 2>&1 &
	REDIS_PID=$!
	wait_for 10 redis_ours || die "redis-server did not start: $(tail -3 "$W/redis.log")"
	URL=redis://127.0.0.1:$REDIS_PORT

	ETCD_PORT=$(free_port) || die "no free port"
	ETCD_PEER=$(free_port) || die "no free port"
	# Data in memory, as Redis' is here: neither pays for a disk.  A
	# one-member cluster holds no elections; the long election timeout
	# only stretches the server's own request timeout (5s + 2 x it),
	# which 600 etcdctl processes starting on 2 cores otherwise exceed
	# ("etcdserver: request timed out").
	ETCD_DIR=$(mktemp -d /dev/shm/rlock-etcd.XXXXXX)
	etcd --name fifo --data-dir "$ETCD_DIR" --election-timeout 10000 \
		--listen-client-urls "http://127.0.0.1:$ETCD_PORT" \
		--advertise-client-urls "http://127.0.0.1:$ETCD_PORT" \
		--listen-peer-urls "http://127.0.0.1:$ETCD_PEER" \
		--initial-advertise-peer-urls "http://127.0.0.1:$ETCD_PEER" \
		--initial-cluster "fifo=http://127.0.0.1:$ETCD_PEER" \
		--logger zap --log-level error </dev/null >"$W/etcd.log" 2>&1 &
	ETCD_PID=$!
	export ETCDCTL_API=3
	ETCD_URL=http://127.0.0.1:$ETCD_PORT
	wait_for 20 etcdctl --endpoints="$ETCD_URL" endpoint health ||
		die "etcd did not start (see $W/etcd.log)"
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
			say "work directory kept: $W"
		else
			rm -rf "$W"
		fi
	fi
}

# ---- results -----------------------------------------------------------------
# One row per figure: section, tool, n, rep, metric, value.

row() {
	local IFS=$'\t'
	printf '%s\n' "$*" >>"$W/results.tsv"
}

meta() { row meta - - - "$1" "$2"; }

# The server's script calls, their usec and its CPU seconds, so far.
redis_stats() {
	{
		redis-cli -p "$REDIS_PORT" INFO commandstats
		redis-cli -p "$REDIS_PORT" INFO cpu
	} | tr -d '\r' | awk -F'[:,=]' '
		/^cmdstat_(eval|evalsha|eval_ro|evalsha_ro|fcall|fcall_ro):/ { c += $3; u += $5 }
		/^used_cpu_(sys|user):/ { cpu += $2 }
		END { printf "%d %d %.6f\n", c, u, cpu }'
}

# ---- 1. drain ----------------------------------------------------------------

# drain.py N LIMIT COMMAND...: spawn N copies of COMMAND, each held at a
# gate (sh reading its stdin, a pipe) until all exist; open the gate and
# wait for all.  Prints wall seconds from the gate to the last exit, the
# number that did not exit 0, the seconds spawning took, and the exit
# statuses seen.  Past LIMIT seconds the rest are killed (and failed).
write_drain() {
	cat >"$W/drain.py" <<'EOF'
import os, signal, sys, time

n, limit, cmd = int(sys.argv[1]), float(sys.argv[2]), sys.argv[3:]
err = os.open(os.environ["DRAIN_ERR"], os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
null = os.open("/dev/null", os.O_WRONLY)
r, w = os.pipe()
acts = [(os.POSIX_SPAWN_DUP2, r, 0), (os.POSIX_SPAWN_DUP2, null, 1),
        (os.POSIX_SPAWN_DUP2, err, 2)]
gate = 'read _ || :; exec "$@" </dev/null'
pids, codes = set(), {}

class Late(Exception):
    pass

def late(*_):
    raise Late()

try:
    t = time.monotonic()
    for _ in range(n):
        pids.add(os.posix_spawn("/bin/sh", ["sh", "-c", gate, "sh", *cmd],
                                os.environ, file_actions=acts))
    spawn = time.monotonic() - t
    os.close(r)
    signal.signal(signal.SIGALRM, late)
    signal.setitimer(signal.ITIMER_REAL, limit)
    t0 = time.monotonic()
    os.close(w)             # every gate opens at once: EOF
    try:
        while pids:
            pid, st = os.wait()
            pids.discard(pid)
            c = os.waitstatus_to_exitcode(st)
            codes[c] = codes.get(c, 0) + 1
    except Late:
        pass
    wall = time.monotonic() - t0
    signal.setitimer(signal.ITIMER_REAL, 0)
finally:
    for p in pids:
        try:
            os.kill(p, signal.SIGKILL)
        except ProcessLookupError:
            pass
    for p in list(pids):
        os.waitpid(p, 0)
        codes["killed"] = codes.get("killed", 0) + 1
failed = n - codes.get(0, 0)
print("%.3f %d %.3f %s" % (wall, failed, spawn,
      ",".join("%s:%s" % kv for kv in sorted(codes.items(), key=str)) or "-"))
EOF
}

# drain_cmd TOOL KEY: the command line of one drained process.
drain_cmd() {
	case $1 in
	rlock) echo "$RLOCK -u $URL run -w $DRAIN_WAIT $2 -- true" ;;
	flock) echo "flock -w $DRAIN_WAIT $W/locks/$2 true" ;;
	etcdctl) echo "etcdctl --endpoints=$ETCD_URL lock --ttl=$ETCD_TTL $2 -- true" ;;
	esac
}

drain_one() {
	local tool=$1 n=$2 rep=$3 key="drain-$2-$3" s0 s1 out
	s0=$(redis_stats)
	# shellcheck disable=SC2046
	out=$(DRAIN_ERR=$W/drain.err $PY "$W/drain.py" "$n" $((DRAIN_WAIT + 60)) \
		$(drain_cmd "$tool" "$key")) || die "drain driver failed"
	s1=$(redis_stats)
	read -r wall failed spawn codes <<<"$out"
	row drain "$tool" "$n" "$rep" wall_s "$wall"
	row drain "$tool" "$n" "$rep" failed "$failed"
	row drain "$tool" "$n" "$rep" spawn_s "$spawn"
	row drain "$tool" "$n" "$rep" exits "$codes"
	if [[ $tool == rlock ]]; then
		read -r c0 _ cpu0 <<<"$s0"
		read -r c1 _ cpu1 <<<"$s1"
		row drain "$tool" "$n" "$rep" scripts $((c1 - c0))
		row drain "$tool" "$n" "$rep" server_cpu_s \
			"$(awk -v a="$cpu0" -v b="$cpu1" 'BEGIN { printf "%.3f", b - a }')"
	fi
	say "  $tool N=$n: ${wall}s, $failed failed (exits $codes)"
	if ((failed > 0)); then
		say "  first errors: $(head -3 "$W/drain.err" | tr '\n' '|')"
	fi
	: >"$W/drain.err"
}

drain() {
	local rep n i t
	local -a tools=(rlock flock etcdctl)
	say "1. drain: N in $DRAIN_NS, $DRAIN_REPS repetitions ($ETCD_REPS with etcdctl)"
	for ((rep = 1; rep <= DRAIN_REPS; rep++)); do
		for n in $DRAIN_NS; do
			# Each repetition starts with another tool.
			for ((i = 0; i < 3; i++)); do
				t=${tools[(i + rep - 1) % 3]}
				[[ $t == etcdctl ]] && ((rep > ETCD_REPS)) && continue
				drain_one "$t" "$n" "$rep"
				# Hundreds of Go processes leave the machine busy.
				if [[ $t == etcdctl ]]; then settle; else sleep 3; fi
			done
		done
	done
}

# settle: after a drain, wait (5-20s) until the CPU pressure of the last 10s
# is below 20% where the kernel reports it (other jobs may keep it higher).
settle() {
	local n=0
	sleep 5
	[[ -r /proc/pressure/cpu ]] || return 0
	while ((n++ < 15)); do
		awk '/^some/ { split($2, a, "="); exit !(a[2] < 20) }' /proc/pressure/cpu && return 0
		sleep 1
	done
	say "  the machine is still busy: $(head -1 /proc/pressure/cpu)"
}

# ---- 2. overhead -------------------------------------------------------------

overhead() {
	local r
	local -a a=(-n rlock "$RLOCK -u $URL run hf -- true")
	local -a b=(-n flock "flock $W/locks/hf true")
	say "2. overhead: $HF_ROUNDS rounds of $HF_PER_ROUND runs each"
	for ((r = 1; r <= HF_ROUNDS; r++)); do
		if ((r % 2)); then
			set -- "${a[@]}" "${b[@]}"
		else
			set -- "${b[@]}" "${a[@]}"
		fi
		timeout 300 hyperfine -N --warmup 2 --runs "$HF_PER_ROUND" --style none \
			--export-json "$W/hf$r.json" "$@" >"$W/hf.txt" 2>&1 ||
			die "hyperfine failed: $(tail -5 "$W/hf.txt")"
		$PY -c '
import json, sys
for res in json.load(open(sys.argv[1]))["results"]:
    for i, t in enumerate(res["times"]):
        print("overhead\t%s\t-\t%s.%d\tms\t%.4f" % (res["command"], sys.argv[2], i + 1, t * 1000))
' "$W/hf$r.json" "$r" >>"$W/results.tsv"
	done
}

# ---- 3. hand-off -------------------------------------------------------------

# lk TOOL KEY COMMAND...: run COMMAND under TOOL's lock KEY (bounded).
lk() {
	local tool=$1 key=$2
	shift 2
	case $tool in
	flock) timeout 120 flock "$W/locks/$key" "$@" ;;
	rlock) timeout 120 "$RLOCK" -u "$URL" run "$key" -- "$@" ;;
	esac
}

# handoff_once TOOL KEY: the holder's command stamps its end and exits; the
# waiter (blocked meanwhile) stamps its start.  Prints the gap in ms.
handoff_once() {
	local tool=$1 key=$2 d=$W/ho hp wp
	rm -rf "$d"
	mkdir -p "$d"
	lk "$tool" "$key" bash -c "echo \$EPOCHREALTIME > $d/held; n=0; while [ ! -e $d/go ] && [ \$n -lt 2000 ]; do sleep 0.005; n=\$((n+1)); done; echo \$EPOCHREALTIME > $d/end" &
	hp=$!
	wait_for 30 test -s "$d/held" || {
		wait $hp
		return 1
	}
	lk "$tool" "$key" bash -c "echo \$EPOCHREALTIME > $d/start" &
	wp=$!
	sleep 0.4 # the waiter is waiting now
	touch "$d/go"
	wait $hp
	wait $wp
	[[ -s $d/end && -s $d/start ]] || return 1
	echo "$(cat "$d/end") $(cat "$d/start")" | awk '{ printf "%.3f\n", ($2 - $1) * 1000 }'
}

handoff() {
	local i t v
	say "3. hand-off: $HANDOFFS samples each"
	for ((i = 1; i <= HANDOFFS; i++)); do
		for t in rlock flock; do
			((i % 2)) || t=$([[ $t == rlock ]] && echo flock || echo rlock)
			v=$(handoff_once "$t" "ho$i") || {
				say "  hand-off $i failed for $t"
				row handoff "$t" - "$i" failed 1
				continue
			}
			row handoff "$t" - "$i" ms "$v"
		done
	done
}

# ---- 4. server time per cycle --------------------------------------------------

cycles() {
	local rep s0 s1 j
	say "4. server time per cycle: $CYCLE_REPS x $CYCLES cycles"
	for ((rep = 1; rep <= CYCLE_REPS; rep++)); do
		s0=$(redis_stats)
		j=$(timeout 120 "$RLOCK" -u "$URL" bench -c 1 -k 1 -n "$CYCLES" --no-ping --json) ||
			die "rlock bench -c 1 -k 1 -n $CYCLES failed"
		s1=$(redis_stats)
		$PY -c '
import json, sys
d = json.loads(sys.argv[1])
c0, u0, cpu0 = map(float, sys.argv[2].split())
c1, u1, cpu1 = map(float, sys.argv[3].split())
n, rep = d["cycles"], sys.argv[4]
for k, v in (("cycles", n), ("cycles_per_s", d["cycles_per_s"]),
             ("script_usec_per_cycle", (u1 - u0) / n),
             ("scripts_per_cycle", (c1 - c0) / n),
             ("server_cpu_us_per_cycle", (cpu1 - cpu0) * 1e6 / n)):
    print("cycle\trlock\t1\t%s\t%s\t%.4g" % (rep, k, v))
' "$j" "$s0" "$s1" "$rep" >>"$W/results.tsv" || die "cannot read rlock bench's JSON"
	done
}

# ---- 5. rlock bench -c 1000 -k 1 -------------------------------------------------

bench1000() {
	local s0 s1
	say "5. rlock bench -c $BENCH_C -k 1 -d $BENCH_DUR"
	s0=$(redis_stats)
	timeout 300 "$RLOCK" -u "$URL" bench -c "$BENCH_C" -k 1 -d "$BENCH_DUR" --json \
		>"$W/bench.json" 2>"$W/bench.err"
	local rc=$?
	s1=$(redis_stats)
	row bench "rlock" "$BENCH_C" 1 exit_status "$rc"
	if ! [[ -s $W/bench.json ]]; then
		say "  rlock bench failed ($rc): $(tail -3 "$W/bench.err")"
		return 0
	fi
	# Every field, flattened (latency_us.handoff.p50 ...).
	$PY -c '
import json, sys
d = json.load(open(sys.argv[1]))
c0, u0, cpu0 = map(float, sys.argv[2].split())
c1, u1, cpu1 = map(float, sys.argv[3].split())
c = sys.argv[4]
def flat(p, v):
    if isinstance(v, dict):
        for k, x in v.items():
            flat(p + [k], x)
    elif isinstance(v, list):
        for i, x in enumerate(v):
            flat(p + [str(i)], x)
    else:
        s = "null" if v is None else json.dumps(v) if isinstance(v, (bool, str)) else repr(v)
        print("bench\trlock\t%s\t1\tjson.%s\t%s" % (c, ".".join(p), s.replace("\t", " ")))
flat([], d)
if d.get("cycles"):
    print("bench\trlock\t%s\t1\tscripts_per_cycle\t%.4g" % (c, (c1 - c0) / d["cycles"]))
    print("bench\trlock\t%s\t1\tscript_usec_per_cycle\t%.4g" % (c, (u1 - u0) / d["cycles"]))
' "$W/bench.json" "$s0" "$s1" "$BENCH_C" >>"$W/results.tsv" || die "cannot read rlock bench's JSON"
	say "  $(awk -F'\t' '$5 == "json.cycles_per_s" { print $6 " cycles/s" }' "$W/results.tsv")"
}

# ---- the run's description -------------------------------------------------------

# The CPU pressure (share of time some task waited for a CPU) over the
# last 10s, 60s and 300s: how busy the machine was, other jobs included.
pressure() {
	if [[ -r /proc/pressure/cpu ]]; then
		awk '/^some/ { gsub(/avg[0-9]+=/, ""); print $2 "% " $3 "% " $4 "%" }' /proc/pressure/cpu
	else
		echo "n/a"
	fi
}

describe() {
	meta label "$LABEL"
	meta quick "$QUICK"
	meta date "$(date -u '+%Y-%m-%d %H:%M UTC')"
	meta rlock_path "$RLOCK_SRC"
	meta rlock_version "$("$RLOCK" --version | head -1)"
	meta rlock_sha256 "$(sha256sum "$RLOCK" | cut -c1-16)"
	meta redis_server "$(redis-server --version | sed 's/.*v=\([^ ]*\).*/\1/')"
	meta etcd "$(etcd --version | awk '/etcd Version/ { print $3 }')"
	meta etcdctl "$(etcdctl version | awk '/etcdctl version/ { print $3 }')"
	meta flock "$(flock --version | awk '{ print $NF }')"
	meta hyperfine "$(hyperfine --version | awk '{ print $2 }')"
	meta kernel "$(uname -sr) $(uname -m)"
	meta cpu "$(awk -F': ' '/model name/ { print $2; exit }' /proc/cpuinfo), $(nproc) CPUs"
	meta memory "$(awk '/MemTotal/ { printf "%.0f GiB", $2 / 1048576 }' /proc/meminfo)"
	meta nofile "$(ulimit -n)"
	meta load_start "$(cut -d' ' -f1-3 /proc/loadavg)"
	meta psi_start "$(pressure)"
	meta drain_ns "$DRAIN_NS"
	meta drain_reps "$DRAIN_REPS"
	meta etcd_reps "$ETCD_REPS"
	meta etcd_ttl "$ETCD_TTL"
	meta drain_wait "$DRAIN_WAIT"
	meta hf_runs "$((HF_ROUNDS * HF_PER_ROUND)) ($HF_ROUNDS rounds of $HF_PER_ROUND)"
	meta handoffs "$HANDOFFS"
	meta cycles "$CYCLES x $CYCLE_REPS"
	meta bench "-c $BENCH_C -k 1 -d $BENCH_DUR"
}

# ---- report --------------------------------------------------------------------

report() {
	ROOT=$ROOT OUT=$OUT $PY - <<'EOF'
import glob, os, re, statistics as st

ROOT, OUT = os.environ["ROOT"], os.environ["OUT"]
data, meta = {}, {}
for f in glob.glob(os.path.join(ROOT, "bench", "fifo-*.tsv")):
    label = re.sub(r"^fifo-|\.tsv$", "", os.path.basename(f))
    rows, m = [], {}
    for line in open(f):
        r = line.rstrip("\n").split("\t")
        if len(r) != 6:
            continue
        if r[0] == "meta":
            m[r[4]] = r[5]
        else:
            rows.append(r)
    data[label], meta[label] = rows, m
order = [l for l in ("before", "after") if l in data]
order += sorted(l for l in data if l not in ("before", "after"))
change = "before" in data and "after" in data


def vals(label, sec, tool, n, metric):
    out = []
    for r in data[label]:
        if r[0] == sec and r[1] == tool and r[2] == str(n) and r[4] == metric:
            try:
                out.append(float(r[5]))
            except ValueError:
                pass
    return out


def med(xs):
    return st.median(xs) if xs else None


def fmt(x, unit=""):
    if x is None:
        return "–"
    if float(x).is_integer():
        return "%d%s" % (x, unit)
    a = abs(x)
    s = "%.0f" % x if a >= 100 else "%.1f" % x if a >= 10 else "%.2f" % x if a >= 0.1 else "%.3g" % x
    return s + unit


def spread(xs, unit):
    if not xs:
        return "–"
    if len(xs) == 1 or min(xs) == max(xs):
        return fmt(xs[0], unit)
    return "%s (%s–%s)" % (fmt(med(xs), unit), fmt(min(xs)), fmt(max(xs)))


def ratio(a, b):
    # A difference may be negative: no ratio of it then.
    return "–" if a is None or b is None or a < 0 or b <= 0 else "%.2f×" % (a / b)


L = []
w = L.append


def table(head, lines):
    """lines: (what, [shown per label], [number per label for after/before])"""
    cols = order + (["after ÷ before"] if change else [])
    w("| %s | %s |" % (head, " | ".join(cols)))
    w("|---|%s" % ("---:|" * len(cols)))
    for what, shown, nums in lines:
        cells = list(shown)
        if change:
            b, a = nums[order.index("before")], nums[order.index("after")]
            cells.append(ratio(a, b))
        w("| %s | %s |" % (what, " | ".join(cells)))
    w("")


def line(what, per_label):
    """per_label(label) -> (shown, number)"""
    got = [per_label(l) for l in order]
    return (what, [g[0] for g in got], [g[1] for g in got])


w("# FIFO waiters: drain, hand-off and server time (issue 9)\n")
w("Measured by `bench/fifo.sh`; one column per labelled run (`bench/fifo-LABEL.tsv` "
  "holds its raw figures).  A private redis-server (persistence off, maxclients 10000) "
  "and a one-member etcd (data in /dev/shm) on loopback, every client on the same "
  "machine: 2 cores shared with the servers and with other jobs, so absolute figures "
  "are noisy; each column's ratios come from one run.  Figures are medians, "
  "with (min–max) over the repetitions.\n")
if not order:
    w("No runs yet.\n")

w("## Runs\n")
keys = [("date", "date"), ("rlock_path", "rlock binary"), ("rlock_version", "rlock --version"),
        ("rlock_sha256", "its sha256 (16)"), ("quick", "QUICK"), ("redis_server", "redis-server"),
        ("etcd", "etcd"), ("etcdctl", "etcdctl"), ("flock", "flock"), ("hyperfine", "hyperfine"),
        ("kernel", "kernel"), ("cpu", "CPU"), ("memory", "memory"), ("nofile", "ulimit -n"),
        ("load_start", "load average at the start"), ("load_end", "load average at the end"),
        ("psi_start", "CPU pressure at the start (10s 60s 300s)"),
        ("psi_end", "CPU pressure at the end (10s 60s 300s)"),
        ("seconds", "duration of the run (s)")]
w("| | %s |" % " | ".join(order))
w("|---|%s" % ("---|" * len(order)))
for k, name in keys:
    w("| %s | %s |" % (name, " | ".join(
        ("`%s`" % meta[l].get(k, "–")) if k in ("rlock_path", "rlock_sha256") else meta[l].get(k, "–")
        for l in order)))
w("")

# 1. drain
ns = sorted({int(r[2]) for l in order for r in data[l] if r[0] == "drain"})
reps = {meta[l].get("drain_reps", "?") for l in order}
w("## 1. Drain: N processes on one name\n")
w("N processes started together (each spawned first and held at a gate, then all "
  "released at once), each taking the same lock with a 300s limit and running `true`; "
  "wall time from the gate opening to the last exit.  The tools take turns, each "
  "repetition starting with another.  *Scripts per hand-off* are the server's "
  "EVALSHA + EVAL (+ FCALL) calls during rlock's drain (INFO commandstats) divided by N; "
  "*server CPU* is the redis-server's user + system time during it.  Repetitions: %s "
  "(etcdctl: %s, the longest).  etcdctl's session lease is %ss, rlock run's default TTL; "
  "its server runs with `--election-timeout 10000` (one member: no elections), which "
  "stretches its request timeout from 7s to 25s: with the default, in a first try on this "
  "machine, 425 of 600 etcdctl processes failed with `etcdserver: request timed out`.\n"
  % (", ".join(sorted(reps)), ", ".join(sorted({meta[l].get("etcd_reps", "?") for l in order})),
     ", ".join(sorted({meta[l].get("etcd_ttl", "10") for l in order}))))
lines = []
for n in ns:
    def wall(tool, n=n):
        return lambda l: (spread(vals(l, "drain", tool, n, "wall_s"), " s"),
                          med(vals(l, "drain", tool, n, "wall_s")))
    lines.append(line("N=%d rlock" % n, wall("rlock")))
    lines.append(line("N=%d flock" % n, wall("flock")))
    lines.append(line("N=%d etcdctl lock" % n, wall("etcdctl")))
    for other in ("flock", "etcdctl"):
        def r(l, n=n, other=other):
            a = med(vals(l, "drain", "rlock", n, "wall_s"))
            b = med(vals(l, "drain", other, n, "wall_s"))
            return (ratio(a, b), None if a is None or not b else a / b)
        lines.append(line("N=%d rlock ÷ %s" % (n, other), r))

    def diff(l, n=n):
        a = med(vals(l, "drain", "rlock", n, "wall_s"))
        b = med(vals(l, "drain", "flock", n, "wall_s"))
        return ("–", None) if a is None or b is None else (fmt(a - b, " s"), a - b)
    lines.append(line("N=%d rlock − flock (beyond starting N processes)" % n, diff))

    def sph(l, n=n):
        xs = [s / n for s in vals(l, "drain", "rlock", n, "scripts")]
        return (spread(xs, ""), med(xs))
    lines.append(line("N=%d rlock scripts per hand-off" % n, sph))

    def cpu(l, n=n):
        xs = vals(l, "drain", "rlock", n, "server_cpu_s")
        return (spread(xs, " s"), med(xs))
    lines.append(line("N=%d rlock: redis-server CPU" % n, cpu))

    def failed(l, n=n):
        f = [sum(vals(l, "drain", t, n, "failed")) for t in ("rlock", "flock", "etcdctl")]
        runs = [n * len(vals(l, "drain", t, n, "wall_s")) for t in ("rlock", "flock", "etcdctl")]
        return ("%d/%d, %d/%d, %d/%d" % tuple(x for p in zip(f, runs) for x in p), None)
    lines.append(line("N=%d did not exit 0: rlock, flock, etcdctl (of all runs)" % n, failed))

table("N, tool: wall time", lines)

# 2. overhead
w("## 2. Uncontended `rlock run KEY -- true` against `flock FILE true`\n")
w("hyperfine -N (no shell), 2 warm-up runs per round; the rounds alternate which "
  "command goes first, and the runs of all rounds are pooled.\n")


def ov(tool):
    return lambda l: (fmt(med(vals(l, "overhead", tool, "-", "ms")), " ms"),
                      med(vals(l, "overhead", tool, "-", "ms")))


def ov_ratio(l):
    a, b = med(vals(l, "overhead", "rlock", "-", "ms")), med(vals(l, "overhead", "flock", "-", "ms"))
    return (ratio(a, b), None if a is None or not b else a / b)


table("median of %s" % ", ".join(sorted({meta[l].get("hf_runs", "?") for l in order})) + " runs",
      [line("rlock", ov("rlock")), line("flock", ov("flock")), line("rlock ÷ flock", ov_ratio)])

# 3. hand-off
w("## 3. Hand-off to one waiter\n")
w("From the holder's command ending (its last act stamps the time) to the waiter's "
  "command starting (its first act), the waiter having waited 0.4s; both commands are "
  "`bash -c`; samples alternate between the tools (as section 2 of bench/compare.sh).\n")


def ho(tool):
    return lambda l: (spread(vals(l, "handoff", tool, "-", "ms"), " ms"),
                      med(vals(l, "handoff", tool, "-", "ms")))


def ho_ratio(l):
    a, b = med(vals(l, "handoff", "rlock", "-", "ms")), med(vals(l, "handoff", "flock", "-", "ms"))
    return (ratio(a, b), None if a is None or not b else a / b)


def ho_failed(l):
    return ("%d" % sum(sum(vals(l, "handoff", t, "-", "failed")) for t in ("rlock", "flock")), None)


table("samples: %s each" % ", ".join(sorted({meta[l].get("handoffs", "?") for l in order})),
      [line("rlock", ho("rlock")), line("flock", ho("flock")),
       line("rlock ÷ flock", ho_ratio), line("failed samples", ho_failed)])

# 4. server time per cycle
w("## 4. Server time per uncontended acquire + release\n")
w("`rlock bench -c 1 -k 1 -n CYCLES --no-ping --json`; INFO commandstats before and "
  "after: the scripts' usec (EVALSHA + EVAL, + FCALL) and calls divided by the cycles, "
  "and the redis-server's CPU (user + system, which includes its network work) per cycle.\n")


def cy(metric, unit):
    return lambda l: (spread(vals(l, "cycle", "rlock", 1, metric), unit),
                      med(vals(l, "cycle", "rlock", 1, metric)))


table("cycles: %s" % ", ".join(sorted({meta[l].get("cycles", "?") for l in order})),
      [line("scripts' time per cycle", cy("script_usec_per_cycle", " µs")),
       line("scripts per cycle", cy("scripts_per_cycle", "")),
       line("server CPU per cycle", cy("server_cpu_us_per_cycle", " µs")),
       line("cycles/s (bench's own figure)", cy("cycles_per_s", ""))])

# 5. bench -c 1000 -k 1
w("## 5. `rlock bench -c 1000 -k 1`\n")
w("1000 clients in one process, one name: every cycle is a hand-off between waiters.  "
  "One run; the figures are what `--json` reports (µs), with the scripts the server ran "
  "per cycle (INFO commandstats, the PING baseline included, which runs none).\n")


def bj(key, unit=""):
    def f(l):
        xs = vals(l, "bench", "rlock", 1000, key)
        return (fmt(xs[0], unit) if xs else "–", xs[0] if xs else None)
    return f


picked = [("json.cycles_per_s", "cycles/s", ""), ("json.cycles", "cycles", ""),
          ("json.elapsed_s", "elapsed", " s"),
          ("json.latency_us.handoff.p50", "hand-off p50", " µs"),
          ("json.latency_us.handoff.p99", "hand-off p99", " µs"),
          ("json.latency_us.handoff.max", "hand-off max", " µs"),
          ("json.latency_us.wait.p50", "wait p50", " µs"),
          ("json.latency_us.wait.p99", "wait p99", " µs"),
          ("json.longest_wait_us", "longest wait", " µs"),
          ("json.attempts", "acquire attempts", ""), ("json.busy", "told held", ""),
          ("json.wakeups", "woken by a release", ""),
          ("json.timer_wakeups", "woken by the TTL timer", ""),
          ("json.reacquired", "re-taken by the releaser", ""),
          ("json.abandoned", "abandoned", ""), ("json.errors.total", "errors", ""),
          ("json.violations.total", "violations", ""),
          ("json.cpu_s.server", "server CPU", " s"), ("json.cpu_s.bench", "bench CPU", " s"),
          ("scripts_per_cycle", "scripts per cycle", ""),
          ("script_usec_per_cycle", "scripts' time per cycle", " µs")]
allkeys = []
for l in order:
    for r in data[l]:
        if r[0] == "bench" and r[4].startswith("json.") and r[4] not in allkeys:
            allkeys.append(r[4])
# Fairness figures, if the bench reports any.
for k in allkeys:
    if "fair" in k and k not in [p[0] for p in picked]:
        picked.append((k, k[5:], ""))
table("figure", [line(name, bj(k, u)) for k, name, u in picked])


def raw(key):
    def f(l):
        for r in data[l]:
            if r[0] == "bench" and r[4] == key:
                return (r[5], None)
        return ("–", None)
    return f


w("<details><summary>every field of <code>rlock bench --json</code></summary>\n")
change_saved, change = change, False
table("field", [line("`%s`" % k[5:], raw(k)) for k in allkeys])
change = change_saved
w("</details>\n")

w("## Commands\n")
w("```")
w("rlock -u redis://127.0.0.1:PORT run -w 300 drain-N-REP -- true     # x N, section 1")
w("flock -w 300 DIR/locks/drain-N-REP true                            # x N")
w("etcdctl --endpoints=http://127.0.0.1:PORT lock --ttl=30 drain-N-REP -- true # x N")
w("hyperfine -N --warmup 2 --runs R -n rlock 'rlock -u URL run hf -- true' -n flock 'flock DIR/locks/hf true'")
w("rlock -u URL run hoI -- bash -c '...stamp...'                      # holder, then waiter")
w("flock DIR/locks/hoI bash -c '...stamp...'")
w("rlock -u URL bench -c 1 -k 1 -n CYCLES --no-ping --json")
w("rlock -u URL bench -c 1000 -k 1 -d 5s --json")
w("```\n")
w("Reproduce: `RLOCK=/path/to/old/rlock LABEL=before bench/fifo.sh`, then "
  "`RLOCK=./build/rlock LABEL=after bench/fifo.sh` (QUICK=1 for a short try; REPORT_ONLY=1 "
  "rewrites this file from the TSVs).")
text = "\n".join(L) + "\n"
open(OUT + ".tmp", "w").write(text)
os.replace(OUT + ".tmp", OUT)
EOF
}

# ---- main ----------------------------------------------------------------------

main() {
	if [[ ${REPORT_ONLY:-0} == 1 ]]; then
		report || die "report failed"
		say "wrote $OUT"
		return 0
	fi
	for v in $(compgen -e); do
		case $v in REDIS_* | RLOCK_* | REDISCLI_* | ETCDCTL_*) unset "$v" ;; esac
	done
	install_missing
	if [[ ! -x $RLOCK_SRC && $RLOCK_SRC == "$ROOT/build/rlock" ]]; then
		make -s -C "$ROOT" build/rlock >&2 || die "make build/rlock failed"
	fi
	[[ -x $RLOCK_SRC ]] || die "$RLOCK_SRC: not an executable"
	# Enough descriptors for the server's 10000 clients and bench's 1000.
	ulimit -n "$NOFILE" 2>/dev/null || ulimit -n "$(ulimit -Hn)" ||
		die "cannot raise ulimit -n"
	(($(ulimit -n) >= 10032)) || say "ulimit -n is only $(ulimit -n): redis-server will lower maxclients"

	W=$(mktemp -d "${TMPDIR:-/tmp}/rlock-fifo.XXXXXX") || exit 1
	trap cleanup EXIT
	trap 'exit 130' INT TERM HUP
	mkdir -p "$W/locks"
	cp "$RLOCK_SRC" "$W/rlock" || die "cannot copy $RLOCK_SRC"
	RLOCK=$W/rlock
	start_servers
	say "label $LABEL, $("$RLOCK" --version | head -1), redis on $REDIS_PORT, etcd on $ETCD_PORT"
	: >"$W/results.tsv"
	describe
	write_drain
	# The scripts loaded before the first count.
	"$RLOCK" -u "$URL" run warm -- true || die "rlock run failed"

	# The light, noise-sensitive sections first, on a calm machine; the
	# drains leave it busy for a while (hundreds of exits, etcd's
	# compaction).
	overhead
	handoff
	cycles
	drain
	settle
	bench1000

	meta load_end "$(cut -d' ' -f1-3 /proc/loadavg)"
	meta psi_end "$(pressure)"
	meta seconds "$SECONDS"
	mv "$W/results.tsv" "$TSV" || die "cannot write $TSV"
	say "wrote $TSV"
	report || die "report failed"
	say "wrote $OUT"
}

main "$@"
