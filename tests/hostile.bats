#!/usr/bin/env bats
# hostile.bats - never a false grant (issue 31): a command runs only under a
# lock the server confirmed, whatever another client, a broken server's
# replies or the environment say (docs/design.md#the-keys and
# docs/design.md#data-rlock-did-not-write).
#
# Two kinds of peer.  A RESP server of the tests' own (hostile_helper.bash,
# helpers/hostile_server.py) answers each command as the test asks: huge
# declared lengths, streams that never end, replies of the wrong type,
# fences that are not fences; its log shows what rlock sent.  A real
# redis-server R, started once for the file, where the tests write what
# rlock did not (fence counters, forged wake-up messages) with redis-cli,
# under the test's own prefix.  Servers a test needs for itself (several
# masters, a unix socket) are started by that test and stopped by its
# teardown.
#
# What rlock sends, as the hostile server logs it: run and acquire send
# EVALSHA acquire, CLUSTER SLOTS (answered -ERR: not a cluster), EVALSHA
# extend every TTL/3 while the command runs (run) and EVALSHA release at
# the end; status sends EVALSHA status.  Every reply a test does not give
# is "-ERR unknown command".

bats_require_minimum_version 1.5.0
load test_helper
load hostile_helper

setup_file() { rl_setup_file; }
teardown_file() { rl_teardown_file; }

setup() {
	rl_setup
	SOCKDIR=
}

teardown() {
	stop_all_hostile
	rl_teardown
	[[ $SOCKDIR == /tmp/rlh.* ]] && rm -rf "$SOCKDIR"
	return 0
}

# ---- helpers ---------------------------------------------------------------

# measure ID COMMAND...: run COMMAND with stdout and stderr in ID.out and
# ID.err; STATUS is its exit status, ELAPSED_MS how long it took and
# PEAK_KB its peak resident set (GNU time's %M, or VmHWM polled from /proc
# where there is no GNU time).
measure() {
	local id=$1 t0 pid hwm
	shift
	t0=$(now_ms)
	STATUS=0
	if /usr/bin/time -f %M -o /dev/null true 2>/dev/null; then
		/usr/bin/time -f %M -o "$id.peak" "$@" >"$id.out" 2>"$id.err" 3>&- || STATUS=$?
		PEAK_KB=$(tail -n 1 "$id.peak")
	else
		"$@" >"$id.out" 2>"$id.err" 3>&- &
		pid=$!
		PEAK_KB=0
		while pid_alive "$pid"; do
			hwm=$(sed -n 's/^VmHWM:[[:space:]]*\([0-9]*\) kB$/\1/p' "/proc/$pid/status" 2>/dev/null)
			((${hwm:-0} > PEAK_KB)) && PEAK_KB=$hwm
			sleep 0.01
		done
		wait "$pid" || STATUS=$?
	fi
	ELAPSED_MS=$(($(now_ms) - t0))
}

