#!/usr/bin/env bash
# safety.sh - a randomized safety checker for rlock run.
#
# N workers loop `rlock run` on one lock name with random hold times, while
# a chaos loop stops, continues and kills holders and their commands,
# crashes and restarts the lock server, freezes it (DEBUG SLEEP), kills its
# client connections (CLIENT KILL) and, through a fault proxy, delays,
# blackholes and resets the network.  Every critical section writes to a
# fencing oracle - a separate redis-server whose Lua script accepts a write
# only when its RLOCK_FENCE is the highest it has seen - and logs its start
# and end on one clock (bash's EPOCHREALTIME, the system clock, read by
# every process of this machine alike).
#
# At the end it reports sections run, overlapping sections, writes
# rejected by the fence, locks lost and detected (exit 76), commands
# stopped, and checks that
#   1. every overlap involves a holder that rlock reported lost (exit 76)
#      or whose rlock the chaos loop killed (it could report nothing);
#   2. the oracle rejected every stale write (one with a lower fence than a
#      write it had already accepted), and every write it rejected came
#      from such a holder;
#   3. no fence was handed out twice (the lock server runs with
#      appendonly yes and appendfsync always, so a crash loses no INCR of
#      the fence counter; --no-persist turns that off and reports the
#      repeats and the writes they cost instead of failing on them).
# Exits 0 when all hold, 1 when one does not, 2 when it could not run.
#
#   tests/stress/safety.sh [--duration SECS] [--workers N] [--ttl MS]
#			   [--hold-max MS] [--seed N] [--no-persist]
#			   [--no-chaos] [--keep] [--quiet]

set -u

duration=60 workers=6 ttl=1000 hold_max=0 seed=$RANDOM persist=1 chaos=1
keep=0 quiet=0
while (($# > 0)); do
	case $1 in
	--duration) duration=$2 && shift ;;
	--workers) workers=$2 && shift ;;
	--ttl) ttl=$2 && shift ;;
	--hold-max) hold_max=$2 && shift ;;
	--seed) seed=$2 && shift ;;
	--no-persist) persist=0 ;;
	--no-chaos) chaos=0 ;;
	--keep) keep=1 ;;
	--quiet) quiet=1 ;;
	-h | --help)
		sed -n '2,/^$/s/^# \{0,1\}//p' "$0"
		exit 0
		;;
	*)
		echo "safety.sh: unknown option '$1'" >&2
		exit 2
		;;
	esac
	shift
done
((hold_max > 0)) || hold_max=$((2 * ttl))
RANDOM=$seed

cd "$(dirname "$0")/../.." || exit 2
REPO=$PWD
RLOCK=$REPO/build/rlock
FAULTPROXY=$REPO/build/helpers/faultproxy
for v in $(compgen -e); do
	case $v in REDIS_* | RLOCK_* | REDISCLI_*) unset "$v" ;; esac
done
export LC_ALL=C

say() { ((quiet)) || echo "safety: $*" >&2; }
die() {
	echo "safety: $*" >&2
	exit 2
}

[[ -x $RLOCK && -x $FAULTPROXY ]] || make -s build/rlock build/helpers/faultproxy >&2 ||
	die "cannot build rlock and the fault proxy"
command -v redis-server >/dev/null || die "redis-server is not installed (make deps)"

WORK=$(mktemp -d /tmp/rlsafe.XXXXXX) || die "mktemp failed"
now_us() { printf -v "$1" '%s' "${EPOCHREALTIME/./}"; }

# ---- servers ---------------------------------------------------------------

# start_server NAME [args...]: a redis-server on a free loopback port.
start_server() {
	local name=$1 dir=$WORK/$1 port try pid
	shift
	mkdir -p "$dir"
	printf '%s\n' "$@" >"$dir/args"
	for ((try = 0; try < 20; try++)); do
		port=$((20000 + (RANDOM * 32768 + RANDOM) % 12000))
		echo "$port" >"$dir/port"
		spawn_server "$name" && return 0
	done
	die "cannot start redis-server $name: $(tail -n 5 "$dir/log")"
}

