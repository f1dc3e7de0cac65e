#!/usr/bin/env bats
# faults.bats - what rlock does when things go wrong: a holder frozen past
# its lease, a server that restarts or forgets its scripts, a full server,
# a replica, passwords, a server that stops answering.  LOADING is not
# provoked here (it needs a dataset big enough to take a while to load).

bats_require_minimum_version 1.5.0
load test_helper

# ---- a holder stopped past its lease --------------------------------------

# frozen NAME COMMAND: run COMMAND under NAME with a 1s lease, freeze rlock
# past the lease, let another client take the lock, thaw rlock.  Leaves
# FROZEN_PID (rlock), NEW_TOKEN, and rlock's status in BG_STATUS.
frozen() {
	local name=$1
	shift
	bg_start frozen "$RLOCK" run -t 1s -k 1s "$name" -- "$@"
	FROZEN_PID=$BG_PID
	wait_until 5 lock_held "$name"
	wait_until 5 file_nonempty child.pid
	kill -STOP "$FROZEN_PID"
	wait_until 10 lock_free "$name"
	NEW_TOKEN=$("$RLOCK" acquire -n -t 30s "$name")
	kill -CONT "$FROZEN_PID"
	bg_wait "$FROZEN_PID" 15
}

@test "a holder frozen past its lease stops its command and exits 76" {
	frozen fz sh -c 'echo $$ > child.pid; exec sleep 60'
	local child
	child=$(cat child.pid)
	track_pid "$child"
	assert_equal "$BG_STATUS" 76
	run bg_err frozen
	assert_output --regexp '^rlock: run: fz: lock lost: .*; command stopped$'
	wait_until 5 pid_gone "$child"
	held_by fz "$NEW_TOKEN"
}

@test "losing the lock stops the command's children too" {
	frozen fzg sh -c 'sleep 100 & echo $! > grandchild.pid; echo $$ > child.pid; wait'
	local child grandchild
	child=$(cat child.pid)
	grandchild=$(cat grandchild.pid)
	track_pid "$child"
	track_pid "$grandchild"
	assert_equal "$BG_STATUS" 76
	wait_until 5 pid_gone "$child"
	wait_until 5 pid_gone "$grandchild"
	held_by fzg "$NEW_TOKEN"
}

@test "--on-lost kill kills the command at once" {
	bg_start r "$RLOCK" run -t 300ms --on-lost kill lk -- sh -c \
		'echo $$ > child.pid; trap "" TERM; redis-cli -p "$R_PORT" DEL "$RLOCK_KEY" >/dev/null; sleep 60'
	local pid=$BG_PID
	wait_until 5 file_nonempty child.pid
	track_pid "$(cat child.pid)"
	bg_wait "$pid" 10
	assert_equal "$BG_STATUS" 76
	pid_gone "$(cat child.pid)"
}

@test "--on-lost term escalates to KILL after --kill-after" {
	bg_start r "$RLOCK" run -t 300ms -k 500ms lt -- sh -c \
		'echo $$ > child.pid; trap "" TERM; redis-cli -p "$R_PORT" DEL "$RLOCK_KEY" >/dev/null; sleep 60'
	local pid=$BG_PID
	wait_until 5 file_nonempty child.pid
	track_pid "$(cat child.pid)"
	bg_wait "$pid" 10
	assert_equal "$BG_STATUS" 76
	pid_gone "$(cat child.pid)"
}

@test "--on-lost ignore lets the command finish and still exits 76" {
	run -76 --separate-stderr "$RLOCK" run -t 300ms --on-lost ignore li -- sh -c '
		redis-cli -p "$R_PORT" DEL "$RLOCK_KEY" >/dev/null
		sleep 1
		echo finished'
	assert_output finished
	assert_stderr_line --index 0 --partial "rlock: run: li: lock lost"
}

@test "a lock taken over by another token is lost, and the new holder's key kept" {
	run -76 --separate-stderr "$RLOCK" run -t 300ms to -- sh -c '
		redis-cli -p "$R_PORT" SET "$RLOCK_KEY" intruder PX 30000 >/dev/null
		exec sleep 30'
	assert_stderr --regexp '^rlock: run: to: lock lost: .*; command stopped$'
	held_by to intruder
}

# ---- the server ------------------------------------------------------------

