#!/usr/bin/env bats
# policy.bats - cron and CI semantics (issue 20): --once-per DUR (at most
# one successful run of NAME per period of the server's clock; later runs
# skip with the conflict code, and a failed run does not use the period
# up), --supersede (newest wins: a waiter that joins the line removes the
# --supersede waiters already in it) and --priority N (the line serves
# higher first, equal priorities in arrival order).  Everything is checked
# in Redis too: the record P{NAME}:once, the line P{NAME}:line with its
# :line:lease and :line:who, the fence counter and the history.

bats_require_minimum_version 1.5.0
load test_helper
load history_helper

setup() {
	rl_setup
	as_tester
}

# log_cli NAME ARGS...: redis-cli against the one server (history_helper).
log_cli() {
	rcli R "${@:2}"
}

DAY_MS=86400000
P30=$((30 * DAY_MS))

# ---- helpers ----------------------------------------------------------------

# once_key NAME: the record of NAME's period.
once_key() {
	echo "$(key "$1"):once"
}

# once_field NAME FIELD
once_field() {
	rcli R HGET "$(once_key "$1")" "$2"
}

# no_once NAME: NAME has no record of a done period.
no_once() {
	[[ $(rcli R EXISTS "$(once_key "$1")") == 0 ]]
}

# period_end MS DUR_MS: the end of the period (aligned on the epoch) that
# MS is in.
period_end() {
	echo $((($1 / $2 + 1) * $2))
}

# utc MS: "YYYY-MM-DD HH:MM:SS" (UTC) of MS, the milliseconds cut.
utc() {
	date -u -d "@$(($1 / 1000))" '+%Y-%m-%d %H:%M:%S'
}

# done_line NAME PID: what a run of NAME that skips says, PID's run having
# done the period (its grant time and the period's end from the record).
done_line() {
	echo "rlock: run: $1: done this period by $ME pid $2 at $(utc "$(once_field "$1" since)") UTC; the next period starts $(utc "$(once_field "$1" until)") UTC"
}

# assert_once NAME PID FENCE T0 T1 DUR_MS: NAME's record is that of a
# successful run by PID with FENCE, granted and released between the
# server times T0 and T1, in the period of DUR_MS that T0 is in; it
# expires at the period's end.
assert_once() {
	local name=$1 pid=$2 fence=$3 t0=$4 t1=$5 dur=$6 k until now p
	k=$(once_key "$name")
	assert_equal "$(rcli R TYPE "$k")" hash
	until=$(period_end "$t0" "$dur")
	json_check "$(rcli R --json HGETALL "$k")" \
		'd["host"] == a[0] and d["user"] == "tester"' \
		'd["pid"] == a[1] and d["fence"] == a[2]' \
		'd["until"] == a[3]' \
		'int(a[4]) <= int(d["since"]) <= int(d["done"]) <= int(a[5])' \
		-- "$HOST" "$pid" "$fence" "$until" "$t0" "$t1"
	now=$(server_ms)
	p=$(rcli R PTTL "$k")
	((p > 0 && p <= until - now)) ||
		fail "PTTL of the record: $p, the period ends in $((until - now))ms"
}

# start_herd NAME CMD: twenty `rlock run --once-per 30d -w 20s NAME -- sh
# -c CMD` started together by one background job (HERD_PID); the I-th
# one's exit status goes to st.I and its stderr to err.I.
start_herd() {
	bg_start herd bash -c '
		for i in $(seq 1 20); do
			( "$RLOCK" run --once-per 30d -w 20s "$1" -- sh -c "$2" 2>"err.$i"
			  echo $? >"st.$i" ) &
		done
		wait' herd "$1" "$2"
	HERD_PID=$BG_PID
}

# herd_started: wait until a run of the herd wrote to "runs".
herd_started() {
	wait_until 20 eval 'file_nonempty runs || pid_gone "$HERD_PID"'
	file_nonempty runs ||
		fail "the herd ended before anything ran: $(cat st.* err.* 2>/dev/null | sort | uniq -c)"
}

# herd_said LINE: each of the twenty that exited 75 said LINE, and only it;
# the others said nothing.
herd_said() {
	local i
	for i in $(seq 1 20); do
		if [[ $(<"st.$i") == 75 ]]; then
			assert_equal "$(<"err.$i")" "$1"
		else
			assert_equal "$(<"err.$i")" ""
		fi
	done
}

# herd_statuses: the twenty exit statuses, sorted, on one line.
herd_statuses() {
	cat st.* | sort -n | tr '\n' ' ' | sed 's/ $//'
}

# event_counts NAME EVENT...: how many entries of each EVENT NAME's
# history has, space-separated.
event_counts() {
	local names want n e out=()
	names=$(hist_names "$1")
	shift
	for want in "$@"; do
		n=0
		for e in $names; do
			[[ $e == "$want" ]] && n=$((n + 1))
		done
		out+=("$n")
	done
	echo "${out[*]}"
}