# one_line FILE [SUBSTRING...]: FILE has exactly one line, starting with
# "rlock: " and containing every SUBSTRING.
one_line() {
	local f=$1 s
	shift
	local -a l
	mapfile -t l <"$f"
	((${#l[@]} == 1)) || {
		fail "expected one line in $f, got ${#l[@]}: $(cat "$f")"
		return 1
	}
	[[ ${l[0]} == "rlock: "* ]] || {
		fail "not an rlock diagnostic: ${l[0]}"
		return 1
	}
	for s in "$@"; do
		[[ ${l[0]} == *"$s"* ]] || {
			fail "'$s' not in: ${l[0]}"
			return 1
		}
	done
}

# stderr_one_line [SUBSTRING...]: one_line on $stderr (run --separate-stderr).
stderr_one_line() {
	printf '%s\n' "$stderr" >"$BATS_TEST_TMPDIR/stderr"
	one_line "$BATS_TEST_TMPDIR/stderr" "$@"
}

# usage_line_naming FILE SUBSTRING...: a usage error: its first line names
# every SUBSTRING, and at most the "Try 'rlock ... --help'." line follows.
usage_line_naming() {
	local f=$1
	shift
	local -a l
	mapfile -t l <"$f"
	((${#l[@]} == 1)) || [[ ${#l[@]} == 2 && ${l[1]} == "Try 'rlock"*"--help'." ]] || {
		fail "expected one line (and a Try line) in $f: $(cat "$f")"
		return 1
	}
	head -n 1 "$f" >"$f.first"
	one_line "$f.first" "$@"
}

# prefix_keys [SERVER]: every key under this test's prefix.
prefix_keys() {
	rcli "${1:-R}" --scan --pattern "${RLOCK_PREFIX}*"
}

# counter NAME [SERVER]: lock NAME's fence counter.
counter() {
	rcli "${2:-R}" GET "$(key "$1"):fence"
}

# nothing_held NAME [SERVER]: no holder of any kind, nobody in line.
nothing_held() {
	lock_free "$1" "${2:-R}" && holders_is "$1" 0 "${2:-R}" && line_is "$1" 0 "${2:-R}"
}

# ---- a. replies are bounded -------------------------------------------------

# bounded_status RULE: status against a server whose status script answers
# RULE exits 69 at once, in little memory, with one protocol error line.
bounded_status() {
	start_hostile H "status $1"
	measure st "$RLOCK" -u "$H_URL" status x
	assert_equal "$STATUS" 69
	one_line st.err "protocol error"
	((ELAPSED_MS < 1500)) || fail "took ${ELAPSED_MS}ms"
	((PEAK_KB < 100000)) || fail "peak RSS ${PEAK_KB} kB"
	# (It may ask again on a new connection: each answer is bounded.)
	hostile_calls_at_least H status 1
}

@test "a peer that is not Redis (an HTTP server's '<' or 'HTTP/1.1'): 69, 'is this a Redis server?'" {
	local reply b
	for reply in '<!DOCTYPE html>\r\n' 'HTTP/1.1 400 Bad Request\r\n\r\n'; do
		b=${reply:0:1}
		start_hostile H "acquire $reply" "status $reply" "release $reply" "ping $reply"
		run -69 --separate-stderr "$RLOCK" -u "$H_URL" run x -- touch ran
		assert_stderr "rlock: run: 127.0.0.1:$H_PORT: protocol error: got \"$b\" as reply type byte; is this a Redis server?"
		run -69 --separate-stderr "$RLOCK" -u "$H_URL" status x
		assert_stderr "rlock: status: 127.0.0.1:$H_PORT: protocol error: got \"$b\" as reply type byte; is this a Redis server?"
		run -69 --separate-stderr "$RLOCK" -u "$H_URL" acquire x
		assert_stderr "rlock: acquire: 127.0.0.1:$H_PORT: protocol error: got \"$b\" as reply type byte; is this a Redis server?"
		stop_hostile H
	done
	[[ ! -e ran ]]
}

@test "a bulk string declared 10^12 bytes long and streamed: 69, protocol error, at once and in little memory" {
	bounded_status stream-bulk
}

@test "an array declared 2*10^9 elements long and streamed: 69, protocol error, at once and in little memory" {
	bounded_status stream-array
}

@test "an array declared 2^31-1 elements long, then silence: 69, protocol error, not a timeout" {
	bounded_status '*2147483647\r\n'
}

@test "an array of 1048577 elements or a bulk string of 4 MiB + 1 is a protocol error at its header" {
	bounded_status '*1048577\r\n'
	stop_all_hostile
	bounded_status '$4194305\r\n'
}

@test "an array of 1048576 elements or a bulk string of 4 MiB is within bounds: rlock waits for it (a timeout)" {
	local r
	for r in '*1048576\r\n' '$4194304\r\n'; do
		start_hostile H "status $r"
		measure st "$RLOCK" --io-timeout 500ms -u "$H_URL" status x
		assert_equal "$STATUS" 69
		[[ $(cat st.err) != *"protocol error"* ]] || fail "$r: $(cat st.err)"
		one_line st.err
		stop_all_hostile
	done
}

@test "a reply of 4 MiB strings past 512 MiB in all is a protocol error before much more is read" {
	local most=655360 as=4000000
	start_hostile H "status stream-bulks"
	# AddressSanitizer (make test SAN=1) reserves terabytes of address
	# space for its shadow and holds freed memory back: a limit on the
	# address space would stop it before main, and its peak is higher.
	if ldd "$RLOCK" 2>/dev/null | grep -q libasan; then
		as=unlimited
		most=1572864
	fi
	# Bounded in time and address space, so that an unbounded reader
	# fails here instead of taking the machine's memory.
	measure st bash -c 'ulimit -v "$1"; shift; exec timeout 30 "$@"' - \
		"$as" "$RLOCK" --io-timeout 30s -u "$H_URL" status x
	assert_equal "$STATUS" 69
	one_line st.err "protocol error"
	((PEAK_KB < most)) || fail "peak RSS ${PEAK_KB} kB: more than $((most / 1024)) MiB read"
}

# resp3_kind BYTE: what rlock calls the RESP3 type BYTE starts.
resp3_kind() {
	case $1 in
	%) echo map ;; '~') echo set ;; _) echo null ;; ,) echo double ;;
	'#') echo boolean ;; '(') echo 'big number' ;; =) echo 'verbatim string' ;;
	'|') echo attribute ;; '>') echo push ;; '!') echo 'blob error' ;;
	esac
}

