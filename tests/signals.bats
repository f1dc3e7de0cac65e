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

@test "every signal is forwarded, as often as it is sent" {
	bg_start r "$RLOCK" run -t 10s many -- "$SIGCOUNT" "$BATS_TEST_TMPDIR/got" TERM 20 7
	local pid=$BG_PID sig
	wait_until 5 file_has got ready
	for sig in HUP INT QUIT USR1 USR2 WINCH HUP INT; do
		local n
		n=$(grep -cx "$sig" got || true)
		kill -s "$sig" "$pid"
		wait_until 5 eval "[[ \$(grep -cx $sig got) -gt $n ]]"
	done
	kill -TERM "$pid"
	bg_wait "$pid" 10
	assert_equal "$BG_STATUS" 7
	run cat got
	assert_output "$(printf '%s\n' ready HUP INT QUIT USR1 USR2 WINCH HUP INT TERM)"
	lock_free many
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