# line_pids NAME: the pids of NAME's waiters, first in line first (from
# :line:who, whose values are since, pid, host, user, priority, command).
line_pids() {
	local m out=()
	for m in $(line_members "$1"); do
		out+=("$(rcli R HGET "$(key "$1"):line:who" "$m" | sed -n 2p)")
	done
	echo "${out[*]}"
}

# line_pids_are NAME "PID...": exactly these waiters, in this order.
line_pids_are() {
	[[ $(line_pids "$1") == "$2" ]]
}

# member_of NAME PID: PID's member in NAME's line.
member_of() {
	local m
	for m in $(line_members "$1"); do
		if [[ $(rcli R HGET "$(key "$1"):line:who" "$m" | sed -n 2p) == "$2" ]]; then
			echo "$m"
			return 0
		fi
	done
	return 1
}

# assert_gone_from_line NAME MEMBER: nothing of MEMBER is left in the line.
assert_gone_from_line() {
	assert_equal "$(rcli R ZSCORE "$(key "$1"):line" "$2")" ""
	assert_equal "$(rcli R ZSCORE "$(key "$1"):line:lease" "$2")" ""
	assert_equal "$(rcli R HEXISTS "$(key "$1"):line:who" "$2")" 0
}

# superseded ID PID STATUS MESSAGE: the background job ID (pid PID) exits
# with STATUS within a second and says MESSAGE on stderr ("" for nothing).
superseded() {
	local id=$1 pid=$2 st=$3 msg=$4 t0 el
	t0=$(now_ms)
	bg_wait "$pid" 5
	el=$(($(now_ms) - t0))
	assert_equal "$BG_STATUS" "$st"
	((el <= 1000)) || fail "$id left ${el}ms after it was superseded"
	assert_equal "$(bg_err "$id")" "$msg"
	assert_equal "$(bg_out "$id")" ""
}

# bg_acquire ID ARGS...: `rlock acquire ARGS...` in the background (as
# bg_start), from a shell of its own that waits for it: acquire records its
# caller's pid, so BG_PID is the pid that status and the line show.
bg_acquire() {
	local id=$1
	shift
	bg_start "$id" bash -c '"$RLOCK" acquire "$@"; exit $?' acquire "$@"
}

# usage_first CMD MESSAGE: after `run -64 --separate-stderr`, the first
# line of stderr is MESSAGE and the last the Try line.
usage_first() {
	assert_equal "${stderr_lines[0]}" "$2"
	assert_equal "${stderr_lines[${#stderr_lines[@]} - 1]}" "Try 'rlock $1 --help'."
}

# ---- --once-per -------------------------------------------------------------

@test "--once-per 30d: twenty runs started together, the command runs once, nineteen skip with 75 and who did it" {
	local c t0 t1 pid fence t_go el want
	c=$(fence_ahead daily)
	t0=$(server_ms)
	start_herd daily "echo \"\$PPID \$RLOCK_FENCE\" >> runs; $(gate "$BATS_TEST_TMPDIR/go")"
	# One runs, and holds it until the nineteen others wait in line.
	herd_started
	wait_until 20 line_is daily 19
	read -r pid fence <runs
	assert_fence "$fence" $((c + 1))
	assert_equal "$(meta daily fence)" "$fence"
	assert_equal "$(meta daily pid)" "$pid"
	# The period is done when the run ends well, not before.
	no_once daily
	t_go=$(now_ms)
	touch go
	bg_wait "$HERD_PID" 30
	el=$(($(now_ms) - t_go))
	t1=$(server_ms)
	assert_equal "$(wc -l <runs)" 1
	assert_equal "$(herd_statuses)" "0$(printf ' 75%.0s' {1..19})"
	# Woken in turn, each waiter found the period done and left at once.
	((el < 5000)) || fail "the nineteen waiters took ${el}ms to leave"
	assert_once daily "$pid" "$fence" "$t0" "$t1" "$P30"
	want=$(done_line daily "$pid")
	herd_said "$want"
	# No skip took the lock: one grant, one fence (the record of the last
	# grant is still the run's).
	assert_equal "$(meta daily fence)" "$fence"
	assert_equal "$(event_counts daily acquired released skipped)" "1 1 19"
	lock_free daily
	line_is daily 0
	# A later try skips at once, with -n as with -w.
	run -75 --separate-stderr "$RLOCK" run --once-per 30d -n daily -- touch late
	assert_stderr "$want"
	[[ ! -e late ]]
	assert_equal "$(meta daily fence)" "$fence"
	assert_equal "$(event_counts daily acquired)" 1
}