@test "a server restart during a run: no hang; the lock is gone with the data, 76 with a message" {
	start_redis S
	bg_start r "$RLOCK" -u "$S_URL" run -t 1s rs -- sh -c "$(gate "$BATS_TEST_TMPDIR/go")"
	local pid=$BG_PID
	wait_until 5 lock_held rs S
	restart_redis S
	# Give the renewal a few rounds against the empty server.
	local t0
	t0=$(now_ms)
	while (($(now_ms) - t0 < 1500)) && pid_alive "$pid"; do
		sleep 0.05
	done
	touch go
	bg_wait "$pid" 15
	# Without persistence the restarted server has no key: the next
	# renewal is told the token does not hold the lock.
	assert_equal "$BG_STATUS" 76
	grep -q '^rlock: run: rs: lock lost' "$BATS_TEST_TMPDIR/r.err" || fail "no message: $(bg_err r)"
}

@test "a waiter that has seen the lock held keeps waiting through a server restart" {
	start_redis S
	"$RLOCK" -u "$S_URL" acquire -t 30s wr >/dev/null
	bg_start w "$RLOCK" -u "$S_URL" run -w 20s wr -- echo got-it
	local pid=$BG_PID
	wait_until 5 has_waiters wr 1 S
	# The restart drops the waiter's connections and, without
	# persistence, the holder's key: the waiter must take the lock.
	restart_redis S
	bg_wait "$pid" 15
	assert_equal "$BG_STATUS" 0
	assert_equal "$(bg_out w)" got-it
}

@test "a waiter whose server never answered fails at once with 69" {
	start_redis S
	local port=$S_PORT
	stop_redis S
	run -69 --separate-stderr timeout 10 "$RLOCK" -u "redis://127.0.0.1:$port" run -w 30s nw -- true
	assert_stderr "rlock: run: cannot connect to 127.0.0.1:$port: Connection refused"
}

@test "a server that goes away during a run: the command is stopped, 76" {
	start_redis S
	bg_start r "$RLOCK" -u "$S_URL" --connect-timeout 200ms --io-timeout 200ms \
		run -t 1s away -- sh -c 'echo $$ > child.pid; exec sleep 60'
	local pid=$BG_PID
	wait_until 5 file_nonempty child.pid
	track_pid "$(cat child.pid)"
	stop_redis S
	bg_wait "$pid" 15
	assert_equal "$BG_STATUS" 76
	run bg_err r
	assert_output --partial "rlock: run: away: lock lost"
	wait_until 5 pid_gone "$(cat child.pid)"
}

@test "SCRIPT FLUSH during a run: renewal and release go on" {
	run -0 --separate-stderr "$RLOCK" run -t 600ms sf -- sh -c '
		redis-cli -p "$R_PORT" SCRIPT FLUSH >/dev/null
		sleep 1
		redis-cli -p "$R_PORT" SCRIPT FLUSH >/dev/null
		sleep 1
		redis-cli -p "$R_PORT" SCRIPT FLUSH >/dev/null
		test "$(redis-cli -p "$R_PORT" GET "$RLOCK_KEY")" = "$RLOCK_TOKEN" && echo still-held'
	assert_output still-held
	lock_free sf
	rcli R SCRIPT FLUSH >/dev/null
	run -0 "$RLOCK" acquire sf2
	rcli R SCRIPT FLUSH >/dev/null
	run -0 "$RLOCK" extend sf2 "$output"
	rcli R SCRIPT FLUSH >/dev/null
	run -0 "$RLOCK" status sf2
}

@test "OOM: acquire exits 69 and says so" {
	start_redis O --maxmemory-policy noeviction
	head -c 3000000 /dev/zero | tr '\0' x | rcli O -x SET filler >/dev/null
	rcli O CONFIG SET maxmemory 1mb >/dev/null
	run -69 --separate-stderr timeout 10 "$RLOCK" -u "$O_URL" acquire oom
	assert_stderr "rlock: acquire: 127.0.0.1:$O_PORT: server out of memory (OOM)"
	run -69 --separate-stderr timeout 10 "$RLOCK" -u "$O_URL" run oom -- touch ran
	assert_stderr "rlock: run: 127.0.0.1:$O_PORT: server out of memory (OOM)"
	[[ ! -e ran ]]
}

