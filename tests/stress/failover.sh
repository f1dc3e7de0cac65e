#!/usr/bin/env bash
# failover.sh - a failover chaos harness for rlock run: double grants
# across Sentinel and Cluster failovers, counted against a fenced resource.
#
# Workers loop `rlock run -t TTL -w WAIT [--wait-replicas N] failover --
# section` through a Sentinel set (a master, two replicas, three sentinels)
# or, with --cluster, a cluster of three masters with a replica each.  Each
# critical section writes through a fenced resource at its start and again
# at its end: a separate redis-server, never disturbed, running the
# fence-set.lua recipe of docs/ha.md (taken from there: accept a write when
# its fence is >= the highest seen, and store it), which also logs every
# attempt in the order it judged them.  Sections log their start, writes
# and end on one clock (bash's EPOCHREALTIME) to a file per worker.
# Meanwhile a chaos loop takes one action every ~--every seconds (+-20%,
# counted from the start of the one before; an action's own steps, below,
# are done before the next is due).  When one is due and the set is not
# healthy (Sentinel: every sentinel out of TILT names the same master and
# sees its two replicas with their link up, and the master has both
# online; Cluster: every node agrees, cluster_state ok), it waits for
# that, polling every 500ms, up to --settle seconds (60), then acts anyway
# (counted as "unhealthy").  So with a --settle above 0 the actions come
# every --every seconds only while the set settles faster than that (with
# Sentinel's default periods it often does not: a replica's link is seen
# up by its INFO, every 10s); --settle 0 acts when due, settled or not, as
# a harness on a timer does.  The summary gives the intervals the actions
# really came at.  The actions:
#   failover  SENTINEL FAILOVER (through a sentinel) / CLUSTER FAILOVER on
#             the replica of the lock slot's master
#   kill      SIGKILL of that master; once another node took over, it is
#             started again, empty, as a replica (Sentinel: --replicaof the
#             new master; Cluster: with its nodes.conf, it rejoins)
#   stop      SIGSTOP of that master for --stop-secs (past down-after /
#             node-timeout), then SIGCONT
#   restart   SIGKILL and at once a new, empty server on the same port
#             (no persistence: the lock and the fence counter are gone,
#             and the sentinels or the cluster still take it for master)
# The lock servers run with --save '' --appendonly no, and Redis's own
# replication defaults (on 7.0: repl-diskless-sync yes, a 5s
# repl-diskless-sync-delay) unless --repl-delay N sets that delay;
# Sentinel with down-after-milliseconds 1000, failover-timeout 4000,
# parallel-syncs 1, and its default periods (hellos every 2s, INFO every
# 10s, TILT for 30s) unless --sentinel-periods fast sets SENTINEL DEBUG
# info, ask and publish periods of 200ms and a tilt period of 3s; Cluster
# with cluster-node-timeout 1000.  All on loopback, on free random ports,
# in a temporary directory; every process is stopped by PID on exit.
#
# What it counts (an interval of a section runs from its start line to its
# end line, or to SIGTERM, or to the end of its rlock run).  "After an
# action": between that chaos action and the next one (or the end of the
# run); before the first action is its own kind, "none".
#   failovers        times the master changed: the master the sentinels
#                    name (SENTINEL get-master-addr-by-name, polled) or the
#                    node a cluster's MOVED names for the lock's slot, plus
#                    restarts without persistence
#   failover time    from the chaos action (a failover: once accepted) to
#                    the new master taking writes: first seen, polled every
#                    50ms, with role:master (in a cluster, and
#                    cluster_state:ok; a restarted master likewise)
#   no holder after  from the new master taking writes to the next section
#     a failover     start (from the end of a section that held the lock
#                    across it and ended normally, when there is one)
#   no holder after  per action, the longest stretch after it with no
#     an action      section running, until the next action (or the end
#                    of the run); median and max per kind and overall
#   resync time      per action, from it to the master then named having
#                    all its replicas (2; in a cluster 1) state=online in
#                    its INFO replication again, after it first had fewer
#                    (or was not named, or did not answer): polled every
#                    50ms; "-" when that did not happen before the next
#                    action.  --wait-replicas can grant only once a
#                    replica is online
#   first replica    the same until one replica is online (what
#     online         --wait-replicas 1 waits for); "-" likewise
#   overlap          two sections whose intervals intersect (two holders at
#                    once): pairs, episodes (a stretch with 2+ holders), and
#                    per pair from the newer section's start to the moment
#                    the older one ended or was stopped; per action kind,
#                    by the newer section's start
#   stale write      a write the resource accepted from a section whose
#     accepted       fence is <= the fence of a different section whose
#                    write it had already accepted (an equal fence is the
#                    fence repeated).  Must be 0.
#   rightful write   a write the resource refused from a section that, when
#     refused        the write came back, was the newest-started section
#                    (no section started after it by then) and whose run
#                    rlock did not report lost (76): only a fence that went
#                    back does that.  A lost one is a grant by a master
#                    frozen past a failover that started late, refused for
#                    the new master's higher fence.  Must be 0.  Both
#                    per action kind, by when the write came back
#   same fence twice two sections given the same RLOCK_FENCE
#   exits            every rlock run's status: 0, 69, 75, 76, others, and
#                    69, 75 and 76 per action kind, by when the run ended;
#                    the overlaps whose older holder's run exited 76; and
#                    each distinct line the runs left on stderr (durations,
#                    tokens, numbers from 100 up as N), with its count
# It prints a table, then a key=value block after "--- summary" (--json
# FILE: the same as JSON, plus the messages), then each failover, overlap
# and message on stderr (not with --quiet).  Exits 0 when no stale write
# was accepted and no rightful write refused (and, with --strict-overlap,
# no two sections overlapped), 1 otherwise, 2 when it could not run.
#
#   tests/stress/failover.sh [--duration SECS] [--workers N] [--ttl DUR]
#	[--wait DUR] [--section-ms MS] [--wait-replicas N] [--cluster]
#	[--seed N] [--chaos failover,kill,stop,restart] [--every SECS]
#	[--stop-secs SECS] [--settle SECS] [--repl-delay default|N]
#	[--sentinel-periods default|fast] [--strict-overlap] [--json FILE]
#	[--keep] [--quiet]
# Defaults: 240s, 4 workers, -t 3s, -w 10s, 200ms sections, no
# --wait-replicas, Sentinel, every chaos action (in a new random order each
# round) every 11s (+-20%), 3s stops, --settle 60, --repl-delay default,
# --sentinel-periods default.  --keep keeps the logs (in /tmp/rlfailover.*).

# shellcheck disable=SC2317 # functions called through variables, traps, poll
set -u

duration=240 workers=4 ttl=3s wait=10s section_ms=200 wait_replicas=0
cluster=0 seed=$RANDOM chaos='' every=11 stop_secs=3 strict=0 json='' keep=0
quiet=0 repl_delay=default periods=default settle=60
usage_error() {
	echo "failover.sh: $*" >&2
	echo "Try 'failover.sh --help'." >&2
	exit 2
}
while (($# > 0)); do
	case $1 in
	--duration | --workers | --ttl | --wait | --section-ms | --wait-replicas | \
		--seed | --chaos | --every | --stop-secs | --json | --repl-delay | \
		--sentinel-periods | --settle)
		(($# >= 2)) || usage_error "$1 needs a value"
		;;
	esac
	case $1 in
	--duration) duration=$2 && shift ;;
	--workers) workers=$2 && shift ;;
	--ttl) ttl=$2 && shift ;;
	--wait) wait=$2 && shift ;;
	--section-ms) section_ms=$2 && shift ;;
	--wait-replicas) wait_replicas=$2 && shift ;;
	--cluster) cluster=1 ;;
	--seed) seed=$2 && shift ;;
	--chaos) chaos=$2 && shift ;;
	--every) every=$2 && shift ;;
	--stop-secs) stop_secs=$2 && shift ;;
	--repl-delay) repl_delay=$2 && shift ;;
	--settle) settle=$2 && shift ;;
	--sentinel-periods) periods=$2 && shift ;;
	--strict-overlap) strict=1 ;;
	--json) json=$2 && shift ;;
	--keep) keep=1 ;;
	--quiet) quiet=1 ;;
	-h | --help)
		sed -n '2,/^$/s/^# \{0,1\}//p' "$0"
		exit 0
		;;
	*) usage_error "unknown option '$1'" ;;
	esac
	shift
done
for v in duration workers section_ms wait_replicas seed every stop_secs settle; do
	[[ ${!v} =~ ^[0-9]+$ ]] || usage_error "--${v//_/-} wants a whole number, not '${!v}'"