@test "--once-per 30d: twenty runs, the first fails: the next in line runs it again, once, and the rest skip" {
	local c t0 t1 f1 p1 f2 p2 word want
	c=$(fence_ahead nightly)
	t0=$(server_ms)
	start_herd nightly "if mkdir first 2>/dev/null; then
			echo \"fail \$PPID \$RLOCK_FENCE\" >> runs
			$(gate "$BATS_TEST_TMPDIR/go")
			exit 1
		fi
		echo \"ok \$PPID \$RLOCK_FENCE\" >> runs"
	herd_started
	wait_until 20 line_is nightly 19
	touch go
	bg_wait "$HERD_PID" 30
	t1=$(server_ms)
	assert_equal "$(wc -l <runs)" 2
	read -r word p1 f1 < <(sed -n 1p runs)
	assert_equal "$word" fail
	read -r word p2 f2 < <(sed -n 2p runs)
	assert_equal "$word" ok
	assert_not_equal "$p1" "$p2"
	assert_increasing "$c" "$f1" "$f2"
	assert_equal "$(herd_statuses)" "0 1$(printf ' 75%.0s' {1..18})"
	# The record is the successful run's, and the skips name it.
	assert_once nightly "$p2" "$f2" "$t0" "$t1" "$P30"
	want=$(done_line nightly "$p2")
	herd_said "$want"
	assert_equal "$(meta nightly fence)" "$f2"
	assert_equal "$(event_counts nightly acquired released skipped)" "2 2 18"
	lock_free nightly
	line_is nightly 0
}

@test "--once-per: a non-zero exit, a signal and a lost lock do not use up the period; a success does" {
	run -3 "$RLOCK" run --once-per 30d k -- sh -c 'exit 3'
	no_once k
	run -143 "$RLOCK" run --once-per 30d k -- sh -c 'kill -TERM $$'
	no_once k
	run -137 "$RLOCK" run --once-per 30d k -- sh -c 'kill -KILL $$'
	no_once k
	# Lost while the command runs (renewal refused, the command stopped).
	run -76 --separate-stderr "$RLOCK" run --once-per 30d -t 300ms k -- sh -c '
		redis-cli -p "$R_PORT" DEL "$RLOCK_KEY" >/dev/null
		exec sleep 30'
	no_once k
	# Lost before the release, though the command itself exited 0.
	run -76 --separate-stderr "$RLOCK" run --once-per 30d -t 60s k -- sh -c '
		redis-cli -p "$R_PORT" DEL "$RLOCK_KEY" >/dev/null'
	no_once k
	lock_free k
	local t0 t1
	t0=$(server_ms)
	run -0 "$RLOCK" run --once-per 30d k -- sh -c 'echo "$PPID $RLOCK_FENCE"; touch ran1'
	t1=$(server_ms)
	[[ -e ran1 ]]
	local pid fence
	read -r pid fence <<<"$output"
	assert_once k "$pid" "$fence" "$t0" "$t1" "$P30"
	run -75 --separate-stderr "$RLOCK" run --once-per 30d k -- touch ran2
	[[ ! -e ran2 ]]
	assert_stderr "$(done_line k "$pid")"
}

@test "--once-per: -E N is the code of a skip, -q says nothing, and a skip never holds the lock" {
	local c pid want t0 f
	c=$(fence_ahead e)
	run -0 "$RLOCK" run --once-per 30d e -- sh -c 'echo "$PPID $RLOCK_FENCE"'
	read -r pid f <<<"$output"
	assert_fence "$f" $((c + 1))
	assert_equal "$(meta e fence)" "$f"
	want=$(done_line e "$pid")
	run -9 --separate-stderr "$RLOCK" run --once-per 30d -E 9 e -- touch ran
	assert_stderr "$want"
	assert_output ""
	run -0 --separate-stderr "$RLOCK" run --once-per 30d -E 0 e -- touch ran
	assert_stderr "$want"
	run -75 --separate-stderr "$RLOCK" run -q --once-per 30d e -- touch ran
	assert_stderr ""
	assert_output ""
	run -75 --separate-stderr "$RLOCK" -q run --once-per 30d e -- touch ran
	assert_stderr ""
	run -4 --separate-stderr "$RLOCK" run -q -E 4 --once-per 30d e -- touch ran
	assert_stderr ""
	# A free lock in a done period: -w (1d, now a duration) does not wait.
	t0=$(now_ms)
	run -75 --separate-stderr "$RLOCK" run --once-per 30d -w 1d e -- touch ran
	(($(now_ms) - t0 < 5000)) || fail "a skip with -w 1d took $(($(now_ms) - t0))ms"
	assert_stderr "$want"
	[[ ! -e ran ]]
	# Six skips: no grant, no fence, the lock never held (the record of
	# the last grant is still the run's).
	assert_equal "$(meta e fence)" "$f"
	assert_equal "$(meta e pid)" "$pid"
	assert_equal "$(event_counts e acquired skipped)" "1 6"
	lock_free e
	assert_equal "$(rcli R EXISTS "$(key e):owner")" 0
}

