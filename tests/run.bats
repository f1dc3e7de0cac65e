#!/usr/bin/env bats
# run.bats - rlock run: runs the command under the lock, passes its exit
# status through, gives it the lock in its environment, renews and releases.

bats_require_minimum_version 1.5.0
load test_helper

# ---- exit status ----------------------------------------------------------

@test "run returns the command's exit status, 0..255" {
	local bad=() i
	for ((i = 0; i < 256; i++)); do
		local st=0
		"$RLOCK" run -n sweep -- sh -c "exit $i" || st=$?
		((st == i)) || bad+=("$i->$st")
	done
	assert_equal "${bad[*]}" ""
	lock_free sweep
}

@test "a command killed by signal N gives 128+N" {
	# A signal ignored by whoever started the suite (SIGINT and SIGQUIT
	# for a job started with & by a non-interactive shell, SIGHUP under
	# nohup) stays ignored through rlock, as through flock and timeout:
	# give rlock, and so the command, every default back.
	local dfl=(env --default-signal)
	run -143 "${dfl[@]}" "$RLOCK" run sig -- sh -c 'kill -TERM $$'
	run -137 "${dfl[@]}" "$RLOCK" run sig -- sh -c 'kill -KILL $$'
	run -130 "${dfl[@]}" "$RLOCK" run sig -- sh -c 'kill -INT $$'
	run -129 "${dfl[@]}" "$RLOCK" run sig -- sh -c 'kill -HUP $$'
	run -138 "${dfl[@]}" "$RLOCK" run sig -- sh -c 'kill -USR1 $$'
	lock_free sig
}

@test "a command that is not executable gives 126" {
	printf '#!/bin/sh\necho hi\n' >notexec
	chmod 644 notexec
	run -126 --separate-stderr "$RLOCK" run x -- ./notexec
	assert_stderr "rlock: run: cannot run './notexec': Permission denied"
	assert_output ""
	lock_free x
	run -126 --separate-stderr "$RLOCK" run x -- /
	assert_stderr "rlock: run: cannot run '/': Permission denied"
}

@test "a command that does not exist gives 127" {
	run -127 --separate-stderr "$RLOCK" run x -- /nonexistent/cmd arg
	assert_stderr "rlock: run: cannot run '/nonexistent/cmd': No such file or directory"
	lock_free x
	run -127 --separate-stderr "$RLOCK" run x -- no-such-command-rlock-test
	assert_stderr "rlock: run: cannot run 'no-such-command-rlock-test': No such file or directory"
	lock_free x
}

@test "arguments reach the command unchanged; stdin and stdout pass through" {
	run -0 "$RLOCK" run x -- printf '[%s]' 'a b' '' 'c*' '$HOME' '--' '-n'
	assert_output '[a b][][c*][$HOME][--][-n]'
	run -0 "$RLOCK" run x true
	run -0 bash -c 'echo piped | "$RLOCK" run x -- cat'
	assert_output piped
}

@test "-c runs a shell string with \$SHELL" {
	run -7 "$RLOCK" run x -c 'echo $((1+2)); exit 7'
	assert_output 3
	run -0 "$RLOCK" run x --command 'echo "$RLOCK_NAME"'
	assert_output x

	printf '#!/bin/sh\necho via-myshell\nexec /bin/sh "$@"\n' >myshell
	chmod +x myshell
	SHELL=$PWD/myshell run -0 "$RLOCK" run x -c 'echo inner'
	assert_output $'via-myshell\ninner'
}

@test "-c falls back to /bin/sh without \$SHELL" {
	run -0 env -u SHELL "$RLOCK" run x -c 'echo fallback'
	assert_output fallback
	SHELL= run -0 "$RLOCK" run x -c 'echo empty'
	assert_output empty
}

# ---- the command's environment -----------------------------------------

