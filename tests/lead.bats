#!/usr/bin/env bats
# lead.bats - rlock lead: candidates that run for leadership of a lock
# forever.  Exactly one runs its command; a stop, a loss or a crash of the
# leader hands the lead on, never to two at once; --restart, --leader-file,
# systemd's notify socket; usage errors.
#
# Each candidate runs $CAND ID (lead_helper.bash).

bats_require_minimum_version 1.5.0
load test_helper
load lead_helper

setup() {
	rl_setup
	lead_setup
}

@test "lead: of three candidates exactly one runs its command, the first; the others wait in line" {
	candidates 3 -t 5s
	assert_equal "$(nth_start 1)" 1
	wait_until 5 has_waiters L 2
	# The line is there and the leader renews: still one command, the
	# first's, through two renewals (TTL/3).
	local t0
	t0=$(now_ms)
	wait_until 10 eval '(( $(now_ms) - t0 >= 3500 ))'
	assert_equal "$(starts)" 1
	assert_equal "$(running)" 1
	lock_held L
	run --separate-stderr "$RLOCK" status L
	assert_success
	assert_line --partial "lead: $CAND 1"
	assert_line --partial "next: "
}

@test "lead: SIGTERM to the leader stops its command, releases, exits 0; the next starts within 1s and never before the old one ended" {
	# The second starts never before the first ended, within a second of
	# the signal; the third is still in line behind it.
	term_hands_on
}

@test "lead: SIGTERM to a waiting candidate leaves the line and exits 0 at once; the leader goes on" {
	candidates 2 -t 10s
	local t0
	t0=$(now_ms)
	kill -TERM "${PID[2]}"
	bg_wait "${PID[2]}" 5
	assert_equal "$BG_STATUS" 0
	(($(now_ms) - t0 < 1000))
	wait_until 5 eval '[[ $(waiters L) == 0 ]]'
	assert_equal "$(running)" 1
	pid_alive "${PID[1]}"
	run cat c2.err
	assert_output ""
}

@test "lead: the lock key deleted stops the leader's command before it goes back in line; another candidate leads" {
	candidates 3 -t 3s
	local t_del
	t_del=$(now_ms)
	rcli R DEL "$(key L)"
	wait_until 10 grep -q '^end 1 ' "$EVENTS"
	# Before the lease would have ended: it was renewed before the DEL.
	(($(field end 1 3) / 1000 < t_del + 3000))
	wait_until 10 starts_are 2
	[[ $(nth_start 2) != 1 ]]
	# The first is back in line, alive: it never exits on a loss.
	pid_alive "${PID[1]}"
	wait_until 10 grep -q 'L: back in line' c1.err
	run cat c1.err
	assert_line --index 1 "rlock: lead: L: lock lost: the token no longer holds it; command stopped"
	assert_line --index 2 "rlock: lead: L: back in line"
	assert_equal "$(running)" 1
}

@test "lead: SIGKILL of the leader's rlock: its command is gone and another candidate leads within the TTL" {
	candidates 2 -t 2s
	local cmd t_kill start2
	cmd=$(field start 1 5)
	t_kill=$(now_ms)
	kill -KILL "${PID[1]}"
	wait_until 5 pid_gone "$cmd"
	wait_until 5 starts_are 2
	assert_equal "$(nth_start 2)" 2
	start2=$(field start 2 3)
	# The lease ran out (2s from its last renewal, at most 2s ago):
	# the next leads within the TTL, give or take a beat of the line.
	((start2 / 1000 - t_kill < 2500))
	grep -q '^end 1 ' "$EVENTS"
}

@test "lead: SIGHUP to the leader reaches its command; to a waiting candidate it is dropped, and reaches no later command" {
	candidates 2 -t 10s
	kill -HUP "${PID[1]}"
	wait_until 5 grep -qx 'hup 1' "$EVENTS"
	kill -HUP "${PID[2]}"
	kill -TERM "${PID[1]}"
	wait_until 5 starts_are 2
	pid_alive "${PID[2]}"
	# Give a stale HUP every chance to arrive: a TERM after it ends the
	# command, and the log then holds no "hup 2".
	kill -TERM "${PID[2]}"
	bg_wait "${PID[2]}" 5
	assert_equal "$BG_STATUS" 0
	refute grep -qx 'hup 2' "$EVENTS"
}

@test "lead: --restart never exits with the command's status, released" {
	run -3 "$RLOCK" lead --restart never L -- sh -c 'exit 3'
	lock_free L
}

@test "lead: --restart on-failure runs again after a failure, and exits 0 after a success" {
	run -0 "$RLOCK" lead -q --restart on-failure --restart-delay 10ms L -- \
		sh -c 'echo run >>runs; [ $(wc -l <runs) -ge 3 ]'
	run cat runs
	assert_output $'run\nrun\nrun'
	lock_free L
}