@test "--once-per: the record's fields and expiry, status (text and --json), the history's skipped reason" {
	local t0 t1 pid fence since done until
	t0=$(server_ms)
	run -0 "$RLOCK" run --once-per 30d st -- sh -c 'echo "$PPID $RLOCK_FENCE"'
	t1=$(server_ms)
	read -r pid fence <<<"$output"
	assert_fence "$fence"
	assert_once st "$pid" "$fence" "$t0" "$t1" "$P30"
	since=$(once_field st since)
	done=$(once_field st done)
	until=$(once_field st until)
	((until % P30 == 0)) || fail "the period does not end on the epoch's 30-day grid: $until"

	run -1 --separate-stderr "$RLOCK" status st
	assert_line "  done this period: $ME pid $pid at $(utc "$since") UTC, next period $(utc "$until") UTC"
	run -1 --separate-stderr "$RLOCK" status --json st
	# The members of the issue's interface, and period_ms (the period's
	# length, added with the record's field "per").
	json_check "$output" \
		'{k: v for k, v in d["locks"][0]["once"].items() if k != "period_ms"} == {"host": a[0], "user": "tester", "pid": int(a[1]), "fence": int(a[2]), "since_ms": int(a[3]), "done_ms": int(a[4]), "next_ms": int(a[5])}' \
		'd["locks"][0]["once"]["period_ms"] == int(a[6])' \
		-- "$HOST" "$pid" "$fence" "$since" "$done" "$until" "$P30"
	# A lock without a record.
	run -0 "$RLOCK" run other -- true
	run -1 --separate-stderr "$RLOCK" status other
	refute_output --partial "done this period"
	run -1 --separate-stderr "$RLOCK" status --json other
	json_check "$output" '"once" in d["locks"][0] and d["locks"][0]["once"] is None'

	# The skip is in the history, with its reason.
	run -75 "$RLOCK" run --once-per 30d st -- true
	assert_equal "$(hist_names st)" "acquired released skipped"
	json_check "$(events st)" \
		'd[2]["reason"].startswith("done this period by %s pid %s" % (a[0], a[1]))' \
		'd[2]["user"] == "tester" and d[2]["host"] == a[2] and d[2]["pid"] != a[1]' \
		-- "$ME" "$pid" "$HOST"
	run -0 --separate-stderr "$RLOCK" log --json st
	assert_equal "${#lines[@]}" 3
	json_check "${lines[2]}" 'd["event"] == "skipped"' \
		'd["reason"].startswith("done this period by %s pid %s" % (a[0], a[1]))' \
		-- "$ME" "$pid"
}

@test "--once-per 2s: the period turns on the server's clock, the record lapses with it and the next run goes" {
	local t0 t1 t2 u p
	# Start early in a period, so that two runs fit in it.
	wait_until 5 eval '(($(server_ms) % 2000 < 300))'
	t0=$(server_ms)
	run -0 "$RLOCK" run --once-per 2s sp -- sh -c 'echo "$PPID"; touch ran1'
	local pid=$output
	run -75 --separate-stderr "$RLOCK" run --once-per 2s sp -- touch ran2
	t1=$(server_ms)
	u=$(once_field sp until)
	assert_equal "$u" "$(period_end "$t0" 2000)"
	((t1 < u)) || fail "two runs took longer than the period ($t0..$t1, it ended at $u)"
	assert_stderr "$(done_line sp "$pid")"
	[[ -e ran1 && ! -e ran2 ]]
	p=$(rcli R PTTL "$(once_key sp)")
	((p > 0 && p <= u - t1)) || fail "PTTL of the record: $p, the period ends in $((u - t1))ms"
	# Bounded poll for the server's next period.
	wait_until 5 eval '(($(server_ms) >= u))'
	wait_until 2 no_once sp
	t2=$(server_ms)
	run -0 "$RLOCK" run --once-per 2s sp -- touch ran3
	[[ -e ran3 ]]
	((t2 < u + 2000)) || fail "the machine is too slow for a 2s period ($t2)"
	assert_equal "$(once_field sp until)" $((u + 2000))
	run -75 "$RLOCK" run --once-per 2s sp -- touch ran4
	[[ ! -e ran4 ]]
}

@test "--once-per: a record made with one DUR does not count for another whose period ends elsewhere" {
	local now e30 d e
	now=$(server_ms)
	e30=$(period_end "$now" "$P30")
	for d in 29 28 27; do
		e=$(period_end "$now" $((d * DAY_MS)))
		[[ $e != "$e30" ]] && break
	done
	[[ $e != "$e30" ]]
	run -0 "$RLOCK" run --once-per 30d dd -- sh -c 'echo a >> runs'
	run -75 "$RLOCK" run --once-per 30d dd -- sh -c 'echo x >> runs'
	assert_equal "$(once_field dd until)" "$e30"
	run -0 "$RLOCK" run --once-per "${d}d" dd -- sh -c 'echo "b $PPID" >> runs'
	assert_equal "$(once_field dd until)" "$e"
	run -75 --separate-stderr "$RLOCK" run --once-per "${d}d" dd -- sh -c 'echo y >> runs'
	assert_stderr "$(done_line dd "$(sed -n 's/^b //p' runs)")"
	[[ $stderr == *"the next period starts $(utc "$e") UTC" ]]
	assert_equal "$(cut -d' ' -f1 runs | tr '\n' ' ')" "a b "
}

