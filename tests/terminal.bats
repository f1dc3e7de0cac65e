#!/usr/bin/env bats
# terminal.bats - rlock run on a real terminal: script(1) gives the command
# a pseudo-terminal, and bytes written to script's input are what a user
# types, so ^C there is the terminal's SIGINT, not a kill(2) from a test.

bats_require_minimum_version 1.5.0
load test_helper

# on_tty ID COMMAND: run COMMAND under script(1) in the background, its
# keyboard being the FIFO $BATS_TEST_TMPDIR/ID.kbd (held open on fd 4).
on_tty() {
	local id=$1
	shift
	mkfifo "$BATS_TEST_TMPDIR/$id.kbd"
	# A non-interactive sh in script's session: no job control, so rlock
	# starts in the terminal's foreground group, as from a login shell.
	(
		exec 3>&-
		rc=0
		timeout 20 script -qec "$*" /dev/null <"$BATS_TEST_TMPDIR/$id.kbd" \
			>"$BATS_TEST_TMPDIR/$id.out" 2>&1 || rc=$?
		echo $rc >"$BATS_TEST_TMPDIR/$id.rc"
	) &
	track_pid $!
	exec 4>"$BATS_TEST_TMPDIR/$id.kbd"
}

# type_keys BYTES: what the user types (printf format).
type_keys() {
	# shellcheck disable=SC2059
	printf "$1" >&4
}

tty_rc() {
	wait_until 15 test -s "$BATS_TEST_TMPDIR/$1.rc"
	exec 4>&-
	cat "$BATS_TEST_TMPDIR/$1.rc"
}

@test "an interactive command reads the terminal through rlock run" {
	on_tty t "$RLOCK run tty-read -- sh -c 'read name; echo \"hello \$name\"; exit 3'"
	type_keys 'bob\n'
	run tty_rc t
	assert_output 3
	run grep -c 'hello bob' "$BATS_TEST_TMPDIR/t.out"
	assert_output 1
	lock_free tty-read
}

@test "Ctrl-C on the terminal reaches the command exactly once" {
	on_tty t "$RLOCK run tty-int -- $SIGCOUNT $BATS_TEST_TMPDIR/got TERM 15 0"
	wait_until 5 file_has got ready
	type_keys '\003'
	wait_until 5 file_has got INT
	# It went to the command's process group, not through rlock as well.
	kill -TERM "$(rlock_pids | head -n1)"
	run tty_rc t
	assert_output 0
	run cat got
	assert_output $'ready\nINT\nTERM'
	lock_free tty-int
}

@test "Ctrl-C on the terminal stops a wait at once and leaves the holder alone" {
	tok=$("$RLOCK" acquire -t 60s tty-wait)
	on_tty t "$RLOCK run tty-wait -- true"
	wait_until 5 has_waiters tty-wait 1
	type_keys '\003'
	run tty_rc t
	assert_output 130
	held_by tty-wait "$tok"
}

@test "a waiter on a terminal shows who holds the lock" {
	tok=$("$RLOCK" acquire -t 60s --label 'nightly report' tty-line)
	on_tty t "$RLOCK run -w 30s tty-line -- echo took-it"
	wait_until 5 grep -q 'waiting for tty-line: held by .* (nightly report)' "$BATS_TEST_TMPDIR/t.out"
	# The place in line in the words of the progress line of a log.
	wait_until 5 grep -q 'waiting for tty-line: held by .* (nightly report) for [^;]*; waited [^;]*; 0 ahead' "$BATS_TEST_TMPDIR/t.out"
	"$RLOCK" release tty-line "$tok"
	run tty_rc t
	assert_output 0
	run grep -c took-it "$BATS_TEST_TMPDIR/t.out"
	assert_output 1
}

@test "Ctrl-Z stops the job in an interactive shell, and fg continues it" {
	on_tty t "bash --norc --noprofile -i"
	type_keys "PS1='\$ '; $RLOCK run tty-stop -- $SIGCOUNT $BATS_TEST_TMPDIR/got TERM 15 5\n"
	wait_until 5 file_has got ready
	type_keys '\032'
	wait_until 5 grep -q 'Stopped' "$BATS_TEST_TMPDIR/t.out"
	# Stopped, the job still holds the lock.
	lock_held tty-stop
	pid=$(rlock_pids | head -n1)
	pid_stopped "$pid"
	type_keys 'fg\n'
	wait_until 5 eval '! pid_stopped "$pid"'
	kill -TERM "$pid"
	type_keys 'echo "status=$?"; exit\n'
	run tty_rc t
	assert_output 0
	run grep -c 'status=5' "$BATS_TEST_TMPDIR/t.out"
	assert_output 1
	lock_free tty-stop
}

@test "acquire waiting on a terminal shows the live line too; NO_COLOR turns it off" {
	tok=$("$RLOCK" acquire -t 60s --label 'db backup' tty-acq)
	on_tty t "$RLOCK acquire -w 30s tty-acq >/dev/null; echo acquired=\$?"
	wait_until 5 grep -q 'waiting for tty-acq: held by .* (db backup)' "$BATS_TEST_TMPDIR/t.out"
	"$RLOCK" release tty-acq "$tok"
	run tty_rc t
	assert_output 0
	run grep -c 'acquired=0' "$BATS_TEST_TMPDIR/t.out"
	assert_output 1

	tok=$("$RLOCK" acquire -t 60s tty-nc)
	on_tty u "NO_COLOR=1 $RLOCK run -w 30s tty-nc -- echo took-it"
	wait_until 5 has_waiters tty-nc 1
	# An absence cannot be polled for: watch the terminal for longer than
	# the line's 1s redraw period, then check nothing was drawn.
	sleep 1.5
	"$RLOCK" release tty-nc "$tok"
	run tty_rc u
	assert_output 0
	run grep -c 'waiting for' "$BATS_TEST_TMPDIR/u.out"
	assert_output 0
	run grep -c took-it "$BATS_TEST_TMPDIR/u.out"
	assert_output 1
}