@test "lead: --restart always (the default) runs again after a success, --restart-delay apart, and goes back in line behind the others" {
	bg_start c1 "$RLOCK" lead --restart-delay 300ms L -- \
		bash -c 'echo "run 1 ${EPOCHREALTIME/[.,]/}" >>"$EVENTS"'
	local pid=$BG_PID
	wait_until 10 eval '(( $(grep -c "^run 1" "$EVENTS") >= 2 ))'
	local a b
	a=$(awk '/^run 1/ { print $3; exit }' "$EVENTS")
	b=$(awk '/^run 1/ && ++k == 2 { print $3; exit }' "$EVENTS")
	((b - a >= 300000))
	run cat c1.err
	assert_line --index 0 --regexp '^rlock: lead: L: leading \(fence [0-9]+\)$'
	assert_line --index 1 "rlock: lead: L: command exited with status 0; released, back in line in 300ms"
	# A second candidate in line leads after the first's command ends.
	bg_start c2 "$RLOCK" lead L -- "$CAND" 2
	wait_until 10 grep -q '^start 2 ' "$EVENTS"
	kill -TERM "$pid"
	bg_wait "$pid" 5
	assert_equal "$BG_STATUS" 0
}

@test "lead: a server restart stops the leader's command before its lease ends; a candidate leads again once the server is back, with a higher fence" {
	start_redis S
	SRV=S candidates 3 -u "$S_URL" -t 3s
	local t_restart end1 fence2
	t_restart=$(now_ms)
	restart_redis S
	wait_until 10 grep -q '^end 1 ' "$EVENTS"
	end1=$(field end 1 3)
	# Before the lease can have ended: it was renewed before the restart.
	((end1 / 1000 < t_restart + 3000))
	wait_until 15 starts_are 2
	# The server lost the lock with its data: another candidate may take
	# it before the old command has ended (rlock learns of the loss at
	# its next renewal, which the dropped connection brings forward).
	# The new term's fence is higher: a write of the old one is refused.
	fence2=$(awk '$1 == "start" && ++k == 2 { print $4 }' "$EVENTS")
	(($(field start 1 4) < fence2))
	wait_until 5 lock_held L S
	assert_equal "$(running)" 1
	# Every candidate lives on: the others are back in line.
	pid_alive "${PID[1]}"
	pid_alive "${PID[2]}"
	pid_alive "${PID[3]}"
	wait_until 10 has_waiters L 2 S
}

@test "lead: each term is in the history, marked as a leader's" {
	candidates 2 -t 10s
	kill -TERM "${PID[1]}"
	wait_until 5 starts_are 2
	run -0 "$RLOCK" log L
	assert_line --index 0 --partial "acquired  "
	assert_line --index 0 --partial "lead: $CAND 1"
	assert_line --index 1 --partial "released  "
	assert_line --index 2 --partial "lead: $CAND 2"
}

@test "lead: the command has the term's lease in its environment: a nested run of the lock runs at once, re-entrantly" {
	run -0 "$RLOCK" lead --restart never L -- \
		bash -c '[[ $RLOCK_NAME == L && $RLOCK_FENCE =~ ^[0-9]+$ && -n $RLOCK_TOKEN ]] && "$RLOCK" run -w 2s L -- true'
	lock_free L
}

@test "lead: usage errors exit 64" {
	run -64 --separate-stderr "$RLOCK" lead
	assert_usage lead "rlock: lead: missing lock NAME"
	run -64 --separate-stderr "$RLOCK" lead L
	assert_usage lead "rlock: lead: missing COMMAND"
	run -64 --separate-stderr "$RLOCK" lead -- true
	assert_usage lead "rlock: lead: missing lock NAME before '--': rlock lead [OPTION]... NAME -- COMMAND"
	run -64 --separate-stderr "$RLOCK" lead -w 5 L -- true
	assert_usage lead "rlock: lead: -w does not apply: a candidate waits in line until it leads"
	run -64 --separate-stderr "$RLOCK" lead -n L -- true
	assert_usage lead "rlock: lead: -n does not apply: a candidate waits in line until it leads"
	run -64 --separate-stderr "$RLOCK" lead --restart sometimes L -- true
	assert_usage lead "rlock: lead: invalid --restart 'sometimes': always, on-failure or never"
	run -64 --separate-stderr "$RLOCK" lead --restart-delay soon L -- true
	assert_try lead
	run -64 --separate-stderr "$RLOCK" lead --shared L -- true
	assert_try lead
	run -64 --separate-stderr "$RLOCK" lead --leader-file '' L -- true
	assert_usage lead "rlock: lead: invalid --leader-file '': empty path"
	lock_free L
}