spawn_server() {
	local name=$1 dir=$WORK/$1 pid i
	local -a args
	mapfile -t args <"$dir/args"
	redis-server --bind 127.0.0.1 --port "$(cat "$dir/port")" --dir "$dir" \
		--save '' --daemonize no --logfile "$dir/log" "${args[@]}" \
		</dev/null >/dev/null 2>&1 &
	pid=$!
	# Not our job any more: the chaos loop kills it, and the shell
	# need not say so.
	disown "$pid"
	echo "$pid" >"$dir/pid"
	for ((i = 0; i < 250; i++)); do
		kill -0 "$pid" 2>/dev/null || return 1
		[[ $(redis-cli -p "$(cat "$dir/port")" PING 2>/dev/null) == PONG ]] && return 0
		sleep 0.02
	done
	kill -KILL "$pid" 2>/dev/null
	return 1
}

rc_l() { timeout 10 redis-cli -p "$L_PORT" "$@"; }
rc_o() { timeout 10 redis-cli -p "$O_PORT" "$@"; }

cleanup() {
	local f pid
	# Workers and chaos first, then everything they started, by pid.
	for f in "$WORK"/pids.*; do
		# shellcheck disable=SC2046 # one pid a line
		[[ -f $f ]] && kill -KILL $(cat "$f") 2>/dev/null
	done
	for f in "$WORK"/w*.rlock; do
		[[ -s $f ]] && kill -CONT "$(cut -d' ' -f1 "$f")" 2>/dev/null &&
			kill -KILL "$(cut -d' ' -f1 "$f")" 2>/dev/null
	done
	for f in "$WORK"/sec.*; do
		[[ -s $f ]] && { kill -CONT -- "-$(cat "$f")" 2>/dev/null; kill -KILL -- "-$(cat "$f")" 2>/dev/null; }
	done
	[[ -n ${P_PID:-} ]] && kill -TERM "$P_PID" 2>/dev/null
	for f in "$WORK"/L/pid "$WORK"/O/pid; do
		[[ -f $f ]] && { kill -CONT "$(cat "$f")" 2>/dev/null; kill -KILL "$(cat "$f")" 2>/dev/null; }
	done
	wait 2>/dev/null
	if ((keep)); then
		echo "safety: files kept in $WORK" >&2
	else
		rm -rf "$WORK"
	fi
}
trap cleanup EXIT
trap 'exit 2' INT TERM HUP

if ((persist)); then
	start_server L --appendonly yes --appendfsync always --enable-debug-command local
else
	start_server L --appendonly no --enable-debug-command local
fi
L_PORT=$(cat "$WORK/L/port")
start_server O --appendonly no
O_PORT=$(cat "$WORK/O/port")
"$FAULTPROXY" serve -t "$L_PORT" -s "$WORK/proxy.ctl" -p "$WORK/proxy.port" \
	-l "$WORK/proxy.log" -T $((duration + 120)) </dev/null >/dev/null 2>&1 &
P_PID=$!
for ((i = 0; i < 250; i++)); do
	[[ -s $WORK/proxy.port ]] && break
	sleep 0.02
done
[[ -s $WORK/proxy.port ]] || die "the fault proxy did not start"
P_PORT=$(cat "$WORK/proxy.port")
proxy() { timeout 10 "$FAULTPROXY" ctl "$WORK/proxy.ctl" "$@" >/dev/null; }

