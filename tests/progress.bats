#!/usr/bin/env bats
# progress.bats - a wait that explains itself in a CI log (issue 35): where
# stderr is no terminal, run and acquire print one line every --progress
# DUR of a wait (default 30s, none with -q): what they wait for, who holds
# it (user@host, pid, its --note) and for how long, how many are ahead, how
# long they have waited, and the median of the lock's last 20 completed
# holds from its history (read once), or "no estimate".

bats_require_minimum_version 1.5.0
load test_helper
load history_helper

setup() {
	rl_setup
	as_tester
}

teardown() {
	rl_teardown
}

# holds NAME MS...: completed holds of these lengths in NAME's history,
# oldest first, as entries another rlock wrote them (event released, with
# held).
holds() {
	local name=$1 ms
	shift
	for ms in "$@"; do
		rcli R XADD "$(hist_key "$name")" '*' event released host old \
			user ci pid 7 kind x held "$ms" exit 0 >/dev/null
	done
}

# holder NAME NOTE: a run holding NAME with NOTE until the file go exists;
# HPID its pid.
hold() {
	bg_start h "$RLOCK" run --note "$2" "$1" -c "$(gate "$BATS_TEST_TMPDIR/go")"
	HPID=$BG_PID
	wait_until 5 lock_held "$1"
}

# lines_at_least_matching FILE TEXT N: FILE has N lines or more with TEXT.
lines_at_least_matching() {
	(($(grep -c -- "$2" "$1") >= $3))
}

# progress_re CMD NAME REST: the regex of a progress line of CMD waiting
# for NAME held by tester@HOST pid HPID, ending with REST (a regex).
progress_re() {
	printf '^rlock: %s: waiting [0-9]+s for %s: held [0-9]+s by %s \\(pid %s, note "https://ci/job/55"\\), %s$' \
		"$1" "$2" "$ME" "$HPID" "$3"
}

@test "run --progress: a line every DUR with the holder, its note, the place and the median of the last 20 holds" {
	# Five old holds of 10h, then 20 of 1m and 2m: the median of the last
	# 20 is 1m30s (of all 25 it would be 2m).
	holds dep 36000000 36000000 36000000 36000000 36000000
	holds dep 60000 120000 60000 120000 60000 120000 60000 120000 60000 120000
	holds dep 60000 120000 60000 120000 60000 120000 60000 120000 60000 120000
	hold dep "https://ci/job/55"
	bg_start w1 "$RLOCK" run -q dep -- true
	wait_until 5 has_waiters dep 1
	bg_start w2 "$RLOCK" run -q dep -- true
	wait_until 5 has_waiters dep 2
	bg_start w "$RLOCK" run --progress 1s dep -- true
	local wpid=$BG_PID
	wait_until 10 lines_at_least w.err 2
	local -a lines
	mapfile -t lines <w.err
	assert_regex "${lines[0]}" "$(progress_re run dep '2 ahead, estimate 1m30s \(median of 20 holds\)')"
	assert_regex "${lines[1]}" "$(progress_re run dep '2 ahead, estimate 1m30s \(median of 20 holds\)')"
	# The first line comes after a second of waiting, the next a second
	# later: what each says it waited goes up.
	local w0 w1
	w0=$(sed -n 's/^rlock: run: waiting \([0-9]*\)s .*/\1/p' <<<"${lines[0]}")
	w1=$(sed -n 's/^rlock: run: waiting \([0-9]*\)s .*/\1/p' <<<"${lines[1]}")
	((w0 >= 1 && w1 > w0)) || fail "waited $w0 then $w1"
	touch go
	bg_wait "$wpid" 10
	assert_equal "$BG_STATUS" 0
	# Once served, no more lines: each of them is a progress line.
	run grep -cv '^rlock: run: waiting ' w.err
	assert_output 0
}

@test "acquire --progress says the same, and no history is no estimate" {
	hold acq "https://ci/job/55"
	bg_start w "$RLOCK" acquire --progress 1s -w 30s acq
	local wpid=$BG_PID
	wait_until 10 lines_at_least w.err 1
	run head -n 1 w.err
	assert_regex "$output" "$(progress_re acquire acq '0 ahead, no estimate')"
	touch go
	bg_wait "$wpid" 10
	assert_equal "$BG_STATUS" 0
}

@test "run --with --progress: the line names the set and the holder of the lock of it that is held" {
	holds wb 60000 60000 60000
	hold wb "https://ci/job/55"
	bg_start w "$RLOCK" run --progress 1s wa --with wb -- true
	local wpid=$BG_PID
	wait_until 10 lines_at_least w.err 2
	local -a lines
	mapfile -t lines <w.err
	# wa is free: the note and estimate are wb's, whose holder keeps
	# the set out; the estimate is the first lock's history (none).
	assert_regex "${lines[0]}" "$(progress_re run 'wa, wb' '0 ahead, no estimate')"
	assert_regex "${lines[1]}" "$(progress_re run 'wa, wb' '0 ahead, no estimate')"
	touch go
	bg_wait "$wpid" 10
	assert_equal "$BG_STATUS" 0
	run grep -cv '^rlock: run: waiting ' w.err
	assert_output 0
}

