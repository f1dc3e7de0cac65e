# test_helper.bash - shared by every bats suite: a private environment for
# each test, private redis-server processes, and helpers to poll, run things
# in the background and clean up after them.
#
# A suite loads it with `load test_helper`.  By default one server, R, is
# started for the whole file and RLOCK_URL points at it; a suite that wants
# something else defines its own setup_file/setup/teardown and calls the
# rl_* functions below from them.  Loading the helper unsets every REDIS_*,
# RLOCK_* and REDISCLI_* variable, in each test too: suite-wide settings go
# in T_* variables (rl_setup turns T_DEFAULT_URL into RLOCK_URL).
#
# Every test runs in $BATS_TEST_TMPDIR with its own RLOCK_PREFIX.
#
# Servers (NAME is a shell-variable-friendly word such as R or REPLICA):
#	start_redis NAME [redis-server args...]	TCP on a free 127.0.0.1 port
#	start_redis_unix NAME [args...]		unix socket in the suite's dir
#	stop_redis NAME / restart_redis NAME	by PID, bounded waits
#	servers_up NAME...			thaw or start again what a
#						test froze or killed
#	disown_servers NAME...			no "Killed" notice for them
#	rcli NAME args...			redis-cli against it
# export NAME_PORT (or NAME_SOCK), NAME_PID, NAME_URL, NAME_DIR.  TLS
# servers (tls_helper.bash) are the same with a "tls" file in their dir.  Servers
# started from setup_file live until teardown_file; servers started inside
# a test are stopped by that test's teardown.  Persistence is off.
#
# Locks (under this test's prefix, on server R unless one is named):
#	key NAME, holder NAME, pttl NAME, meta NAME FIELD, grant_tok NAME,
#	waiters NAME
#	lock_held NAME, lock_free NAME, held_by NAME TOKEN, has_waiters NAME N
# Fences (clock-based, ~16 digits: see the section at the end):
#	server_us [SERVER], assert_fence F [LO [HI]], assert_increasing F...,
#	assert_status_row LINE NAME STATE FENCE, fence_ahead NAME [SERVER]
#
# Processes:
#	bg_start ID COMMAND...	start in the background in its own session with
#				clean signals and no stray descriptors;
#				BG_PID, ID.out/ID.err in $BATS_TEST_TMPDIR
#	bg_wait PID [SECS]	reap it (bounded); BG_STATUS is its status
#	wait_until SECS COMMAND...	poll every 20ms, fail after SECS
#	gate FILE		shell snippet: run until FILE exists (<= 30s)
#	file_has FILE LINE, file_nonempty FILE, lines_at_least FILE N
#	pid_gone, pid_alive, pid_stopped PID; track_pid PID (kill at teardown)
#	rlock_pids		rlock processes with this test's prefix
# Teardown kills everything bg_start started (and whatever it left behind
# in its session), tracked pids, and any process whose environment has
# this test's RLOCK_PREFIX (renewers, orphaned commands).
#
# The lock's history (the stream P{NAME}:log, LOCK HISTORY in the man page):
#	hist_key NAME, hist_len NAME [SERVER] (XLEN),
#	hist_names NAME [SERVER] (its events, oldest first, space-separated),
#	entry_fields (a filter: XRANGE's JSON with packed entries unpacked),
#	last_grant NAME FIELD [SERVER] (of the newest acquired entry),
#	hist_count NAME EVENT [SERVER] (how many entries of EVENT)
#
# Assertions on `run --separate-stderr`: assert_stderr, assert_stderr_line,
# refute_stderr (as assert_output/assert_line/refute_output), and
# assert_usage CMD MESSAGE / assert_try CMD for usage errors; json_check JSON
# EXPR... [-- ARG...] for python expressions over a JSON document.

bats_require_minimum_version 1.5.0

load '/usr/lib/bats/bats-support/load'
load '/usr/lib/bats/bats-assert/load'

TESTS_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
REPO_DIR="$(cd "$TESTS_DIR/.." && pwd)"
# What make builds is under build/ (Makefile): the program and the helper
# programs of tests/helpers/*.c.
export RLOCK="$REPO_DIR/build/rlock"
export HELPERS="$REPO_DIR/build/helpers"
export SIGSTATE="$HELPERS/sigstate"
export SIGCOUNT="$HELPERS/sigcount"
export CLEANEXEC="$HELPERS/cleanexec"

# Hermetic environment: nothing from the caller's shell may steer rlock.
# Suite state lives in T_* variables, which this does not touch.
_rl_scrub_env() {
	local v
	for v in $(compgen -e); do
		case $v in
		REDIS_* | RLOCK_* | REDISCLI_*) unset "$v" ;;
		esac
	done
	unset NO_COLOR
	export LC_ALL=C
	export SHELL=/bin/sh
}
_rl_scrub_env

# Debian's own python3 where there is one: a version manager's shim first
# on PATH can take most of a second to start, for every json_check.
if [[ -x /usr/bin/python3 ]]; then
	python3() { /usr/bin/python3 "$@"; }
fi

# ---- polling --------------------------------------------------------------

# wait_until SECS COMMAND [ARG...]: run COMMAND every 20ms until it succeeds;
# fail the test with a message if it has not within SECS seconds.
wait_until() {
	local secs=$1 end
	shift
	local t=${EPOCHREALTIME/[.,]/}
	end=$((t / 1000 + $(secs_to_ms "$secs")))
	while :; do
		"$@" && return 0
		t=${EPOCHREALTIME/[.,]/}
		((t / 1000 < end)) || break
		sleep 0.02
	done
	echo "wait_until: gave up after ${secs}s: $*" >&2
	return 1
}

