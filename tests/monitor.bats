#!/usr/bin/env bats
# monitor.bats - rlock as a monitoring system and a hostile client meet it:
# whether a job succeeded lately (last --max-age, --json, --prometheus), what
# a script that died holding a lock leaves behind (abandoned), what counts as
# a success (a plain release does; --status 3, a signal, an abandoned lock
# and junk another client wrote into the history do not), that the last
# success outlives the trimming of a long history (the :log:last record),
# and what status, run, log and acquire do with keys under the prefix that
# rlock did not write (junk names, other types, a semaphore limit of 0, a
# SCAN that never ends).
#
# One real redis-server R for the file, where the tests write the junk with
# redis-cli under their own prefix; a RESP server of the tests' own
# (hostile_helper.bash) for the SCAN replies no real server gives.  Every
# check reads the keys with redis-cli as well as through rlock.

bats_require_minimum_version 1.5.0
load test_helper
load hostile_helper

setup_file() { rl_setup_file; }
teardown_file() { rl_teardown_file; }

setup() {
	rl_setup
	HOST=$(uname -n)
}

teardown() {
	stop_all_hostile
	rl_teardown
}

# ---- helpers ---------------------------------------------------------------

# json_lines TEXT EXPR... [-- ARG...]: every line of TEXT (JSON Lines) is a
# JSON object, and each EXPR holds over d (the list of them) and a, as
# json_check's.
json_lines() {
	local text=$1 list
	shift
	list=$(python3 -c '
import json, sys
ds = [json.loads(line) for line in sys.argv[1].split("\n")]
bad = [d for d in ds if not isinstance(d, dict)]
if bad:
    sys.exit("not an object: %r" % bad[0])
print(json.dumps(ds))' "$text") || fail "$list"
	json_check "$list" "$@"
}

# no_success NAME: `rlock last --max-age 1h NAME` exits 1 with the stale line.
no_success() {
	run -1 --separate-stderr "$RLOCK" last --max-age 1h "$1"
	assert_equal "$stderr" ""
	assert_equal "${#lines[@]}" 1
	assert_regex "${lines[0]}" "^$1: no successful run within 1h(0m)?: last success never; "
}

# success NAME: `rlock last --max-age 1h NAME` exits 0, silent.
success() {
	run -0 --separate-stderr "$RLOCK" last --max-age 1h "$1"
	assert_output ""
	assert_equal "$stderr" ""
}

# newest_id NAME: the ID of the newest entry in NAME's history.
newest_id() {
	rcli R XREVRANGE "$(hist_key "$1")" + - COUNT 1 | head -n 1
}

# scan_rule CURSOR KEY: a hostile rule answering every SCAN with CURSOR and
# the one name KEY.
scan_rule() {
	printf 'SCAN *2\\r\\n$%d\\r\\n%s\\r\\n*1\\r\\n$%d\\r\\n%s\\r\\n' \
		"${#1}" "$1" "${#2}" "$2"
}

# ---- what counts as a success --------------------------------------------------

@test "last j --max-age 26h and last --max-age 26h j: 1 while the job's only run failed, 0 once a run succeeded" {
	run -2 "$RLOCK" run j -- sh -c 'exit 2'
	assert_equal "$(hist_names j)" "acquired released"
	run -1 --separate-stderr "$RLOCK" last j --max-age 26h
	assert_equal "$stderr" ""
	assert_equal "${#lines[@]}" 1
	assert_regex "${lines[0]}" "^j: no successful run within 26h(0m)?: last success never; last run [^ ]+ ago on $HOST \\([^ ]+ pid [0-9]+\\): exit 2 after [^ ]+$"
	run -1 --separate-stderr "$RLOCK" last --max-age 26h j
	assert_regex "$output" '^j: no successful run within 26h(0m)?: last success never; .*: exit 2 after '
	run -0 "$RLOCK" run j -- true
	run -0 --separate-stderr "$RLOCK" last j --max-age 26h
	assert_output ""
	assert_equal "$stderr" ""
	run -0 --separate-stderr "$RLOCK" last --max-age 26h j
	assert_output ""
}

@test "status's last line of a free lock is its abandoned run, not the run before it" {
	"$RLOCK" run j3 -- true
	bg_start script bash -c 't=$("$RLOCK" acquire --renew j3) || exit 9; echo "$t" > tok; sleep 30'
	local spid=$BG_PID
	wait_until 10 file_nonempty tok
	kill -9 "$spid"
	bg_wait "$spid" 5 2>/dev/null
	wait_until 3 lock_free j3
	assert_equal "$(hist_names j3)" "acquired released acquired abandoned"
	run -1 --separate-stderr "$RLOCK" status j3
	assert_equal "$stderr" ""
	assert_regex "${lines[2]}" "^  last: [^ ]+ ago on $HOST, abandoned \\(the process that held it ended without releasing\\) after [^ ]+$"
}

@test "a script killed -9 while it holds acquire --renew: the renewer frees the lock and records abandoned, which is no success anywhere" {
	bg_start script bash -c 't=$("$RLOCK" acquire --renew j2) || exit 9; echo "$t" > tok; sleep 30'
	local spid=$BG_PID tok
	# The token is written once the renewer follows the script.
	wait_until 10 file_nonempty tok
	tok=$(cat tok)
	held_by j2 "$tok"
	kill -9 "$spid"
	bg_wait "$spid" 5 2>/dev/null
	assert_equal "$BG_STATUS" 137
	# The renewer sees its process end and releases within about a second
	# (its pidfd becomes readable); 3 s leaves room for a loaded machine.
	wait_until 3 lock_free j2
	assert_equal "$(hist_names j2)" "acquired abandoned"
	# The entry names the token it held, and no exit status.
	local rec
	rec=$(rcli R --json XRANGE "$(hist_key j2)" - +)
	json_check "$rec" \
		'dict(zip(d[1][1][0::2], d[1][1][1::2]))["token"] == a[0][:8]' \
		'dict(zip(d[1][1][0::2], d[1][1][1::2])).get("exit", "") == ""' -- "$tok"

	run -0 --separate-stderr "$RLOCK" log j2
	assert_equal "$stderr" ""
	assert_equal "${#lines[@]}" 2
	assert_regex "${lines[0]}" '^[0-9]{4}-[0-9]{2}-[0-9]{2} [0-9:]{8}  acquired  .* rlock acquire --renew$'
	assert_regex "${lines[1]}" "^[0-9]{4}-[0-9]{2}-[0-9]{2} [0-9:]{8}  abandoned  [^ ]+@$HOST pid [0-9]+  fence [0-9]+  held [^ ]+$"

	run -0 --separate-stderr "$RLOCK" last j2
	assert_equal "$stderr" ""
	assert_regex "$output" "^j2: last run ended [^ ]+ ago on $HOST \\([^ ]+ pid [0-9]+\\): abandoned \\(the process that held it ended without releasing\\) after [^ ]+$"

	run -1 --separate-stderr "$RLOCK" last --max-age 1h j2
	assert_regex "$output" '^j2: no successful run within 1h(0m)?: last success never; last run .*: abandoned \(the process that held it ended without releasing\) after [^ ]+$'

	# Prometheus: when it ran and for how long, no success and no exit code
	# (it had none).
	run -0 --separate-stderr "$RLOCK" last --prometheus j2
	assert_equal "$stderr" ""
	refute_output --partial 'rlock_last_success_timestamp_seconds{lock="j2"}'
	refute_output --partial 'rlock_last_run_exit_code{lock="j2"}'
	assert_line --regexp '^rlock_last_run_timestamp_seconds\{lock="j2"\} [0-9]+\.[0-9]{3}$'
	assert_line --regexp '^rlock_last_run_duration_seconds\{lock="j2"\} [0-9]+\.[0-9]{3}$'
	assert_line '# TYPE rlock_last_success_timestamp_seconds gauge'
	assert_equal "$(grep -vc '^#' <<<"$output")" 2

	run -0 --separate-stderr "$RLOCK" log --json j2
	json_lines "$output" \
		'len(d) == 2 and [e["event"] for e in d] == ["acquired", "abandoned"]' \
		'd[1]["exit"] is None and d[1]["signal"] is None' \
		'd[1]["token"] == a[0][:8] and isinstance(d[1]["held_ms"], int)' -- "$tok"
	run -0 --separate-stderr "$RLOCK" last --json j2
	json_check "$output" 'd["last"]["event"] == "abandoned"' 'd["last_success"] is None'

	# A script that releases before it ends is a success, and nothing is
	# abandoned.
	bg_start tidy bash -c 't=$("$RLOCK" acquire --renew j3) || exit 9; "$RLOCK" release j3 "$t"'
	bg_wait "$BG_PID" 10
	assert_equal "$BG_STATUS" 0
	wait_until 3 no_rlock_pids
	assert_equal "$(hist_names j3)" "acquired released"
	success j3
}

@test "a plain release counts as a success; release --status 3 and a run killed by a signal do not" {
	local t
	t=$("$RLOCK" acquire plain)
	run -0 "$RLOCK" release plain "$t"
	success plain
	run -0 "$RLOCK" last plain
	assert_regex "$output" '^plain: last run ended .*: released, exit status not recorded after [^ ]+$'

	t=$("$RLOCK" acquire three)
	run -0 "$RLOCK" release --status 3 three "$t"
	no_success three
	assert_regex "$output" ': exit 3 after [^ ]+$'

	run -143 "$RLOCK" run k -- sh -c 'kill -TERM $$'
	no_success k
	assert_regex "$output" ': exit 143 \(SIGTERM\) after [^ ]+$'
	run -0 --separate-stderr "$RLOCK" last --json k
	json_check "$output" 'd["last"]["exit"] == 143 and d["last"]["signal"] == "TERM"' \
		'd["last_success"] is None'
}

@test "junk exit or signal fields in the history (written with redis-cli): never a success, shown as unreadable, JSON still parses" {
	local -a vals=(abc -3 256 0x0 ' 0')
	local i v name
	for i in "${!vals[@]}"; do
		v=${vals[i]}
		name=junk$i
		rcli R XADD "$(hist_key "$name")" '*' event released exit "$v" >/dev/null
		no_success "$name"
		[[ $output == *": released, exit status unreadable (exit '$v')" ]] ||
			fail "[$v] $output"
		run -0 --separate-stderr "$RLOCK" last "$name"
		assert_equal "$stderr" ""
		assert_regex "$output" "^$name: last run ended [^ ]+ ago on an unknown host: released, "
		assert_equal "${output#*: released, }" "exit status unreadable (exit '$v')"
		run -0 --separate-stderr "$RLOCK" log "$name"
		assert_equal "${#lines[@]}" 1
		[[ $output == *"  [unreadable: exit '$v']" ]] || fail "[$v] log: $output"
		run -0 --separate-stderr "$RLOCK" log --json "$name"
		json_lines "$output" 'len(d) == 1' \
			'd[0]["event"] == "released" and d[0]["exit"] is None' \
			'd[0]["unreadable"] == a[0]' -- "exit '$v'"
		run -0 --separate-stderr "$RLOCK" last --json "$name"
		json_check "$output" 'd["last_success"] is None and d["last"]["exit"] is None'
		run -0 --separate-stderr "$RLOCK" last --prometheus "$name"
		refute_output --partial "rlock_last_success_timestamp_seconds{lock=\"$name\"}"
		refute_output --partial "rlock_last_run_exit_code{lock=\"$name\"}"
	done

	# exit 0 with a signal that is a terminal escape: not a success either,
	# and the escape reaches neither the terminal nor the JSON raw.
	rcli R XADD "$(hist_key sig)" '*' event released exit 0 signal $'\x1b[2J' >/dev/null
	no_success sig
	refute_output --partial $'\x1b'
	run -0 --separate-stderr "$RLOCK" log sig
	assert_equal "${#lines[@]}" 1
	[[ $output == *"  exit 0  [unreadable: signal '\\x1b[2J']" ]] || fail "log: $output"
	refute_output --partial $'\x1b'
	run -0 --separate-stderr "$RLOCK" log --json sig
	refute_output --partial $'\x1b'
	json_lines "$output" 'd[0]["signal"] is None and d[0]["exit"] == 0' \
		'd[0]["unreadable"] == a[0]' -- $'signal \'\x1b[2J\''
	run -0 --separate-stderr "$RLOCK" last --json sig
	json_check "$output" 'd["last_success"] is None'

	# All of them in one history after a real success: the success stays
	# the last one, and every line of log --json parses.
	run -0 "$RLOCK" run mixed -- true
	for v in "${vals[@]}"; do
		rcli R XADD "$(hist_key mixed)" '*' event released exit "$v" >/dev/null
	done
	rcli R XADD "$(hist_key mixed)" '*' event released exit 0 signal $'\x1b[2J' >/dev/null
	run -0 --separate-stderr "$RLOCK" log --json mixed
	json_lines "$output" 'len(d) == 8' \
		'sum(1 for e in d if "unreadable" in e) == 6'
	run -0 --separate-stderr "$RLOCK" last --json mixed
	json_check "$output" 'd["last_success"]["exit"] == 0 and d["last_success"]["command"] == "true"' \
		'"unreadable" in d["last"]'
	success mixed
}

# ---- the last success outlives trimming -----------------------------------------

@test "RLOCK_LOG_MAX=100: one --once-per run, then 300 skipped ones: the success is still the last run, and the stream was trimmed" {
	export RLOCK_LOG_MAX=100
	run -0 "$RLOCK" run --once-per 1h hourly -- true
	local ok_id i st n75=0
	ok_id=$(newest_id hourly)
	for ((i = 0; i < 300; i++)); do
		st=0
		"$RLOCK" run --once-per 1h hourly -- true 2>/dev/null || st=$?
		((st == 75)) && n75=$((n75 + 1))
	done
	assert_equal "$n75" 300
	local len
	len=$(hist_len hourly)
	((len < 200)) || fail "XLEN is $len: not trimmed"
	# The success's own entry is gone from the stream.
	assert_equal "$(rcli R XRANGE "$(hist_key hourly)" "$ok_id" "$ok_id")" ""
	run -0 --separate-stderr "$RLOCK" last hourly
	assert_equal "$stderr" ""
	# The record keeps the success's id (its time), not its details.
	assert_regex "$output" "^hourly: last run ended [^ ]+ ago: ended well \\(its history entry has been trimmed\\)$"
	success hourly
	run -0 --separate-stderr "$RLOCK" last --json hourly
	json_check "$output" 'd["last"]["id"] == a[0] and d["last_success"]["id"] == a[0]' \
		'd["last_success"]["trimmed"] is True and d["last_success"]["event"] == "released"' \
		'd["last_success"]["time_ms"] == int(a[0].split("-")[0])' -- "$ok_id"
	run -0 --separate-stderr "$RLOCK" last --prometheus hourly
	assert_line "rlock_last_success_timestamp_seconds{lock=\"hourly\"} $((${ok_id%-*} / 1000)).$(printf %03d $((${ok_id%-*} % 1000)))"
}

@test "RLOCK_LOG_MAX=100: a success then 300 failures: last says exit 1, last --json keeps the success" {
	export RLOCK_LOG_MAX=100
	run -0 "$RLOCK" run f -- true
	local ok_id i st bad=0
	ok_id=$(newest_id f)
	for ((i = 0; i < 300; i++)); do
		st=0
		"$RLOCK" run f -- false 2>/dev/null || st=$?
		((st == 1)) || bad=$((bad + 1))
	done
	assert_equal "$bad" 0
	local len
	len=$(hist_len f)
	((len < 300)) || fail "XLEN is $len: not trimmed"
	assert_equal "$(rcli R XRANGE "$(hist_key f)" "$ok_id" "$ok_id")" ""
	run -0 --separate-stderr "$RLOCK" last f
	assert_regex "$output" "^f: last run ended [^ ]+ ago on $HOST \\([^ ]+ pid [0-9]+\\): exit 1 after [^ ]+$"
	run -0 --separate-stderr "$RLOCK" last --json f
	json_check "$output" \
		'set(d) == {"lock", "last", "last_success"} and d["lock"] == "f"' \
		'd["last"]["event"] == "released" and d["last"]["exit"] == 1 and d["last"]["command"] == "false"' \
		'd["last_success"]["event"] == "released" and d["last_success"]["trimmed"] is True' \
		'd["last_success"]["id"] == a[0]' \
		'd["last_success"]["time_ms"] == int(a[0].split("-")[0])' -- "$ok_id"
	success f
	run -0 --separate-stderr "$RLOCK" last --prometheus f
	assert_line 'rlock_last_run_exit_code{lock="f"} 1'
	assert_line --regexp '^rlock_last_success_timestamp_seconds\{lock="f"\} [0-9]+\.[0-9]{3}$'
}

# ---- the record key --------------------------------------------------------------

@test "the record P{NAME}:log:last: 'ok' is the success's ID once a failure follows it; it expires; release --force removes one of another type" {
	run -0 "$RLOCK" run r -- true
	local id v
	id=$(newest_id r)
	# A release on the shortest path leaves the record to the history...
	assert_equal "$(rcli R HEXISTS "$(hist_key r):last" ok)" 0
	# ...until a run that did not end well, which writes the success first.
	run -1 "$RLOCK" run r -- false
	v=$(rcli R HGET "$(hist_key r):last" ok)
	assert_equal "$v" "$id"
	local p
	p=$(rcli R PTTL "$(hist_key r):last")
	((p > 0)) || fail "PTTL of the record is $p"
	# It expires with the history (RLOCK_LOG_DAYS), not on its own.
	local sp
	sp=$(rcli R PTTL "$(hist_key r)")
	((sp > 0 && p <= sp + 1000 && p >= sp - 60000)) ||
		fail "PTTL of the record $p, of the stream $sp"
	# Another client's string in its place: --force removes it, and says so.
	rcli R DEL "$(hist_key r):last" >/dev/null
	rcli R SET "$(hist_key r):last" str >/dev/null
	run -0 --separate-stderr "$RLOCK" release --force r
	assert_stderr "rlock: release: r: removed 1 key of another type (another client's data)"
	assert_equal "$(rcli R EXISTS "$(hist_key r):last")" 0
	assert_equal "$(rcli R EXISTS "$(hist_key r)")" 1
	# The next run that ends badly writes the record anew.
	run -0 "$RLOCK" run r -- true
	run -3 "$RLOCK" run r -- sh -c 'exit 3'
	assert_equal "$(rcli R TYPE "$(hist_key r):last")" hash
	success r

	# The same on a lock that is held: the holder goes too.
	local t
	t=$("$RLOCK" acquire r2)
	rcli R SET "$(hist_key r2):last" str >/dev/null
	run -0 --separate-stderr "$RLOCK" release --force r2
	assert_stderr_line "rlock: release: r2: removed 1 key of another type (another client's data)"
	assert_stderr_line --regexp '^rlock: release: r2: removed lock held by '
	assert_equal "$(rcli R EXISTS "$(hist_key r2):last")" 0
	lock_free r2
}

# ---- the record of the last success is checked against the history --------------

# server_ms: the server's clock (TIME) in ms.
server_ms() {
	local t
	t=$(rcli R TIME | tr '\n' ' ')
	read -r sec usec <<<"$t"
	echo $((sec * 1000 + usec / 1000))
}

# forge_ok NAME VALUE: another client's 'ok' in NAME's record of the last runs.
forge_ok() {
	rcli R HSET "$(hist_key "$1"):last" ok "$2" >/dev/null
}

# ignored NAME VALUE WHY: the one line last says of a record it ignored.
ignored() {
	echo "rlock: last: $1: ignored $(hist_key "$1"):last ok '$2' (another client's data): $3"
}

# hist_ids NAME: the IDs of NAME's history, oldest first, one a line.
hist_ids() {
	rcli R XRANGE "$(hist_key "$1")" - + | grep -E '^[0-9]+-[0-9]+$'
}

# no_entry_inside NAME: an ID between two entries of NAME's history that is
# no entry (the first such gap after the first entry).
no_entry_inside() {
	hist_ids "$1" | python3 -c '
import sys
ids = [tuple(map(int, l.split("-"))) for l in sys.stdin.read().split()]
for a, b in zip(ids, ids[1:]):
    c = (a[0], a[1] + 1)
    if c < b:
        print("%d-%d" % c)
        break
else:
    sys.exit("no gap in %r" % ids)'
}

# stale_exactly NAME WHY VALUE [RAW]: last --max-age 1h NAME exits 1 as if
# NAME had no record of a success (the history holds none), and says once
# that it ignored VALUE (as shown: RAW, the record, cut); the text, JSON and
# Prometheus answers have no success.
stale_exactly() {
	local name=$1 why=$2 v=$3 raw=${4-$3}
	run -1 --separate-stderr "$RLOCK" last --max-age 1h "$name"
	assert_equal "${#lines[@]}" 1
	assert_regex "${lines[0]}" "^$name: no successful run within 1h(0m)?: last success never; last run [^ ]+ ago on $HOST \\([^ ]+ pid [0-9]+\\): exit 1 after [^ ]+$"
	assert_equal "$stderr" "$(ignored "$name" "$v" "$why")"
	run -0 --separate-stderr "$RLOCK" last --json "$name"
	json_check "$output" 'd["last_success"] is None' \
		'd["last"]["event"] == "released" and d["last"]["exit"] == 1 and d["last"]["command"] == "false"'
	assert_equal "$stderr" "$(ignored "$name" "$v" "$why")"
	run -0 --separate-stderr "$RLOCK" last --prometheus "$name"
	refute_output --partial "rlock_last_success_timestamp_seconds{"
	assert_line "rlock_last_run_exit_code{lock=\"$name\"} 1"
	assert_equal "$stderr" "$(ignored "$name" "$v" "$why")"
	# -q: the answer alone.
	run -1 --separate-stderr "$RLOCK" -q last --max-age 1h "$name"
	assert_equal "$stderr" ""
	# rlock reads the record; it leaves it as it found it.
	assert_equal "$(rcli R HGET "$(hist_key "$name"):last" ok)" "$raw"
}

@test "a forged 'ok' 28 hours in the future: no success for last --max-age (1), --json or --prometheus, said once on stderr" {
	run -1 "$RLOCK" run f -- false
	run -1 "$RLOCK" run f -- false
	local v
	v="$(($(server_ms) + 28 * 3600 * 1000))-0"
	forge_ok f "$v"
	stale_exactly f "later than the server's clock" "$v"
	run -0 --separate-stderr "$RLOCK" last f
	assert_regex "$output" "^f: last run ended [^ ]+ ago on $HOST \\([^ ]+ pid [0-9]+\\): exit 1 after [^ ]+$"
	# A minute ahead is the future too.
	v="$(($(server_ms) + 60000))-0"
	forge_ok f "$v"
	stale_exactly f "later than the server's clock" "$v"
}

@test "a forged 'ok' naming a failed entry, an acquired entry, or an ID inside the history that is no entry: ignored, said once" {
	run -1 "$RLOCK" run g -- false
	run -1 "$RLOCK" run g -- false
	local -a ids
	mapfile -t ids < <(hist_ids g)
	assert_equal "${#ids[@]}" 4
	# The newest entry: the second run's release, exit 1.
	forge_ok g "${ids[3]}"
	stale_exactly g "its history entry is no success" "${ids[3]}"
	# The first grant.
	forge_ok g "${ids[0]}"
	stale_exactly g "its history entry is no success" "${ids[0]}"
	local v
	v=$(no_entry_inside g)
	forge_ok g "$v"
	stale_exactly g "the history has no entry of that ID" "$v"
	# Past the newest entry, not in the future of the clock.
	v="${ids[3]%-*}-$((${ids[3]#*-} + 1))"
	forge_ok g "$v"
	stale_exactly g "the history has no entry of that ID" "$v"
}

@test "a forged 'ok' is ignored, and the history's own older success is the last success" {
	run -0 "$RLOCK" run h -- true
	local s
	s=$(newest_id h)
	run -1 "$RLOCK" run h -- false
	# The failure wrote the success into the record: it counts.
	assert_equal "$(rcli R HGET "$(hist_key h):last" ok)" "$s"
	success h
	local v
	v=$(no_entry_inside h)
	forge_ok h "$v"
	run -0 --separate-stderr "$RLOCK" last --max-age 1h h
	assert_output ""
	assert_equal "$stderr" "$(ignored h "$v" "the history has no entry of that ID")"
	run -0 --separate-stderr "$RLOCK" last --json h
	json_check "$output" 'd["last_success"]["id"] == a[0] and d["last_success"]["command"] == "true"' \
		'd["last_success"].get("trimmed") is not True' \
		'd["last"]["exit"] == 1' -- "$s"
	v="$(($(server_ms) + 28 * 3600 * 1000))-0"
	forge_ok h "$v"
	run -0 --separate-stderr "$RLOCK" last --prometheus h
	assert_line "rlock_last_success_timestamp_seconds{lock=\"h\"} $((${s%-*} / 1000)).$(printf %03d $((${s%-*} % 1000)))"
	assert_equal "$stderr" "$(ignored h "$v" "later than the server's clock")"
}

@test "an 'ok' before the history's first entry (trimmed) still counts: the record is the only witness; and so without any history" {
	run -1 "$RLOCK" run t -- false
	run -1 "$RLOCK" run t -- false
	local first v
	first=$(hist_ids t | head -n 1)
	v="$((${first%-*} - 60000))-3"
	forge_ok t "$v"
	success t
	run -0 --separate-stderr "$RLOCK" last --json t
	assert_equal "$stderr" ""
	json_check "$output" 'd["last_success"]["id"] == a[0] and d["last_success"]["trimmed"] is True' \
		'd["last_success"]["time_ms"] == int(a[0].split("-")[0])' \
		'd["last"]["exit"] == 1' -- "$v"
	run -0 --separate-stderr "$RLOCK" last --prometheus t
	assert_equal "$stderr" ""
	assert_line "rlock_last_success_timestamp_seconds{lock=\"t\"} $((${v%-*} / 1000)).$(printf %03d $((${v%-*} % 1000)))"
	# Two hours before: counted, and stale.
	v="$((${first%-*} - 7200000))-0"
	forge_ok t "$v"
	run -1 --separate-stderr "$RLOCK" last --max-age 1h t
	assert_equal "$stderr" ""
	assert_regex "$output" "^t: no successful run within 1h(0m)?: last success 2h(0m)? ago; last run [^ ]+ ago on $HOST \\([^ ]+ pid [0-9]+\\): exit 1 after "

	# No history at all (deleted by another client), the record left: a
	# success of the past counts, one of the future does not.
	v="$(($(server_ms) - 1000))-0"
	forge_ok gone "$v"
	run -0 --separate-stderr "$RLOCK" last --max-age 1h gone
	assert_output ""
	assert_equal "$stderr" ""
	v="$(($(server_ms) + 3600000))-0"
	forge_ok gone "$v"
	run -1 --separate-stderr "$RLOCK" last --max-age 1h gone
	assert_output --regexp "^gone: no successful run within 1h(0m)?: last success never; never ran$"
	assert_equal "$stderr" "$(ignored gone "$v" "later than the server's clock")"
	run -0 --separate-stderr "$RLOCK" last --prometheus gone
	refute_output --partial "{lock="
}

@test "an 'ok' the history holds as a success counts though its ID runs ahead of the clock (the fences do: an older rlock's counter)" {
	# A counter 11.6 days ahead: the new stream's IDs start above it.
	local s
	fence_ahead ah >/dev/null
	run -0 "$RLOCK" run ah -- true
	s=$(newest_id ah)
	((${s%-*} > $(server_ms) + 86400000)) || fail "the success's ID $s is not ahead"
	run -1 "$RLOCK" run ah -- false
	assert_equal "$(rcli R HGET "$(hist_key ah):last" ok)" "$s"
	success ah
	run -0 --separate-stderr "$RLOCK" last --json ah
	assert_equal "$stderr" ""
	json_check "$output" 'd["last_success"]["id"] == a[0] and d["last_success"]["command"] == "true"' -- "$s"
	run -0 --separate-stderr "$RLOCK" last --prometheus ah
	assert_equal "$stderr" ""
	assert_line "rlock_last_success_timestamp_seconds{lock=\"ah\"} $((${s%-*} / 1000)).$(printf %03d $((${s%-*} % 1000)))"
}

@test "an 'ok' that is no ID (garbage, empty, a number, over-long, a terminal escape): ignored, said once, escaped" {
	run -1 "$RLOCK" run n -- false
	local -a vals=(garbage '' 12 -5 '1-2-3' '01-x' ' 1-0' \
		"$(printf '1%.0s' {1..60})-0")
	local v
	for v in "${vals[@]}"; do
		forge_ok n "$v"
		stale_exactly n "not a history entry's ID" \
			"$(printf '%.40s' "$v")$( ((${#v} > 40)) && echo ...)" "$v"
	done
	forge_ok n $'\x1b[2J1-0'
	run -1 --separate-stderr "$RLOCK" last --max-age 1h n
	assert_equal "$stderr" "$(ignored n '\x1b[2J1-0' "not a history entry's ID")"
	run -0 --separate-stderr "$RLOCK" last --prometheus n
	refute_output --partial "rlock_last_success_timestamp_seconds{"
	refute_stderr --partial $'\x1b'
}

@test "run --once-per is not fooled by a forged future 'ok': its period is its own record (:once), not the record of the last runs" {
	local v
	v="$(($(server_ms) + 28 * 3600 * 1000))-0"
	forge_ok o "$v"
	run -0 "$RLOCK" run --once-per 1h o -- true
	run -75 "$RLOCK" run --once-per 1h o -- true
	# After a failure too: the record's 'ok' is forged again, the period
	# done by the run before still skips, a new period still runs.
	run -1 "$RLOCK" run --once-per 1h o2 -- false
	forge_ok o2 "$v"
	run -0 "$RLOCK" run --once-per 1h o2 -- true
	run -75 "$RLOCK" run --once-per 1h o2 -- true
	assert_equal "$(rcli R HGET "$(key o2):once" per)" 3600000
}

@test "every kind writes its 'ok' where the check finds it: exclusive, shared, semaphore, pool, --with; also once trimmed" {
	start_redis ONE --stream-node-max-entries 1
	export RLOCK_URL=$ONE_URL
	run -0 "$RLOCK" pool envs add m1
	local -a kinds=("x" "-s" "-l 3" "--pool envs" "--with wb")
	local i k name s
	for i in "${!kinds[@]}"; do
		k=${kinds[i]}
		name=k$i
		[[ $k == --pool* ]] && name=envs
		# shellcheck disable=SC2086
		if [[ $k == --pool* ]]; then
			run -0 "$RLOCK" run $k -- true
		elif [[ $k == x ]]; then
			run -0 "$RLOCK" run "$name" -- true
		else
			run -0 "$RLOCK" run $k "$name" -- true
		fi
		s=$(rcli ONE XREVRANGE "$(hist_key "$name")" + - COUNT 1 | head -n 1)
		# Two failed runs in a history of 4 entries: the first writes
		# the success into the record, the second trims its entry.
		for _ in 1 2; do
			# shellcheck disable=SC2086
			if [[ $k == --pool* ]]; then
				RLOCK_LOG_MAX=4 run -1 "$RLOCK" run $k -- false
			elif [[ $k == x ]]; then
				RLOCK_LOG_MAX=4 run -1 "$RLOCK" run "$name" -- false
			else
				RLOCK_LOG_MAX=4 run -1 "$RLOCK" run $k "$name" -- false
			fi
			assert_equal "$(rcli ONE HGET "$(hist_key "$name"):last" ok)" "$s"
		done
		# Trimmed: the success's entry is gone, the record stands.
		assert_equal "$(rcli ONE XRANGE "$(hist_key "$name")" "$s" "$s")" ""
		run -0 --separate-stderr "$RLOCK" last --max-age 1h "$name"
		assert_output ""
		assert_equal "$stderr" "" "[$k] stderr"
		run -0 --separate-stderr "$RLOCK" last --json "$name"
		json_check "$output" 'd["last_success"]["id"] == a[0] and d["last_success"]["trimmed"] is True' \
			'd["last"]["exit"] == 1' -- "$s"
		assert_equal "$stderr" ""
	done
	# --with recorded the set's run in the other lock's history too.
	assert_equal "$(rcli ONE HEXISTS "$(hist_key wb):last" ok)" 1
	run -0 --separate-stderr "$RLOCK" last --max-age 1h wb
	assert_output ""
	assert_equal "$stderr" ""
}

# ---- keys under the prefix that rlock did not write -----------------------------

@test "status lists the held lock and names the keys under the prefix that are not locks" {
	rcli R SET "${RLOCK_PREFIX}{}" x >/dev/null
	rcli R HSET "${RLOCK_PREFIX}{h}" a b >/dev/null
	local t
	t=$("$RLOCK" acquire held)
	run -0 --separate-stderr "$RLOCK" status
	assert_equal "${#lines[@]}" 2
	assert_status_row "${lines[1]}" held held "$(meta held fence)"
	assert_stderr "rlock: status: 2 keys under '$RLOCK_PREFIX' are not locks: ${RLOCK_PREFIX}{h} (not a lock's string, a hash), ${RLOCK_PREFIX}{} (not a lock name: empty)"
	run -0 --separate-stderr "$RLOCK" status --json
	json_check "$output" 'len(d["locks"]) == 1' \
		'd["locks"][0]["name"] == "held" and d["locks"][0]["held"] is True' \
		'd["locks"][0]["token_prefix"] == a[0][:8]' -- "$t"
	assert_stderr_line --partial "2 keys under '$RLOCK_PREFIX' are not locks"
	# -q says nothing of them.
	run -0 --separate-stderr "$RLOCK" -q status
	assert_equal "$stderr" ""
	# The junk is left as it was.
	assert_equal "$(rcli R GET "${RLOCK_PREFIX}{}")" x
	assert_equal "$(rcli R HGET "${RLOCK_PREFIX}{h}" a)" b
}

@test "a hash at a lock's key: run exits 70 naming the key and the fix; release --force removes it, then run works" {
	rcli R HSET "$(key w)" a b >/dev/null
	run -70 --separate-stderr "$RLOCK" run w -- touch ran
	assert_output ""
	assert_stderr "rlock: run: $(key w) holds a hash, not the string rlock keeps there (another client's data): 'rlock release --force w' removes it"
	[[ ! -e ran ]] || fail "the command ran"
	assert_equal "$(rcli R HGET "$(key w)" a)" b
	# status of that name says the same, and fails with 70 too.
	run -70 --separate-stderr "$RLOCK" status w
	assert_output ""
	assert_stderr "rlock: status: $(key w) holds a hash, not the string rlock keeps there (another client's data): 'rlock release --force w' removes it"
	run -0 --separate-stderr "$RLOCK" release --force w
	assert_stderr "rlock: release: w: removed 1 key of another type (another client's data)"
	lock_free w
	run -0 "$RLOCK" run w -- touch ran
	[[ -e ran ]]
	success w
}

@test "a string at the history's key: run works and warns that history is not kept (not with -q); log and last exit 70 naming the key" {
	rcli R SET "$(hist_key g5)" x >/dev/null
	run -0 --separate-stderr "$RLOCK" run g5 -- true
	assert_equal "${#stderr_lines[@]}" 1
	assert_stderr_line --partial "$(hist_key g5) is not a stream rlock wrote (another type): history is not kept"
	assert_regex "$stderr" '^rlock: run: warning: '
	assert_equal "$(rcli R GET "$(hist_key g5)")" x
	run -70 --separate-stderr "$RLOCK" log g5
	assert_output ""
	assert_stderr "rlock: log: $(hist_key g5) holds a string, not the stream rlock keeps there (another client's data): 'rlock release --force g5' removes it"
	run -70 --separate-stderr "$RLOCK" last g5
	assert_output ""
	assert_stderr "rlock: last: $(hist_key g5) holds a string, not the stream rlock keeps there (another client's data): 'rlock release --force g5' removes it"
	run -0 --separate-stderr "$RLOCK" -q run g5 -- true
	assert_equal "$stderr" ""
	lock_free g5
}

@test "a semaphore whose limit another client set to 0: status shows it as unknown and says so; acquire -l 3 exits 70 naming the key and value" {
	local t
	t=$("$RLOCK" acquire -l 3 sem)
	assert_equal "$(rcli R HGET "$(key sem):holders:meta" limit)" 3
	run -0 --separate-stderr "$RLOCK" status sem
	assert_output --partial 'semaphore: 1 of 3 places held'
	rcli R HSET "$(key sem):holders:meta" limit 0 >/dev/null
	run -0 --separate-stderr "$RLOCK" status sem
	assert_stderr "rlock: status: sem: limit '0' is not what rlock writes (another client's data): shown as unknown"
	assert_regex "${lines[1]}" '^sem +held '
	refute_output --partial exclusive
	refute_output --partial 'semaphore:'
	run -70 --separate-stderr "$RLOCK" acquire -l 3 sem
	assert_output ""
	assert_stderr "rlock: acquire: sem: its holders' limit in $(key sem):holders:meta is '0', not a kind rlock wrote ('s' or a limit of 2 or more)"
	assert_equal "$(nholders sem)" 1
	assert_equal "$(rcli R HGET "$(key sem):holders:meta" limit)" 0
}

# A kind another client wrote is "unknown" in JSON too, never "exclusive".
@test "a semaphore whose limit another client set to 0: status --json does not call it exclusive" {
	"$RLOCK" acquire -l 3 sem >/dev/null
	rcli R HSET "$(key sem):holders:meta" limit 0 >/dev/null
	run -0 --separate-stderr "$RLOCK" status --json sem
	assert_stderr "rlock: status: sem: limit '0' is not what rlock writes (another client's data): shown as unknown"
	json_check "$output" 'd["locks"][0]["held"] is True' \
		'd["locks"][0]["kind"] != "exclusive"'
}

# ---- a hostile server's SCAN ------------------------------------------------------

@test "a SCAN whose cursor never returns to 0: status (listing) gives up after 10000 pages with 70" {
	start_hostile H "$(scan_rule 1 "$(key x)")"
	run --separate-stderr timeout 60 "$RLOCK" -u "$H_URL" status
	((status != 124)) || fail "status did not end within 60s"
	assert_equal "$status" 70
	assert_output ""
	assert_equal "${#stderr_lines[@]}" 1
	assert_regex "$stderr" '^rlock: status: .*SCAN did not end after 10000 pages'
	assert_equal "$(hostile_calls H SCAN)" 10000
	run --separate-stderr timeout 60 "$RLOCK" -u "$H_URL" status --json
	assert_equal "$status" 70
	assert_output ""
	assert_regex "$stderr" 'SCAN did not end after 10000 pages'
}

@test "a SCAN reply whose cursor is 'abc': 70, unexpected reply to SCAN" {
	start_hostile H "$(scan_rule abc "$(key x)")"
	run --separate-stderr timeout 60 "$RLOCK" -u "$H_URL" status
	assert_equal "$status" 70
	assert_output ""
	assert_equal "${#stderr_lines[@]}" 1
	assert_regex "$stderr" "^rlock: status: 127\\.0\\.0\\.1:$H_PORT: unexpected reply to SCAN"
	assert_equal "$(hostile_calls H SCAN)" 1
}

# ---- options after operands -------------------------------------------------------

@test "monitoring commands take options after their operands: last NAME --json --max-age, log NAME --json -n, status NAME --json" {
	run -0 "$RLOCK" run ok -- true
	run -3 "$RLOCK" run bad -- sh -c 'exit 3'
	run -1 --separate-stderr "$RLOCK" last ok bad --json --max-age 1h
	assert_equal "${#lines[@]}" 2
	json_check "${lines[0]}" 'd["lock"] == "ok" and d["stale"] is False'
	json_check "${lines[1]}" 'd["lock"] == "bad" and d["stale"] is True and d["last"]["exit"] == 3'
	run -0 --separate-stderr "$RLOCK" last bad --prometheus
	assert_line 'rlock_last_run_exit_code{lock="bad"} 3'
	run -0 --separate-stderr "$RLOCK" log bad --json -n 1
	json_lines "$output" 'len(d) == 1 and d[0]["event"] == "released" and d[0]["exit"] == 3'
	local t
	t=$("$RLOCK" acquire h)
	run -0 --separate-stderr "$RLOCK" status h --json
	json_check "$output" 'd["locks"][0]["name"] == "h" and d["locks"][0]["held"] is True'
	# "--" ends them: a lock named --json.
	run -0 --separate-stderr "$RLOCK" last -- --json
	assert_equal "$output" "--json: never ran"
}

# ---- a long history ----------------------------------------------------------------

@test "last over 20000 lost entries and no success: finishes, says never, in little memory" {
	local k
	k=$(hist_key long)
	# One script writes them all: one round trip, however loaded the
	# machine (20000 of redis-cli's could outlast its timeout).
	rcli R EVAL "for i = 1, 20000 do redis.call('XADD', KEYS[1], '*', 'event', 'lost', 'token', string.format('%08d', i)) end" 1 "$k" >/dev/null
	assert_equal "$(hist_len long)" 20000
	local peak=
	run --separate-stderr timeout 60 /usr/bin/time -f %M -o peak "$RLOCK" last --max-age 1h long
	((status != 124)) || fail "last did not end within 60s"
	assert_equal "$status" 1
	assert_regex "$output" '^long: no successful run within 1h(0m)?: last success never; last run [^ ]+ ago on an unknown host: lost$'
	peak=$(tail -n 1 peak)
	run -0 --separate-stderr timeout 60 "$RLOCK" last --json long
	json_check "$output" 'd["last_success"] is None and d["last"]["token"] == "00020000"'
	run -0 --separate-stderr timeout 60 "$RLOCK" last --prometheus long
	assert_line 'rlock_last_run_exit_code{lock="long"} 76'
	refute_output --partial 'rlock_last_success_timestamp_seconds{lock="long"}'
	echo "# last --max-age over 20000 entries: peak RSS ${peak} kB" >&3
	[[ $peak =~ ^[0-9]+$ ]]
}

# ---- what a failed acquire leaves in the history ----------------------------------

# An acquire that takes the lock and then cannot hand its token out
# (stdout full; with --renew also a renewer that cannot start) gives the
# grant back as abandoned: no run that ended well.
@test "an acquire that exits 71 because it could not print its token records no success" {
	run -71 --separate-stderr bash -c '"$RLOCK" acquire j >/dev/full'
	assert_stderr "rlock: acquire: j: cannot write the token: No space left on device; lock released"
	run -71 --separate-stderr bash -c '"$RLOCK" acquire --renew jr >/dev/full'
	assert_stderr "rlock: acquire: jr: cannot write the token: No space left on device; lock released"
	lock_free j
	lock_free jr
	wait_until 3 no_rlock_pids
	assert_equal "$(hist_names j)" "acquired abandoned"
	assert_equal "$(hist_names jr)" "acquired abandoned"
	run --separate-stderr "$RLOCK" last --max-age 1h j jr
	assert_equal "$status" 1
	assert_equal "${#lines[@]}" 2
}