# undone_tokens NAME: the tokens of NAME's releases, one a line (a
# release's ARGV[1] follows its 12 keys).
undone_tokens() {
	hostile_log "$1" | awk '$1 == "EVALSHA" && $2 == "release" { print $16 }'
}

@test "a RESP3 reply to the acquire, of each type: 69, one line naming it, no command, no token, and the request undone" {
	local -a replies=('%1\r\n+a\r\n:1\r\n' '~2\r\n:1\r\n:1\r\n' '_\r\n'
		',1.5\r\n' '#t\r\n' '(1795736700000000\r\n' '=7\r\ntxt:abc\r\n'
		'|1\r\n+a\r\n+b\r\n*2\r\n:1\r\n:1\r\n' '>2\r\n+a\r\n+b\r\n'
		'!3\r\nERR\r\n' '*2\r\n:1\r\n(1795736700000000\r\n')
	local r b why tok verb
	for r in "${replies[@]}"; do
		# The byte that is RESP3: the first, or the grant's fence.
		b=${r:0:1}
		[[ $b == '*' ]] && b='('
		why="protocol error: a RESP3 $(resp3_kind "$b") (type byte '$b'), where rlock speaks RESP2"
		for verb in run acquire; do
			start_hostile H "acquire $r" "release $OK_1"
			if [[ $verb == run ]]; then
				run --separate-stderr "$RLOCK" -u "$H_URL" run f -- touch ran
				[[ ! -e ran ]] || fail "the command ran on $r"
			else
				run --separate-stderr "$RLOCK" -u "$H_URL" acquire f
			fi
			((status == 69)) || fail "$verb answered $r: exit $status, $stderr"
			assert_equal "$output" ""
			assert_equal "$stderr" "rlock: $verb: 127.0.0.1:$H_PORT: $why"
			# Asked once, then undone with the request's own token.
			assert_equal "$(hostile_calls H acquire)" 1
			tok=$(hostile_log H | awk '$1 == "EVALSHA" && $2 == "acquire" { print $5 }')
			[[ $tok =~ ^[0-9a-f]{32}$ ]] || fail "no token in the acquire: $(hostile_log H | cut -c1-80)"
			assert_equal "$(undone_tokens H)" "$tok"
			stop_all_hostile
		done
	done
}

# ---- b. the renewer is not blinded ---------------------------------------

# lost_by_junk EXTEND_REPLY: a run whose grant is fine and whose renewals
# are answered EXTEND_REPLY stops its command before its 1.5s lease ends
# and exits 76.
lost_by_junk() {
	start_hostile H "acquire $GRANT" "extend $1" "release $OK_1"
	bg_start run "$RLOCK" -u "$H_URL" run -t 1500ms x -- \
		sh -c 'echo $$ >cmd.pid; trap "date +%s%N >termed; exit 143" TERM
			date +%s%N >started; sleep 5 & wait; touch late'
	local pid=$BG_PID
	bg_wait "$pid" 6 || fail "rlock still runs after 6s; log: $(hostile_log H | cut -c1-60)"
	assert_equal "$BG_STATUS" 76
	one_line run.err "lock lost"
	# The command (and its sleep) is gone: it never reaches "late".
	wait_until 2 pid_gone "$(cat cmd.pid)"
	[[ ! -e late ]]
	# It was told to stop before its lease, which began before it
	# started, could have ended.
	local ms=$((($(cat termed) - $(cat started)) / 1000000))
	((ms < 1500)) || fail "the command got SIGTERM ${ms}ms after it started: past the 1.5s lease"
	hostile_calls_at_least H extend 1 || fail "no renewal sent: $(hostile_log H | cut -c1-60)"
}

@test "renewals answered with an array declared 2^31-1 long, then silence: 76, the command stopped within the lease" {
	lost_by_junk '*2147483647\r\n'
}

@test "renewals answered :5: 76, the command stopped within the lease" {
	lost_by_junk ':5\r\n'
}

@test "renewals answered +OK: 76, the command stopped within the lease" {
	lost_by_junk '+OK\r\n'
}

@test "renewals answered with a bulk string: 76, the command stopped within the lease" {
	lost_by_junk '$3\r\nabc\r\n'
}

# ---- c. a grant's fence is a positive integer below 2^53 ------------------

@test "a grant whose fence is not a positive integer below 2^53 is refused: 70, no command, no token" {
	local g
	for g in '*2\r\n:1\r\n$3\r\nabc\r\n' '*2\r\n:1\r\n:-42\r\n' '*2\r\n:1\r\n:0\r\n' \
		'*2\r\n:1\r\n:9007199254740993\r\n' '*2\r\n:1\r\n:9007199254740992\r\n'; do
		start_hostile H "acquire $g" "release $OK_1" "leave $OK_1"
		run -70 --separate-stderr "$RLOCK" -u "$H_URL" run f -- touch ran
		[[ ! -e ran ]] || fail "the command ran on the grant $g"
		stderr_one_line
		run -70 --separate-stderr "$RLOCK" -u "$H_URL" acquire f
		assert_equal "$output" ""
		stderr_one_line
		assert_equal "$(hostile_calls H acquire)" 2
		stop_all_hostile
	done
}

