#!/usr/bin/env bash
# tls.sh - what TLS (rediss://) costs rlock, in one run on one machine,
# against a private plain redis-server and a private TLS redis-server on
# free loopback ports (never 6379), both stopped by PID on exit:
#
#   1  `rlock run k -- true`, plain, next to `flock FILE true`;
#   2  the same run over TLS (--cacert, server with --tls-auth-clients no)
#      next to plain;
#   3  the TLS run next to `redis-cli --tls --cacert ca.crt -p P ping`;
#   4  `rlock bench -c 50 -d 3s --json` over TLS and plain;
#   5  peak RSS of the run, plain and TLS (/usr/bin/time -f %M);
#   6  where the TLS time goes: timed variants (--insecure, --cacertdir,
#      the system bundle as --cacert, the system store, SSL_CERT_DIR,
#      another CA, an IP URL, libssl preloaded into `true`), callgrind
#      instruction counts split by phase (and per lock cycle of `rlock
#      bench`), LD_DEBUG=statistics, the syscalls and round trips
#      (strace), and /proc/PID/maps of a running plain and TLS `run`.
#
# The timed commands of 1-3 and 6 run in ONE loop: every round runs each
# variant once, in a new random order, so that the noise of a shared
# machine falls on all of them alike; the figures are medians.  The bench
# runs alternate plain and TLS (ABBA...).  Client CPU (user+sys) comes from
# wait4's rusage of each timed command.
#
#   bench/tls.sh                 the full run (1-3 minutes, more when busy)
#   QUICK=1 bench/tls.sh         fewer rounds and 1s benches, to try it
#   ROUNDS=N BENCH_REPS=N        override the number of rounds / bench runs
#   KEEP=1 bench/tls.sh          keep the raw data (in /tmp/rlock-tls.*.kept)
#
# Writes bench/RESULTS-tls.md and prints it.  Installs nothing: needs
# redis-server with TLS, redis-cli, openssl, flock and python3; valgrind,
# strace and /usr/bin/time are used when present (sections skipped or
# replaced otherwise).  make test never runs this.

set -u
cd "$(dirname "$0")/.." || exit 1
ROOT=$PWD
OUT=$ROOT/bench/RESULTS-tls.md
QUICK=${QUICK:-0}
if ((QUICK)); then
	ROUNDS=${ROUNDS:-30} BENCH_REPS=${BENCH_REPS:-1} BENCH_DUR=1s
	RSS_RUNS=5 LD_RUNS=3 BUDGET=10 CYC_N1=100 CYC_N2=300
else
	ROUNDS=${ROUNDS:-300} BENCH_REPS=${BENCH_REPS:-3} BENCH_DUR=3s
	RSS_RUNS=25 LD_RUNS=15 BUDGET=${BUDGET:-45} CYC_N1=300 CYC_N2=1300
fi
WARMUP=5

say() { printf 'tls-bench: [%3ds] %s\n' "$SECONDS" "$*" >&2; }
die() {
	say "$*"
	exit 1
}

for t in redis-server redis-cli openssl flock; do
	command -v "$t" >/dev/null || die "$t is needed (apt-get install redis-server redis-tools openssl util-linux)"
done
PY=$(command -v /usr/bin/python3 python3 | head -n 1)
[[ -n $PY ]] || die "python3 is needed"
[[ -x ./build/rlock ]] || make build/rlock >&2 || die "cannot build ./build/rlock"
RLOCK=$ROOT/build/rlock

# Nothing from the caller's environment may steer rlock or OpenSSL.
for v in $(compgen -e); do
	case $v in REDIS_* | RLOCK_* | REDISCLI_* | SSL_CERT_* | OPENSSL_* | LD_*) unset "$v" ;; esac
done

tmp=$(mktemp -d "${TMPDIR:-/tmp}/rlock-tls.XXXXXX") || exit 1
server_pid=
tls_pid=
bg_pid=
who=tls-bench
. bench/private-redis.sh

