#!/usr/bin/env bats
# nest.bats - a run inside a run (docs/design.md#re-entrancy): a hold
# names exactly one lock (its server, db, prefix and name: the token in
# RLOCK_HELD, confirmed by the server), a nested run's command is stopped
# with the holder's when that one loses the lock, and the nested run then
# ends as a loss; a nested --once-per skips a period already done.  Two
# servers, R and S, started once for the file.

bats_require_minimum_version 1.5.0
load test_helper

setup_file() {
	rl_setup_file
	# S answers on 127.0.0.2 too: another URL of the same server.
	start_redis S --bind 127.0.0.1 127.0.0.2
}

# ---- a loss reaches the nested run's command ------------------------------

# The outer run's command: a shell that waits for the nested run and
# writes its exit status to inner.rc; a trap (not an ignore, which the
# nested run and its command would inherit) keeps it alive through the
# holder's SIGTERM.
outer_cmd() {
	printf '%s' 'trap "echo term >outer.trap" TERM; '"$1"'; echo $? >inner.rc'
}

@test "the outer run's loss stops the nested run's command and everything it started; the nested run exits 76" {
	bg_start outer "$RLOCK" run -t 3s nl -- sh -c "$(outer_cmd \
		'"$RLOCK" run nl -- sh -c "sleep 60 & echo \$! >sleep.pid; wait"')"
	local pid=$BG_PID spid t0
	wait_until 5 file_nonempty sleep.pid
	spid=$(<sleep.pid)
	pid_alive "$spid"
	# The lock is lost (a restart without persistence would do the same),
	# and another client takes it.
	rcli R DEL "$(key nl)" >/dev/null
	rcli R SET "$(key nl)" someone-else >/dev/null
	t0=$(now_ms)
	# Stopped at the outer run's next renewal (a third of 3s), well
	# within the lease: never through the next holder's hold.
	wait_until 5 pid_gone "$spid"
	bg_wait "$pid" 10
	assert_equal "$BG_STATUS" 76
	assert_equal "$(<inner.rc)" 76
	run -0 grep -c "lock lost" "$BATS_TEST_TMPDIR/outer.err"
	assert_output 2
	grep -qF "rlock: run: nl: lock lost: the hold of this process tree ended while the command ran" outer.err
	held_by nl someone-else
}

@test "a nested run's command that ignores SIGTERM is killed with the holder's group before the lease ends" {
	bg_start outer "$RLOCK" run -t 3s -k 60s nk -- sh -c "$(outer_cmd \
		'"$RLOCK" run nk -- sh -c "trap \"\" TERM; echo \$\$ >work.pid; while :; do sleep 0.05; done"')"
	local pid=$BG_PID wpid
	wait_until 5 file_nonempty work.pid
	wpid=$(<work.pid)
	# The server stops answering the renewals: the lease runs out on the
	# holder's clock, and the group is killed before it does (-k 60s is
	# longer than that).
	rcli R CLIENT PAUSE 6000 WRITE >/dev/null
	wait_until 5 pid_gone "$wpid"
	rcli R CLIENT UNPAUSE >/dev/null
	bg_wait "$pid" 15
	assert_equal "$BG_STATUS" 76
}

@test "three runs deep, the innermost command is stopped by the outermost holder's loss" {
	bg_start outer "$RLOCK" run -t 3s n3 -- sh -c "$(outer_cmd \
		'"$RLOCK" run n3 -- "$RLOCK" run n3 -- sh -c "sleep 60 & echo \$! >sleep.pid; wait"')"
	local pid=$BG_PID spid
	wait_until 5 file_nonempty sleep.pid
	spid=$(<sleep.pid)
	rcli R DEL "$(key n3)" >/dev/null
	wait_until 5 pid_gone "$spid"
	bg_wait "$pid" 10
	assert_equal "$BG_STATUS" 76
	assert_equal "$(<inner.rc)" 76
}

@test "a nested run whose command ends while the hold stands exits with the command's status and leaves the lock" {
	run -0 --separate-stderr "$RLOCK" run nok -- sh -c '
		"$RLOCK" run nok -- sh -c "exit 7"; echo "inner=$?"
		[ "$(redis-cli -u "$RLOCK_URL" GET "$RLOCK_KEY")" = "$RLOCK_TOKEN" ] && echo still-held'
	assert_line inner=7
	assert_line still-held
	lock_free nok
}

# ---- a hold names one lock: server, db, prefix -----------------------------

@test "the same name on another server is taken as usual: busy there gives 75 and no command" {
	local ts
	ts=$("$RLOCK" -u "$S_URL" acquire deploy)
	run -0 --separate-stderr "$RLOCK" run deploy -- sh -c \
		'"$RLOCK" -u "$1" run -n deploy -- touch ran; echo "inner=$?"' - "$S_URL"
	assert_line inner=75
	[[ ! -e ran ]]
	held_by deploy "$ts" S
	grep -qF "rlock: run: deploy: held by" <<<"$stderr"
}