@test "a grant with a valid fence from the hostile server runs the command with that fence" {
	start_hostile H "acquire $GRANT" "release $OK_1"
	run -0 --separate-stderr "$RLOCK" -u "$H_URL" run f -- sh -c 'echo "$RLOCK_FENCE"'
	assert_equal "$output" 1795736700000000
	assert_equal "$(hostile_calls H acquire)" 1
	assert_equal "$(hostile_calls H release)" 1
}

# ---- d. fence counters rlock did not write ---------------------------------

JUNK_COUNTERS=(9223372036854775807 9007199254740993 1795736700000000000 1e300 0x10
	' 12' abc -5 '')

# junk_counters MODE...: for every junk counter, `rlock MODE... f` (MODE
# starts with run or acquire) on a lock with no history yet (a grant takes
# a counter an older rlock left as the floor of its stream) exits 70, runs
# nothing, leaves the counter as it was, the lock free and no grant in the
# history, and names the key and the value in one line.
junk_counters() {
	local v k got
	k="$(key f):fence"
	for v in "${JUNK_COUNTERS[@]}"; do
		rcli R DEL "$(key f):log" >/dev/null
		rcli R SET "$k" "$v" >/dev/null
		if [[ $1 == run ]]; then
			run -70 --separate-stderr "$RLOCK" "$@" f -- touch ran
			[[ ! -e ran ]] || fail "the command ran with the counter '$v'"
		else
			run -70 --separate-stderr "$RLOCK" "$@" f
			assert_equal "$output" ""
		fi
		printf '%s\n' "$stderr" >err
		if [[ -n $v ]]; then
			one_line err "$k" "$v"
		else
			one_line err "$k"
		fi
		got=$(rcli R GET "$k")
		[[ $got == "$v" ]] || fail "counter '$v' became '$got'"
		nothing_held f || fail "the lock is not free after the counter '$v': $(prefix_keys)"
		assert_equal "$(hist_count f acquired)" 0
	done
}

@test "a fence counter that is not digits below 2^53 fails run (70) naming key and value, unchanged" {
	junk_counters run
}

@test "a fence counter that is not digits below 2^53 fails a shared run (70) naming key and value, unchanged" {
	junk_counters run -s
}

@test "a fence counter that is not digits below 2^53 fails a semaphore run (70) naming key and value, unchanged" {
	junk_counters run -l 3
}

@test "a fence counter that is not digits below 2^53 fails acquire (70) naming key and value, unchanged" {
	junk_counters acquire
}

@test "a wait line member that is not KIND:ID fails every kind of run (70) naming key and member, nothing granted" {
	local m mode
	for m in zz x ':' $'\x1b[2J'; do
		rcli R DEL "$(key g):line" >/dev/null
		rcli R ZADD "$(key g):line" 1 "$m" >/dev/null
		for mode in -x -s "-l 3"; do
			# shellcheck disable=SC2086
			run -70 --separate-stderr "$RLOCK" run $mode -w 1s g -- touch ran
			[[ ! -e ran ]] || fail "ran with '$m' in line ($mode)"
			printf '%s\n' "$stderr" >err
			one_line err "$(key g):line holds '" "which is not a waiter rlock wrote"
			lock_free g && holders_is g 0 || fail "held after '$m' ($mode)"
		done
	done
	# What rlock shows of the member is escaped: no control byte.
	refute_output --partial $'\x1b'
	[[ $stderr != *$'\x1b'* ]] || fail "a control byte reached stderr"
}

@test "a holders' limit that is no kind fails every kind of run (70) naming the key, never a kind it is not" {
	local v mode
	for v in abc 0 1 -3 ''; do
		rcli R DEL "$(key g):holders" "$(key g):holders:meta" >/dev/null
		rcli R ZADD "$(key g):holders" 99999999999999 tokjunk >/dev/null
		rcli R HSET "$(key g):holders:meta" limit "$v" >/dev/null
		for mode in -x -s "-l 3"; do
			# shellcheck disable=SC2086
			run --separate-stderr "$RLOCK" run $mode -n g -- touch ran
			[[ ! -e ran ]] || fail "ran with limit '$v' ($mode)"
			assert_equal "$status" 70
			printf '%s\n' "$stderr" >err
			one_line err "$(key g):holders:meta is '$v', not a kind rlock wrote"
		done
	done
}