@test "the command gets RLOCK_NAME, KEY, TOKEN, FENCE, TTL_MS and HELD" {
	run -0 --separate-stderr "$RLOCK" run -t 5s envx -- sh -c '
		echo "name=$RLOCK_NAME"
		echo "key=$RLOCK_KEY"
		echo "ttl=$RLOCK_TTL_MS"
		echo "token=$RLOCK_TOKEN"
		echo "stored=$(redis-cli -p "$R_PORT" GET "$RLOCK_KEY")"
		echo "fence=$RLOCK_FENCE"
		printf "%s\n" "$RLOCK_HELD" |
			grep -qxF "$RLOCK_KEY	x	$PPID:$(cut -d" " -f22 /proc/$PPID/stat)	$RLOCK_TOKEN" &&
			echo held-ok'
	assert_line "name=envx"
	assert_line "key=$(key envx)"
	assert_line "ttl=5000"
	assert_line held-ok
	local token stored fence
	token=$(sed -n 's/^token=//p' <<<"$output")
	stored=$(sed -n 's/^stored=//p' <<<"$output")
	fence=$(sed -n 's/^fence=//p' <<<"$output")
	assert_regex "$token" '^[0-9a-f]{32}$'
	assert_equal "$stored" "$token"
	assert_regex "$fence" '^[0-9]+$'
	# The record of the grant (it stays) names the token, with its fence.
	assert_equal "$(grant_tok envx)" "${token:0:8}"
	assert_equal "$(meta envx fence)" "$fence"
}

@test "the fence increases with every run" {
	local a b c t0 t1
	t0=$(server_us)
	a=$("$RLOCK" run fx -- sh -c 'echo $RLOCK_FENCE')
	b=$("$RLOCK" run fx -- sh -c 'echo $RLOCK_FENCE')
	c=$("$RLOCK" run fx -- sh -c 'echo $RLOCK_FENCE')
	t1=$(server_us)
	assert_increasing "$t0" "$a" "$b" "$c"
	assert_fence "$c" "$t0" "$t1"
	# The last grant's record and history entry have the last fence
	# handed out: three grants, no other.
	assert_equal "$(meta fx fence)" "$c"
	assert_equal "$(last_grant fx fence)" "$c"
	assert_equal "$(hist_count fx acquired)" 3
}

@test "every run gets a fresh token" {
	local a b
	a=$("$RLOCK" run tx -- sh -c 'echo $RLOCK_TOKEN')
	b=$("$RLOCK" run tx -- sh -c 'echo $RLOCK_TOKEN')
	assert_regex "$a" '^[0-9a-f]{32}$'
	assert_not_equal "$a" "$b"
}

# ---- release ------------------------------------------------------------

@test "the lock is released when the command ends, whatever its status" {
	run -0 "$RLOCK" run rel -- sh -c 'redis-cli -p "$R_PORT" EXISTS "$RLOCK_KEY"'
	assert_output 1
	lock_free rel
	[[ $(rcli R EXISTS "$(key rel):owner") == 0 ]]
	run -3 "$RLOCK" run rel -- sh -c 'exit 3'
	lock_free rel
	run -143 "$RLOCK" run rel -- sh -c 'echo $RLOCK_FENCE >fence; kill $$'
	lock_free rel
	# the record of the last grant stays, at the last fence
	assert_fence "$(<fence)"
	assert_equal "$(meta rel fence)" "$(<fence)"
}

# ---- busy -------------------------------------------------------------------

start_holder() {
	# start_holder NAME [rlock run options...]: a background rlock holding
	# NAME until the file "go-NAME" appears.
	local name=$1
	shift
	bg_start "holder-$name" "$RLOCK" run "$@" "$name" -- sh -c "$(gate "$BATS_TEST_TMPDIR/go-$name")"
	HOLDER_PID=$BG_PID
	wait_until 5 lock_held "$name"
	HOLDER_TOKEN=$(holder "$name")
}