# The oracle: accept a write when its fence is above every fence seen, or
# equal to it and from the same section; log every attempt in order.
ORACLE_SHA=$(rc_o SCRIPT LOAD "
local f = tonumber(ARGV[1])
local max = tonumber(redis.call('GET', 'max') or '0')
local who = redis.call('GET', 'who') or ''
local ok = 0
if f > max or (f == max and who == ARGV[2]) then
  redis.call('SET', 'max', ARGV[1])
  redis.call('SET', 'who', ARGV[2])
  ok = 1
end
redis.call('RPUSH', 'log', ARGV[1] .. ' ' .. ARGV[2] .. ' ' .. ok)
return ok
") || die "cannot load the oracle script"
[[ $ORACLE_SHA =~ ^[0-9a-f]{40}$ ]] || die "oracle script: $ORACLE_SHA"

# ---- the critical section --------------------------------------------------

# Run by rlock with RLOCK_FENCE set: log the start, write to the oracle
# every 100ms or so for HOLD_MS, log the end.  Its sleeps are reads with a
# timeout on the oracle connection, so it forks nothing and stops at once
# on a signal.  Its pid is its process group (rlock makes it so).
cat >"$WORK/section.sh" <<'EOF'
id=$SECTION_ID
w=$WORK
echo $$ >"$w/sec.$id"
exec 5<>"/dev/tcp/127.0.0.1/$O_PORT" || exit 90
f=$RLOCK_FENCE
echo "S ${EPOCHREALTIME/./} $id $f" >>"$w/intervals"
n=$((HOLD_MS / 100 + 1))
step=$((HOLD_MS / n))
printf -v nap '%d.%03d' $((step / 1000)) $((step % 1000))
for ((j = 1; j <= n; j++)); do
	printf '*5\r\n$7\r\nEVALSHA\r\n$40\r\n%s\r\n$1\r\n0\r\n$%d\r\n%s\r\n$%d\r\n%s\r\n' \
		"$ORACLE_SHA" ${#f} "$f" ${#id} "$id" >&5
	read -r -t 10 -u 5 reply || exit 91
	((step > 0)) && read -r -t "$nap" -u 5 junk
done
echo "E ${EPOCHREALTIME/./} $id $f" >>"$w/intervals"
EOF
export WORK O_PORT ORACLE_SHA

# ---- workers ---------------------------------------------------------------

now_us START
END=$((START + duration * 1000000))
: >"$WORK/intervals"
: >"$WORK/chaos"

# gone PID: the process has exited (no longer there, or a zombie).
gone() {
	local stat
	stat=$(cat "/proc/$1/stat" 2>/dev/null) || return 0
	stat=${stat##*) }
	[[ ${stat%% *} == [ZX] ]]
}

# worker W: loop rlock run until the end; after each run wait (bounded)
# until the section's process group is gone and log X with rlock's status:
# that time bounds the section's end when it had no chance to log one.
worker() {
	local w=$1 i rc id pg t j hold
	RANDOM=$((seed + w * 7919))
	for ((i = 1; i < 100000; i++)); do
		now_us t
		((t < END)) || break
		id="$w.$i"
		# Mostly short sections (many hand-offs), one in four long
		# enough to need renewals.
		if ((RANDOM % 4 == 0)); then
			hold=$((RANDOM % (hold_max + 1)))
		else
			hold=$((RANDOM % 151))
		fi
		SECTION_ID=$id HOLD_MS=$hold "$RLOCK" -u "redis://127.0.0.1:$P_PORT" \
			--connect-timeout 1s --io-timeout 1s \
			run -t "${ttl}ms" -w 5s stress -- bash "$WORK/section.sh" \
			</dev/null >/dev/null 2>>"$WORK/w$w.err" &
		echo "$! $id" >"$WORK/w$w.rlock"
		wait $!
		rc=$?
		: >"$WORK/w$w.rlock"
		if [[ -s $WORK/sec.$id ]]; then
			pg=$(cat "$WORK/sec.$id")
			# The section forks nothing: its group is its shell,
			# which is done when gone or a zombie (an orphan's
			# zombie may wait a while for its reaper).
			for ((j = 0; j < 1000; j++)); do
				gone "$pg" && break
				sleep 0.01
			done
			rm -f "$WORK/sec.$id"
		fi
		now_us t
		echo "X $t $id $rc" >>"$WORK/intervals"
		case $rc in 0 | 76 | 137 | 143) ;; *) sleep 0.0$((RANDOM % 9 + 1)) ;; esac
	done
}

# ---- chaos -----------------------------------------------------------------

# A random busy worker's rlock pid and section id ("PID ID"), or nothing.
pick_holder() {
	local w f line
	for ((try = 0; try < 5; try++)); do
		w=$((RANDOM % workers))
		f=$WORK/w$w.rlock
		line=$(cat "$f" 2>/dev/null)
		[[ -n $line ]] || continue
		# Only a section that has started holds the lock.
		[[ -s $WORK/sec.${line#* } ]] || continue
		echo "$line"
		return 0
	done
}

is_rlock() { [[ $(readlink "/proc/$1/exe" 2>/dev/null) == "$RLOCK" ]]; }

nap_ms() {
	local ms=$1
	printf -v ms '%d.%03d' $((ms / 1000)) $((ms % 1000))
	sleep "$ms"
}

chaos_log() {
	local t
	now_us t
	echo "$t $*" >>"$WORK/chaos"
}

restart_l() {
	local pid try
	pid=$(cat "$WORK/L/pid")
	kill -KILL "$pid" 2>/dev/null
	for ((try = 0; try < 500; try++)); do
		gone "$pid" && break
		sleep 0.01
	done
	nap_ms $((RANDOM % ttl))
	for ((try = 0; try < 20; try++)); do
		spawn_server L && return 0
		sleep 0.1
	done
	echo "safety: could not restart the lock server" >&2
	return 1
}

chaos_loop() {
	local t line pid id pg d act
	RANDOM=$((seed + 104729))
	for ((k = 0; k < 100000; k++)); do
		now_us t
		((t < END - 1000000)) || break
		nap_ms $((100 + RANDOM % 600))
		act=$((RANDOM % 12))
		d=$((RANDOM % (2 * ttl) + 50))
		case $act in
		0 | 1) # stop rlock alone: renewals stop, its command runs on
			line=$(pick_holder)
			[[ -n $line ]] || continue
			pid=${line%% *} id=${line#* }
			is_rlock "$pid" || continue
			chaos_log "STOP rlock $id ${d}ms"
			kill -STOP "$pid" && nap_ms "$d"
			kill -CONT "$pid"
			;;
		2) # stop rlock and its command together
			line=$(pick_holder)
			[[ -n $line ]] || continue
			pid=${line%% *} id=${line#* }
			pg=$(cat "$WORK/sec.$id" 2>/dev/null)
			is_rlock "$pid" && [[ -n $pg ]] || continue
			chaos_log "STOPALL $id ${d}ms"
			kill -STOP "$pid" -- "-$pg" 2>/dev/null && nap_ms "$d"
			kill -CONT -- "-$pg" 2>/dev/null
			kill -CONT "$pid" 2>/dev/null
			;;
		3) # stop the command alone
			line=$(pick_holder)
			[[ -n $line ]] || continue
			id=${line#* }
			pg=$(cat "$WORK/sec.$id" 2>/dev/null)
			[[ -n $pg ]] || continue
			chaos_log "STOPCMD $id ${d}ms"
			kill -STOP -- "-$pg" 2>/dev/null && nap_ms "$d"
			kill -CONT -- "-$pg" 2>/dev/null
			;;
		4) # kill -9 a holder's rlock
			line=$(pick_holder)
			[[ -n $line ]] || continue
			pid=${line%% *} id=${line#* }
			is_rlock "$pid" || continue
			chaos_log "KILL rlock $id"
			kill -KILL "$pid" 2>/dev/null
			;;
		5) # kill -9 a holder's command
			line=$(pick_holder)
			[[ -n $line ]] || continue
			id=${line#* }
			pg=$(cat "$WORK/sec.$id" 2>/dev/null)
			[[ -n $pg ]] || continue
			# Logged after the kill: nothing of the section runs
			# past this time, which bounds its end.
			kill -KILL -- "-$pg" 2>/dev/null
			chaos_log "KILLCMD $id"
			;;
		6) # crash the lock server and start it again
			chaos_log "RESTART lock server"
			restart_l || return 1
			;;
		7) # freeze the lock server
			chaos_log "DEBUG SLEEP ${d}ms"
			printf -v d '%d.%03d' $((d / 1000)) $((d % 1000))
			rc_l DEBUG SLEEP "$d" >/dev/null 2>&1
			;;
		8) # drop every client connection of the lock server
			chaos_log "CLIENT KILL"
			rc_l CLIENT KILL TYPE normal >/dev/null 2>&1
			;;
		9) # slow network
			chaos_log "DELAY ${d}ms $((d / 6))ms"
			proxy delay both $((d / 6)) && nap_ms "$d"
			proxy normal
			;;
		10) # blackhole
			chaos_log "HOLD ${d}ms"
			proxy hold both && nap_ms "$d"
			proxy normal
			;;
		11) # reset every connection through the proxy
			chaos_log "RESET"
			proxy reset
			;;
		esac
	done
}