# The server's error for what a script of rlock's could not do names the
# script's file and line (lib/scripts/), not a line of the body it was
# sent: a shared holder's lease of +inf (no client writes one) that the
# extend script cannot turn into the keys' expiry.
@test "a script's error from the server names the .lua file and line it is on (70)" {
	local tok
	tok=$("$RLOCK" acquire -s -t 30s e)
	rcli R ZADD "$(key e):holders" +inf tokjunk >/dev/null
	run -70 --separate-stderr "$RLOCK" extend e "$tok"
	printf '%s\n' "$stderr" >err
	one_line err "ERR value is not an integer or out of range (extend.lua:"
	[[ $stderr =~ \(extend\.lua:[0-9]+\)$ ]] || fail "no line: $stderr"
	[[ $stderr != *user_script* && $stderr != *" script:"* ]] ||
		fail "the body's line or the digest shown: $stderr"
}

@test "a counter of plain digits still works: the fence is at least the server's clock, and the counter, taken as the floor, is deleted" {
	local k f t0 mode
	k="$(key f):fence"
	for mode in "" -s "-l 3"; do
		# A new stream each time: the counter is its floor.
		rcli R DEL "$(key f):log" >/dev/null
		rcli R SET "$k" 12 >/dev/null
		t0=$(server_us)
		# shellcheck disable=SC2086
		run -0 --separate-stderr "$RLOCK" run $mode f -- sh -c 'echo "$RLOCK_FENCE"'
		f=$output
		assert_fence "$f" "$t0" "$(server_us)"
		assert_equal "$(last_grant f fence)" "$f"
		assert_equal "$(rcli R EXISTS "$k")" 0
		nothing_held f
	done
	rcli R DEL "$(key f):log" >/dev/null
	rcli R SET "$k" 12 >/dev/null
	t0=$(server_us)
	run -0 --separate-stderr "$RLOCK" --json acquire f
	f=$(python3 -c 'import json, sys; print(json.loads(sys.argv[1])["fence"])' "$output")
	assert_fence "$f" "$t0" "$(server_us)"
	assert_equal "$(meta f fence)" "$f"
	assert_equal "$(rcli R EXISTS "$k")" 0
}

@test "a counter beside a history: digits are the next grant's floor, then deleted; junk is refused (70) as on a new stream, left as it was" {
	local f g c mode
	for mode in "" -s "-l 3"; do
		rcli R DEL "$(key j):log" "$(key j):fence" "$(key j):grant" >/dev/null
		# shellcheck disable=SC2086
		f=$("$RLOCK" run $mode j -- sh -c 'echo "$RLOCK_FENCE"')
		rcli R SET "$(key j):fence" abc >/dev/null
		# shellcheck disable=SC2086
		run -70 --separate-stderr "$RLOCK" run $mode j -- touch ran
		[[ ! -e ran ]] || fail "the command ran ($mode)"
		printf '%s\n' "$stderr" >err
		one_line err "$(key j):fence" "abc"
		assert_equal "$(counter j)" abc
		nothing_held j
		assert_equal "$(hist_count j acquired)" 1
		# Digits ahead of the history's ids: the floor, used once.
		c=$(($(server_us) + 5000000000))
		rcli R SET "$(key j):fence" "$c" >/dev/null
		# shellcheck disable=SC2086
		g=$("$RLOCK" run $mode j -- sh -c 'echo "$RLOCK_FENCE"')
		assert_increasing "$f" "$c" "$g"
		assert_equal "$(last_grant j fence)" "$g"
		assert_equal "$(rcli R EXISTS "$(key j):fence")" 0
		nothing_held j
	done
}

@test "a history whose ids are years ahead of the clock: the grants go on from them, increasing" {
	local ms f=() i mode
	for mode in "" -s "-l 3"; do
		rcli R DEL "$(key y):log" >/dev/null
		ms=$(($(server_ms) + 10 * 365 * 86400000))
		assert_equal "$(rcli R XADD "$(key y):log" "$ms-0" event skipped reason x)" "$ms-0"
		f=("$((ms * 1000 + 1000))")
		for i in 1 2 3; do
			# shellcheck disable=SC2086
			f[i]=$("$RLOCK" run $mode y -- sh -c 'echo "$RLOCK_FENCE"')
		done
		assert_increasing "${f[@]}"
		assert_equal "$(last_grant y fence)" "${f[3]}"
		nothing_held y
	done
}

@test "a history whose last id gives no fence (beyond 2^53): 70, no command, one line naming the key and the id, the lock left free" {
	local mode
	for mode in "" -s "-l 3"; do
		rcli R DEL "$(key b):log" >/dev/null
		rcli R XADD "$(key b):log" 9999999999999-0 event skipped reason x >/dev/null
		# shellcheck disable=SC2086
		run -70 --separate-stderr "$RLOCK" run $mode b -- touch ran
		[[ ! -e ran ]] || fail "the command ran ($mode)"
		printf '%s\n' "$stderr" >err
		one_line err "$(key b):log" "'9999999999999-" "which gives no fence"
		nothing_held b || fail "held after the refused grant ($mode): $(prefix_keys)"
	done
}