# secs_to_ms 1.5 -> 1500
secs_to_ms() {
	local s=$1 int frac
	int=${s%%.*}
	frac=
	[[ $s == *.* ]] && frac=${s#*.}
	frac=${frac}000
	frac=${frac:0:3}
	echo $((10#${int:-0} * 1000 + 10#$frac))
}

# Milliseconds on a monotonic-enough clock (for generous bounds only).
now_ms() {
	local t=${EPOCHREALTIME/[.,]/}
	echo $((t / 1000))
}

# ---- processes ------------------------------------------------------------

# The state of process PID (R, S, T, Z, ...) or nothing if it is gone.
proc_state() {
	local stat
	{ read -r stat <"/proc/$1/stat"; } 2>/dev/null || return 0
	stat=${stat##*) }
	echo "${stat%% *}"
}

# True when PID has exited (gone or a zombie waiting to be reaped).
pid_gone() {
	local s
	s=$(proc_state "$1")
	[[ -z $s || $s == Z || $s == X ]]
}

pid_alive() {
	! pid_gone "$1"
}

# True when PID is stopped (SIGSTOP/SIGTSTP).
pid_stopped() {
	local s
	s=$(proc_state "$1")
	[[ $s == T || $s == t ]]
}

# Every live process whose session id is one of SID...
session_pids() {
	local f stat fields sid
	local -A want=()
	for sid in "$@"; do
		want[$sid]=1
	done
	for f in /proc/[0-9]*/stat; do
		{ read -r stat <"$f"; } 2>/dev/null || continue
		stat=${stat##*) }
		read -r -a fields <<<"$stat"
		# state ppid pgrp session ...
		[[ -n ${want[${fields[3]}]:-} && ${fields[0]} != Z ]] && echo "${f//[!0-9]/}"
	done
	return 0
}

# The pid of PARENT's child (first one), or nothing.
child_of() {
	local parent=$1 f stat fields
	for f in /proc/[0-9]*/stat; do
		{ read -r stat <"$f"; } 2>/dev/null || continue
		stat=${stat##*) }
		read -r -a fields <<<"$stat"
		if [[ ${fields[1]} == "$parent" && ${fields[0]} != Z ]]; then
			echo "${f//[!0-9]/}"
			return 0
		fi
	done
	return 0
}

_rl_bg_list() {
	echo "$BATS_TEST_TMPDIR/.bg-pids"
}

# bg_start ID COMMAND [ARG...]: run COMMAND in the background, in a new
# session, with default signal dispositions, an empty mask, stdin from
# /dev/null and stdout/stderr in $BATS_TEST_TMPDIR/ID.out and ID.err.
# Sets BG_PID to its pid (cleanexec execs, so it is COMMAND's own pid).
bg_start() {
	local id=$1
	shift
	"$CLEANEXEC" -s "$@" <"/dev/null" >"$BATS_TEST_TMPDIR/$id.out" \
		2>"$BATS_TEST_TMPDIR/$id.err" 3>&- &
	BG_PID=$!
	echo "$BG_PID" >>"$(_rl_bg_list)"
	# Wait until cleanexec has made its session (and exec'd), so that
	# teardown and the tests see the final process.
	wait_until 5 _rl_is_session_leader "$BG_PID"
}

_rl_is_session_leader() {
	local stat fields
	pid_gone "$1" && return 0
	{ read -r stat <"/proc/$1/stat"; } 2>/dev/null || return 0
	stat=${stat##*) }
	read -r -a fields <<<"$stat"
	[[ ${fields[3]} == "$1" ]] || return 1
	local comm=
	{ read -r comm <"/proc/$1/comm"; } 2>/dev/null
	[[ $comm != cleanexec ]]
}

# bg_wait PID [SECS]: wait (bounded, default 15s) for a bg_start'ed process
# to exit and reap it; BG_STATUS gets its exit status.
bg_wait() {
	local pid=$1 secs=${2:-15}
	wait_until "$secs" pid_gone "$pid" || return 1
	BG_STATUS=0
	wait "$pid" || BG_STATUS=$?
}

# bg_out ID / bg_err ID: what a background job printed.
bg_out() { cat "$BATS_TEST_TMPDIR/$1.out"; }
bg_err() { cat "$BATS_TEST_TMPDIR/$1.err"; }

# Kill everything in the sessions of the processes bg_start started.
_rl_kill_bg() {
	local list pid pids
	list=$(_rl_bg_list)
	[[ -f $list ]] || return 0
	pids=$(session_pids $(<"$list"))
	if [[ -n $pids ]]; then
		kill -KILL $pids 2>/dev/null
		for pid in $pids; do
			wait_until 5 pid_gone "$pid" || true
		done
	fi
	# Reap our own children quietly (no "Killed" notices from bash).
	for pid in $(<"$list"); do
		{ wait "$pid"; } 2>/dev/null || true
	done
	rm -f "$list"
	return 0
}

# Kill pids written to files by the tests (commands that may have left the
# session), e.g. track_pid "$(cat child.pid)".
track_pid() {
	echo "$1" >>"$BATS_TEST_TMPDIR/.extra-pids"
}

_rl_kill_tracked() {
	local f=$BATS_TEST_TMPDIR/.extra-pids pid
	[[ -f $f ]] || return 0
	while read -r pid; do
		[[ -n $pid ]] || continue
		kill -KILL "$pid" 2>/dev/null || true
		wait_until 5 pid_gone "$pid" || true
		{ wait "$pid"; } 2>/dev/null || true
	done <"$f"
	rm -f "$f"
}

# Pids of live processes started with this test's RLOCK_PREFIX in their
# environment: rlock itself, its commands, renewers it left behind.  One
# grep over /proc, no fork per process.
prefix_pids() {
	local f pid
	[[ -n ${RLOCK_PREFIX:-} ]] || return 0
	for f in $(grep -slzxF "RLOCK_PREFIX=$RLOCK_PREFIX" /proc/[0-9]*/environ 2>/dev/null); do
		pid=${f#/proc/}
		pid=${pid%/environ}
		[[ $pid == "$$" || $pid == "$BASHPID" ]] && continue
		pid_alive "$pid" && echo "$pid"
	done
	return 0
}

# Pids of rlock processes of this test (by environment and executable).
rlock_pids() {
	local pid
	for pid in $(prefix_pids); do
		[[ $(readlink "/proc/$pid/exe" 2>/dev/null) == "$RLOCK" ]] && echo "$pid"
	done
	return 0
}

no_rlock_pids() {
	[[ -z $(rlock_pids) ]]
}

_rl_kill_prefix() {
	local pids pid
	pids=$(prefix_pids)
	[[ -n $pids ]] || return 0
	kill -KILL $pids 2>/dev/null
	for pid in $pids; do
		wait_until 5 pid_gone "$pid" || true
	done
	return 0
}

# json_check JSON PYTHON-EXPRESSION... [-- ARG...]: assert each expression
# over d (the document) and a (the arguments after --, if any).
json_check() {
	local json=$1
	shift
	python3 -c '
import json, sys
d = json.loads(sys.argv[1])
rest = sys.argv[2:]
i = rest.index("--") if "--" in rest else len(rest)
exprs, a = rest[:i], rest[i + 1:]
for expr in exprs:
    if not eval(expr):
        sys.exit("false: %s\nargs: %s\njson: %s" % (expr, a, sys.argv[1]))
' "$json" "$@"
}

# ---- redis servers --------------------------------------------------------

# Where a server's files go: the test's dir inside a test, else the file's.
_rl_server_base() {
	if [[ -n ${BATS_TEST_TMPDIR:-} && -n ${BATS_TEST_NAME:-} ]]; then
		echo "$BATS_TEST_TMPDIR/servers"
	else
		echo "$BATS_FILE_TMPDIR/servers"
	fi
}

# A directory short enough for a unix socket path (108 bytes).
_rl_server_dir() {
	local name=$1 base dir
	base=$(_rl_server_base)
	mkdir -p "$base"
	dir="$base/$name"
	if ((${#dir} > 80)); then
		dir=$(mktemp -d /tmp/rlt.XXXXXX)
		ln -sfn "$dir" "$base/$name"
		echo "$dir" >>"$base/.shortdirs"
	else
		mkdir -p "$dir"
	fi
	echo "$dir"
}

_rl_redis_cli() {
	# _rl_redis_cli DIR args...: redis-cli against the server in DIR.
	local dir=$1
	shift
	local -a conn
	if [[ -f $dir/sock ]]; then
		conn=(-s "$(cat "$dir/sock")")
	else
		conn=(-h 127.0.0.1 -p "$(cat "$dir/port")")
	fi
	if [[ -f $dir/tls ]]; then
		local certs
		certs=$(cat "$dir/tls")
		conn+=(--tls --cacert "$certs/ca.crt" --cert "$certs/client.crt"
			--key "$certs/client.key")
	fi
	if [[ -f $dir/pass ]]; then
		conn+=(-a "$(cat "$dir/pass")")
	fi
	env -u REDISCLI_AUTH timeout 10 redis-cli "${conn[@]}" --no-auth-warning "$@"
}

# True when the server answering in DIR is the process we started.
_rl_server_up() {
	local dir=$1 pid info
	pid=$(cat "$dir/pid")
	pid_gone "$pid" && return 0 # let the caller notice
	info=$(_rl_redis_cli "$dir" INFO server 2>/dev/null) || return 1
	[[ $info == *"process_id:$pid"* ]]
}

# Start the server described by DIR's args on DIR's port; 0 when up, 1 when
# it died (e.g. the port was taken), 2 when it never answered.
_rl_spawn_redis() {
	local dir=$1 pid
	local -a args
	mapfile -t args <"$dir/args"
	local -a where
	if [[ -f $dir/sock ]]; then
		where=(--port 0 --unixsocket "$(cat "$dir/sock")" --unixsocketperm 700)
	elif [[ -f $dir/tls ]]; then
		# The test's own args come after these and override them.
		local certs plain=0
		certs=$(cat "$dir/tls")
		[[ -f $dir/plainport ]] && plain=$(cat "$dir/plainport")
		where=(--bind 127.0.0.1 --port "$plain" --tls-port "$(cat "$dir/port")"
			--tls-cert-file "$certs/server.crt" --tls-key-file "$certs/server.key"
			--tls-ca-cert-file "$certs/ca.crt" --tls-auth-clients optional)
	else
		where=(--bind 127.0.0.1 --port "$(cat "$dir/port")")
	fi
	: >"$dir/log"
	env -u RLOCK_PREFIX redis-server --save '' --appendonly no --dir "$dir" --daemonize no \
		--pidfile "$dir/redis.pid" --logfile "$dir/log" \
		"${where[@]}" "${args[@]}" </dev/null >>"$dir/log" 2>&1 3>&- &
	pid=$!
	echo "$pid" >"$dir/pid"
	wait_until 5 _rl_server_up "$dir" 2>/dev/null || {
		kill -KILL "$pid" 2>/dev/null
		wait "$pid" 2>/dev/null
		return 2
	}
	if pid_gone "$pid"; then
		wait "$pid" 2>/dev/null
		return 1
	fi
	return 0
}

_rl_export_server() {
	local name=$1 dir=$2
	export "${name}_DIR=$dir"
	export "${name}_PID=$(cat "$dir/pid")"
	if [[ -f $dir/sock ]]; then
		export "${name}_SOCK=$(cat "$dir/sock")"
		export "${name}_URL=unix://$(cat "$dir/sock")"
	elif [[ -f $dir/tls ]]; then
		export "${name}_PORT=$(cat "$dir/port")"
		export "${name}_ADDR=127.0.0.1:$(cat "$dir/port")"
		export "${name}_URL=rediss://localhost:$(cat "$dir/port")"
		if [[ -f $dir/plainport ]]; then
			export "${name}_PLAIN_PORT=$(cat "$dir/plainport")"
			export "${name}_PLAIN_URL=redis://127.0.0.1:$(cat "$dir/plainport")"
		fi
	else
		export "${name}_PORT=$(cat "$dir/port")"
		export "${name}_URL=redis://127.0.0.1:$(cat "$dir/port")"
	fi
}

# _rl_save_args DIR ARGS...: keep a server's arguments for restarts, and its
# --requirepass for rcli.
_rl_save_args() {
	local dir=$1 a prev=
	shift
	printf '%s\n' "$@" >"$dir/args"
	[[ $# -gt 0 ]] || : >"$dir/args"
	for a in "$@"; do
		[[ $prev == --requirepass ]] && printf '%s' "$a" >"$dir/pass"
		prev=$a
	done
	return 0
}

# start_redis NAME [redis-server args...]
start_redis() {
	local name=$1 dir
	shift
	dir=$(_rl_server_dir "$name")
	_rl_save_args "$dir" "$@"
	_rl_start_tcp "$name" "$dir"
}

# A port in 20000-31999: below the kernel's ephemeral range, never 6379.
_rl_random_port() {
	echo $((20000 + (RANDOM * 32768 + RANDOM) % 12000))
}

# _rl_start_tcp NAME DIR: start the server DIR describes on free loopback
# ports (a second, plain one when DIR has a "wantplain" file), then export
# its variables.
_rl_start_tcp() {
	local name=$1 dir=$2 try port pp
	rm -f "$dir/plainport"
	for ((try = 0; try < 20; try++)); do
		port=$(_rl_random_port)
		echo "$port" >"$dir/port"
		if [[ -f $dir/wantplain ]]; then
			pp=$(_rl_random_port)
			((pp == port)) && continue
			echo "$pp" >"$dir/plainport"
		fi
		if _rl_spawn_redis "$dir"; then
			_rl_export_server "$name" "$dir"
			return 0
		fi
		[[ $? -eq 2 ]] && break
	done
	echo "start_redis $name: could not start redis-server; log:" >&2
	cat "$dir/log" >&2
	return 1
}

# start_redis_unix NAME [redis-server args...]
start_redis_unix() {
	local name=$1 dir
	shift
	dir=$(_rl_server_dir "$name")
	_rl_save_args "$dir" "$@"
	echo "$dir/redis.sock" >"$dir/sock"
	if ! _rl_spawn_redis "$dir"; then
		echo "start_redis_unix $name: could not start redis-server; log:" >&2
		cat "$dir/log" >&2
		return 1
	fi
	_rl_export_server "$name" "$dir"
}

_rl_dir_of() {
	local v="${1}_DIR"
	if [[ -n ${!v:-} && -d ${!v} ]]; then
		echo "${!v}"
		return 0
	fi
	local base
	for base in "${BATS_TEST_TMPDIR:-/nonexistent}/servers" "$BATS_FILE_TMPDIR/servers"; do
		if [[ -d $base/$1 ]]; then
			(cd "$base/$1" && pwd -P)
			return 0
		fi
	done
	echo "no server named '$1'" >&2
	return 1
}

_rl_stop_dir() {
	local dir=$1 pid
	[[ -f $dir/pid ]] || return 0
	pid=$(cat "$dir/pid")
	if pid_alive "$pid"; then
		kill -CONT "$pid" 2>/dev/null
		kill -TERM "$pid" 2>/dev/null
		if ! wait_until 5 pid_gone "$pid" 2>/dev/null; then
			kill -KILL "$pid" 2>/dev/null
			wait_until 5 pid_gone "$pid" || true
		fi
	fi
	wait "$pid" 2>/dev/null || true
	rm -f "$dir/pid"
	return 0
}

# stop_redis NAME: stop it (TERM, then KILL) and wait until it is gone.
stop_redis() {
	local dir
	dir=$(_rl_dir_of "$1") || return 1
	_rl_stop_dir "$dir"
}

# restart_redis NAME: stop it and start it again on the same port or
# socket with the same arguments (and, persistence being off, no data).
restart_redis() {
	local name=$1 dir try
	dir=$(_rl_dir_of "$name") || return 1
	_rl_stop_dir "$dir"
	for ((try = 0; try < 10; try++)); do
		if _rl_spawn_redis "$dir"; then
			_rl_export_server "$name" "$dir"
			return 0
		fi
	done
	echo "restart_redis $name: could not start redis-server again; log:" >&2
	cat "$dir/log" >&2
	return 1
}

# servers_up NAME...: thaw a server a test froze, and start again (empty)
# one that a test stopped or killed, on its port.
servers_up() {
	local s dir pid
	for s in "$@"; do
		dir="${s}_DIR"
		pid=
		{ read -r pid <"${!dir}/pid"; } 2>/dev/null
		if [[ -n $pid ]] && pid_stopped "$pid"; then
			kill -CONT "$pid"
		fi
		if [[ -z $pid ]] || pid_gone "$pid"; then
			restart_redis "$s" || return 1
		fi
	done
}

# disown_servers NAME...: servers a test will SIGKILL, so that the shell
# that started them prints no "Killed" notice.
disown_servers() {
	local s pid
	for s in "$@"; do
		pid="${s}_PID"
		disown "${!pid}" 2>/dev/null || true
	done
}

# rcli NAME args...: redis-cli against server NAME (its password too).
rcli() {
	local dir
	dir=$(_rl_dir_of "$1") || return 1
	shift
	_rl_redis_cli "$dir" "$@"
}

# refused_words SERVER USER PASSWORD COMMAND...: the words SERVER refuses
# COMMAND with when USER runs it, its error reply as rlock shows it (a
# script's tail, " script: SHA, on @user_script:N.", taken off).  Redis 7.0
# and Valkey word a refusal differently: a test asks the server under test.
refused_words() {
	local server=$1 user=$2 pass=$3
	shift 3
	rcli "$server" --user "$user" --pass "$pass" "$@" 2>&1 |
		sed -e '/^$/d' -e 's/^(error) //' \
			-e 's/ script: [0-9a-f]\{40\}, on @user_script:[0-9]*\.$//'
}

_rl_stop_all_in() {
	local base=$1 d
	[[ -d $base ]] || return 0
	for d in "$base"/*/; do
		[[ -d $d ]] && _rl_stop_dir "$(cd "$d" && pwd -P)"
	done
	if [[ -f $base/.shortdirs ]]; then
		while read -r d; do
			[[ $d == /tmp/rlt.* ]] && rm -rf "$d"
		done <"$base/.shortdirs"
		rm -f "$base/.shortdirs"
	fi
	return 0
}

# ---- lock helpers ---------------------------------------------------------

# key NAME: the redis key of lock NAME under this test's prefix.
key() {
	echo "${RLOCK_PREFIX}{$1}"
}

# holder NAME [SERVER]: the token stored in lock NAME's key (empty if free).
holder() {
	rcli "${2:-R}" GET "$(key "$1")"
}

# pttl NAME [SERVER]
pttl() {
	rcli "${2:-R}" PTTL "$(key "$1")"
}

# True when lock NAME is free / held.
lock_free() {
	[[ $(rcli "${2:-R}" EXISTS "$(key "$1")") == 0 ]]
}

lock_held() {
	[[ $(rcli "${2:-R}" EXISTS "$(key "$1")") == 1 ]]
}

# True when lock NAME's key holds TOKEN.
held_by() {
	[[ $(holder "$1" "${3:-R}") == "$2" ]]
}

# waiters NAME [SERVER]: subscribers of lock NAME's release channel, which
# is how rlock waits (and how status counts waiters).
waiters() {
	local line sub
	line=$(rcli "${2:-R}" ZCARD "$(key "$1"):line")
	sub=$(rcli "${2:-R}" PUBSUB NUMSUB "$(key "$1"):released" | sed -n 2p)
	[[ -n $line && -n $sub ]] && echo $((line + sub))
}

# has_waiters NAME N [SERVER]: at least N processes wait for lock NAME.
has_waiters() {
	local n
	n=$(waiters "$1" "${3:-R}")
	[[ -n $n ]] && ((n >= $2))
}

# owner_field FIELD VALUE: one field of an exclusive holder's record (the
# string at P{NAME}:owner, "fence\nsince\nhold_until\npid\nhost\nuser\n
# note\ncommand", the command last and free to hold newlines).
owner_field() {
	local -a f
	local i
	case $1 in
	fence) i=0 ;; since) i=1 ;; hold_until) i=2 ;; pid) i=3 ;;
	host) i=4 ;; user) i=5 ;; note) i=6 ;; command) i=7 ;;
	*) echo "owner_field: no field '$1'" >&2; return 1 ;;
	esac
	mapfile -t f <<<"$2"
	if ((i == 7)); then
		(IFS=$'\n'; printf '%s\n' "${f[*]:7}")
	else
		printf '%s\n' "${f[i]-}"
	fi
}

# grant_meta RECORD: the record of a lock's last exclusive grant
# (P{N}:grant, "2\nID\nFENCE\nHOLD\nKIND\nWAITED\nTOKEN8\nPID\nHOST\n
# USER\nNOTE\nCOMMAND") in the layout owner_field reads: the fence (the
# entry id's, (MS + 1) * 1000 + SEQ, unless the record gives one), since
# (the id's MS), hold_until, pid, host, user, note and command.
grant_meta() {
	local -a f
	local fence
	mapfile -t f <<<"$1"
	[[ ${f[0]-} == 2 ]] || return 0
	fence=${f[2]}
	if [[ -z $fence && ${f[1]} =~ ^([0-9]{13})-([0-9]{1,3})$ ]]; then
		fence=$(((BASH_REMATCH[1] + 1) * 1000 + BASH_REMATCH[2]))
	fi
	printf '%s\n' "$fence" "${f[1]%%-*}" "${f[3]}" "${f[7]}" "${f[8]}" \
		"${f[9]}" "${f[10]}"
	(IFS=$'\n'; printf '%s\n' "${f[*]:11}")
}

# grant_record NAME [SERVER]: the record of lock NAME's last exclusive grant,
# in P{N}:grant's layout: P{N}:grant itself, or the newest exclusive grant
# entry of the history ("a1", kind x, or an "acquired" event of several
# masters' history) when that is newer (the shortest path writes no
# record: its entry is the record; the record goes with the lock).
grant_record() {
	local srv=${2:-R}
	rcli "$srv" --json XREVRANGE "$(key "$1"):log" + - COUNT 200 |
		grant_record_pick "$(rcli "$srv" GET "$(key "$1"):grant")"
}

# grant_record_pick REC: grant_record's choice, between REC (P{N}:grant's
# value) and the newest exclusive grant in `redis-cli --json XREVRANGE
# P{N}:log + - COUNT 200` on stdin (for servers that rcli does not name).
grant_record_pick() {
	python3 -c '
import json, sys
rec = sys.argv[1]
have = rec.split("\n")[1] if rec.startswith("2\n") else ""
def idkey(i):
    m, _, q = i.partition("-")
    return (int(m), int(q or 0)) if m.isdigit() and (q or "0").isdigit() else (0, 0)
try:
    entries = json.load(sys.stdin) or []
except ValueError:
    entries = []  # no stream there (a key of another type: an error)
for e in entries:
    f = e[1]
    if f and f[0] == "a1" and f[1].split("\n")[0] == "x":
        fence = f[3] if len(f) > 3 and f[2] == "fence" else ""
        if idkey(e[0]) > idkey(have):
            rec = "2\n%s\n%s\n0\n%s" % (e[0], fence, f[1])
        break
    d = dict(zip(f[0::2], f[1::2])) if f else {}
    if d.get("event") == "acquired" and d.get("kind") == "x":
        if idkey(e[0]) > idkey(have):
            rec = "2\n%s\n%s\n0\n%s" % (e[0], d.get("fence", ""), "\n".join(
                d.get(k, "") for k in ("kind", "waited", "token", "pid", "host",
                                       "user", "note", "command")))
        break
sys.stdout.write(rec)
' "$1"
}

# meta NAME FIELD [SERVER]: a field of lock NAME's exclusive holder (of
# its last exclusive grant: its record, which goes with the lock, or its
# entry in the history, which stays).
meta() {
	owner_field "$2" "$(grant_meta "$(grant_record "$1" "${3:-R}")")"
}

# grant_tok NAME [SERVER]: the TOKEN8 of lock NAME's last exclusive grant
# (its record, grant_record): the holder's while the lock key's token
# starts with it.
grant_tok() {
	grant_record "$1" "${2:-R}" | sed -n 7p
}

# baton_grant SERVER NAME RLOCK_OPTION...: a run waiting in line for lock
# NAME (on SERVER, through the options; its command writes its fence to
# baton.fence) is stopped as the holder releases, so that only the release
# can grant it the lock: its pid in the holder's record, a PTTL within the
# short first lease of a 30s TTL (1.5s + 3.002s), its place and what it
# left for the release gone.  Sets BATON_PID and BATON_FENCE.
baton_grant() {
	local srv=$1 name=$2 t m p
	shift 2
	t=$("$RLOCK" "$@" acquire -t 30s "$name") || return 1
	bg_start baton "$RLOCK" "$@" run -t 30s -w 60s "$name" -- \
		sh -c 'echo "$RLOCK_FENCE" >baton.fence'
	BATON_PID=$BG_PID
	wait_until 10 line_is "$name" 1 "$srv"
	m=$(line_members "$name" "$srv")
	kill -STOP "$BATON_PID"
	wait_until 5 pid_stopped "$BATON_PID"
	"$RLOCK" "$@" release "$name" "$t"
	assert_equal "$(meta "$name" pid "$srv")" "$BATON_PID"
	p=$(pttl "$name" "$srv")
	((p > 0 && p <= 4502)) || fail "the first lease: pttl $p"
	line_is "$name" 0 "$srv"
	assert_equal "$(rcli "$srv" HEXISTS "$(key "$name"):line:who" "^$m")" 0
	BATON_FENCE=$(meta "$name" fence "$srv")
}

# baton_handoff SERVER NAME RLOCK_OPTION...: baton_grant, then the run,
# continued, runs its command under that grant: its fence, or a higher one
# when the checks above took it past 0.5s (a loaded machine) and it asked
# again.
baton_handoff() {
	local f
	baton_grant "$@"
	kill -CONT "$BATON_PID"
	bg_wait "$BATON_PID" 10
	assert_equal "$BG_STATUS" 0
	f=$(cat baton.fence)
	((f >= BATON_FENCE)) || fail "fence $f below the grant's $BATON_FENCE"
	# The record of the last grant, which stays after the release, has it.
	assert_equal "$(meta "$2" fence "$1")" "$f"
	lock_free "$2" "$1"
}

# start_strict_renewer NAME URL: a bash script in strict mode (set -eEu and
# an ERR trap, where bash runs $(...) in a forked subshell) that takes lock
# NAME with token=$(rlock acquire --renew --on-lost term -t 1s NAME) on URL
# (RLOCK_URL), traps TERM ("term" into got, exit 3), and waits on the file
# go; started with bg_start.  Sets STRICT_TOKEN, and checks that the pid
# the script wrote is BG_PID.
start_strict_renewer() {
	cat >strict.sh <<EOF
#!/bin/bash
set -eEu
trap 'echo err >>errs' ERR
token=\$("$RLOCK" acquire --renew --on-lost term -t 1s $1)
trap 'echo term >got; exit 3' TERM
echo \$\$ >pid
echo "\$token" >tok
$(gate "$BATS_TEST_TMPDIR/go")
EOF
	RLOCK_URL=$2 bg_start strict bash strict.sh
	wait_until 10 file_nonempty tok
	STRICT_TOKEN=$(<tok)
	assert_equal "$(<pid)" "$BG_PID"
}

# gate FILE: a shell snippet for commands that should run until FILE exists
# (bounded at 30s so that nothing outlives a broken test).
gate() {
	echo "i=0; while [ ! -e '$1' ] && [ \$i -lt 1500 ]; do sleep 0.02; i=\$((i+1)); done"
}

# file_has FILE LINE: FILE exists and has LINE as a whole line.
file_has() {
	[[ -f $1 ]] && grep -qxF -- "$2" "$1"
}

# file_nonempty FILE
file_nonempty() {
	[[ -s $1 ]]
}

# lines_at_least FILE N: FILE exists and has N lines or more.
lines_at_least() {
	[[ -f $1 ]] && (($(wc -l <"$1") >= $2))
}

# ---- the lock's history -----------------------------------------------------
# What rlock recorded, read with redis-cli, not through rlock (log.bats has
# the field-by-field helpers).

# hist_key NAME: the key of lock NAME's history.
hist_key() {
	echo "$(key "$1"):log"
}

# hist_len NAME [SERVER]: entries in lock NAME's history (0: none).
hist_len() {
	rcli "${2:-R}" XLEN "$(hist_key "$1")"
}

# hist_names NAME [SERVER]: the event of each entry, oldest first.
hist_names() {
	rcli "${2:-R}" --json XRANGE "$(hist_key "$1")" - + | entry_fields | python3 -c '
import json, sys
print(" ".join(dict(zip(kv[0::2], kv[1::2]))["event"] for _, kv in json.load(sys.stdin) or []))'
}

# last_grant NAME FIELD [SERVER]: FIELD of the newest grant (exclusive,
# shared or semaphore: an acquired event) in lock NAME's history, unpacked
# (entry_fields); empty when there is none.
last_grant() {
	rcli "${3:-R}" --json XRANGE "$(hist_key "$1")" - + | entry_fields | python3 -c '
import json, sys
g = [dict(zip(kv[0::2], kv[1::2])) for _, kv in json.load(sys.stdin) or []]
g = [e.get(sys.argv[1], "") for e in g if e.get("event") == "acquired"]
print(g[-1] if g else "")' "$2"
}

# hist_count NAME EVENT [SERVER]: entries of EVENT in lock NAME's history.
hist_count() {
	local n=0 e
	for e in $(hist_names "$1" "${3:-R}"); do
		[[ $e == "$2" ]] && n=$((n + 1))
	done
	echo "$n"
}

# entry_fields: a filter from `redis-cli --json XRANGE ...` (a list of
# [ID, [FIELD, VALUE, ...]]) to the same list with each packed entry
# (lib/scripts/entry.lua) in the layout of the others, which it stands
# for: a grant, one field "a1" with "KIND\nWAITED\nTOKEN8\nPID\nHOST\n
# USER\nNOTE\nCOMMAND", becomes event acquired, host, user, pid, kind,
# fence (the id's, (MS + 1) * 1000 + SEQ, unless the entry has a "fence"
# field), token, waited, command and note; a release, one field "r1" with
# "TOKEN8\nEXIT\nSIGNAL", becomes event released, token, exit and signal.
# A packed value of the wrong shape fails (status 1).  Other entries, and
# other fields of a packed one, are passed as they are.
entry_fields() {
	python3 -c "$_RL_UNPACK_PY"'
print(json.dumps([[eid, unpack(eid, kv)] for eid, kv in json.load(sys.stdin) or []]))'
}

_RL_UNPACK_PY='
import json, sys
def unpack(eid, kv):
    fv = list(zip(kv[0::2], kv[1::2]))
    names = [f for f, _ in fv]
    out = []
    for f, v in fv:
        if f == "a1":
            p = v.split("\n", 7)
            if len(p) != 8:
                sys.exit("a packed grant of %d fields: %r" % (len(p), v))
            kind, waited, token, pid, host, user, note, command = p
            if "fence" in names:
                fence = dict(fv)["fence"]
            else:
                ms, seq = eid.split("-")
                fence = str((int(ms) + 1) * 1000 + int(seq))
            out += ["event", "acquired", "host", host, "user", user, "pid", pid,
                    "kind", kind, "fence", fence, "token", token, "waited", waited,
                    "command", command, "note", note]
        elif f == "r1":
            p = v.split("\n")
            if len(p) != 3:
                sys.exit("a packed release of %d fields: %r" % (len(p), v))
            out += ["event", "released", "token", p[0], "exit", p[1], "signal", p[2]]
        elif f == "fence" and "a1" in names:
            pass
        else:
            out += [f, v]
    return out
'

# ---- assertions on $stderr (run --separate-stderr) ------------------------

assert_stderr() {
	local output=$stderr
	local -a lines=("${stderr_lines[@]}")
	assert_output "$@"
}

assert_stderr_line() {
	local output=$stderr
	local -a lines=("${stderr_lines[@]}")
	assert_line "$@"
}

refute_stderr() {
	local output=$stderr
	local -a lines=("${stderr_lines[@]}")
	refute_output "$@"
}

# assert_usage CMD MESSAGE: after `run -64 --separate-stderr`, stderr is
# exactly MESSAGE and the "Try 'rlock CMD --help'." line (CMD empty for the
# top level).
assert_usage() {
	local cmd=$1 msg=$2 try
	if [[ -n $cmd ]]; then
		try="Try 'rlock $cmd --help'."
	else
		try="Try 'rlock --help'."
	fi
	assert_stderr "$msg"$'\n'"$try"
}

# assert_try CMD: the usage error ends with the Try line, whatever it said.
assert_try() {
	local cmd=$1 try
	if [[ -n $cmd ]]; then
		try="Try 'rlock $cmd --help'."
	else
		try="Try 'rlock --help'."
	fi
	assert_equal "${#stderr_lines[@]}" 2
	assert_regex "${stderr_lines[0]}" '^rlock: '
	assert_equal "${stderr_lines[1]}" "$try"
}

# ---- default setup/teardown ---------------------------------------------

# Suites call these from their own setup_file/setup/teardown/teardown_file
# or use the defaults below.
rl_setup_file() {
	start_redis R
	export T_DEFAULT_URL=$R_URL
}

rl_teardown_file() {
	_rl_stop_all_in "$BATS_FILE_TMPDIR/servers"
}

rl_setup() {
	[[ -x $RLOCK ]] || {
		echo "no rlock binary at $RLOCK (run make)" >&2
		return 1
	}
	export RLOCK_PREFIX="t${BATS_TEST_NUMBER}.$$.$RANDOM:"
	if [[ -n ${T_DEFAULT_URL:-} ]]; then
		export RLOCK_URL=$T_DEFAULT_URL
	fi
	cd "$BATS_TEST_TMPDIR" || return 1
}

rl_teardown() {
	# After a failure, show what the background jobs said.
	if [[ -z ${BATS_TEST_COMPLETED:-} ]]; then
		local f
		for f in "$BATS_TEST_TMPDIR"/*.err; do
			[[ -s $f ]] || continue
			echo "--- ${f##*/}:"
			head -n 20 "$f"
		done >&2
	fi
	_rl_kill_bg
	_rl_kill_tracked
	_rl_kill_prefix
	_rl_stop_all_in "$BATS_TEST_TMPDIR/servers"
}

setup_file() { rl_setup_file; }
teardown_file() { rl_teardown_file; }
setup() { rl_setup; }
teardown() { rl_teardown; }

# ---- the wait line, shared locks and semaphores ---------------------------
# For fifo.bats, shared.bats and semaphore.bats (keys: docs/design.md#the-keys).
#	line_len NAME [SERVER]		places taken in NAME's wait line (ZCARD)
#	line_is NAME N [SERVER]		exactly N places taken
#	line_members NAME [SERVER]	their "KIND:ID", first in line first
#	nholders NAME [SERVER]		shared or semaphore holders (ZCARD)
#	holders_is NAME N [SERVER]	exactly N of them
#	server_ms [SERVER]		the server's clock in ms (TIME)
#	server_us [SERVER]		the server's clock in µs (TIME)
#	evalsha_calls [SERVER]		EVALSHA calls so far (INFO commandstats)

line_len() {
	rcli "${2:-R}" ZCARD "$(key "$1"):line"
}

line_is() {
	[[ $(line_len "$1" "${3:-R}") == "$2" ]]
}

line_members() {
	rcli "${2:-R}" ZRANGE "$(key "$1"):line" 0 -1
}

nholders() {
	rcli "${2:-R}" ZCARD "$(key "$1"):holders"
}

holders_is() {
	[[ $(nholders "$1" "${3:-R}") == "$2" ]]
}

server_ms() {
	local t
	t=$(rcli "${1:-R}" TIME | tr '\n' ' ')
	read -r -a t <<<"$t"
	echo $((t[0] * 1000 + 10#${t[1]} / 1000))
}

server_us() {
	rcli "${1:-R}" TIME | time_us
}

evalsha_calls() {
	local n
	n=$(rcli "${1:-R}" INFO commandstats | tr -d '\r' |
		sed -n 's/^cmdstat_evalsha:calls=\([0-9]*\),.*/\1/p')
	echo "${n:-0}"
}

# ---- fences ----------------------------------------------------------------
# A grant's fence comes from the id of its history entry, "MS-SEQ" in
# the stream P{NAME}:log: (MS + 1) * 1000 + SEQ (lib/scripts/entry.lua),
# about the server's clock in µs; the :fence counter is only a floor for a
# new stream and the fallback when the stream is refused.  About 16
# digits, strictly increasing per name, below 2^53.  Tests compare fences with each
# other, with meta, and with the server's TIME taken before
# and after the grant, never with a count of acquisitions.
#	time_us				TIME's two lines on stdin -> µs
#	assert_fence F [LO [HI]]	F is plain digits (no sign, no exponent),
#					0 < F < 2^53, and LO <= F <= HI
#	assert_increasing F...		each fence greater than the one before
#	assert_status_row LINE NAME STATE FENCE
#					status's table row starts with NAME,
#					STATE and FENCE in their columns
#	fence_ahead NAME [SERVER]	put NAME's fences 10^12 µs (11.6 days)
#					ahead of the server's clock and print
#					that value, c: the counter when NAME has
#					no stream yet (a new stream starts above
#					it), else an entry with c's id added to
#					the stream and deleted.  Every later
#					fence is above c, and they increase (not
#					by one a grant: releases and other
#					entries take ids too)
#	fence_of_id ID			the fence of a history entry's id

FENCE_LIMIT=9007199254740992 # 2^53: exact in a double, in JSON, in bash

time_us() {
	local s us
	read -r s && read -r us || return 1
	[[ $s =~ ^[0-9]+$ && $us =~ ^[0-9]+$ ]] || return 1
	echo $((s * 1000000 + 10#$us))
}

assert_fence() {
	# A grant's fence is its history entry's millisecond + 1, in µs, and
	# the entry's sequence number (lib/scripts/entry.lua): up to 2 ms
	# after the server's clock read after it.
	local f=$1 lo=${2:-1} hi=${3:+$((${3} + 2000))}
	[[ $f =~ ^[1-9][0-9]{0,15}$ ]] || {
		fail "fence '$f' is not plain digits"
		return 1
	}
	((f < FENCE_LIMIT)) || {
		fail "fence $f is not below 2^53"
		return 1
	}
	((f >= lo)) || {
		fail "fence $f is below $lo (by $((lo - f)))"
		return 1
	}
	[[ -z $hi ]] || ((f <= hi)) || {
		fail "fence $f is above $hi (by $((f - hi)))"
		return 1
	}
}

assert_increasing() {
	local prev= f
	for f in "$@"; do
		assert_fence "$f" || return 1
		if [[ -n $prev ]] && ((f <= prev)); then
			fail "fences not increasing at $prev -> $f: $*"
			return 1
		fi
		prev=$f
	done
}

# The columns are those of cli/cmd_status.c's print_row.
assert_status_row() {
	local want
	want=$(printf '%-20s %-5s %16s ' "$2" "$3" "$4")
	[[ ${1:0:${#want}} == "$want" ]] || {
		fail "status row does not start with '$want': '$1'"
		return 1
	}
}

fence_ahead() {
	local c k
	c=$(($(server_us "${2:-R}") + 1000000000000))
	k=$(key "$1")
	if [[ $(rcli "${2:-R}" EXISTS "$k:log") == 1 ]]; then
		# The stream's next id is above c's: an entry with c's id
		# ((MS + 1) * 1000 + SEQ = c), added and removed at once.
		local id
		id=$(rcli "${2:-R}" XADD "$k:log" "$((c / 1000 - 1))-$((c % 1000))" f '') || return 1
		[[ $id == "$((c / 1000 - 1))-$((c % 1000))" ]] || {
			echo "fence_ahead: XADD gave '$id'" >&2
			return 1
		}
		rcli "${2:-R}" XDEL "$k:log" "$id" >/dev/null || return 1
	else
		# A new stream starts above the counter.
		rcli "${2:-R}" SET "$k:fence" "$c" >/dev/null || return 1
	fi
	echo "$c"
}

# fence_of_id ID: the fence of history entry ID ("MS-SEQ"): (MS + 1) *
# 1000 + SEQ.
fence_of_id() {
	[[ $1 =~ ^([0-9]{13})-([0-9]{1,3})$ ]] || return 1
	echo $(((BASH_REMATCH[1] + 1) * 1000 + BASH_REMATCH[2]))
}
