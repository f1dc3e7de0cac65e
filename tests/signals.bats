#!/usr/bin/env bats
# signals.bats - signals sent to rlock reach the command, and rlock exits
# with the command's status; a waiting rlock stops waiting at once.

bats_require_minimum_version 1.5.0
load test_helper

# forward SIG: rlock runs sigcount, which exits 42 when it gets SIG.
forward() {
	local sig=$1 pid
	bg_start r "$RLOCK" run -t 10s "fwd-$sig" -- "$SIGCOUNT" "$BATS_TEST_TMPDIR/got" "$sig" 20 42
	pid=$BG_PID
	wait_until 5 file_has got ready
	kill -s "$sig" "$pid"
	bg_wait "$pid" 10
	assert_equal "$BG_STATUS" 42
	run cat got
	assert_output $'ready\n'"$sig"
	lock_free "fwd-$sig"
}

@test "SIGHUP is forwarded to the command" { forward HUP; }
@test "SIGINT is forwarded to the command" { forward INT; }
@test "SIGQUIT is forwarded to the command" { forward QUIT; }
@test "SIGTERM is forwarded to the command" { forward TERM; }
@test "SIGUSR1 is forwarded to the command" { forward USR1; }
@test "SIGUSR2 is forwarded to the command" { forward USR2; }
@test "SIGWINCH is forwarded to the command" { forward WINCH; }

# Changed with issue 35: a second INT or TERM kills the command (below),
# so this sends each of the others twice and ends with the one INT.
@test "every signal is forwarded, as often as it is sent" {
	bg_start r "$RLOCK" run -t 10s many -- "$SIGCOUNT" "$BATS_TEST_TMPDIR/got" INT 20 7
	local pid=$BG_PID sig
	wait_until 5 file_has got ready
	for sig in HUP QUIT USR1 USR2 WINCH HUP QUIT USR1 USR2 WINCH; do
		local n
		n=$(grep -cx "$sig" got || true)
		kill -s "$sig" "$pid"
		wait_until 5 eval "[[ \$(grep -cx $sig got) -gt $n ]]"
	done
	kill -INT "$pid"
	bg_wait "$pid" 10
	assert_equal "$BG_STATUS" 7
	run cat got
	assert_output "$(printf '%s\n' ready HUP QUIT USR1 USR2 WINCH HUP QUIT USR1 USR2 WINCH INT)"
	lock_free many
}

@test "SIGHUP sent twice reaches the command twice, which goes on" {
	bg_start r "$RLOCK" run -t 10s hup2 -- "$SIGCOUNT" "$BATS_TEST_TMPDIR/got" USR1 20 5
	local pid=$BG_PID
	wait_until 5 file_has got ready
	kill -HUP "$pid"
	wait_until 5 file_has got HUP
	kill -HUP "$pid"
	wait_until 5 eval '[[ $(grep -cx HUP got) == 2 ]]'
	pid_alive "$pid"
	lock_held hup2
	kill -USR1 "$pid"
	bg_wait "$pid" 10
	assert_equal "$BG_STATUS" 5
	run cat got
	assert_output "$(printf '%s\n' ready HUP HUP USR1)"
	lock_free hup2
}

# second FIRST THEN: the command records FIRST and goes on (it stops only on
# USR1, never sent); THEN, the second INT or TERM, is not forwarded but
# kills the command's group at once: 137, the lock free, said on stderr.
second() {
	local first=$1 then=$2 pid
	bg_start r "$RLOCK" run -t 10s "two-$first-$then" -- "$SIGCOUNT" "$BATS_TEST_TMPDIR/got" USR1 20 5
	pid=$BG_PID
	wait_until 5 file_has got ready
	kill -s "$first" "$pid"
	wait_until 5 file_has got "$first"
	lock_held "two-$first-$then"
	kill -s "$then" "$pid"
	bg_wait "$pid" 10
	assert_equal "$BG_STATUS" 137
	run cat got
	assert_output "$(printf '%s\n' ready "$first")"
	lock_free "two-$first-$then"
	run bg_err r
	assert_output "rlock: run: two-$first-$then: second SIG$then: killing the command"
}

@test "a second SIGINT kills the command at once and releases" { second INT INT; }
@test "SIGTERM after SIGINT kills the command at once and releases" { second INT TERM; }
@test "SIGINT after SIGTERM kills the command at once and releases" { second TERM INT; }

@test "a second SIGTERM kills the command's whole group, -q says nothing" {
	bg_start r "$RLOCK" -q run -t 10s grp -c 'trap "echo TERM >>got" TERM; sleep 60 & echo $! >kid; while :; do wait; done'
	local pid=$BG_PID kid
	wait_until 5 file_nonempty kid
	kid=$(cat kid)
	track_pid "$kid"
	kill -TERM "$pid"
	wait_until 5 file_has got TERM
	pid_alive "$kid"
	kill -TERM "$pid"
	bg_wait "$pid" 10
	assert_equal "$BG_STATUS" 137
	wait_until 5 pid_gone "$kid"
	lock_free grp
	run bg_err r
	assert_output ""
}