done
[[ $repl_delay == default || $repl_delay =~ ^[0-9]+$ ]] ||
	usage_error "--repl-delay wants default or a whole number, not '$repl_delay'"
[[ $periods == default || $periods == fast ]] ||
	usage_error "--sentinel-periods wants default or fast, not '$periods'"
((workers >= 1 && duration >= 10 && every >= 2)) ||
	usage_error "at least 1 worker, 10s and --every 2"
[[ -n $chaos ]] || chaos=failover,kill,stop,restart
IFS=, read -r -a CHAOS <<<"$chaos"
for a in "${CHAOS[@]}"; do
	case $a in failover | kill | stop | restart) ;; *) usage_error "unknown chaos action '$a'" ;; esac
done
[[ -z $json || $json == /* ]] || json=$PWD/$json
RANDOM=$seed

cd "$(dirname "$0")/../.." || exit 2
REPO=$PWD
RLOCK=$REPO/build/rlock
for v in $(compgen -e); do
	case $v in REDIS_* | RLOCK_* | REDISCLI_*) unset "$v" ;; esac
done
export LC_ALL=C
PY=/usr/bin/python3
[[ -x $PY ]] || PY=python3

# Progress goes to the harness's stderr, also from the chaos loop, whose
# own stderr is a file.
exec {ERRFD}>&2
say() { ((quiet)) || echo "failover: $*" >&"$ERRFD"; }
die() {
	echo "failover: $*" >&2
	exit 2
}

[[ -x $RLOCK ]] || make -s rlock >&2 || die "cannot build rlock"
for t in redis-server redis-cli redis-sentinel timeout; do
	command -v "$t" >/dev/null || die "$t is not installed (make deps)"
done
command -v "$PY" >/dev/null || die "python3 is not installed (make deps)"

WORK=$(mktemp -d /tmp/rlfailover.XXXXXX) || die "mktemp failed"
now_us() { printf -v "$1" '%s' "${EPOCHREALTIME/./}"; }

# Naps without a fork: a read with a timeout on a FIFO nobody writes to.
mkfifo "$WORK/nap" || die "mkfifo failed"
exec {NAPFD}<>"$WORK/nap"
nap_ms() {
	local s
	printf -v s '%d.%03d' $(($1 / 1000)) $(($1 % 1000))
	read -r -t "$s" -u "$NAPFD" _
}

# poll SECS COMMAND...: run COMMAND every POLL_MS (200ms) until it
# succeeds (0) or SECS have passed (1).
poll() {
	local end t
	now_us t
	end=$((t + $1 * 1000000))
	shift
	while :; do
		"$@" && return 0
		now_us t
		((t < end)) || return 1
		nap_ms "${POLL_MS:-200}"
	done
}

# gone PID: the process has exited (no longer there, or a zombie).
gone() {
	local stat
	stat=$(cat "/proc/$1/stat" 2>/dev/null) || return 0
	stat=${stat##*) }
	[[ ${stat%% *} == [ZX] ]]
}

# ---- servers ---------------------------------------------------------------

# Every server has a directory $WORK/NAME with its port, args and pid.
port_open() { { exec {_pfd}<>"/dev/tcp/127.0.0.1/$1"; } 2>/dev/null && exec {_pfd}>&-; }

# A free port whose +10000 (a cluster bus port) is free too, both below
# the kernel's ephemeral range and never a default one: 20000-22767.
pick_port() {
	local p
	while :; do
		p=$((20000 + (RANDOM * 32768 + RANDOM) % 2768))
		port_open "$p" || port_open $((p + 10000)) || break
	done
	echo "$p"
}

port_of() { cat "$WORK/$1/port"; }
pid_of() { cat "$WORK/$1/pid" 2>/dev/null; }

# spawn NAME [extra args...]: start redis-server NAME on its port with its
# args (plus these), empty; 0 when it answers PING, 1 when it died or never
# did.  Empty: --save '' writes no snapshot, but a replica keeps the one
# its master sent it in dump.rdb, and would load it.
spawn() {
	local name=$1 dir=$WORK/$1 pid i port
	shift
	local -a args
	mapfile -t args <"$dir/args"
	port=$(port_of "$name")
	rm -f "$dir/dump.rdb" "$dir"/temp-*.rdb
	redis-server --bind 127.0.0.1 --port "$port" --dir "$dir" --daemonize no \
		--logfile "$dir/log" "${args[@]}" "$@" </dev/null >/dev/null 2>&1 &
	pid=$!
	# The chaos loop kills it; the shell need not say so.
	disown "$pid"
	echo "$pid" >"$dir/pid"
	for ((i = 0; i < 250; i++)); do
		gone "$pid" && return 1
		[[ $(timeout 2 redis-cli -p "$port" PING 2>/dev/null) == PONG ]] && return 0
		sleep 0.02
	done
	kill -KILL "$pid" 2>/dev/null
	return 1
}

# start_server NAME [args...]: a new server on a free port; it starts
# again with the same args.
start_server() {
	local name=$1 try
	shift
	mkdir -p "$WORK/$name"
	printf '%s\n' "$@" >"$WORK/$name/args"
	for ((try = 0; try < 20; try++)); do
		pick_port >"$WORK/$name/port"
		spawn "$name" && return 0
	done
	die "cannot start redis-server $name: $(tail -n 3 "$WORK/$name/log" 2>/dev/null)"
}

# start_sentinel NAME MASTER_PORT
start_sentinel() {
	local name=$1 mport=$2 dir=$WORK/$1 try port pid i
	mkdir -p "$dir"
	for ((try = 0; try < 20; try++)); do
		port=$(pick_port)
		echo "$port" >"$dir/port"
		cat >"$dir/sentinel.conf" <<-EOF
			port $port
			bind 127.0.0.1
			dir $dir
			sentinel resolve-hostnames no
			sentinel monitor mymaster 127.0.0.1 $mport 2
			sentinel down-after-milliseconds mymaster 1000
			sentinel failover-timeout mymaster 4000
			sentinel parallel-syncs mymaster 1
		EOF
		redis-sentinel "$dir/sentinel.conf" --daemonize no --logfile "$dir/log" \
			</dev/null >/dev/null 2>&1 &
		pid=$!
		disown "$pid"
		echo "$pid" >"$dir/pid"
		for ((i = 0; i < 250; i++)); do
			gone "$pid" && break
			[[ $(timeout 2 redis-cli -p "$port" PING 2>/dev/null) == PONG ]] || {
				sleep 0.02
				continue
			}
			# --sentinel-periods fast: the default periods (INFO
			# every 10s, hellos every 2s) make failovers slow to
			# settle; a sentinel starved of CPU for 2s goes into
			# TILT for 30s: 3s of it is enough.  Not the ping
			# period: a replica counts for a failover only with an
			# INFO less than 5 of them old, and while the master is
			# down INFO comes every second whatever the period
			# (with 200ms pings: -failover-abort-no-good-slave).
			# The default ones are what users run.
			[[ $periods == fast ]] || return 0
			[[ $(timeout 5 redis-cli -p "$port" SENTINEL DEBUG \
				info-period 200 ask-period 200 publish-period 200 \
				tilt-period 3000 2>&1) == OK ]] ||
				die "SENTINEL DEBUG refused on $name"
			return 0
		done
		kill -KILL "$pid" 2>/dev/null
	done
	die "cannot start redis-sentinel $name: $(tail -n 3 "$dir/log" 2>/dev/null)"
}

cli() {
	local port=$1
	shift
	timeout 5 redis-cli -p "$port" "$@" 2>/dev/null
}

cleanup() {
	local f pid
	trap - EXIT INT TERM HUP
	# Chaos first (it restarts servers), then the workers and what they
	# run, then every server, thawed before it is killed.
	for f in "$WORK"/pids.chaos "$WORK"/pids.monitor "$WORK"/pids.workers; do
		# shellcheck disable=SC2046 # one pid a line
		[[ -f $f ]] && kill -KILL $(cat "$f") 2>/dev/null
	done
	for f in "$WORK"/w*.rlock "$WORK"/w*.sec; do
		[[ -s $f ]] && kill -KILL "$(cat "$f")" 2>/dev/null
	done
	for f in "$WORK"/*/pid; do
		[[ -s $f ]] || continue
		pid=$(cat "$f")
		kill -CONT "$pid" 2>/dev/null
		kill -KILL "$pid" 2>/dev/null
	done
	wait 2>/dev/null
	if ((keep)); then
		echo "failover: files kept in $WORK" >&2
	else
		rm -rf "$WORK"
	fi
}
trap cleanup EXIT
trap 'exit 2' INT TERM HUP

NAME=failover
if ((cluster)); then
	MODE=cluster
	NODES=(C1 C2 C3 C4 C5 C6)
else
	MODE=sentinel
	NODES=(D1 D2 D3)
	SENTINELS=(S1 S2 S3)
fi
DATA_ARGS=(--save '' --appendonly no)
[[ $repl_delay == default ]] || DATA_ARGS+=(--repl-diskless-sync-delay "$repl_delay")

node_of_port() {
	local n
	for n in "${NODES[@]}"; do
		[[ $(port_of "$n") == "$1" ]] && echo "$n" && return 0
	done
	return 1
}

# ---- Sentinel: the master, health, actions ----------------------------------

# The master's port as sentinel S names it.
named_by() {
	local -a a
	mapfile -t a < <(cli "$(port_of "$1")" SENTINEL get-master-addr-by-name mymaster)
	[[ ${a[1]:-} =~ ^[0-9]+$ ]] && echo "${a[1]}"
}

named_master() {
	local s
	for s in "${SENTINELS[@]}"; do
		named_by "$s" && return 0
	done
	return 1
}

# sentinel_healthy: every sentinel names the same master, out of TILT and
# without a failover going on, and sees two replicas of it with their link
# ok; the master says so too.
sentinel_healthy() {
	local m s p n
	m=$(named_by S1) || return 1
	for s in "${SENTINELS[@]}"; do
		p=$(port_of "$s")
		[[ $(named_by "$s") == "$m" ]] || return 1
		[[ $(cli "$p" INFO sentinel) == *sentinel_tilt:0* ]] || return 1
		n=$(cli "$p" SENTINEL master mymaster | awk '
			NR % 2 { k = $0; next }
			k == "flags" && $0 == "master" { ok++ }
			k == "num-other-sentinels" && $0 == 2 { ok++ }
			END { print ok + 0 }')
		[[ $n == 2 ]] || return 1
		n=$(cli "$p" SENTINEL replicas mymaster | awk -v m="$m" '
			NR % 2 { k = $0; next }
			k == "name" { if (good == 3) n++; good = 0 }
			k == "flags" && $0 == "slave" { good++ }
			k == "master-link-status" && $0 == "ok" { good++ }
			k == "master-port" && $0 == m { good++ }
			END { if (good == 3) n++; print n + 0 }')
		[[ $n == 2 ]] || return 1
	done
	n=$(cli "$m" INFO replication | tr -d '\r' | grep -c '^slave[0-9]*:.*state=online')
	[[ $n == 2 ]]
}

master_is_not() {
	local m
	m=$(named_master) && [[ $m != "$1" ]]
}





# ---- the chaos: the same on Sentinel and Cluster --------------------------------

# the_master: the master of the lock's slot (the one the sentinels name, or
# the cluster's owner of the slot); master_moved PORT: another one now.
the_master() { if ((cluster)); then slot_master; else named_master; fi; }
master_moved() {
	if ((cluster)); then slot_master_is_not "$1"; else master_is_not "$1"; fi
}

# respawn_node NAME replica|master: start a killed node again, empty, as a
# replica of the master now, or (no failover came) as the master again.  A
# cluster node takes the place its nodes.conf gives it either way.
respawn_node() {
	if ((cluster)); then
		c_respawn "$1"
	elif [[ $2 == replica ]]; then
		respawn "$1" --replicaof 127.0.0.1 "$(named_master)"
	else
		respawn "$1"
	fi
}

# ask_failover MASTER: one request for a failover away from MASTER (a
# random sentinel's SENTINEL FAILOVER, or CLUSTER FAILOVER on its replica);
# prints the answer.
ask_failover() {
	local r
	if ((cluster)); then
		r=$(replica_of "$1")
		[[ -n $r ]] && cli "$r" CLUSTER FAILOVER
	else
		cli "$(port_of "${SENTINELS[RANDOM % 3]}")" SENTINEL FAILOVER mymaster
	fi
}

a_failover() {
	local m out try
	m=$(the_master) || return 1
	# A sentinel refuses (-NOGOODSLAVE, -INPROG) until it has fresh news
	# of a replica, a replica until it is in sync: ask again, bounded.
	# The action counts from the moment one said yes.
	for ((try = 0; try < 50; try++)); do
		out=$(ask_failover "$m")
		[[ $out == OK ]] && break
		nap_ms 200
	done
	[[ $out == OK ]] || {
		chaos_log REFUSED failover "$out"
		return 0
	}
	chaos_log ACT failover "$m"
	poll 30 master_moved "$m" || chaos_log NOFAILOVER failover "$m"
}

a_kill() {
	local m n pid
	m=$(the_master) || return 1
	n=$(node_of_port "$m") || return 1
	pid=$(pid_of "$n")
	kill -KILL "$pid"
	chaos_log ACT kill "$m"
	poll 5 gone "$pid"
	if poll 30 master_moved "$m"; then
		nap_ms $((1000 + RANDOM % 2000))
		respawn_node "$n" replica && chaos_log RESPAWNED replica "$m"
	else
		chaos_log NOFAILOVER kill "$m"
		respawn_node "$n" master && chaos_log RESTARTED master "$m"
	fi
}

a_stop() {
	local m n pid
	m=$(the_master) || return 1
	n=$(node_of_port "$m") || return 1
	pid=$(pid_of "$n")
	kill -STOP "$pid"
	chaos_log ACT stop "$m"
	nap_ms $((stop_secs * 1000))
	kill -CONT "$pid"
	chaos_log CONT stop "$m"
}

a_restart() {
	local m n pid
	m=$(the_master) || return 1
	n=$(node_of_port "$m") || return 1
	pid=$(pid_of "$n")
	kill -KILL "$pid"
	chaos_log ACT restart "$m"
	poll 5 gone "$pid"
	respawn_node "$n" master && chaos_log RESTARTED master "$m"
}

# respawn NAME [args]: start a killed server again on its port, empty.
respawn() {
	local try
	for ((try = 0; try < 20; try++)); do
		spawn "$@" && return 0
		nap_ms 200
	done
	chaos_log RESPAWNFAILED "$1"
	echo "failover: could not start $1 again: $(tail -n 3 "$WORK/$1/log")" >&2
	return 1
}

# ---- Cluster: the slot's master, health, actions ----------------------------

# The master of the lock's slot as an outside node's MOVED names it.
slot_master() {
	local out
	out=$(cli "$OUTSIDE_PORT" EXISTS "{$NAME}")
	[[ $out == MOVED* ]] || return 1
	echo "${out##*:}"
}

slot_master_is_not() {
	local m
	m=$(slot_master) && [[ $m != "$1" ]]
}

# The port of a replica of the master on port $1 (in that master's view).
replica_of() {
	local id
	id=$(cli "$1" CLUSTER MYID) || return 1
	cli "$1" CLUSTER NODES | awk -v id="$id" '$4 == id && $3 ~ /slave/ {
		sub(/@.*/, "", $2); sub(/.*:/, "", $2); print $2; exit }'
}

# node_view PORT: PORT's view of the cluster, the same on every healthy
# node: "addr role master-addr slots" sorted, or BAD.
node_view() {
	cli "$1" CLUSTER NODES | awk '
	{
		addr = $2; sub(/@.*/, "", addr)
		a[$1] = addr; fl[$1] = $3; m[$1] = $4; lk[$1] = $8
		s = $9; for (i = 10; i <= NF; i++) s = s " " $i
		sl[$1] = s; n++
	}
	END {
		for (id in a) {
			if (fl[id] ~ /fail|handshake|noaddr/ || lk[id] != "connected") { print "BAD"; exit }
			role = (fl[id] ~ /master/) ? "master" : "slave"
			print a[id], role, (m[id] == "-" ? "-" : a[m[id]]), sl[id] | "sort"
		}
		if (n != 6) print "BAD"
	}'
}

cluster_healthy() {
	local n p first='' v
	for n in "${NODES[@]}"; do
		p=$(port_of "$n")
		[[ $(cli "$p" CLUSTER INFO) == *cluster_state:ok* ]] || return 1
		v=$(node_view "$p")
		[[ -n $v && $v != *BAD* ]] || return 1
		[[ -z $first ]] && first=$v
		[[ $v == "$first" ]] || return 1
		v=$(cli "$p" INFO replication)
		[[ $v == *role:master* || $v == *master_link_status:up* ]] || return 1
	done
	# Three masters with slots, each with one replica.
	[[ $(grep -c ' master - [0-9]' <<<"$first") == 3 &&
		$(grep -c ' slave ' <<<"$first") == 3 ]]
}





# c_respawn NAME: start a killed node again, empty, with its nodes.conf:
# it takes its old place (a master whose slots went to its replica turns
# replica).  A nodes.conf the kill left unreadable: a new node, introduced
# and made a replica of the slot's master, the old one forgotten.
c_respawn() {
	local n=$1 p oldid id m try
	for ((try = 0; try < 3; try++)); do
		spawn "$n" && return 0
		nap_ms 200
	done
	chaos_log NODESCONF "$n"
	oldid=$(awk '/myself/ { print $1 }' "$WORK/$n/nodes.conf" 2>/dev/null)
	rm -f "$WORK/$n/nodes.conf"
	respawn "$n" || return 1
	for p in $(all_ports); do
		[[ $p == $(port_of "$n") || -z $oldid ]] || cli "$p" CLUSTER FORGET "$oldid" >/dev/null
	done
	cli "$(port_of "$n")" CLUSTER MEET 127.0.0.1 "$OUTSIDE_PORT" >/dev/null
	m=$(slot_master) || return 1
	id=$(cli "$m" CLUSTER MYID)
	poll 10 c_replicate "$(port_of "$n")" "$id"
}

c_replicate() { [[ $(cli "$1" CLUSTER REPLICATE "$2") == OK ]]; }

all_ports() {
	local n
	for n in "${NODES[@]}"; do port_of "$n"; done
}

# ---- the monitor -------------------------------------------------------------

# resp FD SECS ARG...: send one command on FD, read the reply into RESP
# (arrays flattened, one element a line); 1 on a timeout, a closed
# connection or a reply it cannot read.  No fork: the monitor polls often.
# An inline command (words without spaces), one line: bash flushes its
# output at every newline, and a request in several segments waits for the
# server's delayed ACK (40ms) before its last one goes.
resp() {
	local fd=$1 secs=$2
	shift 2
	printf '%s\r\n' "$*" 1>&"$fd" 2>/dev/null || return 1
	RESP=
	resp_read "$fd" "$secs"
}

resp_read() {
	local fd=$1 secs=$2 line n i acc
	IFS= read -r -t "$secs" -u "$fd" line || return 1
	line=${line%$'\r'}
	case $line in
	[+:-]*) RESP=$line ;;
	'$-1' | '*-1') RESP= ;;
	'$'*)
		n=${line#?}
		IFS= read -r -N $((n + 2)) -t "$secs" -u "$fd" RESP || return 1
		RESP=${RESP:0:n}
		;;
	'*'*)
		n=${line#?}
		acc=
		for ((i = 0; i < n; i++)); do
			resp_read "$fd" "$secs" || return 1
			acc+=$RESP$'\n'
		done
		RESP=$acc
		;;
	*) return 1 ;;
	esac
}