@test "--once-per: a record made with another DUR does not count even when its period ends at the same time" {
	run -0 "$RLOCK" run --once-per 30d per -- sh -c 'echo a >> runs'
	assert_equal "$(once_field per per)" "$P30"
	run -75 "$RLOCK" run --once-per 30d per -- sh -c 'echo x >> runs'
	# What a --once-per 1d run would have left on the 30-day period's
	# last day: the same end, another length.
	rcli R HSET "$(once_key per)" per "$DAY_MS" >/dev/null
	run -0 "$RLOCK" run --once-per 30d per -- sh -c 'echo b >> runs'
	assert_equal "$(once_field per per)" "$P30"
	run -75 "$RLOCK" run --once-per 30d per -- sh -c 'echo y >> runs'
	assert_equal "$(tr '\n' ' ' <runs)" "a b "
}

@test "--once-per: DUR below 1s or above 30d is refused with 'must be between 1s and 30d' (64)" {
	local bad
	for bad in 500ms 999ms 0.5 31d 2592001s 721h; do
		run -64 --separate-stderr "$RLOCK" run --once-per "$bad" u -- touch ran
		usage_first run "rlock: run: invalid --once-per '$bad': must be between 1s and 30d"
	done
	[[ ! -e ran ]]
}

@test "--once-per: usage errors (range, format, kind of lock, acquire) exit 64" {
	local bad
	for bad in 500ms 999ms 0.5 31d 2592001s 721h abc 0 -1s 1x ''; do
		run -64 --separate-stderr "$RLOCK" run --once-per "$bad" u -- touch ran
		[[ ${stderr_lines[0]} == "rlock: run: invalid --once-per"* ]] ||
			fail "--once-per '$bad': ${stderr_lines[0]}"
	done
	run -64 --separate-stderr "$RLOCK" run --once-per 1h -s u -- touch ran
	usage_first run "rlock: run: --once-per needs an exclusive lock: not with --shared or --limit"
	run -64 --separate-stderr "$RLOCK" run -s --once-per 1h u -- touch ran
	usage_first run "rlock: run: --once-per needs an exclusive lock: not with --shared or --limit"
	run -64 --separate-stderr "$RLOCK" run --once-per 1h --limit 2 u -- touch ran
	usage_first run "rlock: run: --once-per needs an exclusive lock: not with --shared or --limit"
	run -64 --separate-stderr "$RLOCK" acquire --once-per 1h u
	assert_try acquire
	assert_output ""
	[[ ! -e ran ]]
	lock_free u
	no_once u
	# The bounds themselves, and the day unit.
	run -0 "$RLOCK" run --once-per 1s lo -- touch lo
	run -0 "$RLOCK" run --once-per 30d hi -- touch hi
	run -0 "$RLOCK" run --once-per 1d day -- touch day
	[[ -e lo && -e hi && -e day ]]
	run -0 "$RLOCK" run --once-per 30d --limit 1 one -- true
}

@test "several masters: --once-per, --supersede and --priority N exit 64; --priority 0 runs" {
	start_redis A
	start_redis B
	local -a urls=(-u "$R_URL" -u "$A_URL" -u "$B_URL")
	run -64 --separate-stderr "$RLOCK" "${urls[@]}" run --once-per 1h rl -- touch ran
	[[ $stderr == *"--once-per needs one server"* ]] || fail "stderr: $stderr"
	run -64 --separate-stderr "$RLOCK" "${urls[@]}" run --supersede rl -- touch ran
	[[ $stderr == *"need one server"* ]] || fail "stderr: $stderr"
	run -64 --separate-stderr "$RLOCK" "${urls[@]}" acquire --supersede rl
	[[ $stderr == *"need one server"* ]] || fail "stderr: $stderr"
	assert_output ""
	run -64 --separate-stderr "$RLOCK" "${urls[@]}" run --priority 5 rl -- touch ran
	[[ $stderr == *"need one server"* ]] || fail "stderr: $stderr"
	run -64 --separate-stderr "$RLOCK" "${urls[@]}" acquire --priority -1 rl
	[[ $stderr == *"need one server"* ]] || fail "stderr: $stderr"
	[[ ! -e ran ]]
	lock_free rl R
	lock_free rl A
	lock_free rl B
	run -0 "$RLOCK" "${urls[@]}" run --priority 0 rl -- touch ran
	[[ -e ran ]]
}

# ---- --supersede ------------------------------------------------------------