# GitHub Actions cancels a step with SIGINT, SIGTERM 7.5s later and SIGKILL
# 2.5s after that.  A command that ignores INT and TERM outlives the first
# two; the lock must be free before the SIGKILL would come.
@test "the GitHub Actions cancel sequence frees the lock before its SIGKILL" {
	bg_start r "$RLOCK" run -t 30s gha -c 'trap "" INT TERM; echo ready >ready; sleep 60 & echo $! >kid; wait'
	local pid=$BG_PID kid t0
	wait_until 5 file_nonempty kid
	kid=$(cat kid)
	track_pid "$kid"
	lock_held gha
	kill -INT "$pid"
	# The step's own timing, not a synchronisation: 7.5s of a command
	# that ignores SIGINT, still holding the lock.
	sleep 7.5
	pid_alive "$pid"
	pid_alive "$kid"
	lock_held gha
	t0=$(now_ms)
	kill -TERM "$pid"
	wait_until 2.5 lock_free gha
	run "$RLOCK" status gha
	assert_failure 1
	bg_wait "$pid" 2.5
	(($(now_ms) - t0 < 2500)) || fail "rlock still ran 2.5s after SIGTERM"
	assert_equal "$BG_STATUS" 137
	pid_gone "$kid"
	run bg_err r
	assert_output "rlock: run: gha: second SIGTERM: killing the command"
}

@test "a command that dies of a forwarded signal gives 128+N" {
	bg_start r "$RLOCK" run -t 10s die -- sleep 30
	local pid=$BG_PID
	wait_until 5 lock_held die
	kill -TERM "$pid"
	bg_wait "$pid" 10
	assert_equal "$BG_STATUS" 143
	lock_free die
}

@test "signals reach a -c shell command's process" {
	bg_start r "$RLOCK" run -t 10s shc -c "exec '$SIGCOUNT' '$BATS_TEST_TMPDIR/got' USR1 20 5"
	local pid=$BG_PID
	wait_until 5 file_has got ready
	kill -USR1 "$pid"
	bg_wait "$pid" 10
	assert_equal "$BG_STATUS" 5
}

# waiter SIG: a run waiting for a held lock gets SIG; it must stop at once,
# die of that signal and leave the holder's key alone.
waiter() {
	local sig=$1 num=$2 t wpid t0 el
	t=$("$RLOCK" acquire -t 60s "wait-$sig")
	bg_start w "$RLOCK" run -w 60s "wait-$sig" -- touch "$BATS_TEST_TMPDIR/ran"
	wpid=$BG_PID
	wait_until 5 has_waiters "wait-$sig" 1
	t0=$(now_ms)
	kill -s "$sig" "$wpid"
	bg_wait "$wpid" 10
	el=$(($(now_ms) - t0))
	((el < 5000)) || fail "took ${el}ms to stop waiting"
	assert_equal "$BG_STATUS" $((128 + num))
	[[ ! -e ran ]]
	held_by "wait-$sig" "$t"
	wait_until 5 eval "[[ \$(waiters wait-$sig) == 0 ]]"
}

@test "SIGTERM stops a waiting run at once" { waiter TERM 15; }
@test "SIGINT stops a waiting run at once" { waiter INT 2; }
@test "SIGHUP stops a waiting run at once" { waiter HUP 1; }

# A signal rlock was started with ignored (SIGHUP under nohup) stays
# ignored: it neither ends a wait nor is forwarded, and the command inherits
# it ignored.
@test "a SIGHUP ignored at the start (nohup) does not stop a waiting run" {
	local t wpid
	t=$("$RLOCK" acquire -t 60s nohup)
	bg_start w sh -c 'trap "" HUP; exec "$RLOCK" run -w 60s nohup -- touch ran'
	wpid=$BG_PID
	wait_until 5 has_waiters nohup 1
	# Were HUP queued to rlock, it would be read before TERM (the lower
	# number first) and rlock would die of it: 129, not 143.
	kill -HUP "$wpid"
	kill -TERM "$wpid"
	bg_wait "$wpid" 10
	assert_equal "$BG_STATUS" 143
	[[ ! -e ran ]]
	held_by nohup "$t"
}

@test "a SIGHUP ignored at the start (nohup) is ignored by the command too" {
	run -0 --separate-stderr "$CLEANEXEC" sh -c 'trap "" HUP; exec "$RLOCK" run nohup -- "$SIGSTATE"'
	local ign
	ign=$(sed -n 's/^ignored //p' <<<"$output")
	assert_equal "$(printf '%016x' $((0x$ign & ~0x180000000)))" 0000000000000001
	lock_free nohup
}

@test "SIGTERM stops a waiting acquire at once" {
	local t wpid
	t=$("$RLOCK" acquire -t 60s acq)
	bg_start w "$RLOCK" acquire -w 60s acq
	wpid=$BG_PID
	wait_until 5 has_waiters acq 1
	kill -TERM "$wpid"
	bg_wait "$wpid" 5
	assert_equal "$BG_STATUS" 143
	held_by acq "$t"
	run bg_out w
	assert_output ""
}