say "seed $seed, $workers workers, ttl ${ttl}ms, holds up to ${hold_max}ms," \
	"${duration}s, lock server $( ((persist)) && echo 'appendfsync always' || echo 'without persistence')," \
	"chaos $( ((chaos)) && echo on || echo off)"
for ((w = 0; w < workers; w++)); do
	# Its shell's own complaints ("Killed") are noise here.
	worker "$w" 2>>"$WORK/w$w.shell" &
	echo $! >>"$WORK/pids.workers"
done
if ((chaos)); then
	chaos_loop 2>>"$WORK/chaos.shell" &
	echo $! >"$WORK/pids.chaos"
fi

# Wait for the end, bounded: a worker's last run may wait 5s for the lock
# and then hold it for hold_max plus the kill-after.
limit=$((duration + 5 + hold_max / 1000 + 10))
for ((s = 0; s < limit * 10; s++)); do
	alive=0
	for pid in $(cat "$WORK/pids.workers" "$WORK/pids.chaos" 2>/dev/null); do
		kill -0 "$pid" 2>/dev/null && alive=1
	done
	((alive)) || break
	sleep 0.1
done
if ((alive)); then
	# An rlock that is still running now is stuck: note where (its
	# system call) and kill it, so that the figures still come out.
	for f in "$WORK"/w*.rlock; do
		line=$(cat "$f" 2>/dev/null)
		[[ -n $line ]] || continue
		pid=${line%% *}
		now_us t
		echo "H $t ${line#* } $(cut -d' ' -f1-4 "/proc/$pid/syscall" 2>/dev/null | tr ' ' ,)" >>"$WORK/intervals"
		echo "safety: rlock pid $pid (run ${line#* }) hung; system call: $(cat "/proc/$pid/syscall" 2>/dev/null)" >&2
		kill -KILL "$pid" 2>/dev/null
	done
	for ((s = 0; s < 100; s++)); do
		alive=0
		for pid in $(cat "$WORK/pids.workers" "$WORK/pids.chaos" 2>/dev/null); do
			kill -0 "$pid" 2>/dev/null && alive=1
		done
		((alive)) || break
		sleep 0.1
	done
	if ((alive)); then
		echo "safety: workers did not finish within ${limit}s" >&2
		exit 1
	fi