@test "--supersede: of three waiters arriving in turn the first two leave at once, named the newer, the third runs after the holder" {
	local h tok p1 p2 s1 s2 s3 m1 m2
	# The holder gave --supersede too: it is never touched.
	bg_start h "$RLOCK" run --supersede --label holder sup -- \
		sh -c "echo h >> order; $(gate "$BATS_TEST_TMPDIR/go")"
	h=$BG_PID
	wait_until 10 lock_held sup
	tok=$(holder sup)
	bg_start p1 "$RLOCK" run -w 30s --label plain1 sup -- sh -c 'echo p1 >> order'
	p1=$BG_PID
	wait_until 10 line_pids_are sup "$p1"
	bg_start s1 "$RLOCK" run --supersede -w 30s --label deploy-v41 sup -- sh -c 'echo s1 >> order'
	s1=$BG_PID
	wait_until 10 line_pids_are sup "$p1 $s1"
	m1=$(member_of sup "$s1")
	bg_start p2 "$RLOCK" run -w 30s --label plain2 sup -- sh -c 'echo p2 >> order'
	p2=$BG_PID
	wait_until 10 line_pids_are sup "$p1 $s1 $p2"

	bg_start s2 "$RLOCK" run --supersede -w 30s --label deploy-v42 sup -- sh -c 'echo s2 >> order'
	s2=$BG_PID
	wait_until 10 line_pids_are sup "$p1 $p2 $s2"
	superseded s1 "$s1" 75 "rlock: run: sup: superseded by $ME:$s2 (deploy-v42)"
	assert_gone_from_line sup "$m1"
	m2=$(member_of sup "$s2")

	bg_start s3 "$RLOCK" run --supersede -w 30s --label deploy-v43 sup -- sh -c 'echo "s3 $RLOCK_FENCE" >> order'
	s3=$BG_PID
	wait_until 10 line_pids_are sup "$p1 $p2 $s3"
	superseded s2 "$s2" 75 "rlock: run: sup: superseded by $ME:$s3 (deploy-v43)"
	assert_gone_from_line sup "$m2"

	# The holder is untouched, and the others wait on.
	held_by sup "$tok"
	assert_equal "$(meta sup pid)" "$h"
	pid_alive "$h"
	pid_alive "$p1"
	pid_alive "$p2"
	pid_alive "$s3"
	touch go
	local pid
	for pid in "$h" "$p1" "$p2" "$s3"; do
		bg_wait "$pid" 15
		assert_equal "$BG_STATUS" 0
	done
	assert_equal "$(cut -d' ' -f1 order | tr '\n' ' ')" "h p1 p2 s3 "
	lock_free sup
	line_is sup 0
	# The history: each removed waiter skipped, naming who superseded it.
	json_check "$(events sup)" \
		'[e["pid"] for e in d if e["event"] == "skipped"] == [a[0], a[1]]' \
		'[bool(__import__("re").match(r"superseded by %s:%s(\D|$)" % (__import__("re").escape(a[2]), p), e["reason"])) for e, p in zip([e for e in d if e["event"] == "skipped"], [a[1], a[3]])] == [True, True]' \
		-- "$s1" "$s2" "$ME" "$s3"
}

@test "--supersede on shared and semaphore lines, and across kinds" {
	local t r1 r2 w3 m t1 t2 j1 j2
	t=$("$RLOCK" acquire -t 60s shl)
	bg_start r1 "$RLOCK" run -s --supersede -w 30s --label r1 shl -- touch r1ran
	r1=$BG_PID
	wait_until 10 line_pids_are shl "$r1"
	m=$(member_of shl "$r1")
	bg_start r2 "$RLOCK" run -s --supersede -w 30s --label r2 shl -- touch r2ran
	r2=$BG_PID
	wait_until 10 line_pids_are shl "$r2"
	superseded r1 "$r1" 75 "rlock: run: shl: superseded by $ME:$r2 (r2)"
	assert_gone_from_line shl "$m"
	# An exclusive --supersede waiter removes a shared one.
	m=$(member_of shl "$r2")
	bg_start w3 "$RLOCK" run -x --supersede -w 30s --label w3 shl -- touch w3ran
	w3=$BG_PID
	wait_until 10 line_pids_are shl "$w3"
	superseded r2 "$r2" 75 "rlock: run: shl: superseded by $ME:$w3 (w3)"
	assert_gone_from_line shl "$m"
	held_by shl "$t"
	"$RLOCK" release shl "$t"
	bg_wait "$w3" 10
	assert_equal "$BG_STATUS" 0
	[[ -e w3ran && ! -e r1ran && ! -e r2ran ]]
	line_is shl 0

	# A semaphore full with two holders.
	t1=$("$RLOCK" acquire -l 2 -t 60s sem)
	t2=$("$RLOCK" acquire -l 2 -t 60s sem)
	bg_start j1 "$RLOCK" run -l 2 --supersede -w 30s --label j1 sem -- touch j1ran
	j1=$BG_PID
	wait_until 10 line_pids_are sem "$j1"
	m=$(member_of sem "$j1")
	bg_start j2 "$RLOCK" run -l 2 --supersede -w 30s --label j2 sem -- touch j2ran
	j2=$BG_PID
	wait_until 10 line_pids_are sem "$j2"
	superseded j1 "$j1" 75 "rlock: run: sem: superseded by $ME:$j2 (j2)"
	assert_gone_from_line sem "$m"
	holders_is sem 2
	"$RLOCK" release sem "$t1"
	bg_wait "$j2" 10
	assert_equal "$BG_STATUS" 0
	[[ -e j2ran && ! -e j1ran ]]
	holders_is sem 1
	line_is sem 0
	"$RLOCK" release sem "$t2"
}