# monitor: every 50ms, each watched data node's role (master, slave, or
# down when it does not answer within 300ms) and, a master's, how many
# replicas it has online, and the master as the sentinels or the cluster
# name it; a line to $WORK/monitor when one changes.  Its own connections,
# reopened when they fail.
monitor() {
	local -A fd=() last=() lastn=()
	local p role t c named='' nfd='' out ok n rest
	trap '' PIPE
	while :; do
		for p in "${WATCH[@]}"; do
			role=down n=-
			if [[ -z ${fd[$p]:-} ]]; then
				{ exec {c}<>"/dev/tcp/127.0.0.1/$p"; } 2>/dev/null && fd[$p]=$c
			fi
			if [[ -n ${fd[$p]:-} ]]; then
				if resp "${fd[$p]}" 0.3 INFO replication; then
					case $RESP in
					*role:master*) role=master ;;
					*role:slave*) role=slave ;;
					*) role=unknown ;;
					esac
					rest=${RESP//state=online/}
					n=$(((${#RESP} - ${#rest}) / 12))
					# A cluster master takes writes only once its
					# cluster is ok (a restarted one waits a
					# while before it says so).
					if ((cluster)) && [[ $role == master ]]; then
						if ! resp "${fd[$p]}" 0.3 CLUSTER INFO; then
							role=down
						elif [[ $RESP != *cluster_state:ok* ]]; then
							role=master-not-ok
						fi
					fi
				fi
				if [[ $role == down ]]; then
					c=${fd[$p]}
					exec {c}>&-
					unset "fd[$p]"
				fi
			fi
			[[ $role == master ]] || n=-
			if [[ $role != "${last[$p]:-}" ]]; then
				now_us t
				echo "R $t $p $role" >>"$WORK/monitor"
				last[$p]=$role
			fi
			if [[ $n != "${lastn[$p]:-}" ]]; then
				now_us t
				echo "O $t $p $n" >>"$WORK/monitor"
				lastn[$p]=$n
			fi
		done
		if [[ -z $nfd ]]; then
			{ exec {nfd}<>"/dev/tcp/127.0.0.1/$NAMER_PORT"; } 2>/dev/null || nfd=
		fi
		out=
		if [[ -n $nfd ]]; then
			ok=1
			if ((cluster)); then
				resp "$nfd" 0.5 EXISTS "{$NAME}" || ok=0
			else
				resp "$nfd" 0.5 SENTINEL get-master-addr-by-name mymaster || ok=0
			fi
			if ((!ok)); then
				exec {nfd}>&-
				nfd=
			elif ((cluster)); then
				[[ $RESP == -MOVED* ]] && out=${RESP##*:}
			else
				out=${RESP#*$'\n'} out=${out%$'\n'}
			fi
		fi
		if [[ -n $out && $out != "$named" ]]; then
			now_us t
			echo "N $t $out" >>"$WORK/monitor"
			named=$out
		fi
		nap_ms 50
	done
}

# ---- set up ------------------------------------------------------------------

# The fenced resource: docs/ha.md's recipe as it is written there (this
# checks the documented recipe), inside a function, and a log of every
# attempt in the order the server judged them.
RECIPE=$(awk '
	/with this script in `fence-set.lua`/ { want = 1; next }
	want && /^~~~lua/ { inside = 1; next }
	inside && /^~~~/ { exit }
	inside { print }' docs/ha.md)
[[ $RECIPE == *"redis.call('SET', KEYS[2], ARGV[1])"* ]] ||
	die "cannot find the fence-set.lua recipe in docs/ha.md"
ORACLE_LUA="local function fence_set(KEYS, ARGV)
$RECIPE
end
local ok = fence_set(KEYS, ARGV)
redis.call('RPUSH', 'log', ARGV[1] .. ' ' .. ARGV[2] .. ' ' .. ok)
return ok"

start_server O --save '' --appendonly no
O_PORT=$(port_of O)
ORACLE_SHA=$(cli "$O_PORT" SCRIPT LOAD "$ORACLE_LUA")
[[ $ORACLE_SHA =~ ^[0-9a-f]{40}$ ]] || die "the fence script did not load: $ORACLE_SHA"

if ((cluster)); then
	addrs=()
	for n in "${NODES[@]}"; do
		start_server "$n" "${DATA_ARGS[@]}" --cluster-enabled yes \
			--cluster-config-file "$WORK/$n/nodes.conf" --cluster-node-timeout 1000
		addrs+=("127.0.0.1:$(port_of "$n")")
	done
	redis-cli --cluster create "${addrs[@]}" --cluster-replicas 1 --cluster-yes \
		>"$WORK/cluster-create.log" 2>&1 ||
		die "redis-cli --cluster create failed: $(tail -n 5 "$WORK/cluster-create.log")"
	POLL_MS=500 poll 60 cluster_healthy || die "the cluster did not settle"
	# The lock slot's shard is what the chaos hits; the workers connect
	# to the other nodes, the monitor asks one of the other masters.
	OUTSIDE_PORT=
	for n in "${NODES[@]}"; do
		p=$(port_of "$n")
		[[ $(cli "$p" EXISTS "{$NAME}") == MOVED* ]] || continue
		[[ $(cli "$p" INFO replication) == *role:master* ]] || continue
		OUTSIDE_PORT=$p
		break
	done
	[[ -n $OUTSIDE_PORT ]] || die "no master outside the lock's slot"
	M0=$(slot_master) || die "cannot find the lock slot's master"
	R0=$(replica_of "$M0")
	[[ -n $R0 ]] || die "the lock slot's master has no replica"
	WATCH=("$M0" "$R0")
	NAMER_PORT=$OUTSIDE_PORT
	URLS=()
	for n in "${NODES[@]}"; do
		p=$(port_of "$n")
		[[ $p == "$M0" || $p == "$R0" ]] || URLS+=("redis://127.0.0.1:$p")
	done
	healthy() { cluster_healthy; }
else
	# Replicas by REPLICAOF, not by their args: a restart is a master's.
	for n in "${NODES[@]}"; do
		start_server "$n" "${DATA_ARGS[@]}"
	done
	for n in D2 D3; do
		[[ $(cli "$(port_of "$n")" REPLICAOF 127.0.0.1 "$(port_of D1)") == OK ]] ||
			die "$n did not take REPLICAOF"
	done
	for s in "${SENTINELS[@]}"; do
		start_sentinel "$s" "$(port_of D1)"
	done
	POLL_MS=500 poll 60 sentinel_healthy || die "the sentinels did not settle"
	WATCH=("$(port_of D1)" "$(port_of D2)" "$(port_of D3)")
	NAMER_PORT=$(port_of S1)
	URLS=("redis-sentinel://127.0.0.1:$(port_of S1),127.0.0.1:$(port_of S2),127.0.0.1:$(port_of S3)#mymaster")
	healthy() { sentinel_healthy; }
fi

# ---- the critical section ----------------------------------------------------

# Run by rlock with RLOCK_FENCE set: log the start, write through the
# fenced resource, wait SECTION_MS, write again, log the end.  A SIGTERM
# (rlock stopping it after a loss) logs when it stopped.  Its wait is a
# read with a timeout on the resource's connection: no fork.
cat >"$WORK/section.sh" <<'EOF'
id=$SECTION_ID log=$SECTION_LOG f=${RLOCK_FENCE:-0}
trap 'echo "T ${EPOCHREALTIME/./} $id" >>"$log"; exit 143' TERM
echo $$ >"$SECTION_PIDFILE"
echo "S ${EPOCHREALTIME/./} $id $f $$ ${RLOCK_TOKEN:-}" >>"$log"
exec 5<>"/dev/tcp/127.0.0.1/$O_PORT" || exit 90
# An inline command, one line: bash flushes at every newline, and a
# request in several segments waits 40ms for the server's delayed ACK.
write() {
	local t0 r
	t0=${EPOCHREALTIME/./}
	printf 'EVALSHA %s 2 data fence %s %s\r\n' "$ORACLE_SHA" "$f" "$id/$1" >&5
	IFS= read -r -t 10 -u 5 r || exit 91
	echo "W $t0 ${EPOCHREALTIME/./} $id $1 ${r%$'\r'}" >>"$log"
}
write s
read -r -t "$SECTION_NAP" -u 5 _
write e
echo "E ${EPOCHREALTIME/./} $id" >>"$log"
EOF
printf -v SECTION_NAP '%d.%03d' $((section_ms / 1000)) $((section_ms % 1000))
export O_PORT ORACLE_SHA SECTION_NAP

# ---- workers -------------------------------------------------------------------

WR=()
((wait_replicas > 0)) && WR=(--wait-replicas "$wait_replicas")

# worker W: loop rlock run until the end; log each run's start, end and
# status (X), and what it said on stderr (M, a line each), to the worker's
# file, which its sections append to as well.
worker() {
	local w=$1 i rc t0 t1 id url=${URLS[$1 % ${#URLS[@]}]} line
	local log=$WORK/w$w.log err=$WORK/w$w.err
	RANDOM=$((seed + w * 7919))
	for ((i = 1; ; i++)); do
		now_us t0
		((t0 < END)) || break
		id=$w.$i
		SECTION_ID=$id SECTION_LOG=$log SECTION_PIDFILE=$WORK/w$w.sec \
			"$RLOCK" -u "$url" run -t "$ttl" -w "$wait" "${WR[@]}" "$NAME" -- \
			bash "$WORK/section.sh" </dev/null >/dev/null 2>"$err" &
		echo "$!" >"$WORK/w$w.rlock"
		wait "$!"
		rc=$?
		now_us t1
		: >"$WORK/w$w.rlock"
		echo "X $t0 $t1 $id $rc" >>"$log"
		while IFS= read -r line; do
			echo "M $id $rc $line" >>"$log"
		done <"$err"
		# Not a hand-off: do not spin on a server that is away.
		case $rc in 0 | 76) ;; *) nap_ms $((10 + RANDOM % 90)) ;; esac
	done
}

# ---- chaos -----------------------------------------------------------------------

chaos_log() {
	local t
	now_us t
	echo "$t $*" >>"$WORK/chaos"
}

chaos_loop() {
	local t next act i j
	local -a order=()
	RANDOM=$((seed + 104729))
	next=$((START + every * 1000000))
	while :; do
		now_us t
		((next < END - 5000000)) || break
		((next > t)) && nap_ms $(((next - t) / 1000))
		# A look at the whole set forks a dozen redis-cli or more.
		if ! POLL_MS=500 poll "$settle" healthy; then
			chaos_log UNHEALTHY
			((settle == 0)) ||
				say "the $MODE set is not healthy after ${settle}s; acting anyway"
		fi
		# Every action once per round, in a new order each round.
		if ((${#order[@]} == 0)); then
			order=("${CHAOS[@]}")
			for ((i = ${#order[@]} - 1; i > 0; i--)); do
				j=$((RANDOM % (i + 1)))
				act=${order[i]} order[i]=${order[j]} order[j]=$act
			done
		fi
		act=${order[0]}
		order=("${order[@]:1}")
		now_us t
		next=$((t + every * (800 + RANDOM % 401) * 1000))
		say "[$(((t - START) / 1000000))s] $act"
		"a_$act" || chaos_log SKIPPED "$act"
	done
	chaos_log END
}

# ---- run ---------------------------------------------------------------------------

say "seed $seed, $MODE, $workers workers, rlock run -t $ttl -w $wait${WR[*]:+ ${WR[*]}}," \
	"${section_ms}ms sections, ${duration}s, chaos ${CHAOS[*]} every ~${every}s"
: >"$WORK/chaos"
: >"$WORK/monitor"
monitor 2>>"$WORK/monitor.shell" &
echo $! >"$WORK/pids.monitor"
# The monitor's first look: the master now.
poll 10 grep -q '^N ' "$WORK/monitor" || die "the monitor sees no master"
now_us START
END=$((START + duration * 1000000))
for ((w = 0; w < workers; w++)); do
	: >"$WORK/w$w.log"
	# Its shell's own complaints ("Terminated") are noise here.
	worker "$w" 2>>"$WORK/w$w.shell" &
	echo $! >>"$WORK/pids.workers"
done
chaos_loop 2>>"$WORK/chaos.shell" &
echo $! >"$WORK/pids.chaos"

# Wait for the end, bounded: a worker's last run may wait for the lock,
# then hold it; a chaos action may be settling.
# dur_s DUR: rlock's DUR in whole seconds, rounded up (roughly: a bound).
dur_s() {
	local n=${1%%[!0-9]*}
	n=${n:-0}
	case $1 in
	*ms) echo $((n / 1000 + 1)) ;;
	*m) echo $((n * 60 + 60)) ;;
	*h) echo $((n * 3600 + 3600)) ;;
	*) echo $((n + 1)) ;;
	esac
}
extra=$(($(dur_s "$wait") + $(dur_s "$ttl") + 90))
alive_of() {
	local pid
	# shellcheck disable=SC2013 # one pid a line
	for pid in $(cat "$@" 2>/dev/null); do
		kill -0 "$pid" 2>/dev/null && return 0
	done
	return 1
}
workers_done() { ! alive_of "$WORK/pids.workers"; }
for ((s = 0; s < (duration + extra) * 5; s++)); do
	alive_of "$WORK/pids.workers" "$WORK/pids.chaos" || break
	nap_ms 200
done
hung=0
if alive_of "$WORK/pids.workers"; then
	for f in "$WORK"/w*.rlock; do
		pid=$(cat "$f" 2>/dev/null)
		[[ -n $pid ]] || continue
		echo "failover: rlock pid $pid hung; system call: $(cat "/proc/$pid/syscall" 2>/dev/null)" >&2
		now_us t
		echo "H $t $pid" >>"$WORK/hung"
		hung=$((hung + 1))
		kill -KILL "$pid" 2>/dev/null
	done
	poll 20 workers_done
fi
# (Quietly: the shell would report the monitor "Killed".)
{
	kill -KILL "$(cat "$WORK/pids.chaos")" "$(cat "$WORK/pids.monitor")"
	wait "$(cat "$WORK/pids.chaos")" "$(cat "$WORK/pids.monitor")"
} 2>/dev/null
rm -f "$WORK/pids.chaos" "$WORK/pids.workers" "$WORK/pids.monitor"
now_us STOP

# ---- analysis ------------------------------------------------------------------

cli "$O_PORT" LRANGE log 0 -1 >"$WORK/oracle" || die "cannot read the resource's log"
"$PY" -I -S - "$WORK" "$MODE" "$START" "$STOP" "$END" "$strict" "$json" "$hung" \
	"$seed $workers $ttl $wait $wait_replicas $section_ms $duration $every $stop_secs $settle $repl_delay $periods ${CHAOS[*]}" \
	<<'PYEOF'
import glob, json, os, re, sys, traceback
from bisect import bisect_left, bisect_right

# A failure of this script is one of the harness (2), not a finding (1).
sys.excepthook = lambda *e: (traceback.print_exception(*e), sys.stderr.flush(), os._exit(2))

work, mode, start, stop, end, strict, jpath, hung, params = sys.argv[1:10]
start, stop, end, strict, hung = int(start), int(stop), int(end), int(strict), int(hung)
(seed, workers, ttl, wait, wreps, section_ms, duration, every, stop_secs,
 settle, repl_delay, periods, *chaos_kinds) = params.split()
KINDS = ("failover", "kill", "stop", "restart")
# "none": before the first chaos action.
AKINDS = KINDS + ("none",)

def median(v):
    v = sorted(v)
    if not v:
        return None
    n = len(v)
    return v[n // 2] if n % 2 else (v[n // 2 - 1] + v[n // 2]) / 2

# ---- the logs
sec = {}      # id -> dict(start, fence, end, how, rc)
runs = {}     # id -> (t0, t1, rc)
writes = {}   # (id, phase) -> (t0, t1, reply)
said = {}     # id -> [stderr lines]
for path in glob.glob(os.path.join(work, "w*.log")):
    for line in open(path):
        f = line.split()
        if not f:
            continue
        k = f[0]
        if k == "S" and len(f) >= 4:
            sec[f[2]] = dict(start=int(f[1]), fence=int(f[3]), end=None, how=None)
        elif k == "W" and len(f) >= 6:
            writes[(f[3], f[4])] = (int(f[1]), int(f[2]), f[5])
        elif k == "E" and f[2] in sec:
            sec[f[2]]["end"], sec[f[2]]["how"] = int(f[1]), "end"
        elif k == "T" and f[2] in sec:
            sec[f[2]]["end"], sec[f[2]]["how"] = int(f[1]), "term"
        elif k == "X" and len(f) >= 5:
            runs[f[3]] = (int(f[1]), int(f[2]), int(f[4]))
        elif k == "M" and len(f) >= 4:
            said.setdefault(f[1], []).append(line.rstrip("\n").split(None, 3)[3])
for i, s in sec.items():
    s["rc"] = runs[i][2] if i in runs else None
    if s["end"] is None:
        # No end line: it ended no later than its rlock run did.
        s["end"], s["how"] = (runs[i][1], "run") if i in runs else (stop, "none")

chaos = []    # (t, word, args)
for line in open(os.path.join(work, "chaos")):
    f = line.split()
    if len(f) >= 2:
        chaos.append((int(f[0]), f[1], f[2:]))
acts = [(t, a[0], a[1] if len(a) > 1 else "") for t, w, a in chaos if w == "ACT"]
act_times = [a[0] for a in acts]

def act_before(t, within=60_000_000):
    i = bisect_right(act_times, t) - 1
    if i >= 0 and t - acts[i][0] <= within:
        return acts[i]
    return None

def kind_at(t):
    """The kind of the last chaos action at or before T ("none": none)."""
    i = bisect_right(act_times, t) - 1
    return acts[i][1] if i >= 0 else "none"

# The stretch after each action: to the next one, or the end of the run
# (no run starts after END).
windows = [(a[0], min(acts[i + 1][0], end) if i + 1 < len(acts) else end, a[1])
           for i, a in enumerate(acts)]

roles, named, online = {}, [], {}
for line in open(os.path.join(work, "monitor")):
    f = line.split()
    if f[0] == "R":
        roles.setdefault(f[2], []).append((int(f[1]), f[3]))
    elif f[0] == "N":
        named.append((int(f[1]), f[2]))
    elif f[0] == "O":
        online.setdefault(f[2], []).append((int(f[1]), -1 if f[3] == "-" else int(f[3])))

# ---- failovers: the named master changed, or a master restarted empty
def takes_writes(port, t):
    """When PORT began the master stint the namer saw at time T."""
    hist = roles.get(port, [])
    before = [i for i, (u, r) in enumerate(hist) if u <= t]
    if before and hist[before[-1]][1] == "master":
        i = before[-1]
        while i > 0 and hist[i - 1][1] == "master":
            i -= 1
        return hist[i][0]
    after = [u for u, r in hist if u > t and r == "master"]
    if after and after[0] - t < 2_000_000:
        return min(t, after[0])
    return t

events = []   # dict(t, kind, port, act_t)
for (t0, p0), (t1, p1) in zip(named, named[1:]):
    tw = takes_writes(p1, t1)
    a = act_before(tw)
    events.append(dict(t=tw, seen=t1, port=p1, kind=a[1] if a else "none",
                       act=a[0] if a else None, what="changed"))
for t, w, a in chaos:
    if w == "RESTARTED":
        x = act_before(t)
        port = a[1] if len(a) > 1 else ""
        # It takes writes when the monitor first sees it master (and, in a
        # cluster, ok) after the kill; else when it answered.
        since = x[0] if x else t
        seen = [u for u, r in roles.get(port, []) if r == "master" and since <= u <= t + 10_000_000]
        tw = seen[0] if seen else t
        events.append(dict(t=tw, seen=t, port=port, kind=x[1] if x else "restart",
                           act=x[0] if x else None, what="restarted"))
events.sort(key=lambda e: e["t"])

# ---- sections: overlaps, episodes, fences
ids = sorted(sec, key=lambda i: sec[i]["start"])
starts = [sec[i]["start"] for i in ids]
pairs = []    # (older, newer, overlap_us)
for a_i, a in enumerate(ids):
    ea = sec[a]["end"]
    for b in ids[a_i + 1:]:
        sb = sec[b]["start"]
        if sb >= ea:
            break
        pairs.append((a, b, min(ea, sec[b]["end"]) - sb))
ev = sorted([(sec[i]["start"], 1) for i in ids] + [(sec[i]["end"], -1) for i in ids],
            key=lambda x: (x[0], x[1]))
level, episodes = 0, []
for t, d in ev:
    level += d
    if d == 1 and level == 2:
        episodes.append(t)
fence_count = {}
for i in ids:
    fence_count[sec[i]["fence"]] = fence_count.get(sec[i]["fence"], 0) + 1
fence_repeats = sum(c - 1 for c in fence_count.values() if c > 1)
fences_repeated = sum(1 for c in fence_count.values() if c > 1)

# ---- the resource's judgements, in its order
best_f, best_id, second_f = -1, None, -1   # the highest accepted fence, and
nw = acc = rej = stale_acc = rightful_rej = 0   # the highest of
stale_list, rightful_list = [], []                        # the others
for line in open(os.path.join(work, "oracle")):
    f = line.split()
    if len(f) != 3:
        continue
    fence, (sid, _, phase), ok = int(f[0]), f[1].partition("/"), f[2] == "1"
    nw += 1
    other = second_f if sid == best_id else best_f
    stale = fence <= other
    if ok:
        acc += 1
        if stale:
            stale_acc += 1
            w = writes.get((sid, phase))
            tw = w[1] if w else sec[sid]["end"] if sid in sec else stop
            stale_list.append((sid, phase, fence, other, tw))
        if sid == best_id:
            best_f = max(best_f, fence)
        elif fence >= best_f:
            second_f, best_f, best_id = best_f, fence, sid
        elif fence > second_f:
            second_f = fence
    else:
        rej += 1
        s = sec.get(sid)
        if s is None:
            continue
        w = writes.get((sid, phase))
        tw = w[1] if w else s["end"]
        # Newest-started when the write came back: no later start by then.
        # A holder rlock reported lost (76) was not the rightful one: a
        # grant by a master frozen past a failover, whose section started
        # late (its replica check waited), is refused for the newer
        # master's higher fence, which is the fence doing its work.
        later = bisect_right(starts, tw) - bisect_right(starts, s["start"])
        if later == 0 and s["rc"] != 76:
            rightful_rej += 1
            rightful_list.append((sid, phase, fence, tw))

# ---- no holder after a failover
def gap_after(t):
    j = bisect_right(starts, t)
    if j >= len(ids):
        return None
    t0 = t
    for i in ids[:j]:
        s = sec[i]
        if s["end"] > t and s["how"] == "end" and s["rc"] == 0:
            t0 = max(t0, s["end"])
    return max(0, starts[j] - t0)

for e in events:
    e["gap"] = gap_after(e["t"])
    e["took"] = e["t"] - e["act"] if e["act"] is not None else None

# ---- exits
rcs = {}
for t0, t1, rc in runs.values():
    rcs[rc] = rcs.get(rc, 0) + 1
older76 = [p for p in pairs if sec[p[0]]["rc"] == 76]
older76_runs = len({p[0] for p in older76})

# ---- per action: the longest stretch with no holder, the replicas' resync
prefmax, m = [], None
for i in ids:
    m = sec[i]["end"] if m is None else max(m, sec[i]["end"])
    prefmax.append(m)

def longest_gap(a, b):
    """The longest stretch of [A, B) with no section running."""
    j = bisect_right(starts, a)
    cov = max(a, prefmax[j - 1]) if j else a
    longest = 0
    for k in range(j, len(ids)):
        if starts[k] >= b:
            break
        longest = max(longest, starts[k] - cov)
        cov = max(cov, sec[ids[k]]["end"])
    return max(longest, b - cov)

# The named master's replicas online, as a series of (t, count): -1 when
# it did not answer or was not a master.
target = 2 if mode == "sentinel" else 1
points = sorted([(t, 0, p, 0) for t, p in named]
                + [(t, 1, p, n) for p, l in online.items() for t, n in l])
cur, count, series = None, {}, []
for t, what, p, n in points:
    if what == 0:
        cur = p
    else:
        count[p] = n
    v = count.get(cur, -1) if cur is not None else -1
    if not series or series[-1][1] != v:
        series.append((t, v))
series_t = [t for t, v in series]

def resync_after(a, b, want=target):
    """From A to the named master having WANT of its replicas (all of
    them by default) online again, after it first had fewer, before B;
    None if not."""
    i = bisect_right(series_t, a) - 1
    disturbed = i < 0 or series[i][1] < want
    for t, v in series[max(i + 1, 0):]:
        if t >= b:
            break
        if v < want:
            disturbed = True
        elif disturbed:
            return t - a
    return None

act_stats = []
for a, b, k in windows:
    act_stats.append(dict(t=a, kind=k, nohold=longest_gap(a, b) if a < b else None,
                          resync=resync_after(a, b), resync1=resync_after(a, b, 1)))
nohold = {k: [x["nohold"] for x in act_stats if x["kind"] == k and x["nohold"] is not None] for k in KINDS}
nohold_all = [x["nohold"] for x in act_stats if x["nohold"] is not None]
resync = {k: [x["resync"] for x in act_stats if x["kind"] == k and x["resync"] is not None] for k in KINDS}
resync_all = [x["resync"] for x in act_stats if x["resync"] is not None]
resync_missing = sum(1 for x in act_stats if x["resync"] is None)
resync1 = {k: [x["resync1"] for x in act_stats if x["kind"] == k and x["resync1"] is not None] for k in KINDS}
resync1_all = [x["resync1"] for x in act_stats if x["resync1"] is not None]
resync1_missing = sum(1 for x in act_stats if x["resync1"] is None)
intervals = [b - a for a, b in zip(act_times, act_times[1:])]

# ---- exits and what the runs said, per kind of the action before their end
exit_kind = {(rc, k): 0 for rc in (69, 75, 76) for k in AKINDS}
for t0, t1, rc in runs.values():
    if rc in (69, 75, 76):
        exit_kind[(rc, kind_at(t1))] += 1
IPV4 = re.compile(r"\b\d{1,3}(?:\.\d{1,3}){3}\b")
def normalise(m):
    """Durations, tokens and numbers from 100 up (ports, pids, fences) as
    N; addresses and small counts ("0 of 1 replicas") kept; the harness's
    directory as $WORK."""
    m = m.replace(work, "$WORK")
    ips = IPV4.findall(m)
    m = IPV4.sub("\0", m)
    m = re.sub(r"[0-9A-Za-z_+/=-]{16,}", lambda x: "N" if re.search(r"\d", x.group()) else x.group(), m)
    m = re.sub(r"\b\d+(?:\.\d+)?(?:ms|us|s|m|h)\b|\b\d{3,}\b", "N", m)
    for ip in ips:
        m = m.replace("\0", ip, 1)
    return m
msg_count = {}
for i, lines in said.items():
    rc = runs[i][2] if i in runs else -1
    for line in lines:
        key = (rc, normalise(line))
        msg_count[key] = msg_count.get(key, 0) + 1
messages = [dict(exit=rc, count=n, message=m) for (rc, m), n in
            sorted(msg_count.items(), key=lambda x: (x[0][0], -x[1], x[0][1]))]
stale_kind = {k: 0 for k in AKINDS}
for x in stale_list:
    stale_kind[kind_at(x[4])] += 1
rightful_kind = {k: 0 for k in AKINDS}
for x in rightful_list:
    rightful_kind[kind_at(x[3])] += 1

def ms(us):
    return None if us is None else round(us / 1000)

def fmt_ms(us):
    return "-" if us is None else ("%.2f s" % (us / 1e6) if us >= 1e6 else "%d ms" % round(us / 1000))

nchaos = {}
for t, k, p in acts:
    nchaos[k] = nchaos.get(k, 0) + 1
by_kind = {}
for ep in episodes:
    by_kind.setdefault(kind_at(ep), []).append(ep)
pair_kind = {}
for p in pairs:
    pair_kind.setdefault(kind_at(sec[p[1]]["start"]), []).append(p[2])
changed = sum(1 for e in events if e["what"] == "changed")
restarted = len(events) - changed
gaps = [e["gap"] for e in events if e["gap"] is not None]
took = [e["took"] for e in events if e["took"] is not None and e["what"] == "changed"]
other_rc = sum(n for rc, n in rcs.items() if rc not in (0, 69, 75, 76))
unhealthy = sum(1 for t, w, a in chaos if w == "UNHEALTHY")

kv = dict(
    mode=mode, wait_replicas=int(wreps), seed=int(seed), workers=int(workers),
    ttl=ttl, wait=wait, section_ms=int(section_ms), duration=int(duration),
    chaos_actions=len(acts),
    **{"chaos_" + k: nchaos.get(k, 0) for k in ("failover", "kill", "stop", "restart")},
    failovers=len(events), master_changes=changed, restarts=restarted,
    failover_ms_median=ms(median(took)), failover_ms_max=ms(max(took) if took else None),
    sections=len(sec), runs=len(runs),
    overlap_pairs=len(pairs), overlap_episodes=len(episodes),
    overlap_ms_median=ms(median([p[2] for p in pairs])),
    overlap_ms_max=ms(max([p[2] for p in pairs]) if pairs else None),
    **{"overlap_after_%s_episodes" % k: len(by_kind.get(k, [])) for k in ("failover", "kill", "stop", "restart", "none")},
    **{"overlap_after_%s_pairs" % k: len(pair_kind.get(k, [])) for k in AKINDS},
    **{"overlap_after_%s_ms_median" % k: ms(median(pair_kind[k])) if k in pair_kind else None for k in ("failover", "kill", "stop", "restart")},
    **{"overlap_after_%s_ms_max" % k: ms(max(pair_kind[k])) if k in pair_kind else None for k in ("failover", "kill", "stop", "restart")},
    overlap_older_76_pairs=len(older76), overlap_older_76_runs=older76_runs,
    writes=nw, writes_accepted=acc, writes_rejected=rej,
    stale_accepted=stale_acc,
    rightful_rejected=rightful_rej,
    fence_repeats=fence_repeats, fences_repeated=fences_repeated,
    exit_0=rcs.get(0, 0), exit_69=rcs.get(69, 0), exit_75=rcs.get(75, 0),
    exit_76=rcs.get(76, 0), exit_other=other_rc,
    gap_ms_median=ms(median(gaps)), gap_ms_max=ms(max(gaps) if gaps else None),
    gap_count=len(gaps), gap_over_1s=sum(1 for g in gaps if g > 1_000_000),
    **{"exit_%d_after_%s" % (rc, k): exit_kind[(rc, k)] for rc in (69, 75, 76) for k in AKINDS},
    nohold_ms_median=ms(median(nohold_all)), nohold_ms_max=ms(max(nohold_all) if nohold_all else None),
    **{"nohold_after_%s_ms_%s" % (k, f): ms(fn(nohold[k]) if nohold[k] else None)
       for k in KINDS for f, fn in (("median", median), ("max", max))},
    resync_ms_median=ms(median(resync_all)), resync_ms_max=ms(max(resync_all) if resync_all else None),
    **{"resync_after_%s_ms_%s" % (k, f): ms(fn(resync[k]) if resync[k] else None)
       for k in KINDS for f, fn in (("median", median), ("max", max))},
    resync_missing=resync_missing,
    resync1_ms_median=ms(median(resync1_all)), resync1_ms_max=ms(max(resync1_all) if resync1_all else None),
    **{"resync1_after_%s_ms_%s" % (k, f): ms(fn(resync1[k]) if resync1[k] else None)
       for k in KINDS for f, fn in (("median", median), ("max", max))},
    resync1_missing=resync1_missing,
    **{"stale_accepted_after_%s" % k: stale_kind[k] for k in AKINDS},
    **{"rightful_rejected_after_%s" % k: rightful_kind[k] for k in AKINDS},
    act_interval_ms_median=ms(median(intervals)), act_interval_ms_max=ms(max(intervals) if intervals else None),
    settle=int(settle), repl_delay=repl_delay, sentinel_periods=periods,
    unhealthy=unhealthy, hung=hung,
)
fail = []
if stale_acc:
    fail.append("%d stale writes accepted" % stale_acc)
if rightful_rej:
    fail.append("%d rightful writes refused" % rightful_rej)
if strict and pairs:
    fail.append("%d overlapping pairs" % len(pairs))
if hung:
    fail.append("%d rlock runs hung" % hung)
if not sec:
    fail.append("no critical section ran")
kv["result"] = "fail" if fail else "ok"

# ---- the report
rows = [
    ("failovers", "%d (%d master changes, %d restarts without persistence)" % (len(events), changed, restarted)),
    ("failover time (action to new master taking writes), median / max",
     "%s / %s" % (fmt_ms(median(took)), fmt_ms(max(took) if took else None))),
    ("sections run", "%d (%d rlock runs)" % (len(sec), len(runs))),
    ("two holders at once", "%d episodes, %d pairs; overlap median %s, max %s"
     % (len(episodes), len(pairs), fmt_ms(median([p[2] for p in pairs])),
        fmt_ms(max([p[2] for p in pairs]) if pairs else None))),
]
for k in ("restart", "failover", "kill", "stop", "none"):
    if k in by_kind or k in pair_kind:
        v = pair_kind.get(k, [])
        rows.append(("  after %s" % ({"restart": "a restart without persistence", "failover": "a forced failover",
                                       "kill": "a SIGKILL of the master", "stop": "a SIGSTOP of the master",
                                       "none": "no chaos action (30s)"}[k]),
                     "%d episodes, %d pairs; overlap median %s, max %s"
                     % (len(by_kind.get(k, [])), len(v), fmt_ms(median(v)), fmt_ms(max(v) if v else None))))
rows += [
    ("rightful writes refused (the fence went back)", str(rightful_rej)),
    ("stale writes accepted", str(stale_acc)),
    ("same fence handed out twice", "%d sections (%d fence values)" % (fence_repeats, fences_repeated)),
    ("runs that exited 76", "%d (%d of them the older holder in %d overlapping pairs)"
     % (rcs.get(76, 0), older76_runs, len(older76))),
    ("exits 69 / 75", "%d / %d" % (rcs.get(69, 0), rcs.get(75, 0))),
    ("exits 0 / other", "%d / %d%s" % (rcs.get(0, 0), other_rc,
     (" (" + ", ".join("%d: %d" % (rc, n) for rc, n in sorted(rcs.items()) if rc not in (0, 69, 75, 76)) + ")") if other_rc else "")),
    ("time with no holder after a failover, median / max",
     "%s / %s (%d failovers, %d over 1s)" % (fmt_ms(median(gaps)), fmt_ms(max(gaps) if gaps else None), len(gaps),
                                              sum(1 for g in gaps if g > 1_000_000))),
    ("writes through the fence", "%d: %d accepted, %d refused (%d of them rightful writes)" % (nw, acc, rej, rightful_rej)),
    ("time with no holder after an action, median / max",
     "%s / %s (%d actions)" % (fmt_ms(median(nohold_all)), fmt_ms(max(nohold_all) if nohold_all else None), len(nohold_all))),
    ("replicas online again after an action, median / max",
     "%s / %s (%d not before the next action)" % (fmt_ms(median(resync_all)), fmt_ms(max(resync_all) if resync_all else None),
                                                   resync_missing)),
    ("a replica online again after an action, median / max",
     "%s / %s (%d not before the next action)" % (fmt_ms(median(resync1_all)), fmt_ms(max(resync1_all) if resync1_all else None),
                                                   resync1_missing)),
    ("chaos actions came every, median / max",
     "%s / %s" % (fmt_ms(median(intervals)), fmt_ms(max(intervals) if intervals else None))),
]
print("failover.sh: %s%s, %s workers, rlock run -t %s -w %s%s, %sms sections, %ss, seed %s"
      % (mode, " (3 masters + 3 replicas)" if mode == "cluster" else " (master, 2 replicas, 3 sentinels)",
         workers, ttl, wait, " --wait-replicas %s" % wreps if wreps != "0" else "", section_ms, duration, seed))
print("repl-diskless-sync-delay %s, sentinel periods %s"
      % ("default" if repl_delay == "default" else repl_delay, periods))
print("chaos every ~%ss: %s" % (every, ", ".join("%s %d" % (k, nchaos.get(k, 0)) for k in chaos_kinds))
      + (", acting on a set not healthy %d times (after %ss)" % (unhealthy, settle) if unhealthy else ""))
w = max(len(r[0]) for r in rows)
for name, val in rows:
    print("%-*s  %s" % (w, name, val))
# Per action kind: the runs that ended, the writes that came back and the
# newer sections of overlaps after it, before the next one.
head = ("after", "actions", "exits 69/75/76", "no holder med/max", "resync med/max",
        "overlaps", "stale", "refused")
table = [head]
for k in AKINDS:
    if k == "none":
        n, nh, rs = "-", "-", "-"
    else:
        n = str(nchaos.get(k, 0))
        nh = "%s / %s" % (fmt_ms(median(nohold[k])), fmt_ms(max(nohold[k]) if nohold[k] else None))
        rs = "%s / %s" % (fmt_ms(median(resync[k])), fmt_ms(max(resync[k]) if resync[k] else None))
    table.append((k if k != "none" else "(before any)", n,
                  "%d / %d / %d" % tuple(exit_kind[(rc, k)] for rc in (69, 75, 76)),
                  nh, rs, str(len(pair_kind.get(k, []))), str(stale_kind[k]), str(rightful_kind[k])))
cw = [max(len(r[c]) for r in table) for c in range(len(head))]
for r in table:
    print("  ".join(v.ljust(cw[c]) if c == 0 else v.rjust(cw[c]) for c, v in enumerate(r)).rstrip())
with open(os.path.join(work, "details"), "w") as out:
    for e in events:
        out.write("failover at +%.3fs (%s, %s, port %s): took %s, no holder %s\n"
                  % ((e["t"] - start) / 1e6, e["what"], e["kind"], e["port"],
                     fmt_ms(e["took"]), fmt_ms(e["gap"])))
    for a, b, d in pairs:
        out.write("overlap %s [fence %d, exit %s, %s] and %s [fence %d, exit %s] at +%.3fs for %s\n"
                  % (a, sec[a]["fence"], sec[a]["rc"], sec[a]["how"], b, sec[b]["fence"], sec[b]["rc"],
                     (sec[b]["start"] - start) / 1e6, fmt_ms(d)))
    for sid, phase, fence, other, tw in stale_list:
        out.write("stale write accepted: %s/%s fence %d (another section's %d accepted before), after %s\n"
                  % (sid, phase, fence, other, kind_at(tw)))
    for sid, phase, fence, tw in rightful_list:
        out.write("rightful write refused: %s/%s fence %d, after %s\n" % (sid, phase, fence, kind_at(tw)))
    for a in act_stats:
        out.write("action at +%.3fs: %s, no holder for %s after it, replicas online again after %s\n"
                  % ((a["t"] - start) / 1e6, a["kind"], fmt_ms(a["nohold"]), fmt_ms(a["resync"])))
    for m in messages:
        out.write("exit %d: %d x %s\n" % (m["exit"], m["count"], m["message"]))
print("--- summary")
for k, v in kv.items():
    print("%s=%s" % (k, "" if v is None else v))
if jpath:
    with open(jpath, "w") as out:
        json.dump(dict(kv, messages=messages), out, indent=1)
        out.write("\n")
for f in fail:
    print("FAIL: " + f)
if not fail:
    print("OK: no stale write accepted, no rightful write refused")
sys.exit(1 if fail else 0)
PYEOF
status=$?
if ((!quiet)) && [[ -s $WORK/details ]]; then
	echo "--- details" >&2
	cat "$WORK/details" >&2
fi
exit "$status"