@test "READONLY replica: acquire exits 69 and says so" {
	start_redis M
	start_redis REP --replicaof 127.0.0.1 "$M_PORT"
	run -69 --separate-stderr timeout 10 "$RLOCK" -u "$REP_URL" acquire ro
	assert_stderr "rlock: acquire: 127.0.0.1:$REP_PORT is a replica (READONLY): point rlock at the master, or use a redis-sentinel:// URL"
	run -69 --separate-stderr timeout 10 "$RLOCK" -u "$REP_URL" run ro -- touch ran
	assert_stderr "rlock: run: 127.0.0.1:$REP_PORT is a replica (READONLY): point rlock at the master, or use a redis-sentinel:// URL"
	[[ ! -e ran ]]
	# status only reads: fine on a replica
	run -1 timeout 10 "$RLOCK" -u "$REP_URL" status ro
}

# ---- passwords ----------------------------------------------------------------

@test "passwords: wrong one exits 69, the right one from URL, env or file works" {
	start_redis P --requirepass 's3cret'
	local url="redis://127.0.0.1:$P_PORT"
	run -69 --separate-stderr "$RLOCK" -u "redis://:wrong@127.0.0.1:$P_PORT" acquire pw
	assert_stderr --regexp "^rlock: acquire: 127\.0\.0\.1:$P_PORT: authentication failed: WRONGPASS"
	assert_equal "$(rcli P EXISTS "$(key pw)" "$(key pw):grant" "$(key pw):log" "$(key pw):fence")" 0
	# Seven runs below get the lock, the one with a wrong password none:
	# seven grants, each with a fence above c (the fences ahead of the
	# clock), increasing.
	local c
	c=$(fence_ahead pw P)
	local rec='echo $RLOCK_FENCE >>fences'

	run -0 "$RLOCK" -u "redis://:s3cret@127.0.0.1:$P_PORT" run pw -- sh -c "$rec"
	run -0 "$RLOCK" -u "redis://default:s3cret@127.0.0.1:$P_PORT" run pw -- sh -c "$rec"
	REDISCLI_AUTH=s3cret run -0 "$RLOCK" -u "$url" run pw -- sh -c "$rec"
	printf 's3cret' >pwfile
	run -0 "$RLOCK" -u "$url" --password-file pwfile run pw -- sh -c "$rec"
	printf 's3cret\n' >pwfile-nl
	run -0 "$RLOCK" -u "$url" --password-file pwfile-nl run pw -- sh -c "$rec"

	# the file beats the environment, which beats the URL
	REDISCLI_AUTH=wrong run -0 "$RLOCK" -u "$url" --password-file pwfile run pw -- sh -c "$rec"
	REDISCLI_AUTH=s3cret run -0 "$RLOCK" -u "redis://:wrong@127.0.0.1:$P_PORT" run pw -- sh -c "$rec"
	printf 'wrong' >badfile
	REDISCLI_AUTH=s3cret run -69 "$RLOCK" -u "$url" --password-file badfile run pw -- sh -c "$rec"
	assert_equal "$(wc -l <fences)" 7
	assert_increasing "$c" $(cat fences)
	assert_equal "$(hist_count pw acquired P)" 7
	assert_equal "$(meta pw fence P)" "$(tail -n 1 fences)"
}

@test "a password file that cannot be read is an error, not an empty password" {
	start_redis P --requirepass 's3cret'
	run --separate-stderr "$RLOCK" -u "$P_URL" --password-file "$BATS_TEST_TMPDIR/missing" run pw -- touch ran
	((status != 0))
	assert_stderr --partial "missing"
	[[ ! -e ran ]]
}

@test "ACL users: user and password in the URL" {
	start_redis A
	rcli A ACL SETUSER locker on '>pw1' '~*' '&*' '+@all' >/dev/null
	run -0 "$RLOCK" -u "redis://locker:pw1@127.0.0.1:$A_PORT" run acl -- true
	run -69 --separate-stderr "$RLOCK" -u "redis://locker:nope@127.0.0.1:$A_PORT" run acl -- true
	assert_stderr --partial "WRONGPASS"
}

# ---- a server that does not answer ----------------------------------------------