@test "a history key of another type: the fence falls back to the counter, the history is said not kept, and log says whose key it is" {
	local f=() t0
	rcli R SET "$(key o):log" junk >/dev/null
	t0=$(server_us)
	# (Not a loop over i: bats's run changes the caller's i.)
	run -0 --separate-stderr "$RLOCK" run o -- sh -c 'echo "$RLOCK_FENCE"'
	f[0]=$output
	assert_stderr_line --partial "$(key o):log is not a stream rlock wrote (another type): history is not kept"
	run -0 --separate-stderr "$RLOCK" run o -- sh -c 'echo "$RLOCK_FENCE"'
	f[1]=$output
	assert_stderr_line --partial "$(key o):log is not a stream rlock wrote (another type): history is not kept"
	assert_increasing "$t0" "${f[@]}"
	assert_fence "${f[1]}" "$t0" "$(server_us)"
	# The counter is the fence source now, at the last one; the record of
	# the grant went with the lock.
	assert_equal "$(counter o)" "${f[1]}"
	assert_equal "$(rcli R EXISTS "$(key o):grant")" 0
	assert_equal "$(rcli R GET "$(key o):log")" junk
	run -70 --separate-stderr "$RLOCK" log o
	assert_stderr "rlock: log: $(key o):log holds a string, not the stream rlock keeps there (another client's data): 'rlock release --force o' removes it"
	nothing_held o
}

@test "junk fence counters on all three masters: 70, no command, every counter unchanged, nothing held" {
	start_redis N1
	start_redis N2
	start_redis N3
	local v n
	for v in abc 9223372036854775807; do
		for n in N1 N2 N3; do
			rcli "$n" SET "$(key f):fence" "$v" >/dev/null
		done
		run -70 --separate-stderr "$RLOCK" -u "$N1_URL" -u "$N2_URL" -u "$N3_URL" run f -- touch ran
		[[ ! -e ran ]] || fail "the command ran with the counters '$v'"
		printf '%s\n' "$stderr" >err
		one_line err "$(key f):fence" "$v"
		for n in N1 N2 N3; do
			assert_equal "$(counter f "$n")" "$v"
			nothing_held f "$n"
		done
	done
}

# ---- e. no command starts on a message -------------------------------------

# waiter_id NAME [N]: the id of the Nth (from 0) in NAME's line.
waiter_id() {
	local m
	m=$(line_members "$1" | sed -n "$((${2:-0} + 1))p")
	echo "${m#*:}"
}

# forge_grants NAME ID: push grants to waiter ID's wake-up list, built the
# way a release builds them from the waiter's record (stamp, and the
# server's ms since the record's "at"), but for another token: none (an
# older rlock's form), another's, and the waiter's own with one digit
# changed.  (With the waiter's own token, read from its record, a message
# is a grant: whoever can read and write rlock's keys can as well delete
# the lock, docs/design.md#messages.)
forge_grants() {
	local rec stamp at now key d fence t other near
	local -a f
	key="$(key "$1"):wake:$2"
	rec=$(rcli R HGET "$(key "$1"):line:who" "^x:$2")
	mapfile -t f <<<"$rec"
	stamp=${f[3]:-0} at=${f[4]:-0}
	[[ ${f[0]} =~ ^[0-9a-f]{32}$ ]] || fail "no token in the record of $2"
	other=$(printf '%032x' 7)
	near=${f[0]:0:31}$([[ ${f[0]:31} == 0 ]] && echo 1 || echo 0)
	now=$(server_ms)
	fence=$(($(server_us) + 1000))
	for d in $((now - at)) 0 1; do
		rcli R RPUSH "$key" "granted"$'\n'"$fence"$'\n'"$stamp"$'\n'"$d"$'\n1' >/dev/null
		for t in "$other" "$near"; do
			rcli R RPUSH "$key" "granted"$'\n'"$t"$'\n'"$fence"$'\n'"$stamp"$'\n'"$d"$'\n1' >/dev/null
		done
	done
}

# b_started_within SECS: b.started appears within SECS.
b_started_within() {
	wait_until "$1" test -e b.started 2>/dev/null
}