# ---- --leader-file -----------------------------------------------------------

@test "lead: --leader-file says fence, since, host and pid while leading, and is removed when the term ends" {
	bg_start c1 "$RLOCK" lead -t 10s --leader-file "$BATS_TEST_TMPDIR/leader1" L -- "$CAND" 1
	local pid1=$BG_PID
	wait_until 10 starts_are 1
	bg_start c2 "$RLOCK" lead -t 10s --leader-file "$BATS_TEST_TMPDIR/leader2" L -- "$CAND" 2
	local pid2=$BG_PID
	wait_until 10 has_waiters L 1
	run cat leader1
	assert_line --index 0 "fence=$(field start 1 4)"
	assert_line --index 1 --regexp '^since=[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}Z$'
	assert_line --index 2 --regexp '^since_ms=[0-9]{13}$'
	assert_line --index 3 "host=$(hostname)"
	assert_line --index 4 "pid=$pid1"
	assert_equal "${#lines[@]}" 5
	# A shell can source it.
	(. ./leader1 && [[ $fence == "$(field start 1 4)" && $pid == "$pid1" ]])
	[[ ! -e leader2 ]]
	kill -TERM "$pid1"
	wait_until 5 starts_are 2
	[[ ! -e leader1 ]]
	wait_until 5 file_has leader2 "fence=$(field start 2 4)"
	# No temporary file is left beside it.
	run ls
	refute_output --partial "leader1."
	refute_output --partial "leader2."
	kill -TERM "$pid2"
	bg_wait "$pid2" 5
	[[ ! -e leader2 ]]
}

@test "lead: after a lost lease the next term writes its own fence to --leader-file" {
	bg_start c1 "$RLOCK" lead -t 3s --leader-file "$BATS_TEST_TMPDIR/leader1" L -- "$CAND" 1
	wait_until 10 starts_are 1
	[[ -s leader1 ]]
	rcli R DEL "$(key L)"
	wait_until 10 grep -q 'L: back in line' c1.err
	# Back in line, then leading again (nobody else runs): a new term,
	# a new fence in the file.
	wait_until 10 starts_are 2
	wait_until 5 file_has leader1 "fence=$(awk '$1 == "start" && ++k == 2 { print $4 }' "$EVENTS")"
}

@test "lead: a --leader-file that cannot be written is said, and the term goes on" {
	bg_start c1 "$RLOCK" lead -t 10s --leader-file "$BATS_TEST_TMPDIR/no/such/dir/leader" L -- "$CAND" 1
	wait_until 10 starts_are 1
	wait_until 5 grep -q 'leader' c1.err
	run cat c1.err
	assert_line --index 0 "rlock: lead: L: cannot write $BATS_TEST_TMPDIR/no/such/dir/leader: No such file or directory"
	assert_equal "$(running)" 1
}

# ---- systemd's notify socket ---------------------------------------------------

# listen ID SOCKET: a datagram socket at SOCKET (a path, or @NAME in the
# abstract namespace) whose messages go to ID.msgs, one a line (a
# message's own newlines as " | ").
listen() {
	local id=$1 sock=$2
	cat >"$BATS_TEST_TMPDIR/listen.py" <<-'EOF'
		import socket, sys
		path, out = sys.argv[1], sys.argv[2]
		s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
		s.bind("\0" + path[1:] if path.startswith("@") else path)
		open(out + ".ready", "w").close()
		while True:
		    d = s.recv(65536).decode("utf-8", "replace")
		    with open(out, "a") as f:
		        f.write(d.rstrip("\n").replace("\n", " | ") + "\n")
	EOF
	bg_start "listen-$id" python3 "$BATS_TEST_TMPDIR/listen.py" "$sock" "$BATS_TEST_TMPDIR/$id.msgs"
	wait_until 5 test -e "$BATS_TEST_TMPDIR/$id.msgs.ready"
}