@test "-n on a held lock exits 75 at once and leaves the holder alone" {
	start_holder busy -t 30s
	local host pid cmd t0
	host=$(meta busy host)
	pid=$(meta busy pid)
	cmd=$(meta busy command)
	assert_equal "$pid" "$HOLDER_PID"
	t0=$(now_ms)
	run -75 --separate-stderr "$RLOCK" run -n busy -- touch ran
	(($(now_ms) - t0 < 2000))
	assert_stderr "rlock: run: busy: held by $host pid $pid ($cmd)"
	[[ ! -e ran ]]
	held_by busy "$HOLDER_TOKEN"
	run -75 --separate-stderr "$RLOCK" run -w 0 busy -- touch ran
	[[ ! -e ran ]]
	run -75 --separate-stderr "$RLOCK" run -q -n busy -- touch ran
	assert_stderr ""
	held_by busy "$HOLDER_TOKEN"
}

@test "-n on a lock held by another client's plain SET NX PX exits 75" {
	rcli R SET "$(key plain)" foreign-token NX PX 30000
	run -75 --separate-stderr "$RLOCK" run -n plain -- touch ran
	assert_stderr_line --index 0 --partial "rlock: run: plain: held by"
	[[ ! -e ran ]]
	held_by plain foreign-token
}

@test "-E N is the exit status when the lock is busy" {
	start_holder busyE
	run -3 "$RLOCK" run -n -E 3 busyE -- touch ran
	run -0 "$RLOCK" run -n -E 0 busyE -- touch ran
	run -75 "$RLOCK" run -n -E 75 busyE -- touch ran
	[[ ! -e ran ]]
	held_by busyE "$HOLDER_TOKEN"
}

@test "-w waits, then exits 75 with the holder" {
	start_holder busyW
	local t0 el
	t0=$(now_ms)
	run -75 --separate-stderr "$RLOCK" run -w 1s busyW -- touch ran
	el=$(($(now_ms) - t0))
	((el >= 900)) || fail "gave up after ${el}ms, before the 1s timeout"
	((el < 10000)) || fail "took ${el}ms for a 1s timeout"
	assert_stderr "rlock: run: busyW: timed out after 1s; held by $(meta busyW host) pid $HOLDER_PID ($(meta busyW command))"
	[[ ! -e ran ]]
	held_by busyW "$HOLDER_TOKEN"
	run -75 "$RLOCK" run -w 0.3s busyW -- touch ran
	run -9 "$RLOCK" run -w 300ms -E 9 busyW -- touch ran
	[[ ! -e ran ]]
}

@test "a waiter takes over when the holder finishes" {
	start_holder handoff -t 30s
	bg_start waiter "$RLOCK" run -w 20s handoff -- sh -c 'echo "$RLOCK_FENCE" > got'
	local wpid=$BG_PID
	wait_until 5 has_waiters handoff 1
	[[ ! -e got ]]
	touch go-handoff
	bg_wait "$HOLDER_PID" 10
	assert_equal "$BG_STATUS" 0
	bg_wait "$wpid" 10
	assert_equal "$BG_STATUS" 0
	[[ -s got ]]
	lock_free handoff
}

@test "a waiter gets the lock when the holder's lease runs out" {
	rcli R SET "$(key expire)" foreign-token NX PX 700
	run -0 "$RLOCK" run -w 10s expire -- sh -c 'echo "$RLOCK_TOKEN"'
	assert_regex "$output" '^[0-9a-f]{32}$'
}

# ---- renewal ------------------------------------------------------------

@test "a long command keeps a short lease alive" {
	bg_start long "$RLOCK" run -t 500ms renew -- sh -c "echo \$RLOCK_TOKEN > tok; $(gate "$BATS_TEST_TMPDIR/go")"
	local pid=$BG_PID token t0
	wait_until 5 file_nonempty tok
	token=$(cat tok)
	t0=$(now_ms)
	# Watch the key for three lease lengths.
	while (($(now_ms) - t0 < 1600)); do
		held_by renew "$token" || fail "lost the key after $(($(now_ms) - t0))ms"
		local p
		p=$(pttl renew)
		((p > 0 && p <= 500)) || fail "pttl $p"
		sleep 0.05
	done
	touch go
	bg_wait "$pid" 10
	assert_equal "$BG_STATUS" 0
	lock_free renew
}