cleanup() {
	local p
	for p in "$bg_pid" "$tls_pid"; do
		[[ -n $p ]] || continue
		kill "$p" 2>/dev/null
		wait "$p" 2>/dev/null
	done
	if [[ -n ${KEEP:-} && -d $tmp ]]; then
		rm -rf "$tmp.kept" && cp -a "$tmp" "$tmp.kept" && say "raw data kept in $tmp.kept"
	fi
	stop_server # the plain server, by PID, and rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 130' INT TERM HUP

T0=$(date +%s)
load_start=$(cut -d' ' -f1-3 /proc/loadavg)

# ---- certificates (EC P-256, as RESEARCH.md 1.7) ----------------------------

say "certificates in $tmp"
make_certs "$tmp" &&
	openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes \
		-days 2 -subj "/CN=another CA" -keyout "$tmp/other.key" \
		-out "$tmp/other.crt" >>"$tmp/openssl.log" 2>&1 || {
	cat "$tmp/openssl.log" >&2
	die "openssl failed"
}
# Our CA as a hashed directory (c_rehash), and inside a copy of the system
# bundle (the eager-parse case).
mkdir "$tmp/cadir" && cp "$tmp/ca.crt" "$tmp/cadir/" &&
	openssl rehash "$tmp/cadir" 2>/dev/null
SYS_BUNDLE=/etc/ssl/certs/ca-certificates.crt
SYS_DIR=/etc/ssl/certs
have_sys=0
if [[ -r $SYS_BUNDLE ]] && compgen -G "$SYS_DIR/*.0" >/dev/null; then
	have_sys=1
	cat "$SYS_BUNDLE" "$tmp/ca.crt" >"$tmp/bundle.crt"
fi

# ---- servers ------------------------------------------------------------------

start_server || exit 1
P=$port

tls_up() {
	kill -0 "$tls_pid" 2>/dev/null || return 0 # let the caller notice
	[[ $(redis-cli --tls --cacert "$tmp/ca.crt" -h 127.0.0.1 -p "$PT" \
		INFO server 2>/dev/null) == *"process_id:$tls_pid"* ]]
}
TLS_SERVER_ARGS=(--port 0 --bind 127.0.0.1
	--tls-cert-file "$tmp/server.crt" --tls-key-file "$tmp/server.key"
	--tls-ca-cert-file "$tmp/ca.crt" --tls-auth-clients no
	--save '' --appendonly no --daemonize no --dir "$tmp"
	--logfile "$tmp/redis-tls.log")
for ((try = 0; try < 20; try++)); do
	PT=$((20000 + (RANDOM * 32768 + RANDOM) % 12000))
	((PT == P)) && continue
	listening "$PT" && continue
	redis-server --tls-port "$PT" "${TLS_SERVER_ARGS[@]}" \
		</dev/null >/dev/null 2>&1 &
	tls_pid=$!
	poll 5 tls_up && kill -0 "$tls_pid" 2>/dev/null && break
	kill "$tls_pid" 2>/dev/null
	wait "$tls_pid" 2>/dev/null
	tls_pid=
done
if [[ -z $tls_pid ]]; then
	cat "$tmp/redis-tls.log" >&2
	die "could not start a TLS redis-server (is it built with TLS?)"
fi
say "plain redis-server pid $server_pid on 127.0.0.1:$P, TLS pid $tls_pid on 127.0.0.1:$PT"

PLAIN=redis://127.0.0.1:$P
TLS=rediss://localhost:$PT
TLSIP=rediss://127.0.0.1:$PT

# ---- the timed variants ---------------------------------------------------------
# name|expected exit|env (K=V;K=V or -)|command (split on spaces)

spec=$tmp/variants
{
	echo "true|0|-|true"
	echo "flock|0|-|flock $tmp/x true"
	echo "plain|0|-|$RLOCK -u $PLAIN run k -- true"
	echo "tls|0|-|$RLOCK -u $TLS --cacert $tmp/ca.crt run k -- true"
	echo "cli-tls|0|-|redis-cli --tls --cacert $tmp/ca.crt -p $PT ping"
	echo "cli-plain|0|-|redis-cli -p $P ping"
	echo "plain-localhost|0|-|$RLOCK -u redis://localhost:$P run k -- true"
	echo "true+libssl|0|LD_PRELOAD=libssl.so.3|true"
	echo "tls-ip|0|-|$RLOCK -u $TLSIP --cacert $tmp/ca.crt run k -- true"
	echo "tls-insecure|0|-|$RLOCK -u $TLS --insecure run k -- true"
	echo "tls-cacertdir|0|-|$RLOCK -u $TLS --cacertdir $tmp/cadir run k -- true"
	echo "tls-otherca|69|-|$RLOCK -u $TLS --cacert $tmp/other.crt run k -- true"
	if ((have_sys)); then
		echo "tls-bundle|0|-|$RLOCK -u $TLS --cacert $tmp/bundle.crt run k -- true"
		echo "tls-sslcertdir|0|SSL_CERT_DIR=$SYS_DIR:$tmp/cadir|$RLOCK -u $TLS run k -- true"
		echo "tls-system|69|-|$RLOCK -u $TLS run k -- true"
		echo "tls-sysdir|69|-|$RLOCK -u $TLS --cacertdir $SYS_DIR run k -- true"
	fi
} >"$spec"

# Every variant once by hand first: it must do what it should.
while IFS='|' read -r name want env cmd; do
	envargs=()
	[[ $env == - ]] || IFS=';' read -r -a envargs <<<"$env"
	# shellcheck disable=SC2086
	env "${envargs[@]}" $cmd >"$tmp/check.out" 2>"$tmp/check.err" </dev/null
	rc=$?
	((rc == want)) || {
		cat "$tmp/check.err" >&2
		die "$name: exit $rc, expected $want: $cmd"
	}
	[[ $name == tls-system ]] && head -n 1 "$tmp/check.err" >"$tmp/system.err"
done <"$spec"

cat >"$tmp/harness.py" <<'EOF'
# Run every variant once per round, in a new random order each round;
# time each with perf_counter around posix_spawn + wait4, and keep wait4's
# rusage (user+sys CPU, max RSS).
import json, os, random, sys, time

spec, rounds, warmup, out = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
budget = float(sys.argv[5])  # seconds; stop early (after at least 30 rounds) when spent
variants = []
for line in open(spec):
    name, want, env, cmd = line.rstrip("\n").split("|", 3)
    e = dict(os.environ)
    if env != "-":
        for kv in env.split(";"):
            k, v = kv.split("=", 1)
            e[k] = v
    variants.append((name, int(want), e, cmd.split(), ("" if env == "-" else env.replace(";", " ") + " ") + cmd))

null_r = os.open(os.devnull, os.O_RDONLY)
null_w = os.open(os.devnull, os.O_WRONLY)
fa = [(os.POSIX_SPAWN_DUP2, null_r, 0), (os.POSIX_SPAWN_DUP2, null_w, 1),
      (os.POSIX_SPAWN_DUP2, null_w, 2)]

def run(v):
    name, want, env, argv, _ = v
    t0 = time.perf_counter_ns()
    pid = os.posix_spawnp(argv[0], argv, env, file_actions=fa)
    _, st, ru = os.wait4(pid, 0)
    t1 = time.perf_counter_ns()
    code = os.waitstatus_to_exitcode(st)
    if code != want:
        sys.exit(f"harness: {name}: exit {code}, expected {want}: {' '.join(argv)}")
    return [(t1 - t0) / 1e6, (ru.ru_utime + ru.ru_stime) * 1e3, ru.ru_maxrss]

rng = random.Random(20261123)
for _ in range(warmup):
    for v in variants:
        run(v)
res = {v[0]: [] for v in variants}
start = time.monotonic()
done = 0
for _ in range(rounds):
    if done >= 30 and time.monotonic() - start > budget:
        break
    done += 1
    order = variants[:]
    rng.shuffle(order)
    for v in order:
        res[v[0]].append(run(v))
json.dump({"rounds": done, "asked": rounds, "order": [v[0] for v in variants],
           "commands": {v[0]: v[4] for v in variants},
           "samples": res}, open(out, "w"))
EOF

nvar=$(wc -l <"$spec")
say "timing: $nvar variants x $ROUNDS rounds (at most ${BUDGET}s), interleaved"
"$PY" "$tmp/harness.py" "$spec" "$ROUNDS" "$WARMUP" "$tmp/times.json" "$BUDGET" ||
	die "the timing loop failed"

# ---- 4. rlock bench, plain and TLS alternating --------------------------------------

say "rlock bench -c 50 -d $BENCH_DUR: $BENCH_REPS x plain, $BENCH_REPS x TLS, alternating"
BENCH_PLAIN="$RLOCK -u $PLAIN bench -c 50 -d $BENCH_DUR --json"
BENCH_TLS="$RLOCK -u $TLS --cacert $tmp/ca.crt bench -c 50 -d $BENCH_DUR --json"
for ((i = 0; i < BENCH_REPS; i++)); do
	if ((i % 2)); then order=(tls plain); else order=(plain tls); fi
	for v in "${order[@]}"; do
		if [[ $v == plain ]]; then cmd=$BENCH_PLAIN; else cmd=$BENCH_TLS; fi
		# shellcheck disable=SC2086
		$cmd >"$tmp/bench.$v.$i.json" 2>"$tmp/bench.err" ||
			{ cat "$tmp/bench.err" >&2; die "bench $v failed"; }
	done
done

# ---- 5. peak RSS ------------------------------------------------------------------

: >"$tmp/rss.plain"
: >"$tmp/rss.tls"
if [[ -x /usr/bin/time ]]; then
	# shellcheck disable=SC2016 # backquotes for markdown
	RSS_HOW='`/usr/bin/time -f %M`'
	say "peak RSS: $RSS_RUNS x plain, $RSS_RUNS x TLS, alternating"
	for ((i = 0; i < RSS_RUNS; i++)); do
		/usr/bin/time -f %M -o "$tmp/rss" "$RLOCK" -u "$PLAIN" run k -- true &&
			tail -n 1 "$tmp/rss" >>"$tmp/rss.plain"
		/usr/bin/time -f %M -o "$tmp/rss" "$RLOCK" -u "$TLS" \
			--cacert "$tmp/ca.crt" run k -- true &&
			tail -n 1 "$tmp/rss" >>"$tmp/rss.tls"
	done
else
	# fork (not posix_spawn, whose vfork child would report python's RSS)
	RSS_HOW="python3 fork + exec + wait4 ru_maxrss (no /usr/bin/time)"
	rss_py='import os, sys
pid = os.fork()
if pid == 0:
    os.execvp(sys.argv[1], sys.argv[1:])
print(os.wait4(pid, 0)[2].ru_maxrss)'
	for ((i = 0; i < RSS_RUNS; i++)); do
		"$PY" -c "$rss_py" "$RLOCK" -u "$PLAIN" run k -- true >>"$tmp/rss.plain"
		"$PY" -c "$rss_py" "$RLOCK" -u "$TLS" --cacert "$tmp/ca.crt" \
			run k -- true >>"$tmp/rss.tls"
	done
fi

# ---- 6a. maps and RSS of a running plain and TLS run ----------------------------------

maps_of() { # URL-and-options... : prints "libs vmrss_kib"
	local pid n rss
	"$RLOCK" "$@" run maps -- sleep 1 >/dev/null 2>&1 &
	pid=$!
	bg_pid=$pid
	# wait until the command runs (rlock has a child)
	poll 3 pgrep -P "$pid" >/dev/null
	n=$(grep -cE 'libssl|libcrypto' /proc/"$pid"/maps 2>/dev/null)
	rss=$(awk '/^VmRSS/ { print $2 }' /proc/"$pid"/status 2>/dev/null)
	grep -oE '[^ ]*lib(ssl|crypto)[^ ]*' /proc/"$pid"/maps 2>/dev/null | sort -u | tr '\n' ' ' >"$tmp/maps.libs"
	wait "$pid"
	bg_pid=
	echo "${n:-?} ${rss:-?} $(cat "$tmp/maps.libs")"
}
say "/proc/PID/maps of a running plain and TLS run"
maps_plain=$(maps_of -u "$PLAIN")
maps_tls=$(maps_of -u "$TLS" --cacert "$tmp/ca.crt")

# ---- 6b. LD_DEBUG=statistics --------------------------------------------------------

say "LD_DEBUG=statistics, $LD_RUNS runs of each"
ld_once() { # name cmd... ; appends "startup_cycles final_relocs from_cache"
	local name=$1 pid f
	shift
	rm -f "$tmp"/ld.out.*
	LD_DEBUG=statistics LD_DEBUG_OUTPUT=$tmp/ld.out "$@" >/dev/null 2>&1 </dev/null &
	pid=$!
	wait "$pid"
	f=$tmp/ld.out.$pid
	[[ -r $f ]] || return 0
	awk '/total startup time in dynamic loader/ { s = $(NF - 1) }
	     /final number of relocations:/ { r = $NF }
	     /final number of relocations from cache/ { c = $NF }
	     END { print s, r, c }' "$f" >>"$tmp/ld.$name"
}
for ((i = 0; i < LD_RUNS; i++)); do
	ld_once plain "$RLOCK" -u "$PLAIN" run k -- true
	ld_once tls "$RLOCK" -u "$TLS" --cacert "$tmp/ca.crt" run k -- true
	ld_once plain+libssl env LD_PRELOAD=libssl.so.3 "$RLOCK" -u "$PLAIN" run k -- true
	ld_once true env true
	ld_once true+libssl env LD_PRELOAD=libssl.so.3 true
	ld_once cli-tls redis-cli --tls --cacert "$tmp/ca.crt" -p "$PT" ping
	ld_once cli-plain redis-cli -p "$P" ping
done

# ---- 6c. syscalls and round trips (strace) ---------------------------------------------

if command -v strace >/dev/null; then
	say "strace of one plain and one TLS run"
	for v in plain tls; do
		if [[ $v == plain ]]; then a=(-u "$PLAIN"); else a=(-u "$TLS" --cacert "$tmp/ca.crt"); fi
		strace -o "$tmp/strace.$v" -e trace=sendto,recvfrom,poll \
			"$RLOCK" "${a[@]}" run k -- true >/dev/null 2>&1
		strace -f -c -o "$tmp/strace-c.$v" "$RLOCK" "${a[@]}" run k -- true >/dev/null 2>&1
	done
	# TLS connections (handshakes) of a run that renews its lease, and of
	# a run that waits for a holder.
	tlsconns() { grep -c "connect(.*htons($PT)" "$1"; }
	strace -f -o "$tmp/strace.renew" -e trace=connect "$RLOCK" -u "$TLS" \
		--cacert "$tmp/ca.crt" run -t 900ms renew -- sleep 1 >/dev/null 2>&1
	"$RLOCK" -u "$TLS" --cacert "$tmp/ca.crt" run held -- sleep 0.8 >/dev/null 2>&1 &
	bg_pid=$!
	poll 3 pgrep -P "$bg_pid" >/dev/null
	strace -f -o "$tmp/strace.wait" -e trace=connect "$RLOCK" -u "$TLS" \
		--cacert "$tmp/ca.crt" run -w 5s held -- true >/dev/null 2>&1
	wait "$bg_pid"
	bg_pid=
	conns_renew=$(tlsconns "$tmp/strace.renew")
	conns_wait=$(tlsconns "$tmp/strace.wait")
fi

# ---- 6d. callgrind ------------------------------------------------------------------

CG_VARIANTS="plain tls tls-ip tls-insecure tls-cacertdir tls-otherca"
((have_sys)) && CG_VARIANTS+=" tls-bundle tls-sslcertdir tls-system"
CG_VARIANTS+=" cli-plain cli-tls"
# Each run is a small script in $tmp/cg; two run at a time (instruction
# counts do not care, and the timed sections are over).
cg_n=0
cg_job() { # CALLGRIND-OUT ANNOTATED-OUT WANT ENV(K=V;K=V or -) COMMAND...
	local out=$1 txt=$2 want=$3 envspec=$4 e
	local -a envargs=()
	shift 4
	[[ $envspec == - ]] || IFS=';' read -r -a envargs <<<"$envspec"
	{
		printf 'env'
		for e in "${envargs[@]}"; do printf ' %q' "$e"; done
		printf ' valgrind --tool=callgrind --callgrind-out-file=%q' "$out"
		printf ' %q' "$@"
		printf ' >/dev/null 2>%q </dev/null\n' "$out.err"
		printf 'rc=$?\n'
		# shellcheck disable=SC2016 # $rc is for the job script
		printf '[ "$rc" = %q ] || { echo "callgrind: exit $rc, expected %s: %s" >&2; tail -n 5 %q >&2; exit 1; }\n' \
			"$want" "$want" "$*" "$out.err"
		printf 'exec callgrind_annotate --inclusive=yes --auto=no --threshold=100 %q >%q 2>/dev/null\n' \
			"$out" "$txt"
	} >"$tmp/cg/$cg_n.sh"
	cg_n=$((cg_n + 1))
}
if command -v valgrind >/dev/null && command -v callgrind_annotate >/dev/null; then
	mkdir -p "$tmp/cg"
	for name in $CG_VARIANTS plain tls; do
		IFS='|' read -r _ want env cmd < <(grep "^$name|" "$spec")
		n=1
		[[ -e $tmp/cg.$name.1.queued ]] && n=2
		: >"$tmp/cg.$name.1.queued"
		# Two run at once: each on a lock name of its own, or one would
		# wait for the other (and open a second connection to subscribe).
		cmd=${cmd/ run k -- / run cg-$name-$n -- }
		# shellcheck disable=SC2086
		cg_job "$tmp/cg.$name.$n" "$tmp/cga.$name.$n" "$want" "$env" $cmd
	done
	# Per lock cycle: the difference between two bench runs of N1 and N2
	# cycles (one client, no PING baseline) divided by N2 - N1.
	for v in plain tls; do
		if [[ $v == plain ]]; then a=(-u "$PLAIN"); else a=(-u "$TLS" --cacert "$tmp/ca.crt"); fi
		for n in $CYC_N1 $CYC_N2; do
			cg_job "$tmp/cgb.$v.$n" "$tmp/cgba.$v.$n" 0 - \
				"$RLOCK" "${a[@]}" bench -c 1 -n "$n" --no-ping --json
		done
	done
	say "callgrind: $cg_n runs, 2 at a time: $CG_VARIANTS (plain and tls twice); rlock bench -c 1 -n $CYC_N1 and -n $CYC_N2, plain and TLS"
	# the longest (a whole bundle parsed) first
	for ((i = 0; i < cg_n; i++)); do
		if grep -q 'bundle\|SSL_CERT_DIR' "$tmp/cg/$i.sh"; then echo "0 $i"; else echo "1 $i"; fi
	done | sort -n | awk -v d="$tmp/cg" '{ print d "/" $2 ".sh" }' |
		xargs -P 2 -n 1 bash || die "a callgrind run failed"
fi

# ---- the report -------------------------------------------------------------------------

cpu=$(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -n 1)
{
	echo "date=$(date -u '+%Y-%m-%d %H:%M UTC')"
	echo "kernel=$(uname -srm)"
	echo "cpu=${cpu:-unknown CPU}, $(nproc) CPUs"
	echo "memory=$(awk '/MemTotal/ { printf "%.0f GiB", $2 / 1048576 }' /proc/meminfo)"
	echo "load_start=$load_start"
	echo "load_end=$(cut -d' ' -f1-3 /proc/loadavg)"
	echo "rlock=$("$RLOCK" --version 2>&1 | head -n 1) ($(git -C "$ROOT" rev-parse --short HEAD 2>/dev/null)$(git -C "$ROOT" diff --quiet HEAD -- lib cli 2>/dev/null || echo ', modified'))"
	echo "redis=$(redis-server --version | sed -n 's/.*v=\([^ ]*\).*/\1/p')"
	echo "rediscli=$(redis-cli --version)"
	echo "openssl=$(openssl version)"
	echo "glibc=$(ldd --version 2>&1 | head -n 1)"
	echo "python=$("$PY" --version 2>&1)"
	echo "valgrind=$(valgrind --version 2>/dev/null)"
	echo "flockv=$(flock --version 2>&1 | head -n 1)"
	echo "tmp=$tmp"
	echo "P=$P"
	echo "PT=$PT"
	echo "rounds=$ROUNDS"
	echo "bench_reps=$BENCH_REPS"
	echo "bench_dur=$BENCH_DUR"
	echo "bench_plain=$BENCH_PLAIN"
	echo "bench_tls=$BENCH_TLS"
	echo "rss_runs=$RSS_RUNS"
	echo "rss_how=$RSS_HOW"
	echo "ld_runs=$LD_RUNS"
	echo "maps_plain=$maps_plain"
	echo "maps_tls=$maps_tls"
	echo "system_err=$(cat "$tmp/system.err" 2>/dev/null)"
	echo "bundle_certs=$(grep -c 'BEGIN CERTIFICATE' "$tmp/bundle.crt" 2>/dev/null)"
	echo "cg_variants=$CG_VARIANTS"
	echo "conns_renew=${conns_renew:-}"
	echo "conns_wait=${conns_wait:-}"
	echo "cyc_n1=$CYC_N1"
	echo "cyc_n2=$CYC_N2"
	echo "tls_server=redis-server --tls-port \$PT --port 0 --bind 127.0.0.1 --tls-cert-file \$T/server.crt --tls-key-file \$T/server.key --tls-ca-cert-file \$T/ca.crt --tls-auth-clients no --save '' --appendonly no --daemonize no --dir \$T --logfile \$T/redis-tls.log"
	echo "plain_server=redis-server --port \$P --bind 127.0.0.1 --save '' --appendonly no --daemonize no --dir \$T --logfile \$T/redis.log"
} >"$tmp/meta"

cat >"$tmp/report.py" <<'EOF'
import glob, json, os, re, statistics as st, sys

tmp = sys.argv[1]
meta = dict(l.rstrip("\n").split("=", 1) for l in open(f"{tmp}/meta") if "=" in l)
times = json.load(open(f"{tmp}/times.json"))
S = times["samples"]

def med(xs):
    return st.median(xs) if xs else float("nan")

def q(xs, k):
    return st.quantiles(xs, n=4, method="inclusive")[k] if len(xs) > 1 else xs[0]

def sym(s):
    """The command as printed: temp dir as $T, ports as $P and $PT."""
    s = s.replace(meta["tmp"], "$T")
    s = re.sub(r"\S*/rlock(?= )", "rlock", s, count=1)
    s = re.sub(r":%s\b" % meta["PT"], ":$PT", s)
    s = re.sub(r":%s\b" % meta["P"], ":$P", s)
    s = re.sub(r"-p %s\b" % meta["PT"], "-p $PT", s)
    s = re.sub(r"-p %s\b" % meta["P"], "-p $P", s)
    return s

wall = {k: med([x[0] for x in v]) for k, v in S.items()}
cpu = {k: med([x[1] for x in v]) for k, v in S.items()}

def paired(a, b):
    """median over rounds of b/a, both from the same round."""
    return med([y[0] / x[0] for x, y in zip(S[a], S[b])])

def f2(x):
    return f"{x:.2f}"

o = []
w = o.append
w("# What TLS costs rlock (rediss://)\n")
w(f"Measured by `bench/tls.sh` in one run on {meta['date']}.  ")
w(f"Machine: {meta['kernel']}; {meta['cpu']}; {meta['memory']}; load average "
  f"{meta['load_start']} at the start, {meta['load_end']} at the end (1, 5, 15 min).  ")
w(f"Software: {meta['rlock']}; redis-server {meta['redis']}; {meta['rediscli']}; "
  f"{meta['openssl']}; {meta['glibc']}; {meta['python']}; {meta['valgrind']}; {meta['flockv']}.\n")
w("The machine's 2 cores are shared by the servers, the clients and whatever else "
  "runs on it, so single timings are noisy: every timed figure is a median, and the "
  "variants were interleaved (each round runs every variant once, in a new random "
  "order) so that noise falls on all of them alike.  Callgrind's instruction counts "
  "do not depend on the noise.\n")
w("Setup: EC P-256 certificates made with `openssl req`/`openssl x509` in a temporary "
  "directory `$T` (a CA, and a server certificate for `DNS:localhost, IP:127.0.0.1`); "
  "`$T/cadir` holds the CA hashed by `openssl rehash`; `$T/bundle.crt` is "
  f"`/etc/ssl/certs/ca-certificates.crt` plus the CA ({meta['bundle_certs']} certificates).  Servers on free loopback ports:\n")
w("```")
w(meta["plain_server"])
w(sym(meta["tls_server"]).replace(meta["tmp"], "$T"))
w("```")
w(f"In this run `$T` = `{meta['tmp']}`, `$P` = {meta['P']}, `$PT` = {meta['PT']}; "
  "`rlock` is `./build/rlock` of the worktree.\n")

# ---- summary
w("## Summary\n")
w("| # | comparison | figures (medians) | ratio | paired ratio |")
w("|---|---|---|---:|---:|")
def row(n, label, a, b, note=""):
    w(f"| {n} | {label} | {f2(wall[b])} ms vs {f2(wall[a])} ms | "
      f"**{wall[b] / wall[a]:.2f}×**{note} | {paired(a, b):.2f}× |")
row(1, "`rlock run k -- true` plain vs `flock $T/x true`", "flock", "plain", " (target ≤ 1.25×)")
row(2, "`rlock run` over TLS (`--cacert`) vs plain", "plain", "tls")
row(3, "`rlock run` over TLS vs `redis-cli --tls ... ping` (anchor)", "cli-tls", "tls")
row(3, "… with an IP URL (`rediss://127.0.0.1`, no resolver, no SNI) vs the anchor", "cli-tls", "tls-ip")
w("")
w("\"ratio\" divides the medians; \"paired ratio\" is the median over rounds of the ratio of "
  "the two commands timed in the same round (a check that drift did not make the ratio).  "
  f"Minus the cost of spawning (`true`, {f2(wall['true'])} ms): flock "
  f"{f2(wall['flock'] - wall['true'])} ms, rlock plain {f2(wall['plain'] - wall['true'])} ms "
  f"({(wall['plain'] - wall['true']) / (wall['flock'] - wall['true']):.2f}×), rlock TLS "
  f"{f2(wall['tls'] - wall['true'])} ms.\n")

reading_at = len(o)

# ---- the timing table
w(f"## 1–3 and 6: the timed commands ({times['rounds']} interleaved rounds)\n")
w("Wall time from spawn to reap (python `posix_spawn` + `wait4`, output to /dev/null); "
  "client CPU is wait4's user+sys of the command (and of its `true` child); "
  "\"waiting\" = wall − client CPU (round trips, the server's work, scheduling).\n")
w("| variant | command | wall median [IQR] | min | client CPU | waiting |")
w("|---|---|---:|---:|---:|---:|")
for k in times["order"]:
    xs = [x[0] for x in S[k]]
    w(f"| {k} | `{sym(times['commands'][k])}` | {f2(wall[k])} ms "
      f"[{f2(q(xs, 0))}–{f2(q(xs, 2))}] | {f2(min(xs))} ms | {f2(cpu[k])} ms | {f2(wall[k] - cpu[k])} ms |")
w("")
if meta.get("system_err"):
    w(f"`tls-system` and `tls-sysdir` verify against the system's store, which does not hold "
      f"our CA, and `tls-otherca` against another CA, so they fail as they should (exit 69) "
      f"after the server's flight: `{sym(meta['system_err'])}`.  They skip the acquire and the "
      "release, so compare them with each other.  `tls-sslcertdir` succeeds: the CA is found "
      "in the second directory of `SSL_CERT_DIR`.\n")

# ---- derived: where the time goes
def d(a, b):
    return wall[b] - wall[a], cpu[b] - cpu[a]
w("### Where the TLS time goes, by difference of timed variants\n")
w("| difference | what it isolates | wall | client CPU |")
w("|---|---|---:|---:|")
def drow(a, b, what):
    if a in wall and b in wall:
        dw, dc = d(a, b)
        w(f"| {b} − {a} | {what} | {dw:+.2f} ms | {dc:+.2f} ms |")
drow("plain", "tls", "all of TLS, as users see it")
drow("true", "true+libssl", "mapping and relocating libssl + libcrypto at start (LD_PRELOAD into `true`, no OpenSSL calls)")
drow("tls-insecure", "tls", "verification: loading `--cacert`, the chain check, the name check")
drow("tls", "tls-cacertdir", "`--cacertdir` (lazy, hashed) instead of `--cacert`")
drow("tls", "tls-bundle", f"a {meta['bundle_certs']}-certificate `--cacert` bundle instead of one CA (eager parse)")
drow("tls-otherca", "tls-system", "the system store (default: hashed `/etc/ssl/certs`, lazy) instead of a one-certificate `--cacert` of another CA; both fail at the same point")
drow("tls-otherca", "tls-sysdir", "`--cacertdir /etc/ssl/certs` instead of that `--cacert`; both fail")
drow("tls", "tls-sslcertdir", "`SSL_CERT_DIR=/etc/ssl/certs:$T/cadir` and no `--cacert` instead of `--cacert`")
drow("tls-ip", "tls", "resolving `localhost` (getaddrinfo) and sending SNI")
drow("plain", "plain-localhost", "resolving `localhost` on a plain run")
drow("cli-plain", "cli-tls", "the same TLS cost for redis-cli (libssl linked at start)")
w("")
tw = (wall["tls"] - cpu["tls"]) - (wall["plain"] - cpu["plain"])
w(f"Extra waiting of a TLS run over a plain one: {tw:+.2f} ms (the handshake's extra round "
  "trip and the server's handshake work: ECDHE and an ECDSA signature).\n")

def cga(path):
    inc, total = {}, None
    for line in open(path):
        m = re.match(r"\s*([\d,]+) \(\s*[\d.]+%\)\s+(.*)$", line)
        if not m:
            continue
        n = int(m.group(1).replace(",", ""))
        rest = m.group(2)
        if rest.startswith("PROGRAM TOTALS"):
            total = n
            continue
        fn = rest.rsplit(" [", 1)[0]
        fn = fn.rsplit(":", 1)[-1]
        inc[fn] = max(inc.get(fn, 0), n)
    return total, inc

# ---- 4. bench
w("## 4. `rlock bench -c 50` over TLS and plain\n")
w(f"{meta['bench_reps']} runs of each, alternating (ABBA…), {meta['bench_dur']} each; medians of the runs.\n")
w("```")
w(sym(meta["bench_plain"]))
w(sym(meta["bench_tls"]))
w("```")
def bench(v):
    rs = [json.load(open(f)) for f in sorted(glob.glob(f"{tmp}/bench.{v}.*.json"))]
    g = lambda fn: med([fn(r) for r in rs])
    return {
        "cycles/s": g(lambda r: r["cycles_per_s"]),
        "acquire p50 (ms)": g(lambda r: r["latency_us"]["acquire"]["p50"] / 1000),
        "acquire p99 (ms)": g(lambda r: r["latency_us"]["acquire"]["p99"] / 1000),
        "release p50 (ms)": g(lambda r: r["latency_us"]["release"]["p50"] / 1000),
        "PING baseline round trips/s": g(lambda r: r["ping"]["per_s"]),
        "PING p50 (ms)": g(lambda r: r["latency_us"]["ping"]["p50"] / 1000),
        "setup: 50 connections (ms)": g(lambda r: r["setup_ms"]),
        "bench CPU (s)": g(lambda r: r["cpu_s"]["bench"]),
        "server CPU (s)": g(lambda r: r["cpu_s"]["server"]),
        "errors": g(lambda r: r["errors"]["total"]),
        "violations": g(lambda r: r["violations"]["total"]),
        "runs": len(rs),
        "all cycles/s": ", ".join(f"{r['cycles_per_s']:.0f}" for r in rs),
    }
bp, bt = bench("plain"), bench("tls")
w("| measure | plain | TLS | TLS / plain |")
w("|---|---:|---:|---:|")
for k in bp:
    a, b = bp[k], bt[k]
    if isinstance(a, str):
        w(f"| {k} | {a} | {b} | |")
    else:
        fmt = (lambda x: f"{x:.0f}") if ("/s" in k or k in ("errors", "violations", "runs")) else f2
        r = f"{b / a:.2f}×" if a else "–"
        w(f"| {k} | {fmt(a)} | {fmt(b)} | {r} |")
w("")
w("Latency figures are rlock bench's histogram buckets (coarse).  \"bench CPU\" covers the "
  "PING baseline (1 s) and the cycles.\n")

n1, n2 = int(meta["cyc_n1"]), int(meta["cyc_n2"])
if all(os.path.exists(f"{tmp}/cgba.{v}.{n}") for v in ("plain", "tls") for n in (n1, n2)):
    w(f"Client instructions per lock cycle (acquire + release = 2 requests), deterministic: "
      f"callgrind of `rlock bench -c 1 -n N --no-ping --json` with N = {n1} and {n2}, "
      f"(Ir({n2}) − Ir({n1})) / {n2 - n1}, inclusive:\n")
    CB = {}
    for v in ("plain", "tls"):
        (ta, ia), (tb, ib) = cga(f"{tmp}/cgba.{v}.{n1}"), cga(f"{tmp}/cgba.{v}.{n2}")
        per = lambda k: (ib.get(k, 0) - ia.get(k, 0)) / (n2 - n1)
        CB[v] = [("all of it", (tb - ta) / (n2 - n1)),
                 ("SSL_write (encrypt; 2 calls)", per("SSL_write")),
                 ("SSL_read (decrypt; until WANT_READ)", per("SSL_read")),
                 ("tls_flush + tls_fill (rlock's TLS transport, incl. the two above)", per("tls_flush") + per("tls_fill")),
                 ("redisFormatCommandArgv (hiredis RESP formatting)", per("redisFormatCommandArgv")),
                 ("&nbsp;&nbsp;__sprintf_chk inside it", per("__sprintf_chk"))]
    w("| per cycle (Ir) | plain | TLS |")
    w("|---|---:|---:|")
    for (nm, a), (_, b) in zip(CB["plain"], CB["tls"]):
        w(f"| {nm} | {a:,.0f} | {b:,.0f} |")
    w("")

# ---- 5. RSS
def readnums(p):
    try:
        return [float(l) for l in open(p) if l.strip()]
    except OSError:
        return []
rp, rt = readnums(f"{tmp}/rss.plain"), readnums(f"{tmp}/rss.tls")
w("## 5. Peak RSS of `rlock run k -- true`\n")
mp = meta["maps_plain"].split(" ", 2)
mt = meta["maps_tls"].split(" ", 2)
w("| measure | plain | TLS | TLS / plain |")
w("|---|---:|---:|---:|")
w(f"| peak RSS, median of {len(rp)} ({meta['rss_how']}) | {med(rp):.0f} KiB | {med(rt):.0f} KiB | {med(rt) / med(rp):.2f}× |")
w(f"| VmRSS of a running `rlock run maps -- sleep 1` (/proc/PID/status) | {mp[1]} KiB | {mt[1]} KiB | |")
w(f"| libssl/libcrypto mappings in its /proc/PID/maps | {mp[0]} | {mt[0]} | |")
w("")
w(f"Mapped in the TLS run: `{mt[2].strip() or '-'}`; in the plain run: `{mp[2].strip() or 'nothing'}`.  "
  "A plain run does not map libssl.\n")

# ---- 6. callgrind
cgv = meta["cg_variants"].split()
CG = {}
for v in cgv:
    p = f"{tmp}/cga.{v}.1"
    if os.path.exists(p):
        CG[v] = cga(p)
if CG:
    w("## 6. Where the TLS time goes: callgrind instruction counts\n")
    w("`valgrind --tool=callgrind` of one run of each command above (the same commands as the "
      "timed variants, each with a lock name of its own, as two run at a time); inclusive "
      "instructions (Ir) of the phases, in millions, from "
      "`callgrind_annotate --inclusive=yes`.  The exec'd `true` is not counted.\n")
    def g(inc, *names):
        return sum(inc.get(n, 0) for n in names)
    rows = []
    def phases(total, inc):
        below = inc.get("(below main)", 0)
        pre = total - below if below else 0
        dl = inc.get("dlopen@@GLIBC_2.34", 0)
        init = inc.get("OPENSSL_init_ssl", 0)
        ctx = inc.get("SSL_CTX_new", 0)
        trust = max(inc.get("SSL_CTX_load_verify_locations", 0),
                    g(inc, "SSL_CTX_load_verify_dir", "SSL_CTX_set_default_verify_paths"))
        hs = max(inc.get("SSL_do_handshake", 0), inc.get("SSL_connect", 0))
        name = g(inc, "X509_check_host", "X509_check_ip_asc")
        return [
            ("total", total),
            ("before main (ld.so: loading and relocating linked libraries)", pre),
            ("dlopen(\"libssl.so.3\") (rlock only)", dl),
            ("OPENSSL_init_ssl (of which openssl.cnf ↓)", init),
            ("  CONF_modules_load_file_ex (reading /usr/lib/ssl/openssl.cnf)", inc.get("CONF_modules_load_file_ex", 0)),
            ("SSL_CTX_new", ctx),
            ("  EVP_CIPHER_fetch (provider fetches, inside SSL_CTX_new)", inc.get("EVP_CIPHER_fetch", 0)),
            ("loading trust (SSL_CTX_load_verify_* / set_default_verify_paths)", trust),
            ("handshake (SSL_do_handshake / SSL_connect)", hs),
            ("  X509_verify_cert (chain; lazy directory lookups happen here)", inc.get("X509_verify_cert", 0)),
            ("  ECDSA_verify (CertificateVerify and the chain's signature)", inc.get("ECDSA_verify", 0)),
            ("  EVP_PKEY_keygen + EVP_PKEY_derive (ECDHE)", g(inc, "EVP_PKEY_keygen", "EVP_PKEY_derive")),
            ("name check (X509_check_host / _ip_asc)", name),
            ("d2i_X509: parsing certificates (in loading trust and handshake)", inc.get("d2i_X509", 0)),
            ("  OSSL_DECODER_CTX_new_for_pkey (OpenSSL 3.0 key decoder set-up)", inc.get("OSSL_DECODER_CTX_new_for_pkey", 0)),
            ("everything else (rlock/redis-cli, libc, Redis I/O, exit)", total - pre - dl - init - ctx - trust - hs - name),
        ]
    table = {v: phases(*CG[v]) for v in CG}
    names = [r[0] for r in next(iter(table.values()))]
    w("| phase (M Ir) | " + " | ".join(CG.keys()) + " |")
    w("|---|" + "---:|" * len(CG))
    for i, nm in enumerate(names):
        cells = []
        for v in CG:
            x = table[v][i][1]
            cells.append(f"{x / 1e6:.2f}" if x else "–")
        label = nm if not nm.startswith("  ") else "&nbsp;&nbsp;" + nm.strip()
        if i == 0:
            cells = [f"**{c}**" for c in cells]
        w(f"| {label} | " + " | ".join(cells) + " |")
    w("")
    rep = []
    for v in ("plain", "tls"):
        p2 = f"{tmp}/cga.{v}.2"
        if os.path.exists(p2) and v in CG:
            rep.append(f"{v} {CG[v][0] / 1e6:.3f} M then {cga(p2)[0] / 1e6:.3f} M")
    if rep:
        w(f"Repeatability (a second callgrind run): {'; '.join(rep)}.\n")
    if "tls" in CG and "plain" in CG:
        t = dict(table["tls"])
        tot = t["total"] - dict(table["plain"])["total"]
        extra = wall["tls"] - wall["plain"]
        dl_ms = wall["true+libssl"] - wall["true"]
        wait_ms = (wall["tls"] - cpu["tls"]) - (wall["plain"] - cpu["plain"])
        rest_ms = extra - dl_ms - wait_ms
        parts = [
            ("OPENSSL_init_ssl (incl. openssl.cnf)", t["OPENSSL_init_ssl (of which openssl.cnf ↓)"]),
            ("SSL_CTX_new", t["SSL_CTX_new"]),
            ("loading `--cacert` (one certificate)", t["loading trust (SSL_CTX_load_verify_* / set_default_verify_paths)"]),
            ("handshake, client side (incl. chain verification)", t["handshake (SSL_do_handshake / SSL_connect)"]),
            ("name check", t["name check (X509_check_host / _ip_asc)"]),
        ]
        dl_ir = t['dlopen("libssl.so.3") (rlock only)']
        other = tot - dl_ir - sum(x for _, x in parts)
        parts.append(("the rest (encrypting/decrypting the 2 requests, SSL_free …)", other))
        nondl = tot - dl_ir
        w(f"The extra {extra:.2f} ms of wall time of a TLS run (`--cacert`) over a plain one, "
          f"and its extra {tot / 1e6:.2f} M instructions, split.  Mapping libssl and libcrypto costs "
          "more time than its instructions say (page faults, the kernel's work), so its ms are "
          f"measured (`true+libssl` − `true`); the extra waiting is wall − CPU; the remaining "
          f"{rest_ms:.2f} ms are split in proportion to the instructions of the other parts:\n")
        w("| part | M Ir | share of Ir | ≈ ms |")
        w("|---|---:|---:|---:|")
        w(f"| dlopen of libssl + libcrypto (mapping, relocating, constructors) | {dl_ir / 1e6:.2f} | "
          f"{100 * dl_ir / tot:.0f}% | {dl_ms:.2f} (measured) |")
        for nm, x in parts:
            w(f"| {nm} | {x / 1e6:.2f} | {100 * x / tot:.0f}% | {rest_ms * x / nondl:.2f} |")
        w(f"| waiting: the extra round trip and the server's handshake work | – | – | {wait_ms:.2f} |")
        w(f"| **total** | **{tot / 1e6:.2f}** | 100% | **{extra:.2f}** |")
        w("")

# ---- LD_DEBUG
def ldstats(v):
    rows = []
    try:
        for l in open(f"{tmp}/ld.{v}"):
            p = l.split()
            if len(p) == 3:
                rows.append([float(x) for x in p])
    except OSError:
        pass
    return rows
w("## 6. Dynamic loader (`LD_DEBUG=statistics`)\n")
w(f"Medians of {meta['ld_runs']} runs each, of the command's own process (not its `true`): "
  "\"startup\" is ld.so's time before main in TSC cycles; relocations are the final counts "
  "at exit, so they include what a dlopen added.\n")
w("| command | startup (cycles) | relocations | from cache |")
w("|---|---:|---:|---:|")
labels = {"true": "true", "true+libssl": "true, LD_PRELOAD=libssl.so.3",
          "plain": "rlock run, plain", "plain+libssl": "rlock run, plain, LD_PRELOAD=libssl.so.3",
          "tls": "rlock run, TLS (dlopen after start)", "cli-plain": "redis-cli ping (links libssl)",
          "cli-tls": "redis-cli --tls ping"}
for v in ("true", "true+libssl", "plain", "plain+libssl", "tls", "cli-plain", "cli-tls"):
    r = ldstats(v)
    if r:
        w(f"| {labels[v]} | {med([x[0] for x in r]):,.0f} | {med([x[1] for x in r]):,.0f} | {med([x[2] for x in r]):,.0f} |")
w("")

# ---- strace
def stracecount(v):
    try:
        lines = open(f"{tmp}/strace.{v}").read().splitlines()
    except OSError:
        return None
    sends = [l for l in lines if l.startswith("sendto(") and "MSG_NOSIGNAL" in l]
    recvs = [l for l in lines if l.startswith("recvfrom(") and re.search(r"\) = [1-9]\d*$", l)]
    sb = sum(int(re.search(r"= (\d+)$", l).group(1)) for l in sends if re.search(r"= (\d+)$", l))
    rb = sum(int(re.search(r"= (\d+)$", l).group(1)) for l in recvs)
    polls = [l for l in lines if re.match(r"poll\(\[\{fd=\d+, events=POLLIN", l)]
    seq = []
    for l in lines:
        m = re.search(r"= (\d+)$", l)
        if l.startswith("sendto(") and "MSG_NOSIGNAL" in l and m:
            seq.append("→" + m.group(1))
        elif l.startswith("recvfrom(") and m and int(m.group(1)) > 0:
            seq.append("←" + m.group(1))
    trips = sum(1 for a, b in zip(seq, seq[1:]) if a[0] == "→" and b[0] == "←")
    total = None
    try:
        for l in open(f"{tmp}/strace-c.{v}"):
            if l.strip().endswith("total"):
                total = int(l.split()[3])
    except (OSError, ValueError, IndexError):
        pass
    return len(sends), sb, len(recvs), rb, len(polls), total, " ".join(seq), trips
sp, stt = stracecount("plain"), stracecount("tls")
if sp and stt:
    w("## 6. Round trips and system calls (strace of one run each)\n")
    w("| | plain | TLS |")
    w("|---|---:|---:|")
    w(f"| writes to the server (send) | {sp[0]} ({sp[1]} bytes) | {stt[0]} ({stt[1]} bytes) |")
    w(f"| reads with data (recv) | {sp[2]} ({sp[3]} bytes) | {stt[2]} ({stt[3]} bytes) |")
    w(f"| waits for the server (poll for POLLIN) | {sp[4]} | {stt[4]} |")
    w(f"| round trips (a send followed by a recv) | {sp[7]} | {stt[7]} |")
    w(f"| bytes sent → and received ←, in order | {sp[6]} | {stt[6]} |")
    w(f"| system calls in all (`strace -f -c`, both processes) | {sp[5]} | {stt[5]} |")
    w("")
    if sp[7] == 2 and stt[7] == 3:
        w("The plain run makes two round trips (acquire, release).  The TLS run adds one: "
          "ClientHello → the server's flight; the client's Finished goes out in the same "
          "write as the acquire (TLS 1.3, 1-RTT).\n")
    if meta.get("conns_renew"):
        w(f"TLS connections, each a full handshake (`strace -f -e trace=connect`): "
          f"`rlock run -t 900ms renew -- sleep 1` (renews its lease) makes {meta['conns_renew']}; "
          f"`rlock run -w 5s held -- true` while another run holds `held` makes {meta['conns_wait']}.\n")

# ---- the reading, put after the summary
rd = ["### Reading\n"]
r1 = wall["plain"] / wall["flock"]
rd.append(f"- A plain `rlock run` costs {r1:.2f}× `flock` in this run "
          f"({'within' if r1 <= 1.25 else 'above'} the 1.25× target); it does not map libssl "
          f"(section 5).")
if "tls" in CG and "plain" in CG:
    t = dict(table["tls"])
    tot = t["total"] - dict(table["plain"])["total"]
    K_DL, K_INIT = 'dlopen("libssl.so.3") (rlock only)', "OPENSSL_init_ssl (of which openssl.cnf ↓)"
    K_TRUST = "loading trust (SSL_CTX_load_verify_* / set_default_verify_paths)"
    K_HS = "handshake (SSL_do_handshake / SSL_connect)"
    p_dl, p_init, p_ctx = (100 * t[k] / tot for k in (K_DL, K_INIT, "SSL_CTX_new"))
    p_trust, p_hs = 100 * t[K_TRUST] / tot, 100 * t[K_HS] / tot
    p_setup = p_dl + p_init + p_ctx + p_trust
    rd.append(f"- Over TLS a run costs {wall['tls'] / wall['plain']:.2f}× a plain one "
              f"(+{wall['tls'] - wall['plain']:.2f} ms), and {wall['tls'] / wall['cli-tls']:.2f}× "
              f"redis-cli's single PING over TLS.  Of its {tot / 1e6:.1f} M extra instructions, "
              f"{p_setup:.0f}% are OpenSSL's set-up before the first byte is sent "
              f"(dlopen {p_dl:.0f}%, OPENSSL_init_ssl {p_init:.0f}%, SSL_CTX_new {p_ctx:.0f}%, "
              f"loading the CA {p_trust:.0f}%), {p_hs:.0f}% the client's side of the handshake, "
              f"and what is left (encrypting two requests, freeing) {100 - p_setup - p_hs:.0f}%.  "
              "The handshake adds one round trip (TLS 1.3).")
    if "tls-bundle" in CG and "tls-sslcertdir" in CG:
        M = lambda v: CG[v][0] / 1e6 if v in CG else float("nan")
        rd.append(f"- Trust: a hashed directory is read lazily: `--cacertdir` with our CA "
                  f"{M('tls-cacertdir'):.2f} M instructions against {M('tls'):.2f} M with `--cacert`; "
                  f"the default system store {M('tls-system'):.2f} M against {M('tls-otherca'):.2f} M "
                  f"for a `--cacert` of another CA (both failing at verification).  A "
                  f"{meta['bundle_certs']}-certificate bundle as "
                  f"`--cacert` costs +{wall['tls-bundle'] - wall['tls']:.1f} ms "
                  f"({CG['tls-bundle'][0] / 1e6:.0f} M instructions against {CG['tls'][0] / 1e6:.0f} M), "
                  f"while `SSL_CERT_DIR` (read lazily, as the default directory) costs "
                  f"{wall['tls-sslcertdir'] - wall['tls']:+.1f} ms "
                  f"({CG['tls-sslcertdir'][0] / 1e6:.0f} M): prefer `--cacertdir` or the "
                  "default store to a bundle.")
rd.append("")
o[reading_at:reading_at] = rd

open(sys.argv[2], "w").write("\n".join(o) + "\n")
EOF

"$PY" "$tmp/report.py" "$tmp" "$OUT" || die "the report failed"
cat "$OUT"
say "wrote $OUT in $(($(date +%s) - T0))s"