@test "lead: with NOTIFY_SOCKET, READY=1 once in line and STATUS= says who leads; the command does not inherit the socket" {
	listen n1 "$BATS_TEST_TMPDIR/n1.sock"
	listen n2 "@rlock-lead-test-$$-$BATS_TEST_NUMBER"
	NOTIFY_SOCKET=$BATS_TEST_TMPDIR/n1.sock bg_start c1 "$RLOCK" lead -t 10s L -- \
		bash -c 'echo "notify=${NOTIFY_SOCKET-unset}" >>"$EVENTS"; exec "$0" 1' "$CAND"
	local pid1=$BG_PID
	wait_until 10 starts_are 1
	NOTIFY_SOCKET="@rlock-lead-test-$$-$BATS_TEST_NUMBER" bg_start c2 "$RLOCK" lead -t 10s L -- "$CAND" 2
	local pid2=$BG_PID
	wait_until 10 file_has n2.msgs "STATUS=standby: led by $(id -un)@$(hostname) pid $pid1"
	run cat n1.msgs
	assert_line --index 0 "READY=1"
	assert_line --index 1 --regexp "^STATUS=leading \(fence $(field start 1 4)\) since [0-9-]{10}T[0-9:]{8}Z$"
	run cat n2.msgs
	assert_line --index 0 "READY=1"
	assert_line --index 1 "STATUS=standby: led by $(id -un)@$(hostname) pid $pid1"
	grep -qx 'notify=unset' "$EVENTS"
	kill -TERM "$pid1"
	wait_until 5 starts_are 2
	wait_until 5 grep -q '^STATUS=leading (fence' n2.msgs
	wait_until 5 file_has n1.msgs "STOPPING=1"
	run cat n1.msgs
	assert_line --index 2 "STATUS=standby: in line"
	assert_line --index 3 "STOPPING=1"
	# READY=1 was said once.
	assert_equal "$(grep -c READY=1 n2.msgs)" 1
}

# count_of FILE LINE: how many lines of FILE are LINE.
count_of() { grep -cx -- "$2" "$1" || true; }

@test "lead: with WATCHDOG_USEC, WATCHDOG=1 every half period while leading and while in line; not for another pid's; the command does not see WATCHDOG_USEC" {
	listen n1 "$BATS_TEST_TMPDIR/n1.sock"
	listen n2 "$BATS_TEST_TMPDIR/n2.sock"
	listen n3 "$BATS_TEST_TMPDIR/n3.sock"
	NOTIFY_SOCKET=$BATS_TEST_TMPDIR/n1.sock WATCHDOG_USEC=400000 bg_start c1 "$RLOCK" lead -t 10s L -- \
		bash -c 'echo "dog=${WATCHDOG_USEC-unset}" >>"$EVENTS"; exec "$0" 1' "$CAND"
	wait_until 10 starts_are 1
	NOTIFY_SOCKET=$BATS_TEST_TMPDIR/n2.sock WATCHDOG_USEC=400000 bg_start c2 "$RLOCK" lead -t 10s L -- "$CAND" 2
	NOTIFY_SOCKET=$BATS_TEST_TMPDIR/n3.sock WATCHDOG_USEC=400000 WATCHDOG_PID=1 bg_start c3 "$RLOCK" lead -t 10s L -- "$CAND" 3
	wait_until 10 has_waiters L 2
	local a b
	a=$(count_of n1.msgs WATCHDOG=1) b=$(count_of n2.msgs WATCHDOG=1)
	# Every 200ms: five times more within a second or so.
	wait_until 10 eval '(( $(count_of n1.msgs WATCHDOG=1) >= a + 5 && $(count_of n2.msgs WATCHDOG=1) >= b + 5 ))'
	wait_until 5 file_has n3.msgs READY=1
	assert_equal "$(count_of n3.msgs WATCHDOG=1)" 0
	grep -qx 'dog=unset' "$EVENTS"
}

# ---- --standby -----------------------------------------------------------------