# clients: the server's client connections but the one asking.
clients() {
	echo $(($(rcli R CLIENT LIST TYPE normal | wc -l) - 1))
}

@test "a run takes, renews and releases its lock on one connection" {
	bg_start one "$RLOCK" run -t 900ms conn -- sh -c "echo \$RLOCK_TOKEN >tok; $(gate "$BATS_TEST_TMPDIR/go")"
	local pid=$BG_PID token t0
	wait_until 5 file_nonempty tok
	token=$(<tok)
	t0=$(now_ms)
	# Renewed every 300ms: past a lease and then some, still held.
	while (($(now_ms) - t0 < 1200)); do
		held_by conn "$token" || fail "lost after $(($(now_ms) - t0))ms"
		assert_equal "$(clients)" 1
		sleep 0.1
	done
	touch go
	bg_wait "$pid" 10
	assert_equal "$BG_STATUS" 0
	lock_free conn
}

# ---- re-entrancy ----------------------------------------------------------

@test "a nested run of the same lock runs without acquiring or releasing" {
	run -0 --separate-stderr "$RLOCK" run -t 5s re -- sh -c '
		"$RLOCK" run -n re -- sh -c "echo inner-token=\$RLOCK_TOKEN; exit 5"
		echo "inner=$?"
		echo "after=$(redis-cli -p "$R_PORT" GET "$RLOCK_KEY")"
		echo "outer=$RLOCK_TOKEN"'
	assert_line inner=5
	local after outer
	after=$(sed -n 's/^after=//p' <<<"$output")
	outer=$(sed -n 's/^outer=//p' <<<"$output")
	assert_regex "$outer" '^[0-9a-f]{32}$'
	assert_equal "$after" "$outer"
	lock_free re
}

@test "a nested run of another lock acquires it and both are in RLOCK_HELD" {
	run -0 "$RLOCK" run -t 5s outer -- "$RLOCK" run -n inner -- sh -c '
		printf "%s\n" "$RLOCK_HELD" | cut -f1,2 | sort'
	assert_line "$(key outer)	x"
	assert_line "$(key inner)	x"
	lock_free outer
	lock_free inner
}

# ---- options ----------------------------------------------------------------

@test "--min-hold keeps the lock after a quick command" {
	run -0 "$RLOCK" run --min-hold 2s mh -- true
	lock_held mh
	local p
	p=$(pttl mh)
	((p > 0 && p <= 2000)) || fail "pttl $p"
	run -75 "$RLOCK" run -n mh -- touch ran
	[[ ! -e ran ]]
}

@test "--min-hold shorter than the command changes nothing" {
	run -0 "$RLOCK" run --min-hold 10ms mh2 -- sh -c 'sleep 0.1'
	lock_free mh2
}

@test "--max-time terminates a command that runs too long" {
	local t0 el
	t0=$(now_ms)
	run -143 "$RLOCK" run --max-time 500ms mt -- sleep 30
	el=$(($(now_ms) - t0))
	((el >= 450 && el < 10000)) || fail "took ${el}ms"
	lock_free mt
}

@test "--max-time kills after --kill-after when TERM is ignored" {
	local t0 el
	t0=$(now_ms)
	run -137 "$RLOCK" run --max-time 300ms -k 300ms mt2 -- sh -c 'trap "" TERM; sleep 30'
	el=$(($(now_ms) - t0))
	((el < 10000)) || fail "took ${el}ms"
	lock_free mt2
}