@test "a forged 'granted' message for another token does not start a waiting run while another holds the lock" {
	local ta id i tb
	ta=$("$RLOCK" acquire -t 20s L)
	bg_start b "$RLOCK" run -w 30s L -- sh -c \
		'echo "$RLOCK_TOKEN" >b.token; date +%s.%N >b.started; '"$(gate "$BATS_TEST_TMPDIR/go")"
	local bpid=$BG_PID
	wait_until 10 line_is L 1
	id=$(waiter_id L)
	[[ -n $(rcli R HGET "$(key L):line:who" "^x:$id") ]] || fail "no record for waiter $id"
	for i in 1 2 3 4 5; do
		forge_grants L "$id"
		if b_started_within 0.3; then
			fail "B started on a forged message while A holds L (round $i, holder $(holder L))"
		fi
		held_by L "$ta"
	done
	pid_alive "$bpid"
	"$RLOCK" release L "$ta"
	b_started_within 10 || fail "B did not start after A released"
	tb=$(cat b.token)
	[[ $tb != "$ta" ]]
	held_by L "$tb"
	touch go
	bg_wait "$bpid" 10
	assert_equal "$BG_STATUS" 0
	lock_free L
}

@test "a forged plain 'wake' message leaves a waiter in its place, still waiting" {
	local ta i id1 m1 m2 m3
	ta=$("$RLOCK" acquire -t 20s L)
	for i in 1 2 3; do
		bg_start "b$i" "$RLOCK" run -w 30s L -- sh -c "date +%s.%N >b$i.started"
		wait_until 10 line_is L "$i"
	done
	m1=$(line_members L | sed -n 1p)
	id1=${m1#*:}
	for i in 1 2 3; do
		rcli R RPUSH "$(key L):wake:$id1" wake >/dev/null
	done
	rcli R PUBLISH "$(key L):released" released >/dev/null
	# It woke, asked again and waits: its place and its rank unchanged.
	if wait_until 1 test -e b1.started 2>/dev/null; then
		fail "the first waiter started on a plain wake"
	fi
	line_is L 3
	assert_equal "$(rcli R ZRANK "$(key L):line" "$m1")" 0
	held_by L "$ta"
	"$RLOCK" release L "$ta"
	wait_until 10 test -e b1.started
	wait_until 10 test -e b3.started
	m2=$(cat b1.started) m3=$(cat b2.started)
	[[ ${m2/./} < ${m3/./} ]] || fail "b1 started at $m2, after b2 at $m3"
}

# ---- f. re-entrancy only for a live holder ---------------------------------

@test "an inherited RLOCK_HELD for a lock held by someone else takes nothing: 75, no command" {
	local ta
	ta=$("$RLOCK" acquire L)
	RLOCK_HELD="$(key L)" run -75 --separate-stderr "$RLOCK" run -n L -- touch ran
	[[ ! -e ran ]]
	held_by L "$ta"
}

@test "a nested run of the lock its ancestor holds runs at once and leaves the lock to the ancestor" {
	run -0 --separate-stderr "$RLOCK" run A -- sh -c \
		'"$RLOCK" run -n A -- touch inner && [ "$(redis-cli -u "$RLOCK_URL" GET "$RLOCK_KEY")" = "$RLOCK_TOKEN" ]'
	[[ -e inner ]]
	lock_free A
}

@test "a daemon that outlived its rlock run does not inherit the lock: 75 once another holds it" {
	local ta
	run -0 --separate-stderr "$RLOCK" run M -- sh -c '
		setsid sh -c "$1; \"\$RLOCK\" run -n M -- touch ran2; echo \$? >daemon.rc" \
			</dev/null >daemon.out 2>daemon.err 3>&- &
		echo $! >daemon.pid' - "$(gate "$BATS_TEST_TMPDIR/go")"
	track_pid "$(cat daemon.pid)"
	lock_free M
	ta=$("$RLOCK" acquire M)
	touch go
	wait_until 10 file_nonempty daemon.rc
	assert_equal "$(cat daemon.rc)" 75
	[[ ! -e ran2 ]]
	held_by M "$ta"
}

# ---- g. every server counted once ------------------------------------------

# free_port: a loopback port nothing listens on.
free_port() {
	local p
	while :; do
		p=$(_rl_random_port)
		(: <"/dev/tcp/127.0.0.1/$p") 2>/dev/null || break
	done
	echo "$p"
}

# refused_twice A B C: `rlock -u A -u B -u C run x` exits 64 with one usage
# line naming A and B (one server), and runs nothing.
refused_twice() {
	run -64 --separate-stderr "$RLOCK" -u "$1" -u "$2" -u "$3" \
		run x -- touch granted
	[[ ! -e granted ]]
	printf '%s\n' "$stderr" >err
	usage_line_naming err "$1" "$2"
}

@test "one server by two URLs among three: usage error 64 naming both, no command, no key" {
	refused_twice "redis://127.0.0.1:$R_PORT" "redis://localhost:$R_PORT" \
		"redis://127.0.0.1:$(free_port)"
	assert_equal "$(prefix_keys)" ""
}

@test "one server by two URLs and a third server up: usage error 64, no command, no key on either" {
	start_redis S
	refused_twice "redis://127.0.0.1:$R_PORT" "redis://localhost:$R_PORT" "$S_URL"
	assert_equal "$(prefix_keys)" ""
	assert_equal "$(prefix_keys S)" ""
}

@test "one server by its unix socket and its TCP port: usage error 64 naming both" {
	SOCKDIR=$(mktemp -d /tmp/rlh.XXXXXX)
	start_redis U --unixsocket "$SOCKDIR/u.sock" --unixsocketperm 700
	start_redis S
	refused_twice "unix://$SOCKDIR/u.sock" "$U_URL" "$S_URL"
	assert_equal "$(prefix_keys U)" ""
	assert_equal "$(prefix_keys S)" ""
}

@test "status, log and last with one server given twice: usage error 64 naming both URLs" {
	local sub down
	down=$(free_port)
	for sub in "status x" "log x" "last x"; do
		# shellcheck disable=SC2086
		run -64 --separate-stderr "$RLOCK" -u "redis://127.0.0.1:$R_PORT" \
			-u "redis://localhost:$R_PORT" -u "redis://127.0.0.1:$down" \
			$sub
		assert_equal "$output" ""
		printf '%s\n' "$stderr" >err
		one_line err "redis://127.0.0.1:$R_PORT and redis://localhost:$R_PORT reach one server"
	done
}

@test "doctor fails one server given by two URLs, naming both" {
	start_redis S
	run --separate-stderr "$RLOCK" -u "redis://127.0.0.1:$R_PORT" -u "redis://localhost:$R_PORT" \
		-u "$S_URL" doctor
	((status >= 64)) || fail "doctor exited $status: $(tail -n 1 <<<"$output")"
	local all
	all=$(printf '%s\n%s\n' "$output" "$stderr")
	grep -F "127.0.0.1:$R_PORT" <<<"$all" | grep -qF "localhost:$R_PORT" ||
		fail "no line names both URLs: $all"
}

# ---- h. output never kills a holder ----------------------------------------

# closed_reader RLOCK_ARGS...: rlock ARGS... with its stdout a pipe whose
# reader has exited, with SIGPIPE at its default; ST its status, its
# stderr in acq.err.
closed_reader() {
	{
		wait_until 5 test -s reader.pid && wait_until 5 pid_gone "$(cat reader.pid)"
		exec "$CLEANEXEC" "$RLOCK" "$@" 2>acq.err
	} | {
		echo "$BASHPID" >reader.pid
		exit 0
	}
	ST=${PIPESTATUS[0]}
}

@test "acquire whose token cannot be written exits 71 with one line and leaves the lock free" {
	closed_reader acquire sp
	assert_equal "$ST" 71
	one_line acq.err "cannot write"
	lock_free sp
}

@test "acquire --renew whose token cannot be written exits 71, leaves the lock free and no renewer" {
	closed_reader acquire --renew sp
	assert_equal "$ST" 71
	one_line acq.err "cannot write"
	wait_until 5 no_rlock_pids || fail "left behind: $(rlock_pids)"
	lock_free sp
}

@test "junk and a pile of wake-ups pushed to a waiter's list cost a few tries, never a grant: it keeps its place and waits" {
	local ta id key s0 s1 i
	local -a junk=()
	ta=$("$RLOCK" acquire -t 20s JW)
	bg_start b "$RLOCK" run -w 30s JW -- touch jw.ran
	local bpid=$BG_PID
	wait_until 10 line_is JW 1
	id=$(waiter_id JW)
	key="$(key JW):wake:$id"
	s0=$(rcli R INFO commandstats | tr -d '\r' | sed -n 's/^cmdstat_evalsha:calls=\([0-9]*\),.*/\1/p')
	for i in $(seq 1 50); do
		junk+=(wake "granted" "granted"$'\n'"x" "$(head -c 3000 /dev/zero | tr '\0' 'A')")
	done
	rcli R RPUSH "$key" "${junk[@]}" >/dev/null
	# Each try empties the list: a few tries, not one per message.
	wait_until 10 eval '[[ $(rcli R EXISTS "$key") == 0 ]]'
	s1=$(rcli R INFO commandstats | tr -d '\r' | sed -n 's/^cmdstat_evalsha:calls=\([0-9]*\),.*/\1/p')
	((s1 - s0 < 10)) || fail "$((s1 - s0)) tries for 200 messages"
	[[ ! -e jw.ran ]]
	pid_alive "$bpid"
	line_is JW 1
	held_by JW "$ta"
	"$RLOCK" release JW "$ta"
	bg_wait "$bpid" 10
	assert_equal "$BG_STATUS" 0
	[[ -e jw.ran ]]
}