# $SB ID: a standby command: "start ID PID NAME FENCE" when it starts,
# "usr1 ID US", "usr2 ID US" for each promotion and demotion, "term ID US"
# at the SIGTERM that ends it.  Perl, not bash: a demotion followed at once
# by the SIGTERM of a stop must be seen in the order sent, and bash, given
# USR2 and TERM together, runs the TERM trap (which exits) and never the
# USR2 one; perl runs its handlers in the order of the signals' numbers.
standby_cmd() {
	SB=$BATS_TEST_TMPDIR/sb
	cat >"$SB" <<-'EOF'
		#!/usr/bin/perl
		use strict;
		use warnings;
		use Time::HiRes qw(time);
		my $id = shift;
		sub rec {
			open(my $f, '>>', $ENV{EVENTS}) or die "$ENV{EVENTS}: $!";
			print $f "@_\n";
			close $f;
		}
		sub us { sprintf('%.0f', time() * 1e6) }
		$SIG{USR1} = sub { rec('usr1', $id, us()) };
		$SIG{USR2} = sub { rec('usr2', $id, us()) };
		$SIG{HUP} = sub { rec('hup', $id) };
		$SIG{TERM} = sub { rec('term', $id, us()); exit 0 };
		rec('start', $id, $$, $ENV{RLOCK_NAME} // '', $ENV{RLOCK_FENCE} // 'nofence');
		sleep 1 while 1;
	EOF
	chmod +x "$SB"
}
promoted() { grep -q "^usr1 $1 " "$EVENTS"; }

@test "lead --standby: every candidate's command starts at once; the leader's alone gets USR1" {
	standby_cmd
	bg_start c1 "$RLOCK" lead --standby -t 10s L -- "$SB" 1
	wait_until 10 promoted 1
	bg_start c2 "$RLOCK" lead --standby -t 10s L -- "$SB" 2
	bg_start c3 "$RLOCK" lead --standby -t 10s L -- "$SB" 3
	wait_until 10 has_waiters L 2
	wait_until 5 eval '[[ $(grep -c "^start " "$EVENTS") == 3 ]]'
	grep -qx "start 2 [0-9]* L nofence" "$EVENTS"
	assert_equal "$(grep -c '^usr' "$EVENTS")" 1
}

@test "lead --standby: SIGTERM to the leader demotes its command (USR2) before the next is promoted (USR1), then stops it and exits 0" {
	standby_cmd
	bg_start c1 "$RLOCK" lead --standby -t 10s L -- "$SB" 1
	local pid1=$BG_PID
	wait_until 10 promoted 1
	bg_start c2 "$RLOCK" lead --standby -t 10s L -- "$SB" 2
	local pid2=$BG_PID
	wait_until 10 has_waiters L 1
	kill -TERM "$pid1"
	wait_until 5 promoted 2
	bg_wait "$pid1" 5
	assert_equal "$BG_STATUS" 0
	local demoted1 promoted2
	demoted1=$(field usr2 1 3)
	promoted2=$(field usr1 2 3)
	[[ -n $demoted1 ]] || { cat "$EVENTS" >&2; false; }
	((demoted1 < promoted2))
	grep -q '^term 1 ' "$EVENTS"
	# The new leader's command had been running all along: not restarted.
	assert_equal "$(grep -c '^start 2 ' "$EVENTS")" 1
	pid_alive "$pid2"
}

@test "lead --standby: a stop's demotion is taken by the command before its SIGTERM comes (a bash command with USR2 and TERM traps logs both, in order)" {
	# Bash given USR2 and TERM together runs the TERM trap, which exits,
	# and never the USR2 one: rlock waits until the USR2 is taken.
	cat >sbb <<-'EOF'
		#!/bin/bash
		trap 'echo "usr1 ${EPOCHREALTIME/[.,]/}" >>"$EVENTS"' USR1
		trap 'echo "usr2 ${EPOCHREALTIME/[.,]/}" >>"$EVENTS"' USR2
		trap 'echo "term ${EPOCHREALTIME/[.,]/}" >>"$EVENTS"; exit 0' TERM
		while :; do
			sleep 1 &
			wait $!
		done
	EOF
	chmod +x sbb
	bg_start c1 "$RLOCK" lead --standby -t 10s L -- ./sbb
	local pid1=$BG_PID
	wait_until 10 grep -q '^usr1 ' "$EVENTS"
	kill -TERM "$pid1"
	bg_wait "$pid1" 5
	assert_equal "$BG_STATUS" 0
	run cut -d' ' -f1 "$EVENTS"
	assert_output $'usr1\nusr2\nterm'
}

@test "lead --standby: a lost lease demotes the command, which runs on, and the candidate goes back in line" {
	standby_cmd
	bg_start c1 "$RLOCK" lead --standby -t 3s L -- "$SB" 1
	local pid1=$BG_PID
	wait_until 10 promoted 1
	local cmd1
	cmd1=$(field start 1 3)
	bg_start c2 "$RLOCK" lead --standby -t 3s L -- "$SB" 2
	wait_until 10 has_waiters L 1
	rcli R DEL "$(key L)"
	wait_until 10 grep -q '^usr2 1 ' "$EVENTS"
	wait_until 10 grep -q 'L: back in line' c1.err
	run cat c1.err
	assert_line "rlock: lead: L: lock lost: the token no longer holds it; command demoted"
	pid_alive "$cmd1"
	refute grep -q '^term 1 ' "$EVENTS"
	pid_alive "$pid1"
}

@test "lead --standby: --promote and --demote name the signals; HUP reaches a waiting candidate's command" {
	standby_cmd
	bg_start c1 "$RLOCK" lead --standby --promote USR2 --demote SIGUSR1 -t 10s L -- "$SB" 1
	local pid1=$BG_PID
	wait_until 10 grep -q '^usr2 1 ' "$EVENTS"
	kill -TERM "$pid1"
	wait_until 5 grep -q '^usr1 1 ' "$EVENTS"
	bg_wait "$pid1" 5
	assert_equal "$BG_STATUS" 0
	# A waiting candidate: HUP to its command, which runs on, in line.
	bg_start c2 "$RLOCK" lead --standby -t 10s L -- "$SB" 2
	wait_until 10 promoted 2
	bg_start c3 "$RLOCK" lead --standby -t 10s L -- "$SB" 3
	local pid3=$BG_PID
	wait_until 10 has_waiters L 1
	wait_until 5 grep -q '^start 3 ' "$EVENTS"
	kill -HUP "$pid3"
	wait_until 5 grep -qx 'hup 3' "$EVENTS"
	wait_until 5 has_waiters L 1
	pid_alive "$pid3"
	run -64 --separate-stderr "$RLOCK" lead --promote USR1 L -- true
	assert_usage lead "rlock: lead: --promote and --demote need --standby"
	run -64 --separate-stderr "$RLOCK" lead --standby --demote BOGUS L -- true
	assert_usage lead "rlock: lead: invalid --demote 'BOGUS': a signal such as USR1, HUP or a number"
}

@test "lead --standby: a command that exits is released and started again (--restart always), or ends the candidate (--restart never)" {
	# sh never catches USR1: it is sent a quarter of the TTL after the
	# grant, when sh has long exited.
	run -5 "$RLOCK" lead --standby --restart never -t 1s L -- sh -c 'exit 5'
	lock_free L
	bg_start c1 "$RLOCK" lead --standby --restart-delay 10ms L -- \
		sh -c 'echo run >>"$EVENTS"; exec sleep 0.2'
	wait_until 10 eval '(( $(grep -c "^run" "$EVENTS") >= 3 ))'
}

# ---- hooks ---------------------------------------------------------------------

@test "lead --standby: --on-demote of the old leader has finished before --on-promote of the new one starts; hooks have the term's fence" {
	standby_cmd
	local promote='echo "promote-hook $ID ${EPOCHREALTIME/[.,]/} $RLOCK_FENCE" >>"$EVENTS"'
	local demote='sleep 0.3; echo "demote-hook $ID ${EPOCHREALTIME/[.,]/} $RLOCK_FENCE" >>"$EVENTS"'
	ID=1 bg_start c1 "$RLOCK" lead --standby -t 10s --on-promote "bash -c '$promote'" \
		--on-demote "bash -c '$demote'" L -- "$SB" 1
	local pid1=$BG_PID
	wait_until 10 grep -q '^promote-hook 1 ' "$EVENTS"
	ID=2 bg_start c2 "$RLOCK" lead --standby -t 10s --on-promote "bash -c '$promote'" \
		--on-demote "bash -c '$demote'" L -- "$SB" 2
	wait_until 10 has_waiters L 1
	kill -TERM "$pid1"
	wait_until 5 grep -q '^promote-hook 2 ' "$EVENTS"
	local down up f1
	down=$(field demote-hook 1 3)
	up=$(field promote-hook 2 3)
	[[ -n $down ]]
	((down < up))
	f1=$(field promote-hook 1 4)
	[[ $f1 =~ ^[0-9]+$ ]]
	assert_equal "$(field demote-hook 1 4)" "$f1"
	(($(field promote-hook 2 4) > f1))
}

@test "lead: a hook still running after --hook-timeout is killed and said; the term goes on" {
	bg_start c1 "$RLOCK" lead -t 10s --hook-timeout 200ms --on-promote 'sleep 100' L -- "$CAND" 1
	wait_until 10 starts_are 1
	run cat c1.err
	assert_line --index 1 "rlock: lead: L: --on-promote killed: still running after 200 ms"
	assert_equal "$(running)" 1
}

@test "lead: a failing --on-demote is said, and the lock is released all the same" {
	run -0 --separate-stderr "$RLOCK" lead --restart never --on-demote 'exit 3' L -- true
	assert_stderr_line "rlock: lead: L: --on-demote failed: exit status 3"
	lock_free L
}

# ---- --health ------------------------------------------------------------------

@test "lead: --health keeps a failing candidate out of line, even from a free lock, until it passes" {
	bg_start c1 "$RLOCK" lead -t 10s --health 'test -e ok1' --health-every 100ms L -- "$CAND" 1
	wait_until 5 grep -q 'L: health check fails; out of line until it passes' c1.err
	lock_free L
	assert_equal "$(starts)" 0
	: >ok1
	wait_until 5 starts_are 1
	run cat c1.err
	assert_line --index 1 "rlock: lead: L: health check passes; back in line"
}

@test "lead: a leader whose --health fails --health-fails times in a row steps down (recorded with the reason) and runs again once it passes" {
	: >ok1
	bg_start c1 "$RLOCK" lead -t 10s --health 'test -e ok1' --health-every 100ms --health-fails 2 L -- "$CAND" 1
	local pid1=$BG_PID
	wait_until 10 starts_are 1
	bg_start c2 "$RLOCK" lead -t 10s L -- "$CAND" 2
	wait_until 10 has_waiters L 1
	rm ok1
	wait_until 5 starts_are 2
	assert_equal "$(nth_start 2)" 2
	# Stopped before the next started.
	(($(field start 2 3) > $(field end 1 3)))
	wait_until 5 grep -q 'out of line until it passes' c1.err
	run cat c1.err
	assert_line --index 1 "rlock: lead: L: stepped down: --health failed 2 times in a row; command stopped"
	assert_line --index 2 "rlock: lead: L: health check fails; out of line until it passes"
	assert_equal "$(waiters L)" 0
	# One event ends the term, a step-down with its reason, before the
	# next term's grant; no loss, no release of its own.
	run -0 "$RLOCK" log L
	assert_line --index 0 --regexp "^.{19}  acquired  .* pid ${pid1}  fence .*lead: $CAND 1\$"
	assert_line --index 1 --regexp "^.{19}  stepped-down  .* pid ${pid1}  fence .*  exit 0  \(--health failed 2 times in a row\)\$"
	assert_line --index 2 --regexp "  acquired  .*lead: $CAND 2\$"
	assert_equal "${#lines[@]}" 3
	run -0 "$RLOCK" log --json L
	assert_line --index 1 --regexp '^\{"event":"stepped-down",.*"exit":0,"signal":null,"reason":"--health failed 2 times in a row",'
	run -0 "$RLOCK" status --json L
	json_check "$output" 'd["locks"][0]["last"]["event"] == "stepped-down" and d["locks"][0]["last"]["reason"] == "--health failed 2 times in a row"'
	run -0 "$RLOCK" last L
	assert_line --index 0 --regexp "^L: led by .* pid [0-9]+ \(fence [0-9]+\) since "
	assert_line --index 1 --regexp "^L: last run ended .* ago on .* pid ${pid1}\): stepped down \(--health failed 2 times in a row\) after [0-9.]+m?s\$"
	: >ok1
	wait_until 5 has_waiters L 1
	pid_alive "$pid1"
}

@test "lead --standby: a leader whose --health fails is demoted (USR2), its command runs on, and the next is promoted" {
	standby_cmd
	: >ok1
	bg_start c1 "$RLOCK" lead --standby -t 10s --health 'test -e ok1' --health-every 100ms --health-fails 1 L -- "$SB" 1
	wait_until 10 promoted 1
	bg_start c2 "$RLOCK" lead --standby -t 10s L -- "$SB" 2
	wait_until 10 has_waiters L 1
	rm ok1
	wait_until 5 promoted 2
	(($(field usr2 1 3) < $(field usr1 2 3)))
	pid_alive "$(field start 1 3)"
	refute grep -q '^term 1 ' "$EVENTS"
}

@test "lead: a candidate in line whose --health starts failing leaves the line, is not promoted while it fails, and rejoins once it passes" {
	: >ok2
	bg_start c1 "$RLOCK" lead -t 10s L -- "$CAND" 1
	local pid1=$BG_PID
	wait_until 10 starts_are 1
	bg_start c2 "$RLOCK" lead -t 10s --health 'test -e ok2' --health-every 100ms L -- "$CAND" 2
	local pid2=$BG_PID
	wait_until 10 has_waiters L 1
	rm ok2
	wait_until 5 grep -q 'L: health check fails; out of line until it passes' c2.err
	wait_until 5 eval '[[ $(waiters L) == 0 ]]'
	# The leader goes: the lock is free, and the unwell candidate does
	# not take it.
	kill -TERM "$pid1"
	bg_wait "$pid1" 5
	assert_equal "$BG_STATUS" 0
	lock_free L
	local t0
	t0=$(now_ms)
	wait_until 5 eval '(( $(now_ms) - t0 >= 500 ))'
	lock_free L
	assert_equal "$(starts)" 1
	: >ok2
	wait_until 5 starts_are 2
	assert_equal "$(nth_start 2)" 2
	run cat c2.err
	assert_line --index 0 "rlock: lead: L: health check fails; out of line until it passes"
	assert_line --index 1 "rlock: lead: L: health check passes; back in line"
	assert_line --index 2 --regexp "^rlock: lead: L: leading \(fence [0-9]+\)$"
	pid_alive "$pid2"
}

@test "lead: SIGTERM to a candidate whose --health check runs ends the check and exits 0 at once" {
	bg_start c1 "$RLOCK" lead -t 10s --health 'touch checking; sleep 8' --health-every 20s L -- "$CAND" 1
	local pid1=$BG_PID t0
	wait_until 5 test -e checking
	t0=$(now_ms)
	kill -TERM "$pid1"
	bg_wait "$pid1" 5
	assert_equal "$BG_STATUS" 0
	(($(now_ms) - t0 < 1000))
	assert_equal "$(starts)" 0
	run cat c1.err
	assert_output ""
}

@test "lead --standby: a candidate in line whose --health fails leaves the line, its command running and never promoted while it fails; it rejoins once it passes" {
	standby_cmd
	: >ok2
	bg_start c1 "$RLOCK" lead --standby -t 10s L -- "$SB" 1
	local pid1=$BG_PID
	wait_until 10 promoted 1
	bg_start c2 "$RLOCK" lead --standby -t 10s --health 'test -e ok2' --health-every 100ms L -- "$SB" 2
	wait_until 10 has_waiters L 1
	# Its checks pass and end (SIGCHLD): it keeps its place meanwhile.
	local t0
	t0=$(now_ms)
	wait_until 5 eval '(( $(now_ms) - t0 >= 500 ))'
	assert_equal "$(waiters L)" 1
	rm ok2
	wait_until 5 eval '[[ $(waiters L) == 0 ]]'
	kill -TERM "$pid1"
	bg_wait "$pid1" 5
	assert_equal "$BG_STATUS" 0
	lock_free L
	t0=$(now_ms)
	wait_until 5 eval '(( $(now_ms) - t0 >= 500 ))'
	lock_free L
	refute promoted 2
	: >ok2
	wait_until 5 promoted 2
	assert_equal "$(grep -c '^start 2 ' "$EVENTS")" 1
}

# ---- seen from outside ---------------------------------------------------------

@test "lead: last says who leads and since when; last --prometheus has rlock_leader_info (labels escaped), rlock_leader_since_seconds and rlock_leader_fence; no sample once nobody leads" {
	USER=$'we"i\\rd\xff' bg_start c1 "$RLOCK" lead -t 10s L -- "$CAND" 1
	local pid1=$BG_PID fence1 since t0
	t0=$(now_ms)
	wait_until 10 starts_are 1
	fence1=$(field start 1 4)
	run -0 --separate-stderr "$RLOCK" last L
	assert_line --index 0 --regexp "^L: led by we\"i\\\\\\\\rd\\\\xff@[^ ]+ pid ${pid1} \\(fence ${fence1}\\) since [0-9-]{10} [0-9:]{8}, [0-9.]+m?s ago\$"
	assert_line --index 1 "L: never ran"
	run -0 --separate-stderr "$RLOCK" last --json L
	json_check "$output" 'd["leader"]["pid"] == int(a[0]) and d["leader"]["fence"] == int(a[1]) and d["leader"]["command"].startswith("lead: ") and d["last"] is None' -- "$pid1" "$fence1"
	run -0 --separate-stderr "$RLOCK" last --prometheus L M
	assert_line --regexp "^rlock_leader_info\\{lock=\"L\",host=\"[^\"]+\",user=\"we\\\\\"i\\\\\\\\rd$(printf '\xef\xbf\xbd')\",pid=\"${pid1}\"\\} 1\$"
	assert_line "rlock_leader_fence{lock=\"L\"} $fence1"
	since=$(sed -n 's/^rlock_leader_since_seconds{lock="L"} \([0-9]*\)\.[0-9]\{3\}$/\1/p' <<<"$output")
	# The term began within this test, by the server's clock.
	((since * 1000 >= t0 - 2000 && since * 1000 <= $(now_ms) + 2000))
	refute_line --partial 'lock="M"'
	kill -TERM "$pid1"
	bg_wait "$pid1" 5
	run -0 --separate-stderr "$RLOCK" last L
	refute_line --partial "led by"
	assert_line --index 0 --regexp '^L: last run ended .*: exit 0 after '
	run -0 --separate-stderr "$RLOCK" last --prometheus L
	refute_line --regexp '^rlock_leader'
	assert_line '# TYPE rlock_leader_info gauge'
	run -0 --separate-stderr "$RLOCK" last --json L
	json_check "$output" '"leader" not in d and d["last"]["event"] == "released"'
}

@test "lead: a candidate handed the lead by the release confirms its grant to the TTL before promoting: a hook longer than the short first lease still runs under the lock" {
	local hook='sleep 2.8; if [ "$(redis-cli -p '"$R_PORT"' GET "$RLOCK_KEY")" = "$RLOCK_TOKEN" ]; then echo held; else echo lost; fi >>hook.seen'
	bg_start c1 "$RLOCK" lead -t 9s L -- "$CAND" 1
	local pid1=$BG_PID
	wait_until 10 eval '[[ $(meta L pid) == "$pid1" ]]'
	bg_start c2 "$RLOCK" lead -t 9s --hook-timeout 10s --on-promote "$hook" L -- "$CAND" 2
	wait_until 10 has_waiters L 1
	# The release hands c2 the lock with a first lease of 2.4s
	# (LINE_LEASE_MS and the margin of a 9s TTL): the hook, within its
	# limit of a third of the TTL, outlasts it.
	kill -TERM "$pid1"
	wait_until 15 test -s hook.seen
	assert_equal "$(cat hook.seen)" held
}