@test "--label is what the lock's meta says the command is" {
	# (The record of the grant stays after the run: read after it.)
	run -0 "$RLOCK" run --label "nightly backup" lb -- true
	assert_equal "$(meta lb command)" "nightly backup"
	run -0 "$RLOCK" run lb -- sh -c 'true'
	assert_equal "$(meta lb command)" "sh -c true"
	# the default, the command line, is cut at 256 bytes
	local long cmd
	long=$(printf 'x%.0s' {1..300})
	run -0 "$RLOCK" run lb -- sh -c 'true' "$long"
	cmd=$(meta lb command)
	((${#cmd} <= 256)) || fail "label of ${#cmd} bytes"
	assert_regex "$cmd" '^sh -c true x'
}

@test "the holder's record names this host, rlock's pid and the user" {
	run -0 "$RLOCK" run mx -- sh -c '
		echo "$PPID"
		echo "$RLOCK_TOKEN" | cut -c1-8'
	# The record of the grant, which stays after the run.
	assert_equal "$(meta mx pid)" "${lines[0]}"
	assert_equal "$(meta mx user)" "$(id -un)"
	assert_regex "$(meta mx host)" "^$(hostname -s)"
	# Since: the time of the grant's history entry.
	assert_regex "$(meta mx since)" '^1[0-9]{12}$'
	assert_equal "$(grant_tok mx)" "${lines[1]}"
}

# user_of NAME: the user field of lock NAME's holder record.
user_of() {
	meta "$1" user
}

@test "the holder's user is \$USER, else \$LOGNAME, else the passwd name, else the uid" {
	local t
	t=$(USER=u1 LOGNAME=l1 "$RLOCK" acquire un)
	assert_equal "$(user_of un)" u1
	"$RLOCK" release un "$t"
	t=$(env -u USER LOGNAME=l1 "$RLOCK" acquire un)
	assert_equal "$(user_of un)" l1
	"$RLOCK" release un "$t"
	t=$(env -u USER -u LOGNAME "$RLOCK" acquire un)
	assert_equal "$(user_of un)" "$(id -un)"
	"$RLOCK" release un "$t"
	# Another user's name from the passwd file, and a uid with no name (a
	# container's, say): its digits.  Only root can take them.
	if (($(id -u) == 0)); then
		t=$(setpriv --reuid daemon --regid daemon --clear-groups \
			env -u USER -u LOGNAME "$RLOCK" acquire un)
		assert_equal "$(user_of un)" daemon
		"$RLOCK" release un "$t"
		[[ -z $(getent passwd 54321) ]]
		t=$(setpriv --reuid 54321 --regid 54321 --clear-groups \
			env -u USER -u LOGNAME "$RLOCK" acquire un)
		assert_equal "$(user_of un)" 54321
		"$RLOCK" release un "$t"
	fi
	lock_free un
}

# ---- a clean start for the command -------------------------------------

@test "the command gets no descriptor of rlock's and a clean signal state" {
	run -0 --separate-stderr "$CLEANEXEC" "$RLOCK" run ss -- "$SIGSTATE"
	assert_line "blocked 0000000000000000"
	# Signals 32 and 33 belong to the C library (thread cancellation and
	# set*id); programs cannot change them, but an ASan runtime in rlock
	# (make test SAN=1) may leave 32 ignored.  Every other bit must be 0.
	ign=$(sed -n 's/^ignored //p' <<<"$output")
	assert_equal "$(printf '%016x' $((0x$ign & ~0x180000000)))" 0000000000000000
	assert_line "fds none"
	run -0 --separate-stderr "$CLEANEXEC" "$RLOCK" run -c "$SIGSTATE" ss
	assert_line "fds none"
}

@test "descriptors the user gave rlock reach the command" {
	run -0 --separate-stderr "$CLEANEXEC" sh -c 'exec 7>"$1"; exec "$RLOCK" run ss -- "$SIGSTATE"' sh "$BATS_TEST_TMPDIR/fd7"
	assert_line "fds 7=$BATS_TEST_TMPDIR/fd7"
}

# ---- a holder that dies ---------------------------------------------------

@test "a SIGKILLed holder's lock is free again within its TTL" {
	bg_start h "$RLOCK" run -t 1s dead -- sleep 30
	local pid=$BG_PID
	wait_until 5 lock_held dead
	kill -KILL "$pid"
	bg_wait "$pid" 5
	wait_until 5 lock_free dead
	run -0 "$RLOCK" run -n dead -- true
}

@test "the command of a SIGKILLed run gets SIGTERM, in a process group of its own" {
	bg_start h "$RLOCK" run orphan -- sh -c 'echo "$$ $(ps -o pgid= -p $$)" >cmd; trap "echo TERM >got; exit 143" TERM; while :; do sleep 0.05; done'
	local pid=$BG_PID
	wait_until 5 test -s cmd
	read -r cmd pgid <cmd
	assert_equal "$pgid" "$cmd"
	kill -KILL "$pid"
	bg_wait "$pid" 5
	wait_until 5 test -s got
	assert_equal "$(cat got)" TERM
	wait_until 5 bash -c "! kill -0 $cmd 2>/dev/null"
}

# ---- transports ---------------------------------------------------------------

@test "a unix socket URL works" {
	start_redis_unix U
	RLOCK_URL=$U_URL run -0 "$RLOCK" run -t 5s ux -- sh -c '
		test "$(redis-cli -s "$U_SOCK" GET "$RLOCK_KEY")" = "$RLOCK_TOKEN" && echo ok'
	assert_output ok
	local f1 f2
	f1=$(meta ux fence U)
	run -0 "$RLOCK" -u "unix://$U_SOCK" run ux -- sh -c 'echo $RLOCK_FENCE'
	f2=$output
	[[ $(rcli U EXISTS "$(key ux)") == 0 ]]
	# Both runs were granted by U: its record went on to the second fence.
	assert_increasing "$f1" "$f2"
	assert_equal "$(meta ux fence U)" "$f2"
	assert_equal "$(hist_count ux acquired U)" 2
}

@test "REDIS_URL is used without RLOCK_URL, and RLOCK_URL beats it" {
	start_redis_unix U
	local fu fr1 fr2
	fu=$(env -u RLOCK_URL REDIS_URL="$U_URL" "$RLOCK" run ru -- sh -c 'echo $RLOCK_FENCE')
	assert_fence "$fu"
	assert_equal "$(meta ru fence U)" "$fu"
	assert_equal "$(rcli R EXISTS "$(key ru):grant" "$(key ru):log" "$(key ru):fence")" 0
	fr1=$(REDIS_URL="$U_URL" "$RLOCK" run ru -- sh -c 'echo $RLOCK_FENCE')
	assert_fence "$fr1"
	assert_equal "$(meta ru fence)" "$fr1"
	fr2=$(RLOCK_URL="$U_URL" "$RLOCK" -u "$R_URL" run ru -- sh -c 'echo $RLOCK_FENCE')
	assert_increasing "$fr1" "$fr2"
	assert_equal "$(meta ru fence)" "$fr2"
	# U granted once only.
	assert_equal "$(meta ru fence U)" "$fu"
	assert_equal "$(hist_count ru acquired U)" 1
}

@test "--prefix and RLOCK_PREFIX choose the key" {
	run -0 "$RLOCK" run pfx -- sh -c 'echo "$RLOCK_KEY"'
	assert_output "${RLOCK_PREFIX}{pfx}"
	run -0 "$RLOCK" --prefix "other$RLOCK_PREFIX" run pfx -- sh -c 'echo "$RLOCK_KEY"'
	assert_output "other${RLOCK_PREFIX}{pfx}"
	run -0 env -u RLOCK_PREFIX "$RLOCK" run "pfx$RLOCK_PREFIX" -- sh -c 'echo "$RLOCK_KEY"'
	assert_output "rlock:{pfx$RLOCK_PREFIX}"
}

@test "a waiter on a key that never expires gives up at -w" {
	rcli R SET "$(key forever)" foreign-token >/dev/null
	local t0 el
	t0=$(now_ms)
	run -75 --separate-stderr "$RLOCK" run -w 1s forever -- touch ran
	el=$(($(now_ms) - t0))
	((el >= 900 && el < 10000)) || fail "took ${el}ms"
	[[ ! -e ran ]]
	held_by forever foreign-token
}