@test "CLIENT PAUSE: no reply within --io-timeout exits 69, no hang" {
	start_redis CP
	rcli CP CLIENT PAUSE 20000 ALL >/dev/null
	local t0 el
	t0=$(now_ms)
	run -69 --separate-stderr timeout 15 "$RLOCK" -u "$CP_URL" --io-timeout 500ms acquire cp
	el=$(($(now_ms) - t0))
	assert_regex "$stderr" "^rlock: acquire: 127.0.0.1:$CP_PORT: no reply within 500ms; undoing the request \\(it may have been granted\\) took [0-9.]+m?s more$"
	((el < 5000)) || fail "took ${el}ms"
	t0=$(now_ms)
	run -69 --separate-stderr timeout 15 "$RLOCK" -u "$CP_URL" --io-timeout 500ms run cp -- touch ran
	el=$(($(now_ms) - t0))
	assert_regex "$stderr" "^rlock: run: 127.0.0.1:$CP_PORT: no reply within 500ms; undoing the request \\(it may have been granted\\) took [0-9.]+m?s more$"
	((el < 5000)) || fail "took ${el}ms"
	[[ ! -e ran ]]
}

@test "CLIENT PAUSE WRITE during a run: renewals time out, the lock is given up" {
	start_redis CP
	bg_start r "$RLOCK" -u "$CP_URL" --io-timeout 300ms run -t 1s cpw -- sh -c 'echo $$ > child.pid; exec sleep 60'
	local pid=$BG_PID
	wait_until 5 file_nonempty child.pid
	track_pid "$(cat child.pid)"
	rcli CP CLIENT PAUSE 20000 WRITE >/dev/null
	bg_wait "$pid" 15
	assert_equal "$BG_STATUS" 76
	wait_until 5 pid_gone "$(cat child.pid)"
}

@test "a server that accepts but never answers: connect and io timeouts hold" {
	# A listening socket nobody accepts on answers nothing.
	python3 -c '
import socket, sys, time
s = socket.socket(); s.bind(("127.0.0.1", 0)); s.listen(1)
print(s.getsockname()[1], flush=True)
time.sleep(30)' >port.txt 3>&- &
	local py=$!
	track_pid "$py"
	wait_until 5 file_nonempty port.txt
	local t0 el
	t0=$(now_ms)
	run -69 --separate-stderr timeout 15 "$RLOCK" -u "redis://127.0.0.1:$(cat port.txt)" \
		--connect-timeout 500ms --io-timeout 500ms acquire silent
	el=$(($(now_ms) - t0))
	((el < 5000)) || fail "took ${el}ms"
	assert_stderr_line --index 0 --partial "rlock: acquire: "
}

@test "a waiter whose connection is killed in its wait connects again and still wakes on the release" {
	tok=$("$RLOCK" acquire -t 60s ks)
	bg_start w "$RLOCK" run -w 50s ks -- echo got-it
	local pid=$BG_PID
	wait_until 5 has_waiters ks 1
	# Its one connection, waiting on its wake-up list.
	wait_until 5 eval '[[ -n $(blpop_ids) ]]'
	local old
	old=$(blpop_ids)
	rcli R CLIENT KILL ID $old >/dev/null
	# A new connection, waiting again.
	wait_until 5 eval '[[ -n $(blpop_ids) && $(blpop_ids) != "$old" ]]'
	"$RLOCK" release ks "$tok"
	# Woken by the release, not by the 60s lease running out.
	bg_wait "$pid" 10
	assert_equal "$BG_STATUS" 0
	assert_equal "$(bg_out w)" got-it
}

# The ids of the server's connections blocked (a waiter's BLPOP).
blpop_ids() {
	rcli R CLIENT LIST | sed -n 's/^id=\([0-9]*\) .* flags=b .*/\1/p' | sort | tr '\n' ' '
}

@test "--with: a set that has seen a lock held keeps waiting through a server restart, then takes the set" {
	start_redis S
	"$RLOCK" -u "$S_URL" acquire -t 30s wr2 >/dev/null
	bg_start w "$RLOCK" -u "$S_URL" run -w 20s wr1 --with wr2 -- echo got-both
	local pid=$BG_PID
	wait_until 5 line_is wr2 1 S
	restart_redis S
	bg_wait "$pid" 15
	assert_equal "$BG_STATUS" 0
	assert_equal "$(bg_out w)" got-both
	lock_free wr1 S
	lock_free wr2 S
}