@test "a median of an even count is the mean of the middle two, of an odd one the middle" {
	holds even 1000 3000
	holds odd 1000 5000 2000
	hold even "https://ci/job/55"
	local hp=$HPID
	bg_start w "$RLOCK" run --progress 1s even -- true
	wait_until 10 lines_at_least w.err 1
	run head -n 1 w.err
	assert_regex "$output" ', 0 ahead, estimate 2s \(median of 2 holds\)$'
	touch go
	wait_until 10 pid_gone "$hp"
	rm go
	hold odd "https://ci/job/55"
	bg_start w2 "$RLOCK" run --progress 1s odd -- true
	wait_until 10 lines_at_least w2.err 1
	run head -n 1 w2.err
	assert_regex "$output" ', 0 ahead, estimate 2s \(median of 3 holds\)$'
	touch go
}

@test "a wait shorter than --progress prints nothing" {
	hold short "https://ci/job/55"
	bg_start w "$RLOCK" run --progress 30s short -- true
	local wpid=$BG_PID
	wait_until 5 has_waiters short 1
	touch go
	bg_wait "$wpid" 10
	assert_equal "$BG_STATUS" 0
	run bg_err w
	assert_output ""
}

@test "-q: no progress lines; the default is every 30s" {
	hold quiet "https://ci/job/55"
	bg_start q "$RLOCK" -q run --progress 1s quiet -- true
	local qpid=$BG_PID
	bg_start d "$RLOCK" run quiet -- true
	local dpid=$BG_PID
	wait_until 5 has_waiters quiet 2
	bg_start w "$RLOCK" run --progress 1s quiet -- true
	wait_until 10 lines_at_least w.err 2
	# Two seconds and more of waiting: the quiet one and the one with
	# the default 30s said nothing.
	run bg_err q
	assert_output ""
	run bg_err d
	assert_output ""
	touch go
	bg_wait "$qpid" 10
	bg_wait "$dpid" 10
}

@test "a -w wait that runs out says so after its progress lines" {
	hold tmo "https://ci/job/55"
	run -75 --separate-stderr "$RLOCK" run --progress 1s -w 3500ms tmo -- true
	local n=${#stderr_lines[@]} i
	((n >= 3)) || fail "$n lines: $stderr"
	for ((i = 0; i < n - 1; i++)); do
		assert_regex "${stderr_lines[i]}" "$(progress_re run tmo '0 ahead, no estimate')"
	done
	assert_regex "${stderr_lines[n - 1]}" "^rlock: run: tmo: timed out after 3.5s; held by $HOST pid $HPID "
}

@test "a bad --progress is a usage error" {
	local v
	for v in 0 -1 abc 5x 500ms 31d ''; do
		run -64 --separate-stderr "$RLOCK" run --progress "$v" x -- true
		case $v in
		0) assert_usage run "rlock: run: invalid --progress '0': must be more than zero" ;;
		500ms | 31d) assert_usage run "rlock: run: invalid --progress '$v': must be between 1s and 30d" ;;
		*) assert_usage run "rlock: run: invalid --progress '$v': not a duration (e.g. 500ms, 30s, 1.5m, 1h30m, 2d)" ;;
		esac
	done
	run -64 --separate-stderr "$RLOCK" acquire x --progress 0
	assert_usage acquire "rlock: acquire: invalid --progress '0': must be more than zero"
	# A plain number is seconds, as for -w; after the operands too.
	run -0 "$RLOCK" run x --progress 2 -- true
}

@test "shared holders are one named and N more; a key another client set is no rlock metadata" {
	"$RLOCK" acquire -t 60s -s --note n1 sh >/dev/null
	"$RLOCK" acquire -t 60s -s sh >/dev/null
	run -75 --separate-stderr "$RLOCK" run --progress 1s -w 2500ms sh -- true
	assert_regex "${stderr_lines[0]}" "^rlock: run: waiting [0-9]+s for sh: held [0-9]+s by $ME \(pid [0-9]+, note \"n1\"\) and 1 more, 0 ahead, no estimate$"
	rcli R SET "$(key other)" foreign PX 60000 >/dev/null
	run -75 --separate-stderr "$RLOCK" run --progress 1s -w 2500ms other -- true
	assert_regex "${stderr_lines[0]}" '^rlock: run: waiting [0-9]+s for other: held by another client \(no rlock metadata\), 0 ahead, no estimate$'
}

@test "a waiter whose server goes away says so on its progress line while it tries again" {
	start_redis C
	export RLOCK_URL=$C_URL
	bg_start h "$RLOCK" run gone -c "$(gate "$BATS_TEST_TMPDIR/go")"
	wait_until 5 lock_held gone C
	bg_start w "$RLOCK" run --progress 1s -w 60s gone -- true
	wait_until 10 grep -qE '^rlock: run: waiting [0-9]+s for gone: held [0-9]+s by .*, 0 ahead, no estimate$' "$BATS_TEST_TMPDIR/w.err"
	stop_redis C
	# Not a quiet wait: within a --progress or two, it says why it
	# waits on.
	wait_until 10 grep -q 'trying again' "$BATS_TEST_TMPDIR/w.err"
	run grep 'trying again' "$BATS_TEST_TMPDIR/w.err"
	assert_regex "${lines[0]}" "^rlock: run: waiting [0-9]+s for gone: trying again: cannot connect to 127\\.0\\.0\\.1:$C_PORT: Connection refused\$"
	wait_until 10 lines_at_least_matching "$BATS_TEST_TMPDIR/w.err" 'trying again' 2
}