fi
rm -f "$WORK/pids.workers" "$WORK/pids.chaos"

# ---- analysis --------------------------------------------------------------

rc_o LRANGE log 0 -1 >"$WORK/oracle" || die "cannot read the oracle's log"

awk -v persist="$persist" '
# The keys of a, sorted, in k[1..n] (mawk has no asorti).
function keys(a, k,    n, x, i, j, v) {
	n = 0
	for (x in a) k[++n] = x
	for (i = 2; i <= n; i++) {
		v = k[i]; j = i - 1
		while (j >= 1 && k[j] > v) { k[j + 1] = k[j]; j-- }
		k[j + 1] = v
	}
	return n
}
FILENAME ~ /chaos$/ {
	if ($2 == "KILL" && $3 == "rlock") killed[$4] = 1
	if ($2 == "KILLCMD") cmdkilled[$3] = $1
	nchaos[$2 ($2 == "KILL" || $2 == "STOP" ? " " $3 : "")]++
	next
}
FILENAME ~ /oracle$/ {
	# fence id ok, in the order the oracle saw them
	nw++
	f = $1 + 0; id = $2; ok = $3 + 0
	stale = (f < max || (f == max && id != maxid))
	if (ok) { accepted++ } else { rejected++; rej[id]++ }
	if (stale && ok) bad_accept++
	if (!stale && !ok) bad_reject++
	if (stale) nstale++
	if (!stale) { max = f; maxid = id }
	next
}
$1 == "S" { st[$3] = $2; fence[$3] = $4; ids[++ns] = $3; next }
$1 == "E" { en[$3] = $2; next }
$1 == "H" { hung++; hunglist = hunglist sprintf("  run %s, system call %s\n", $3, $4); next }
$1 == "X" { xt[$3] = $2; rc[$3] = $4; runs++; rcs[$4]++; next }
END {
	for (i = 1; i <= ns; i++) {
		id = ids[i]
		# No end logged: the section ended no later than rlock (and
		# the worker after it) saw it go, or than a kill -9 of it.
		e[id] = (id in en) ? en[id] : ((id in xt) ? xt[id] : 9e18)
		if (!(id in en) && (id in cmdkilled) && cmdkilled[id] < e[id]) e[id] = cmdkilled[id]
		if (fence[id] in seenf) frepeat++
		seenf[fence[id]] = 1
		if (rc[id] == 76) { lost++; if (!(id in en)) stopped++ }
	}
	# Sort sections by start (insertion sort is fine for thousands).
	for (i = 1; i <= ns; i++) ord[i] = ids[i]
	for (i = 2; i <= ns; i++) {
		v = ord[i]; j = i - 1
		while (j >= 1 && st[ord[j]] > st[v]) { ord[j + 1] = ord[j]; j-- }
		ord[j + 1] = v
	}
	for (i = 1; i <= ns; i++) {
		a = ord[i]
		for (j = i + 1; j <= ns; j++) {
			b = ord[j]
			if (st[b] >= e[a]) break
			overlaps++
			if (rc[a] == 76 || rc[b] == 76) { ok76++; continue }
			if ((a in killed) || (b in killed)) { okkill++; continue }
			bad_overlap++
			badlist = badlist sprintf("  %s [fence %s, exit %s] overlaps %s [fence %s, exit %s] by %dus\n",
				a, fence[a], rc[a], b, fence[b], rc[b], e[a] - st[b])
		}
	}
	for (id in rej) {
		if (rc[id] == 76 || (id in killed)) continue
		if (!persist) { fence_cost += rej[id]; continue }
		bad_rej_src++
		badrej = badrej sprintf("  %s [fence %s, exit %s]: %d writes rejected\n", id, fence[id], rc[id], rej[id])
	}
	printf "rlock runs            %d (", runs
	sep = ""
	n = keys(rcs, k)
	for (i = 1; i <= n; i++) { printf "%sexit %s: %d", sep, k[i], rcs[k[i]]; sep = ", " }
	printf ")\n"
	printf "critical sections     %d\n", ns
	printf "overlapping pairs     %d (%d with a holder that got exit 76, %d with a holder whose rlock was killed -9, %d unexplained)\n", overlaps, ok76, okkill, bad_overlap
	printf "oracle writes         %d: %d accepted, %d rejected (stale: %d)\n", nw, accepted, rejected, nstale
	printf "locks lost, detected  %d (exit 76); commands stopped by rlock: %d\n", lost, stopped
	printf "fence repeats         %d\n", frepeat
	printf "chaos                 "
	sep = ""
	split("", k); n = keys(nchaos, k)
	for (i = 1; i <= n; i++) { printf "%s%s %d", sep, k[i], nchaos[k[i]]; sep = ", " }
	printf "\n"
	fail = 0
	if (bad_overlap) { printf "FAIL: overlaps with no holder reported lost:\n%s", badlist; fail = 1 }
	if (bad_accept) { printf "FAIL: the oracle accepted %d stale writes\n", bad_accept; fail = 1 }
	if (bad_reject) { printf "FAIL: the oracle rejected %d writes that were not stale\n", bad_reject; fail = 1 }
	if (bad_rej_src) { printf "FAIL: stale writes from holders rlock did not report lost:\n%s", badrej; fail = 1 }
	if (frepeat && persist) { printf "FAIL: %d fences handed out twice on a server that keeps its data\n", frepeat; fail = 1 }
	if (!persist) printf "note: without persistence the fence counter restarts with the server: %d fences repeated, %d writes of holders in good standing rejected because of it\n", frepeat, fence_cost
	if (hung) { printf "FAIL: %d rlock runs hung and were killed -9 at the end:\n%s", hung, hunglist; fail = 1 }
	if (ns == 0) { printf "FAIL: no critical section ran\n"; fail = 1 }
	if (!fail) printf "OK: every overlap and every stale write belongs to a holder rlock reported lost or that was killed\n"
	exit fail
}' "$WORK/chaos" "$WORK/oracle" "$WORK/intervals"
status=$?
exit "$status"