@test "acquire --supersede; -E N and -q for a superseded waiter" {
	local t a1 a2 a3 tok
	t=$("$RLOCK" acquire -t 60s acq)
	bg_acquire a1 --supersede -w 30s --label a-one acq
	a1=$BG_PID
	wait_until 10 line_pids_are acq "$a1"
	bg_start a2 "$RLOCK" run -q -E 9 --supersede -w 30s --label r-two acq -- touch a2ran
	a2=$BG_PID
	wait_until 10 line_pids_are acq "$a2"
	superseded a1 "$a1" 75 "rlock: acquire: acq: superseded by $ME:$a2 (r-two)"
	bg_acquire a3 --supersede -w 30s --label a-three acq
	a3=$BG_PID
	wait_until 10 line_pids_are acq "$a3"
	superseded a2 "$a2" 9 ""
	[[ ! -e a2ran ]]
	held_by acq "$t"
	"$RLOCK" release acq "$t"
	bg_wait "$a3" 10
	assert_equal "$BG_STATUS" 0
	tok=$(bg_out a3)
	assert_regex "$tok" '^[0-9a-f]{32}$'
	held_by acq "$tok"
	assert_equal "$(meta acq pid)" "$a3"
	line_is acq 0
	"$RLOCK" release acq "$tok"
	# -E with acquire too.
	t=$("$RLOCK" acquire -t 60s acq)
	bg_acquire a4 -E 3 --supersede -w 30s acq
	local a4=$BG_PID
	wait_until 10 line_pids_are acq "$a4"
	bg_acquire a5 --supersede -w 300ms --label a-five acq
	local a5=$BG_PID
	superseded a4 "$a4" 3 "rlock: acquire: acq: superseded by $ME:$a5 (a-five)"
	bg_wait "$a5" 10
	assert_equal "$BG_STATUS" 75
	held_by acq "$t"
}

# ---- --priority -------------------------------------------------------------

@test "--priority: the line serves higher first, equal in arrival order, negative after 0; status --json shows it" {
	local t a b c d e f m pid
	t=$("$RLOCK" acquire -t 60s pri)
	bg_start a "$RLOCK" run -w 30s --label a pri -- sh -c 'echo a >> order'
	a=$BG_PID
	wait_until 10 line_is pri 1
	bg_start b "$RLOCK" run -w 30s --priority -10 --label b pri -- sh -c 'echo b >> order'
	b=$BG_PID
	wait_until 10 line_is pri 2
	bg_start c "$RLOCK" run -w 30s --priority 0 --label c pri -- sh -c 'echo c >> order'
	c=$BG_PID
	wait_until 10 line_is pri 3
	# Priority 0: the next line as it always was, "priority": 0 in JSON.
	run -0 --separate-stderr "$RLOCK" status pri
	assert_line --regexp "^  next: $ME:$a, waiting [0-9.]+(ms|s)  a\$"
	run -0 "$RLOCK" status --json pri
	json_check "$output" 'd["locks"][0]["next"]["pid"] == int(a[0])' \
		'd["locks"][0]["next"]["priority"] == 0' -- "$a"

	bg_start d "$RLOCK" run -w 30s --priority 50 --label d pri -- sh -c 'echo d >> order'
	d=$BG_PID
	wait_until 10 line_is pri 4
	bg_start e "$RLOCK" run -w 30s --priority 50 --label e pri -- sh -c 'echo e >> order'
	e=$BG_PID
	wait_until 10 line_is pri 5
	bg_start f "$RLOCK" run -w 30s --priority -5 --label f pri -- sh -c 'echo f >> order'
	f=$BG_PID
	wait_until 10 line_is pri 6
	m=$(member_of pri "$d")
	assert_equal "$(rcli R HGET "$(key pri):line:who" "$m" | sed -n 5p)" 50
	m=$(member_of pri "$b")
	assert_equal "$(rcli R HGET "$(key pri):line:who" "$m" | sed -n 5p)" -10
	run -0 --separate-stderr "$RLOCK" status pri
	assert_line --regexp "^  next: $ME:$d, "
	run -0 "$RLOCK" status --json pri
	json_check "$output" 'd["locks"][0]["next"]["pid"] == int(a[0])' \
		'd["locks"][0]["next"]["priority"] == 50' \
		'd["locks"][0]["next"]["command"] == "d"' \
		'd["locks"][0]["waiters"] == 6' -- "$d"

	"$RLOCK" release pri "$t"
	for pid in "$a" "$b" "$c" "$d" "$e" "$f"; do
		bg_wait "$pid" 15
		assert_equal "$BG_STATUS" 0
	done
	assert_equal "$(tr '\n' ' ' <order)" "d e a c f b "
	lock_free pri
	line_is pri 0
}