@test "the same name on another server, free there, is taken and released there by the nested run" {
	run -0 --separate-stderr "$RLOCK" run deploy2 -- sh -c '
		outer=$RLOCK_TOKEN
		"$RLOCK" -u "$1" run -n deploy2 -- sh -c "
			[ \"\$(redis-cli -u \"\$1\" GET \"\$RLOCK_KEY\")\" = \"\$RLOCK_TOKEN\" ] && echo held-on-S
			[ \"\$RLOCK_TOKEN\" != \"$outer\" ] && echo own-token" - "$1"' - "$S_URL"
	assert_line held-on-S
	assert_line own-token
	lock_free deploy2 S
	lock_free deploy2
}

@test "the same name in another db of the same server is taken as usual" {
	local ts
	ts=$("$RLOCK" -u "$R_URL/1" acquire dbl)
	run -0 --separate-stderr "$RLOCK" run dbl -- sh -c \
		'"$RLOCK" -u "$1/1" run -n dbl -- touch ran; echo "inner=$?"' - "$R_URL"
	assert_line inner=75
	[[ ! -e ran ]]
	[[ $(rcli R -n 1 GET "$(key dbl)") == "$ts" ]]
}

@test "the same name under another prefix is taken as usual" {
	local ts
	ts=$(RLOCK_PREFIX="${RLOCK_PREFIX}b:" "$RLOCK" acquire pfx)
	run -0 --separate-stderr "$RLOCK" run pfx -- sh -c \
		'"$RLOCK" --prefix "${RLOCK_PREFIX}b:" run -n pfx -- touch ran; echo "inner=$?"'
	assert_line inner=75
	[[ ! -e ran ]]
	[[ $(rcli R GET "${RLOCK_PREFIX}b:{pfx}") == "$ts" ]]
}

@test "another URL of the same server (127.0.0.2) is the same lock: the nested run runs at once" {
	run -0 --separate-stderr "$RLOCK" -u "$S_URL" run alias -- sh -c \
		'"$RLOCK" -u "redis://127.0.0.2:$1" run -n alias -- touch ran; echo "inner=$?"' - "$S_PORT"
	assert_line inner=0
	[[ -e ran ]]
	lock_free alias S
}

@test "an RLOCK_HELD entry of a live ancestor with a token that does not hold the lock is no hold" {
	# The outer run holds the lock; its child forges its own entry, with
	# the outer's pid and start but another token: the nested run must
	# ask the server, and -n then finds the lock busy.
	run -0 --separate-stderr "$RLOCK" run forged -- sh -c '
		me=$(printf "%s" "$RLOCK_HELD" | cut -f3)
		RLOCK_HELD=$(printf "%s\tx\t%s\t%s" "$RLOCK_KEY" "$me" 0123456789abcdef0123456789abcdef)
		export RLOCK_HELD
		"$RLOCK" run -n forged -- touch ran; echo "inner=$?"'
	assert_line inner=75
	[[ ! -e ran ]]
}

@test "RLOCK_HELD entries are KEY, KIND, PID:START and the token" {
	run -0 --separate-stderr "$RLOCK" run -t 5s envh -- sh -c '
		printf "%s\n" "$RLOCK_HELD" |
			grep -qxF "$RLOCK_KEY	x	$PPID:$(cut -d" " -f22 /proc/$PPID/stat)	$RLOCK_TOKEN" &&
			echo held-ok'
	assert_line held-ok
}

# ---- kinds -------------------------------------------------------------------

@test "a nested shared run inside a shared hold, and a semaphore's inside its own, run at once" {
	run -0 --separate-stderr "$RLOCK" run -s sh1 -- \
		"$RLOCK" run -n -s sh1 -- sh -c 'echo inner-shared'
	assert_output inner-shared
	run -0 --separate-stderr "$RLOCK" run -l 2 sem1 -- \
		"$RLOCK" run -n -l 2 sem1 -- sh -c 'echo inner-sem'
	assert_output inner-sem
}

@test "a nested shared run loses with its shared holder" {
	bg_start outer "$RLOCK" run -s -t 3s shl -- sh -c "$(outer_cmd \
		'"$RLOCK" run -s shl -- sh -c "sleep 60 & echo \$! >sleep.pid; wait"')"
	local pid=$BG_PID spid
	wait_until 5 file_nonempty sleep.pid
	spid=$(<sleep.pid)
	rcli R DEL "$(key shl):holders" >/dev/null
	wait_until 5 pid_gone "$spid"
	bg_wait "$pid" 10
	assert_equal "$BG_STATUS" 76
	assert_equal "$(<inner.rc)" 76
}

@test "a nested --with run of the set held runs at once; of a set held on another server, as usual" {
	run -0 --separate-stderr "$RLOCK" run --with wb wa -- sh -c '
		"$RLOCK" run -n --with wb wa -- touch ran1; echo "inner1=$?"
		"$RLOCK" -u "$1" run -n --with wb wa -- sh -c "echo \$RLOCK_LOCKS >ran2"; echo "inner2=$?"' - "$S_URL"
	assert_line inner1=0
	assert_line inner2=0
	[[ -e ran1 ]]
	assert_equal "$(<ran2)" 2
	lock_free wa S
	lock_free wa
}

# ---- --once-per ----------------------------------------------------------------

@test "a nested --once-per run in a period already done skips with 75" {
	run -0 "$RLOCK" run --once-per 1h op -- true
	run -0 --separate-stderr "$RLOCK" run op -- sh -c \
		'"$RLOCK" run --once-per 1h op -- touch ran; echo "inner=$?"'
	assert_line inner=75
	[[ ! -e ran ]]
	grep -qE "^rlock: run: op: done this period by .* pid [0-9]+ at .*; the next period starts " <<<"$stderr"
	# -E chooses the code, as for the outermost run's skip.
	run -0 --separate-stderr "$RLOCK" run op -- sh -c \
		'"$RLOCK" run -E 3 -q --once-per 1h op -- touch ran; echo "inner=$?"'
	assert_line inner=3
	assert_equal "$stderr" ""
}

@test "a nested --once-per run in a period not done runs" {
	run -0 --separate-stderr "$RLOCK" run op2 -- sh -c \
		'"$RLOCK" run --once-per 1h op2 -- touch ran; echo "inner=$?"'
	assert_line inner=0
	[[ -e ran ]]
}