@test "--priority: status's next line has ', priority N' before the label when N is not 0" {
	local t w
	t=$("$RLOCK" acquire -t 60s pst)
	bg_start w "$RLOCK" run -w 30s --priority -7 --label job-7 pst -- true
	w=$BG_PID
	wait_until 10 line_is pst 1
	run -0 --separate-stderr "$RLOCK" status pst
	assert_equal "${#lines[@]}" 3
	assert_equal "$(grep -c job-7 <<<"${lines[2]}")" 1
	assert_line --index 2 --regexp "^  next: $ME:$w, waiting [0-9.]+(ms|s), priority -7  job-7\$"
	run -0 "$RLOCK" status --json pst
	json_check "$output" 'd["locks"][0]["next"]["priority"] == -7' \
		'd["locks"][0]["next"]["pid"] == int(a[0])' -- "$w"
	"$RLOCK" release pst "$t"
	bg_wait "$w" 10
	assert_equal "$BG_STATUS" 0
}

@test "--priority on shared and semaphore lines, and with acquire" {
	local t s1 x1 t1 t2 l1 l2 q1 q2
	t=$("$RLOCK" acquire -t 60s ps)
	bg_start s1 "$RLOCK" run -s -w 30s ps -- sh -c 'echo s1 >> order'
	s1=$BG_PID
	wait_until 10 line_is ps 1
	bg_start x1 "$RLOCK" run -x -w 30s --priority 10 ps -- sh -c 'echo x1 >> order'
	x1=$BG_PID
	wait_until 10 line_is ps 2
	"$RLOCK" release ps "$t"
	bg_wait "$x1" 10
	assert_equal "$BG_STATUS" 0
	bg_wait "$s1" 10
	assert_equal "$BG_STATUS" 0
	assert_equal "$(tr '\n' ' ' <order)" "x1 s1 "
	rm order

	t1=$("$RLOCK" acquire -l 2 -t 60s psem)
	t2=$("$RLOCK" acquire -l 2 -t 60s psem)
	bg_start l1 "$RLOCK" run -l 2 -w 30s --priority -3 psem -- sh -c 'echo l1 >> order'
	l1=$BG_PID
	wait_until 10 line_is psem 1
	bg_start l2 "$RLOCK" run -l 2 -w 30s --priority 20 psem -- sh -c 'echo l2 >> order'
	l2=$BG_PID
	wait_until 10 line_is psem 2
	"$RLOCK" release psem "$t1"
	bg_wait "$l2" 10
	assert_equal "$BG_STATUS" 0
	bg_wait "$l1" 10
	assert_equal "$BG_STATUS" 0
	assert_equal "$(tr '\n' ' ' <order)" "l2 l1 "
	"$RLOCK" release psem "$t2"

	# acquire --priority: the later one with the higher priority gets it.
	t=$("$RLOCK" acquire -t 60s pa)
	bg_acquire q1 -w 30s pa
	q1=$BG_PID
	wait_until 10 line_is pa 1
	bg_acquire q2 -w 30s --priority 100 pa
	q2=$BG_PID
	wait_until 10 line_is pa 2
	"$RLOCK" release pa "$t"
	bg_wait "$q2" 10
	assert_equal "$BG_STATUS" 0
	held_by pa "$(bg_out q2)"
	pid_alive "$q1"
	line_is pa 1
	"$RLOCK" release pa "$(bg_out q2)"
	bg_wait "$q1" 10
	assert_equal "$BG_STATUS" 0
	held_by pa "$(bg_out q1)"
}

@test "--priority: N is -100..100 (64 otherwise), for run and acquire" {
	local bad
	for bad in 101 -101 abc 1.5 '' 1e2 1000000000000; do
		run -64 --separate-stderr "$RLOCK" run --priority "$bad" p -- touch ran
		usage_first run "rlock: run: invalid --priority '$bad': must be -100..100"
		run -64 --separate-stderr "$RLOCK" acquire --priority "$bad" p
		usage_first acquire "rlock: acquire: invalid --priority '$bad': must be -100..100"
		assert_output ""
	done
	[[ ! -e ran ]]
	lock_free p
	run -0 "$RLOCK" run --priority 100 p -- touch hi
	run -0 "$RLOCK" run --priority -100 p -- touch lo
	[[ -e hi && -e lo ]]
	local tok
	tok=$("$RLOCK" acquire --priority -100 p)
	held_by p "$tok"
	"$RLOCK" release p "$tok"
}
