#!/usr/bin/env bats
# redlock.bats - rlock over several independent masters (Redlock,
# docs/design.md#several-masters): the acquire script goes to every master
# and needs a majority, renewals and release go to every master, the lock is
# lost when a majority no longer confirms it.  Five real redis-server
# processes are started once for the file; the three-master tests use
# M1..M3, the others all five.
# A test that stops, freezes or kills a master leaves it to teardown to
# bring it back (servers_up), so that a failed test cannot take the next
# one's servers down with it.  Fault proxies (a lost reply, slow replies)
# are started by the tests that need them, in front of a master.  The
# history: each master records what it granted, log, last and log -f merge
# the records.  The line's policies (--once-per, --supersede, --priority)
# need one server: refused here.

bats_require_minimum_version 1.5.0
load test_helper
load proxy_helper

MASTERS=(M1 M2 M3 M4 M5)

setup_file() {
	local m
	# Each answers on 127.0.0.2 too: another URL of the same server.
	for m in "${MASTERS[@]}"; do
		start_redis "$m" --bind 127.0.0.1 127.0.0.2
	done
	# Tests SIGKILL masters.
	disown_servers "${MASTERS[@]}"
}

teardown_file() {
	rl_teardown_file
}

setup() {
	rl_setup
	servers_up "${MASTERS[@]}"
	# -u for three and for five masters (arrays are not exported from
	# setup_file, the URLs are).
	U3=(-u "$M1_URL" -u "$M2_URL" -u "$M3_URL")
	U5=("${U3[@]}" -u "$M4_URL" -u "$M5_URL")
	# The masters of start_run (a test may put a proxy in front of one).
	URLS=("${U3[@]}")
}

teardown() {
	stop_all_proxies
	rl_teardown
	servers_up "${MASTERS[@]}"
}

# ---- masters -------------------------------------------------------------

# master_pid M: the pid of master M now (a restart changes it; M_PID is the
# one setup_file saw).
master_pid() {
	local dir="${1}_DIR" pid=
	{ read -r pid <"${!dir}/pid"; } 2>/dev/null
	echo "$pid"
}

# kill_master SIGNAL M...: send SIGNAL to masters by pid and wait until
# they are gone (or stopped, for STOP).
kill_master() {
	local sig=$1 m pid
	shift
	for m in "$@"; do
		pid=$(master_pid "$m")
		[[ -n $pid ]] || fail "no pid for $m"
		kill "-$sig" "$pid"
		if [[ $sig == STOP ]]; then
			wait_until 5 pid_stopped "$pid"
		else
			wait_until 5 pid_gone "$pid"
		fi
	done
}

# ---- locks on each master --------------------------------------------------

# rq M ARG...: one command to master M over bash's /dev/tcp, with no fork
# (the checks and polls below make hundreds, and a fork costs tens of ms on
# a loaded machine).  RQ is the reply: an integer, a status, a bulk string
# (empty for nil), or for an array of those the last one (all in RQA).  An
# error reply fails.
rq() {
	local port="${1}_PORT" fd a line n i
	shift
	RQ=
	RQA=()
	exec {fd}<>"/dev/tcp/127.0.0.1/${!port}" || return 1
	{
		printf '*%d\r\n' "$#"
		for a in "$@"; do
			printf '$%d\r\n%s\r\n' "${#a}" "$a"
		done
	} >&"$fd"
	n=1
	IFS= read -r -t 5 line <&"$fd" && line=${line%$'\r'}
	if [[ $line == [*]* ]]; then
		n=${line:1}
		IFS= read -r -t 5 line <&"$fd" && line=${line%$'\r'}
	fi
	for ((i = 0; i < n; i++)); do
		((i == 0)) || { IFS= read -r -t 5 line <&"$fd" && line=${line%$'\r'}; }
		case $line in
		:* | +*) RQ=${line:1} ;;
		'$-1') RQ= ;;
		'$'*)
			# exactly the bulk's length: a holder's record has newlines
			IFS= read -r -d '' -N "${line:1}" -t 5 RQ <&"$fd"
			IFS= read -r -t 5 line <&"$fd"
			;;
		*)
			exec {fd}>&-
			echo "rq $*: '$line'" >&2
			return 1
			;;
		esac
		RQA+=("$RQ")
	done
	exec {fd}>&-
}

# held_on NAME TOKEN M...: lock NAME's key holds TOKEN on each master.
held_on() {
	local name=$1 token=$2 m
	shift 2
	for m in "$@"; do
		rq "$m" GET "${RLOCK_PREFIX}{$name}" || return 1
		[[ $RQ == "$token" ]] || {
			echo "$name on $m: '$RQ', not '$token'" >&2
			return 1
		}
	done
}

# gone_on NAME M...: lock NAME's key is gone on each master (the record of
# its last grant, P{NAME}:grant, with it; no record in the older
# P{NAME}:owner either).
gone_on() {
	local name=$1 m
	shift
	for m in "$@"; do
		rq "$m" EXISTS "${RLOCK_PREFIX}{$name}" "$(key "$name"):owner" || return 1
		[[ $RQ == 0 ]] || {
			echo "$name: $RQ of the key and its record still on $m" >&2
			return 1
		}
	done
}

# pttl_between NAME LOW HIGH M...: lock NAME's PTTL on each master.
pttl_between() {
	local name=$1 low=$2 high=$3 m
	shift 3
	for m in "$@"; do
		rq "$m" PTTL "${RLOCK_PREFIX}{$name}" || return 1
		((RQ >= low && RQ <= high)) || {
			echo "$name on $m: pttl $RQ, not in $low..$high" >&2
			return 1
		}
	done
}

# meta_on NAME FIELD VALUE M...: a field of lock NAME's meta (the record of
# its last grant) on each master.
meta_on() {
	local name=$1 field=$2 value=$3 m
	shift 3
	for m in "$@"; do
		RQ=$(meta "$name" "$field" "$m") || return 1
		[[ $RQ == "$value" ]] || {
			echo "$name's $field on $m: '$RQ', not '$value'" >&2
			return 1
		}
	done
}

# mfence NAME M: the fence of master M's last grant of lock NAME: its
# record or history entry (meta), else the fence of the last id its
# history stream gave (XINFO STREAM's last-generated-id), where a grant
# undone leaves its only mark (its entry removed at once, its record gone
# with its lock): at least that grant's fence, and below the next.
mfence() {
	local f id
	f=$(meta "$1" fence "$2")
	if [[ -z $f ]]; then
		id=$(rcli "$2" XINFO STREAM "$(key "$1"):log" 2>/dev/null |
			sed -n '/^last-generated-id$/{n;p;}')
		[[ -n $id ]] && f=$(fence_of_id "$id")
	fi
	echo "$f"
}

# fence_is NAME N M...: the record of lock NAME's last grant on each master
# has fence N ("": no grant there).
fence_is() {
	local name=$1 n=$2 m
	shift 2
	for m in "$@"; do
		[[ $(meta "$name" fence "$m") == "$n" ]] || return 1
	done
}

# granted_above NAME C M...: each master gave lock NAME a fence above C
# (mfence).
granted_above() {
	local name=$1 c=$2 m f
	shift 2
	for m in "$@"; do
		f=$(mfence "$name" "$m")
		[[ -n $f ]] && ((f > c)) || return 1
	done
}

# grants_are NAME N M...: lock NAME's history on each master has N grants
# (acquired entries).
grants_are() {
	local name=$1 n=$2 m
	shift 2
	for m in "$@"; do
		[[ $(hist_count "$name" acquired "$m") == "$n" ]] || {
			echo "$name on $m: $(hist_count "$name" acquired "$m") grants, not $n" >&2
			return 1
		}
	done
}

# fence_ahead_on NAME M...: put lock NAME's fences on each master 10^12 µs
# (11.6 days) ahead of the clock (test_helper's fence_ahead on each) and
# print that value, c: every later grant's fence on those masters is above
# c.  (Masters that grant together hand out fences of their own, and rlock
# raises those below the highest to it, only until a majority has it.)
fence_ahead_on() {
	local name=$1 c m k id
	shift
	c=$(($(server_us "$1") + 1000000000000))
	k=$(key "$name")
	id="$((c / 1000 - 1))-$((c % 1000))"
	for m in "$@"; do
		rq "$m" EXISTS "$k:log" || return 1
		if [[ $RQ == 1 ]]; then
			rq "$m" XADD "$k:log" "$id" f '' || return 1
			[[ $RQ == "$id" ]] || return 1
			rq "$m" XDEL "$k:log" "$id" || return 1
		else
			rq "$m" SET "$k:fence" "$c" || return 1
		fi
	done
	echo "$c"
}

# fence_max NAME M...: the highest fence of lock NAME's last grants on the
# masters (mfence), which is the last fence handed out (0: none).
fence_max() {
	local name=$1 m max=0 f
	shift
	for m in "$@"; do
		f=$(mfence "$name" "$m") || return 1
		if [[ -n $f ]] && ((f > max)); then
			max=$f
		fi
	done
	echo "$max"
}

# fence_on_majority NAME F M...: F is the highest fence in the records of
# lock NAME's last grant on the masters, and a majority of them are at F,
# as rlock leaves a fence it handed out (raising those below it).
fence_on_majority() {
	local name=$1 f=$2 m at=0 g
	shift 2
	for m in "$@"; do
		g=$(meta "$name" fence "$m") || return 1
		((${g:-0} <= f)) || {
			echo "$name's record's fence on $m: $g, above $f" >&2
			return 1
		}
		[[ $g == "$f" ]] || continue
		at=$((at + 1))
	done
	((at > $# / 2)) || {
		echo "$name's fence $f on $at of $# masters" >&2
		return 1
	}
}

# other_holds NAME M...: another client's lock (a plain SET PX, as redis-py
# or redsync would leave) on each master.
other_holds() {
	local name=$1 m
	shift
	for m in "$@"; do
		rq "$m" SET "${RLOCK_PREFIX}{$name}" othertok PX 60000 || return 1
	done
}

# waiting_on M NAME N: at least N processes wait for lock NAME on master M
# (subscribers of its release channel).
waiting_on() {
	rq "$1" PUBSUB NUMSUB "${RLOCK_PREFIX}{$2}:released" && ((RQ >= $3))
}

# saw_renewals N NAME M SECS: watch lock NAME's PTTL on master M until it
# has gone back up N times (each one a renewal); fail if the key goes away
# or after SECS.
saw_renewals() {
	local want=$1 name=$2 m=$3 secs=$4 seen=0 last=-1 end t
	t=${EPOCHREALTIME/[.,]/}
	end=$((t / 1000 + $(secs_to_ms "$secs")))
	while ((seen < want)); do
		t=${EPOCHREALTIME/[.,]/}
		if ((t / 1000 >= end)); then
			echo "saw_renewals: $seen of $want renewals of $name on $m in ${secs}s" >&2
			return 1
		fi
		rq "$m" PTTL "${RLOCK_PREFIX}{$name}" || return 1
		if ((RQ <= 0)); then
			echo "saw_renewals: $name gone from $m (pttl $RQ) after $seen renewals" >&2
			return 1
		fi
		((last >= 0 && RQ > last)) && seen=$((seen + 1))
		last=$RQ
		sleep 0.02
	done
}

# ---- runs watched from outside ---------------------------------------------

# The command of a watched run: it notes a SIGTERM in got-term, writes its
# pid, fence and token (tok last), then waits for the file `go` and exits 0.
# Its stderr goes to child.err, so that run.err is rlock's alone (sh says
# "Terminated" when the TERM for the group kills its sleep).
watched_cmd() {
	echo "exec 2>child.err
		trap 'echo TERM > got-term; exit 143' TERM
		echo \$\$ > child.pid
		echo \"\$RLOCK_FENCE\" > fence
		echo \"\$RLOCK_TOKEN\" > tok
		$(gate "$BATS_TEST_TMPDIR/go")
		exit 0"
}

# start_run NAME [rlock run options...]: `rlock run NAME` over URLS (the
# three masters) in the background with watched_cmd; RUN_PID is rlock's
# pid, TOKEN the child's RLOCK_TOKEN, once the child runs.
start_run() {
	local name=$1
	shift
	bg_start run "$RLOCK" "${URLS[@]}" run "$@" "$name" -- sh -c "$(watched_cmd)"
	RUN_PID=$BG_PID
	wait_until 5 file_nonempty tok
	TOKEN=$(cat tok)
	track_pid "$(cat child.pid)"
}

# ---- all masters up ----------------------------------------------------------

@test "three masters: run puts its token and meta on all three, and takes them off all three" {
	local c
	c=$(fence_ahead_on tri M1 M2 M3)
	start_run tri
	assert_regex "$TOKEN" '^[0-9a-f]{32}$'
	assert_fence "$(cat fence)" $((c + 1))
	held_on tri "$TOKEN" M1 M2 M3
	pttl_between tri 1 30000 M1 M2 M3
	fence_on_majority tri "$(cat fence)" M1 M2 M3
	local m
	for m in M1 M2 M3; do
		assert_equal "$(grant_tok tri "$m")" "${TOKEN:0:8}"
	done
	meta_on tri pid "$RUN_PID" M1 M2 M3
	touch go
	bg_wait "$RUN_PID" 10
	assert_equal "$BG_STATUS" 0
	assert_equal "$(bg_err run)" ""
	gone_on tri M1 M2 M3
	# The records of the grant went with the lock; the history has the
	# fence: one acquisition recorded on each.
	fence_on_majority tri "$(cat fence)" M1 M2 M3
	for m in M1 M2 M3; do
		rq "$m" EXISTS "$(key tri):grant"
		[[ $RQ == 0 ]] || fail "the record on $m outlived the lock"
		assert_equal "$(grant_tok tri "$m")" "${TOKEN:0:8}"
	done
	grants_are tri 1 M1 M2 M3
}

@test "three masters: the fence increases, every run has a fresh token, the command's status is kept" {
	local a b t0 t1
	t0=$(server_us M1)
	a=$("$RLOCK" "${U3[@]}" run fx -- sh -c 'echo "$RLOCK_FENCE $RLOCK_TOKEN"')
	fence_on_majority fx "${a%% *}" M1 M2 M3
	b=$("$RLOCK" "${U3[@]}" run fx -- sh -c 'echo "$RLOCK_FENCE $RLOCK_TOKEN"')
	fence_on_majority fx "${b%% *}" M1 M2 M3
	assert_not_equal "${a#* }" "${b#* }"
	run -7 --separate-stderr "$RLOCK" "${U3[@]}" run fx -- sh -c 'echo "$RLOCK_FENCE"; exit 7'
	t1=$(server_us M1)
	assert_equal "$stderr" ""
	# Each from the masters' clocks then (one machine's), each above the
	# one before, and the last the highest counter.
	assert_increasing "$t0" "${a%% *}" "${b%% *}" "$output" "$((t1 + 1))"
	fence_on_majority fx "$output" M1 M2 M3
	gone_on fx M1 M2 M3
}

@test "three masters: acquire, extend and release reach every master; a wrong token exits 76 and changes nothing" {
	local t
	local t0 t1
	t0=$(server_us M1)
	run -0 --separate-stderr "$RLOCK" "${U3[@]}" acquire --json -t 10s ae
	t1=$(server_us M1)
	assert_regex "$output" '"token":"[0-9a-f]{32}","fence":[0-9]+,'
	[[ $output =~ \"fence\":([0-9]+), ]]
	local f=${BASH_REMATCH[1]}
	assert_fence "$f" "$t0" "$t1"
	fence_on_majority ae "$f" M1 M2 M3
	[[ $output =~ \"token\":\"([0-9a-f]{32})\" ]]
	t=${BASH_REMATCH[1]}
	held_on ae "$t" M1 M2 M3
	pttl_between ae 1 10000 M1 M2 M3

	run -0 --separate-stderr "$RLOCK" "${U3[@]}" extend -t 60s ae "$t"
	assert_equal "$stderr" ""
	pttl_between ae 10001 60000 M1 M2 M3
	held_on ae "$t" M1 M2 M3

	run -76 --separate-stderr "$RLOCK" "${U3[@]}" release ae 0123456789abcdef0123456789abcdef
	assert_stderr "rlock: release: ae: token does not hold the lock"
	run -76 --separate-stderr "$RLOCK" "${U3[@]}" extend -t 5s ae 0123456789abcdef0123456789abcdef
	assert_stderr "rlock: extend: ae: token does not hold the lock"
	held_on ae "$t" M1 M2 M3
	pttl_between ae 10001 60000 M1 M2 M3

	# The token from the environment, as a script holding it would.
	RLOCK_TOKEN=$t run -0 --separate-stderr "$RLOCK" "${U3[@]}" release ae
	assert_equal "$stderr" ""
	gone_on ae M1 M2 M3
	run -76 --separate-stderr "$RLOCK" "${U3[@]}" release ae "$t"
	assert_stderr "rlock: release: ae: token does not hold the lock"
}

# Waiters on several masters keep no line: they listen on the release
# channel of each master, and every master's release publishes there.
@test "three masters: a release publishes on each master's released channel" {
	local t m
	t=$("$RLOCK" "${U3[@]}" acquire pubm)
	for m in M1 M2 M3; do
		local port="${m}_PORT"
		bg_start "sub$m" timeout 10 redis-cli -p "${!port}" SUBSCRIBE "${RLOCK_PREFIX}{pubm}:released"
		wait_until 5 waiting_on "$m" pubm 1
	done
	run -0 --separate-stderr "$RLOCK" "${U3[@]}" release pubm "$t"
	assert_equal "$stderr" ""
	for m in M1 M2 M3; do
		wait_until 5 eval '[[ $(bg_out "sub$m") == *message* ]]'
		run bg_out "sub$m"
		assert_line --index 3 message
		assert_line --index 4 "${RLOCK_PREFIX}{pubm}:released"
		assert_line --index 5 released
	done
}

@test "three masters: acquire --renew from a strict-mode script renews on every master; a loss on two sends the script SIGTERM, and release says when" {
	local t pid t0 m
	start_strict_renewer rr "$M1_URL,$M2_URL,$M3_URL"
	t=$STRICT_TOKEN
	pid=$BG_PID
	# Held on every master well past the 1s lease, by the script's pid.
	t0=$(now_ms)
	while (($(now_ms) - t0 < 2500)); do
		held_on rr "$t" M1 M2 M3 || fail "not held $(($(now_ms) - t0))ms on"
		sleep 0.1
	done
	for m in M1 M2 M3; do
		RQ=$(grant_meta "$(grant_record rr "$m")")
		assert_equal "$(owner_field pid "$RQ")" "$pid"
	done
	# Taken away on two of three: the renewer's next extend finds no
	# majority, and the script hears of it.
	rq M1 DEL "$(key rr)"
	rq M2 DEL "$(key rr)"
	wait_until 5 file_has got term
	bg_wait "$BG_PID"
	assert_equal "$BG_STATUS" 3
	[[ ! -e errs ]]
	run -76 --separate-stderr "$RLOCK" "${U3[@]}" release rr "$t"
	assert_regex "$stderr" '^rlock: release: rr: the lock was lost at [0-9]{4}-[0-9]{2}-[0-9]{2} [0-9]{2}:[0-9]{2}:[0-9]{2} [A-Z]+: '
	wait_until 5 no_rlock_pids
}

@test "three masters from RLOCK_URL, comma-separated, are a Redlock too" {
	RLOCK_URL="$M1_URL,$M2_URL,$M3_URL" run -0 --separate-stderr "$RLOCK" run env3 -- sh -c '
		for p in "$M1_PORT" "$M2_PORT" "$M3_PORT"; do
			[ "$(redis-cli -p "$p" GET "$RLOCK_KEY")" = "$RLOCK_TOKEN" ] && echo "on $p"
		done'
	assert_equal "${#lines[@]}" 3
	gone_on env3 M1 M2 M3
}

# ---- masters down --------------------------------------------------------------

@test "one master of three down: run and acquire still get a quorum of the other two" {
	# The first URL's master, so that no URL is special.
	stop_redis M1
	run -0 --separate-stderr "$RLOCK" "${U3[@]}" --connect-timeout 1s run one -- sh -c '
		echo "$RLOCK_FENCE"
		redis-cli -p "$M2_PORT" GET "$RLOCK_KEY"
		redis-cli -p "$M3_PORT" GET "$RLOCK_KEY"'
	assert_equal "$stderr" ""
	assert_fence "${lines[0]}"
	assert_regex "${lines[1]}" '^[0-9a-f]{32}$'
	assert_equal "${lines[2]}" "${lines[1]}"
	gone_on one M2 M3
	# The two that granted both have the fence handed out.
	fence_is one "${lines[0]}" M2 M3

	local t
	t=$("$RLOCK" "${U3[@]}" --connect-timeout 1s acquire -t 30s one)
	held_on one "$t" M2 M3
	run -0 "$RLOCK" "${U3[@]}" --connect-timeout 1s release one "$t"
	gone_on one M2 M3
}

@test "two masters of three down: 69 at once with one line about the quorum, nothing left on the live one" {
	stop_redis M2
	stop_redis M3
	local t0 el
	t0=$(now_ms)
	run -69 --separate-stderr timeout 10 "$RLOCK" "${U3[@]}" --connect-timeout 1s run two -- touch ran
	el=$(($(now_ms) - t0))
	((el < 5000)) || fail "took ${el}ms"
	assert_equal "$output" ""
	assert_stderr "rlock: run: no quorum: 2 of 3 servers failed (cannot connect to 127.0.0.1:$M2_PORT: Connection refused)"
	[[ ! -e ran ]] || fail "the command ran"
	gone_on two M1

	run -69 --separate-stderr timeout 10 "$RLOCK" "${U3[@]}" --connect-timeout 1s acquire -t 30s two
	assert_equal "$output" ""
	assert_stderr "rlock: acquire: no quorum: 2 of 3 servers failed (cannot connect to 127.0.0.1:$M2_PORT: Connection refused)"
	gone_on two M1
	# A waiter does not wait for masters that never answered.
	run -69 --separate-stderr timeout 10 "$RLOCK" "${U3[@]}" --connect-timeout 1s run -w 30s two -- touch ran
	assert_stderr --partial "no quorum"
	[[ ! -e ran ]] || fail "the command ran"
	gone_on two M1
}

@test "two masters of three frozen: 69 within the timeouts, and no grant survives on any master once they thaw" {
	# Grants counted in each master's history, their records kept.
	local c g2 g3
	c=$(fence_ahead_on frz M1 M2 M3)
	# The scripts in the masters' cache (a restart empties it), so that
	# the frozen masters run our EVALSHA when they thaw.
	run -0 "$RLOCK" "${U3[@]}" run frz -- true
	grants_are frz 1 M1 M2 M3
	g2=$(meta frz fence M2)
	g3=$(meta frz fence M3)
	assert_fence "$g2" $((c + 1))
	kill_master STOP M2 M3
	local t0 el
	t0=$(now_ms)
	run -69 --separate-stderr timeout 20 "$RLOCK" "${U3[@]}" --connect-timeout 1s --io-timeout 1s \
		acquire -t 30s frz
	el=$(($(now_ms) - t0))
	((el < 8000)) || fail "took ${el}ms"
	assert_equal "$output" ""
	assert_regex "$stderr" "^rlock: acquire: no quorum: 2 of 3 servers failed \\(127.0.0.1:$M2_PORT: no reply within 1s\\); undoing the request \\(it may have been granted\\) took [0-9.]+m?s more$"
	gone_on frz M1
	kill -CONT "$(master_pid M2)" "$(master_pid M3)"
	# They did not answer the first request (who they are, INFO), so the
	# acquire was not sent to them: once they thaw they run that and the
	# undo, and no grant is made there, none left to block the lock for
	# its 30s.
	wait_until 5 gone_on frz M1 M2 M3 2>/dev/null || gone_on frz M1 M2 M3
	grants_are frz 1 M2 M3
	fence_is frz "$g2" M2
	fence_is frz "$g3" M3
}

@test "five masters: two down still make a quorum, three down is 69" {
	stop_redis M4
	stop_redis M5
	run -0 --separate-stderr "$RLOCK" "${U5[@]}" --connect-timeout 1s run five -- sh -c '
		for p in "$M1_PORT" "$M2_PORT" "$M3_PORT"; do
			redis-cli -p "$p" GET "$RLOCK_KEY"
		done
		echo "$RLOCK_TOKEN"'
	assert_equal "$stderr" ""
	assert_equal "${#lines[@]}" 4
	assert_equal "${lines[0]}" "${lines[3]}"
	assert_equal "${lines[1]}" "${lines[3]}"
	assert_equal "${lines[2]}" "${lines[3]}"
	gone_on five M1 M2 M3

	stop_redis M3
	run -69 --separate-stderr timeout 10 "$RLOCK" "${U5[@]}" --connect-timeout 1s run five -- touch ran
	assert_stderr "rlock: run: no quorum: 3 of 5 servers failed (cannot connect to 127.0.0.1:$M3_PORT: Connection refused)"
	[[ ! -e ran ]] || fail "the command ran"
	gone_on five M1 M2
}

# ---- held by another client ------------------------------------------------

@test "held by another client on two masters of three: -n exits 75, our grant on the third is undone, theirs untouched" {
	other_holds oth M1 M2
	run -75 --separate-stderr "$RLOCK" "${U3[@]}" run -n oth -- touch ran
	assert_stderr "rlock: run: oth: held by another client (no rlock metadata)"
	[[ ! -e ran ]] || fail "the command ran"
	gone_on oth M3
	held_on oth othertok M1 M2
	pttl_between oth 1 60000 M1 M2

	run -75 --separate-stderr "$RLOCK" "${U3[@]}" acquire -n -t 30s oth
	assert_equal "$output" ""
	assert_stderr "rlock: acquire: oth: held by another client (no rlock metadata)"
	gone_on oth M3

	# Waiting gives up at -w the same way.
	run -75 --separate-stderr "$RLOCK" "${U3[@]}" run -w 500ms oth -- touch ran
	assert_stderr "rlock: run: oth: timed out after 500ms; held by another client (no rlock metadata)"
	[[ ! -e ran ]] || fail "the command ran"
	gone_on oth M3
	held_on oth othertok M1 M2

	# The history has the three skips, and not the grants M3 made and the
	# skipping acquires undid: those were never the lock, and a grant of
	# several masters is recorded only once a quorum made it.
	run -0 --separate-stderr "$RLOCK" "${U3[@]}" log oth
	assert_equal "${#lines[@]}" 3
	assert_regex "${lines[0]}" ' skipped .*\(held by another client \(no rlock metadata\)\)'
	assert_regex "${lines[1]}" ' skipped .*\(held by another client \(no rlock metadata\)\)'
	assert_regex "${lines[2]}" ' skipped .*\(timed out after [^;]+; held by another client \(no rlock metadata\)\)'
	refute_output --partial acquired
	local m
	for m in M1 M2 M3; do
		assert_equal "$(rcli "$m" XLEN "$(key oth):log")" 3
	done
	# The -w waiter, whose every try M3 granted and it undid, tried about
	# ten times a second, not thousands: deaf to its own undo's release
	# message for 50 to 150ms, then at least once a second.
	rcli M3 CONFIG RESETSTAT >/dev/null
	run -75 --separate-stderr "$RLOCK" "${U3[@]}" run -w 1s oth -- touch ran
	local calls
	calls=$(rcli M3 INFO commandstats | tr -d '\r' | sed -n 's/^cmdstat_evalsha:calls=\([0-9]*\),.*/\1/p')
	((calls >= 2 && calls <= 40)) || fail "$calls scripts on M3 in a 1s wait"
}

@test "held by another client on one master of three: the other two are a quorum, and its key is left alone" {
	other_holds one M2
	run -0 --separate-stderr "$RLOCK" "${U3[@]}" run -n one -- sh -c '
		redis-cli -p "$M1_PORT" GET "$RLOCK_KEY"
		redis-cli -p "$M3_PORT" GET "$RLOCK_KEY"
		echo "$RLOCK_TOKEN"'
	assert_equal "$stderr" ""
	assert_equal "${lines[0]}" "${lines[2]}"
	assert_equal "${lines[1]}" "${lines[2]}"
	gone_on one M1 M3
	held_on one othertok M2
}

# ---- losing keys mid-run ---------------------------------------------------

@test "the key lost on one master mid-run: renewals go on and the run exits with the command's status" {
	start_run l1 -t 600ms
	held_on l1 "$TOKEN" M1 M2 M3
	rq M2 DEL "$(key l1)"
	# Several renewals (every 200ms) after the loss, on both other masters.
	saw_renewals 3 l1 M1 10
	saw_renewals 2 l1 M3 10
	held_on l1 "$TOKEN" M1 M3
	pid_alive "$RUN_PID"
	[[ ! -e got-term ]] || fail "the command got SIGTERM"
	touch go
	bg_wait "$RUN_PID" 10
	assert_equal "$BG_STATUS" 0
	assert_equal "$(bg_err run)" ""
	gone_on l1 M1 M2 M3
}

@test "the key taken by another token on two masters mid-run: the command gets SIGTERM, 76, their keys stay" {
	start_run l2 -t 600ms -k 5s
	held_on l2 "$TOKEN" M1 M2 M3
	other_holds l2 M1 M2
	bg_wait "$RUN_PID" 10
	assert_equal "$BG_STATUS" 76
	assert_equal "$(bg_err run)" "rlock: run: l2: lock lost: the token no longer holds it; command stopped"
	assert_equal "$(cat got-term)" TERM
	wait_until 5 pid_gone "$(cat child.pid)"
	held_on l2 othertok M1 M2
	pttl_between l2 1 60000 M1 M2
	# Our minority key is given back, not left to expire.
	gone_on l2 M3
}

@test "a master SIGKILLed mid-run of three: the run goes on and exits 0" {
	start_run k1 -t 600ms
	held_on k1 "$TOKEN" M1 M2 M3
	kill_master KILL M3
	saw_renewals 3 k1 M1 10
	saw_renewals 2 k1 M2 10
	pid_alive "$RUN_PID"
	touch go
	bg_wait "$RUN_PID" 10
	assert_equal "$BG_STATUS" 0
	assert_equal "$(bg_err run)" ""
	gone_on k1 M1 M2
}

@test "two masters SIGKILLed mid-run of three: the lock is lost, the command stopped, 76" {
	start_run k2 -t 600ms -k 5s
	held_on k2 "$TOKEN" M1 M2 M3
	kill_master KILL M1 M2
	bg_wait "$RUN_PID" 10
	assert_equal "$BG_STATUS" 76
	run bg_err run
	assert_output --regexp '^rlock: run: k2: lock lost: .*; command stopped$'
	assert_equal "${#lines[@]}" 1
	assert_equal "$(cat got-term)" TERM
	wait_until 5 pid_gone "$(cat child.pid)"
	gone_on k2 M3
}

# ---- lost and slow replies ---------------------------------------------------

@test "a master whose acquire reply is lost: the other two are a quorum, renewals and the release still reach it" {
	# The scripts cached first, so that the cut hits the script's reply
	# and not a NOSCRIPT answer (a restarted master has none).
	"$RLOCK" "${U3[@]}" run -n warmup -- true
	start_proxy P1 "$M1_PORT"
	URLS=(-u "$P1_URL" -u "$M2_URL" -u "$M3_URL")
	proxy_cmd P1 cut "$(proxy_pattern_acquire)"
	start_run cut -t 600ms
	assert_equal "$(proxy_stat P1 cuts)" 1
	# M1 granted it although rlock never heard so.
	held_on cut "$TOKEN" M1 M2 M3
	saw_renewals 3 cut M1 10
	touch go
	bg_wait "$RUN_PID" 10
	assert_equal "$BG_STATUS" 0
	assert_equal "$(bg_err run)" ""
	gone_on cut M1 M2 M3
}

@test "a majority that grants later than the TTL allows is no lock: 75, the command never runs" {
	start_proxy P1 "$M1_PORT"
	start_proxy P2 "$M2_PORT"
	proxy_cmd P1 delay down 300
	proxy_cmd P2 delay down 300
	# Grants counted in each master's history.
	local c f1
	c=$(fence_ahead_on late M1 M2 M3)
	run -75 --separate-stderr timeout 20 "$RLOCK" -u "$P1_URL" -u "$P2_URL" -u "$M3_URL" \
		run -n -t 200ms late -- touch ran
	[[ ! -e ran ]] || fail "the command ran"
	# All three granted it (each has the record of that grant, above c;
	# with several masters the history is written only for a lock that
	# was had, and this one was not) ...
	wait_until 5 granted_above late "$c" M1 M2 M3
	grants_are late 0 M1 M2 M3
	f1=$(fence_max late M1 M2 M3)
	assert_fence "$f1" $((c + 1))
	# ... and the next run, on time, takes it.
	proxy_cmd P1 normal
	proxy_cmd P2 normal
	run -0 --separate-stderr "$RLOCK" -u "$P1_URL" -u "$P2_URL" -u "$M3_URL" run -n late -- sh -c 'echo "$RLOCK_FENCE"'
	assert_increasing "$f1" "$output"
	grants_are late 1 M1 M2 M3
	fence_on_majority late "$output" M1 M2 M3
	gone_on late M1 M2 M3
}

# ---- contention ------------------------------------------------------------

@test "40 contending runs over five masters: no lost updates" {
	local i bad=()
	echo 0 >counter
	# Hold the lock until all 40 wait for it, so that they really contend.
	bg_start h "$RLOCK" "${U5[@]}" run -t 30s ctr -- sh -c "$(gate "$BATS_TEST_TMPDIR/go")"
	local hpid=$BG_PID
	wait_until 5 eval 'rq M5 EXISTS "$(key ctr)" && [[ $RQ == 1 ]]'
	# One shell starts them all, each noting its status in st.I.
	bg_start all sh -c '
		i=0
		while [ $i -lt 40 ]; do
			( "$RLOCK" -u "$M1_URL" -u "$M2_URL" -u "$M3_URL" -u "$M4_URL" -u "$M5_URL" \
				run -w 60 ctr -- sh -c '\''v=$(cat counter); echo $((v + 1)) > counter'\''
			echo $? > st.$i ) &
			i=$((i + 1))
		done
		wait'
	local all=$BG_PID
	wait_until 30 waiting_on M1 ctr 40
	touch go
	bg_wait "$hpid" 10
	assert_equal "$BG_STATUS" 0
	bg_wait "$all" 60
	for ((i = 0; i < 40; i++)); do
		[[ $(cat "st.$i") == 0 ]] || bad+=("$i:$(cat "st.$i")")
	done
	assert_equal "${bad[*]}" ""
	assert_equal "$(cat counter)" 40
	gone_on ctr M1 M2 M3 M4 M5
}

# ---- status ----------------------------------------------------------------

@test "status over three masters: held exits 0, free exits 1, a key on one master only is not held" {
	local t f
	t=$("$RLOCK" "${U3[@]}" acquire -t 30s st)
	f=$(fence_max st M1 M2 M3)
	fence_on_majority st "$f" M1 M2 M3
	run -0 --separate-stderr "$RLOCK" "${U3[@]}" status st
	assert_equal "$stderr" ""
	assert_regex "${lines[0]}" '^NAME +STATE +FENCE +AGE +SINCE +TTL +WAITERS +HOLDER +COMMAND *$'
	assert_status_row "${lines[1]}" st held "$f"
	local who
	RQ=$(grant_meta "$(grant_record st M1)")
	who="$(owner_field user "$RQ")@$(owner_field host "$RQ"):$(owner_field pid "$RQ")"
	assert_output --partial "$who"
	run -0 "$RLOCK" "${U3[@]}" status --json st
	assert_regex "$output" '"held":true,"token_prefix":"'"${t:0:8}"'"'
	assert_regex "$output" '"fence":'"$f"','

	"$RLOCK" "${U3[@]}" release st "$t"
	run -1 --separate-stderr "$RLOCK" "${U3[@]}" status st
	assert_equal "$stderr" ""
	assert_status_row "${lines[1]}" st free "$f"

	other_holds st M3
	run -1 --separate-stderr "$RLOCK" "${U3[@]}" status st
	assert_regex "${lines[1]}" '^st +free '
	other_holds st M1
	run -0 --separate-stderr "$RLOCK" "${U3[@]}" status st
	assert_regex "${lines[1]}" '^st +held '
}

@test "status over three masters with no NAME lists each held lock once, and not a key on one master only" {
	"$RLOCK" "${U3[@]}" acquire -t 30s la >/dev/null
	"$RLOCK" "${U3[@]}" acquire -t 30s lb >/dev/null
	other_holds minority M2
	run -0 --separate-stderr "$RLOCK" "${U3[@]}" status
	assert_equal "$stderr" ""
	# The locks' rows, without each master's lines under them.
	local rows=() line
	for line in "${lines[@]}"; do
		[[ $line == "  "* ]] || rows+=("$line")
	done
	assert_equal "${#rows[@]}" 3
	assert_regex "${rows[1]}" '^la +held '
	assert_regex "${rows[2]}" '^lb +held '
}

@test "status with one master of three down still answers: 0 when held by a quorum" {
	local t f
	t=$("$RLOCK" "${U3[@]}" acquire -t 30s sd)
	f=$(fence_max sd M1 M2 M3)
	fence_on_majority sd "$f" M1 M2 M3
	stop_redis M2
	# A majority had the fence: M1 or M3 still shows it.
	run -0 --separate-stderr "$RLOCK" "${U3[@]}" --connect-timeout 1s status sd
	assert_status_row "${lines[1]}" sd held "$f"
	"$RLOCK" "${U3[@]}" --connect-timeout 1s release sd "$t"
	run -1 --separate-stderr "$RLOCK" "${U3[@]}" --connect-timeout 1s status sd
	assert_regex "${lines[1]}" '^sd +free '
	stop_redis M3
	run -69 --separate-stderr "$RLOCK" "${U3[@]}" --connect-timeout 1s status sd
	assert_equal "$output" ""
	assert_stderr --partial "no quorum"
}

# ---- bad input ---------------------------------------------------------------

@test "two URLs are a usage error for every command: two servers cannot form a quorum" {
	local two=(-u "$M1_URL" -u "$M2_URL") cmd
	local msg="two servers cannot form a quorum: give one URL, or three or more independent masters"
	run -64 --separate-stderr "$RLOCK" "${two[@]}" run q -- touch ran
	assert_usage run "rlock: run: $msg"
	[[ ! -e ran ]] || fail "the command ran"
	run -64 --separate-stderr "$RLOCK" "${two[@]}" acquire q
	assert_usage acquire "rlock: acquire: $msg"
	run -64 --separate-stderr "$RLOCK" "${two[@]}" release q 0123456789abcdef0123456789abcdef
	assert_usage release "rlock: release: $msg"
	run -64 --separate-stderr "$RLOCK" "${two[@]}" extend q 0123456789abcdef0123456789abcdef
	assert_usage extend "rlock: extend: $msg"
	run -64 --separate-stderr "$RLOCK" "${two[@]}" status q
	assert_usage status "rlock: status: $msg"
	RLOCK_URL="$M1_URL,$M2_URL" run -64 --separate-stderr "$RLOCK" acquire q
	assert_usage acquire "rlock: acquire: $msg"
	for cmd in M1 M2; do
		gone_on q "$cmd"
	done
}

@test "more than 16 masters, or a bad URL among three, are usage errors" {
	local many=() i
	for ((i = 0; i < 17; i++)); do
		many+=(-u "redis://127.0.0.1:$((M1_PORT))")
	done
	run -64 --separate-stderr "$RLOCK" "${many[@]}" acquire big
	assert_usage "" "rlock: too many servers (at most 16)"
	run -64 --separate-stderr "$RLOCK" -u "$M1_URL" -u "$M2_URL" -u http://127.0.0.1:1 acquire bad
	assert_usage acquire "rlock: acquire: invalid URL 'http://127.0.0.1:1': unknown scheme"
	gone_on big M1
	gone_on bad M1 M2
}

@test "line policies need one server: --once-per, --supersede and --priority N over three masters exit 64 and leave nothing; --priority 0 is the default" {
	local m
	run -64 --separate-stderr "$RLOCK" "${U3[@]}" run --once-per 1h po -- touch ran
	assert_stderr --partial "--once-per needs one server"
	assert_equal "$output" ""
	run -64 --separate-stderr "$RLOCK" "${U3[@]}" run --supersede po -- touch ran
	assert_stderr --partial "need one server"
	run -64 --separate-stderr "$RLOCK" "${U3[@]}" run --priority 5 po -- touch ran
	assert_stderr --partial "need one server"
	run -64 --separate-stderr "$RLOCK" "${U3[@]}" run --priority -5 po -- touch ran
	assert_stderr --partial "need one server"
	[[ ! -e ran ]] || fail "the command ran"
	run -64 --separate-stderr "$RLOCK" "${U3[@]}" acquire --supersede po
	assert_stderr --partial "need one server"
	assert_equal "$output" ""
	run -64 --separate-stderr "$RLOCK" "${U3[@]}" acquire --priority 5 po
	assert_stderr --partial "need one server"
	assert_equal "$output" ""
	for m in M1 M2 M3; do
		assert_equal "$(rcli "$m" KEYS "${RLOCK_PREFIX}*")" ""
	done
	# --priority 0 asks for nothing a Redlock lacks: a free lock is taken
	# on all three and given back.
	run -0 --separate-stderr "$RLOCK" "${U3[@]}" run --priority 0 po -- touch ran
	assert_equal "$stderr" ""
	[[ -e ran ]]
	gone_on po M1 M2 M3
	for m in M1 M2 M3; do
		assert_equal "$(rcli "$m" KEYS "${RLOCK_PREFIX}{po}:line*")" ""
	done
}

# ---- status: each master's view ----------------------------------------------

# addr M: master M's address as status shows it.
addr() {
	local port="${1}_PORT"
	echo "127.0.0.1:${!port}"
}

# master_line LINE M STATE [REST]: LINE is status's line for master M:
# two spaces, the address padded to 22, the state padded to 6, and REST
# (held: "TOKEN8 USER@HOST:PID" after "ttl DUR  ", checked apart).
master_line() {
	local line=$1 m=$2 state=$3 rest=${4:-} want ttl
	while [[ $line == *" " ]]; do
		line=${line% }
	done
	if [[ $state == held ]]; then
		printf -v want '  %-22s %-6s ttl ' "$(addr "$m")" held
		[[ $line == "$want"* ]] || {
			echo "line '$line' does not start with '$want'" >&2
			return 1
		}
		line=${line#"$want"}
		ttl=${line%%  *}
		[[ $ttl =~ ^[0-9][0-9.]*(ms|s|m)$ ]] || {
			echo "ttl '$ttl' in '$1'" >&2
			return 1
		}
		line=${line#"$ttl  "}
		[[ $line == "$rest" ]] || {
			echo "'$line' after the ttl, not '$rest'" >&2
			return 1
		}
		return 0
	fi
	printf -v want '  %-22s %-6s %s' "$(addr "$m")" "$state" "$rest"
	while [[ $want == *" " ]]; do
		want=${want% }
	done
	[[ $line == "$want" ]] || {
		echo "line '$line', not '$want'" >&2
		return 1
	}
}

# holder_of NAME M: "TOKEN8 USER@HOST:PID" of lock NAME as master M has it.
holder_of() {
	rq "$2" GET "$(key "$1")"
	local tok=${RQ:0:8}
	RQ=$(grant_meta "$(grant_record "$1" "$2")")
	echo "$tok $(owner_field user "$RQ")@$(owner_field host "$RQ"):$(owner_field pid "$RQ")"
}

@test "status over three masters shows each master's view under the lock's row, in --url order" {
	local t who f
	t=$("$RLOCK" "${U3[@]}" acquire -t 30s pm)
	f=$(fence_max pm M1 M2 M3)
	fence_on_majority pm "$f" M1 M2 M3
	rq M3 DEL "$(key pm)"
	who=$(holder_of pm M1)
	assert_regex "$who" "^${t:0:8} [^ ]+@[^ ]+:[0-9]+\$"
	run -0 --separate-stderr "$RLOCK" "${U3[@]}" status pm
	assert_equal "$stderr" ""
	assert_equal "${#lines[@]}" 5
	assert_status_row "${lines[1]}" pm held "$f"
	master_line "${lines[2]}" M1 held "$who"
	master_line "${lines[3]}" M2 held "$who"
	master_line "${lines[4]}" M3 free

	run -0 --separate-stderr "$RLOCK" -u "$M3_URL" -u "$M1_URL" -u "$M2_URL" status pm
	assert_equal "${#lines[@]}" 5
	master_line "${lines[2]}" M3 free
	master_line "${lines[3]}" M1 held "$who"
	master_line "${lines[4]}" M2 held "$who"

	# Each lock gets its lines, a free one too.
	run -1 --separate-stderr "$RLOCK" "${U3[@]}" status pm nobody
	assert_equal "${#lines[@]}" 9
	assert_regex "${lines[5]}" '^nobody +free '
	master_line "${lines[6]}" M1 free
	master_line "${lines[7]}" M2 free
	master_line "${lines[8]}" M3 free
}

@test "status --json over three masters gives every lock a servers array, one object per master" {
	local t pid
	t=$("$RLOCK" "${U3[@]}" acquire -t 30s pj)
	rq M2 DEL "$(key pj)"
	RQ=$(grant_meta "$(grant_record pj M1)")
	pid=$(owner_field pid "$RQ")
	run -0 --separate-stderr "$RLOCK" "${U3[@]}" status --json pj
	assert_equal "$stderr" ""
	json_check "$output" \
		'len(d["locks"]) == 1 and d["locks"][0]["held"] is True' \
		'[s["addr"] for s in d["locks"][0]["servers"]] == a[0:3]' \
		'all(s["held"] is True and s["token_prefix"] == a[3][:8] and s["pid"] == int(a[4])
		     and isinstance(s["host"], str) and s["host"] and 0 < s["ttl_ms"] <= 30000
		     and s["error"] is None for s in [d["locks"][0]["servers"][i] for i in (0, 2)])' \
		'd["locks"][0]["servers"][1] == {"addr": a[1], "held": False, "token_prefix": None,
		     "host": None, "pid": None, "ttl_ms": None, "error": None}' \
		-- "$(addr M1)" "$(addr M2)" "$(addr M3)" "$t" "$pid"
}

@test "status with one master of three down shows its error and still answers: 0 when held, 1 when free" {
	local t who msg f
	t=$("$RLOCK" "${U3[@]}" acquire -t 30s pe)
	f=$(fence_max pe M1 M2 M3)
	fence_on_majority pe "$f" M1 M2 M3
	who=$(holder_of pe M1)
	stop_redis M2
	msg="cannot connect to $(addr M2): Connection refused"
	run -0 --separate-stderr "$RLOCK" "${U3[@]}" --connect-timeout 1s status pe
	assert_equal "$stderr" ""
	assert_equal "${#lines[@]}" 5
	assert_status_row "${lines[1]}" pe held "$f"
	master_line "${lines[2]}" M1 held "$who"
	master_line "${lines[3]}" M2 error "$msg"
	master_line "${lines[4]}" M3 held "$who"
	run -0 --separate-stderr "$RLOCK" "${U3[@]}" --connect-timeout 1s status --json pe
	json_check "$output" \
		'd["locks"][0]["held"] is True' \
		'[s["held"] for s in d["locks"][0]["servers"]] == [True, None, True]' \
		'd["locks"][0]["servers"][1] == {"addr": a[0], "held": None, "token_prefix": None,
		     "host": None, "pid": None, "ttl_ms": None, "error": a[1]}' \
		-- "$(addr M2)" "$msg"

	"$RLOCK" "${U3[@]}" --connect-timeout 1s release pe "$t"
	run -1 --separate-stderr "$RLOCK" "${U3[@]}" --connect-timeout 1s status pe
	assert_equal "$stderr" ""
	assert_regex "${lines[1]}" '^pe +free '
	master_line "${lines[2]}" M1 free
	master_line "${lines[3]}" M2 error "$msg"
	master_line "${lines[4]}" M3 free
}

@test "status with one master frozen shows the timeout on its line" {
	"$RLOCK" "${U3[@]}" acquire -t 30s pf >/dev/null
	kill_master STOP M3
	run -0 --separate-stderr timeout 20 "$RLOCK" "${U3[@]}" --io-timeout 500ms status pf
	assert_equal "$stderr" ""
	assert_regex "${lines[1]}" '^pf +held '
	master_line "${lines[4]}" M3 error "$(addr M3): no reply within 500ms"
}

@test "status with one server keeps its table; its JSON has a servers array of one" {
	"$RLOCK" -u "$M1_URL" acquire -t 30s p1 >/dev/null
	run -0 --separate-stderr "$RLOCK" -u "$M1_URL" status p1
	assert_equal "${#lines[@]}" 2
	assert_fence "$(meta p1 fence M1)"
	assert_status_row "${lines[1]}" p1 held "$(meta p1 fence M1)"
	run -0 --separate-stderr "$RLOCK" -u "$M1_URL" status --json p1
	json_check "$output" \
		'[s["addr"] for s in d["locks"][0]["servers"]] == [a[0]]' \
		'd["locks"][0]["servers"][0]["held"] is True' \
		-- "$(addr M1)"
}

# ---- found by this suite, fixed -------------------------------------------

@test "the fence never goes backwards, though undone minority grants moved one master's counter" {
	other_holds fb M1 M2
	local f1 f2 c g3
	# M3's fences ahead of the clock (it counted grants faster than time
	# went, or its clock was ahead), where the others' clocks are.
	c=$(fence_ahead_on fb M3)
	# (Not a loop over i: bats's run -N changes the caller's i.)
	run -75 "$RLOCK" "${U3[@]}" -q run -n fb -- true
	run -75 "$RLOCK" "${U3[@]}" -q run -n fb -- true
	run -75 "$RLOCK" "${U3[@]}" -q run -n fb -- true
	run -75 "$RLOCK" "${U3[@]}" -q run -n fb -- true
	run -75 "$RLOCK" "${U3[@]}" -q run -n fb -- true
	# M3 granted and undid five times: its fences moved on, above c; the
	# others granted none.
	g3=$(mfence fb M3)
	assert_fence "$g3" $((c + 1))
	fence_is fb "" M1 M2
	rq M1 DEL "${RLOCK_PREFIX}{fb}"
	rq M2 DEL "${RLOCK_PREFIX}{fb}"
	f1=$("$RLOCK" "${U3[@]}" run -n fb -- sh -c 'echo "$RLOCK_FENCE"')
	assert_increasing "$c" "$g3" "$f1"
	# The two masters below the fence handed out were raised to it ...
	fence_is fb "$f1" M1 M2 M3
	# ... so a majority without M3 still counts above it.
	other_holds fb M3
	f2=$("$RLOCK" "${U3[@]}" run -n fb -- sh -c 'echo "$RLOCK_FENCE"')
	assert_increasing "$f1" "$f2"
	fence_on_majority fb "$f2" M1 M2 M3
}

@test "an acquire that failed on frozen masters leaves no dead token on them once they thaw" {
	# Grants counted in each master's history, their records kept.
	local c g2 g3
	c=$(fence_ahead_on dead M1 M2 M3)
	# The scripts in the masters' cache, so that a thawed master runs the
	# queued EVALSHA; M1 answers busy, so no grant is counted anywhere.
	run -0 "$RLOCK" "${U3[@]}" run dead -- true
	grants_are dead 1 M1 M2 M3
	g2=$(meta dead fence M2)
	g3=$(meta dead fence M3)
	assert_fence "$g2" $((c + 1))
	other_holds dead M1
	kill_master STOP M2 M3
	run -69 --separate-stderr timeout 20 "$RLOCK" "${U3[@]}" --connect-timeout 1s \
		--io-timeout 1s acquire -t 30s dead
	kill -CONT "$(master_pid M2)" "$(master_pid M3)"
	rq M1 DEL "${RLOCK_PREFIX}{dead}"
	# What they had queued ran: the first request (INFO), which they did
	# not answer in time, so no acquire was sent them; no grant there.
	wait_until 5 gone_on dead M1 M2 M3
	grants_are dead 1 M2 M3
	fence_is dead "$g2" M2
	fence_is dead "$g3" M3
	run -0 "$RLOCK" "${U3[@]}" run -n dead -- true
}

@test "status: two tokens on one master each are no majority: free" {
	rq M2 SET "${RLOCK_PREFIX}{split}" tokA PX 60000
	rq M3 SET "${RLOCK_PREFIX}{split}" tokB PX 60000
	run -1 --separate-stderr "$RLOCK" "${U3[@]}" status split
	assert_line --index 1 --regexp '^split +free '
	run -1 --separate-stderr "$RLOCK" "${U3[@]}" --json status split
	json_check "$output" 'd["locks"][0]["held"] is False' \
		'[s["held"] for s in d["locks"][0]["servers"]] == [False, True, True]' --
}

@test "the same server twice is a usage error: a quorum needs independent masters" {
	run -64 --separate-stderr "$RLOCK" -u "$M1_URL" -u "$M1_URL" -u "$M2_URL" run twice -- touch ran
	assert_stderr_line --index 0 "rlock: run: $M1_URL and $M1_URL are the same server: a quorum needs independent masters"
	[[ ! -e ran ]]
	gone_on twice M1 M2
}

# noinfo M: a user of master M that may do all rlock needs but INFO (the
# least-privilege rule without +info).
noinfo() {
	rcli "$1" ACL SETUSER noinfo on '>pw' resetkeys '~*' '&*' +@all -info >/dev/null
	echo "redis://noinfo:pw@127.0.0.2:$(port_of "$1")"
}

port_of() {
	local v="${1}_PORT"
	echo "${!v}"
}

@test "one server by two URLs is refused though its user may not run INFO: the identity key tells, 64 before any grant" {
	local alias
	alias=$(noinfo M1)
	run -64 --separate-stderr "$RLOCK" -u "$M1_URL" -u "$M2_URL" -u "$alias" run dupk -- touch ran
	assert_stderr_line --index 0 "rlock: run: $M1_URL and redis://127.0.0.2:$M1_PORT reach one server (both read the identity key ${RLOCK_PREFIX}id): a quorum needs independent masters"
	[[ ! -e ran ]]
	gone_on dupk M1 M2
	# The key is the identity's alone, and expires.
	local p
	p=$(rcli M1 PTTL "${RLOCK_PREFIX}id")
	((p > 0)) || fail "pttl $p"
}

@test "a lock held on a quorum is not taken by three URLs that reach two servers, one of them without INFO" {
	local t alias
	t=$("$RLOCK" "${U3[@]}" acquire -t 30s two)
	# Its holder's token on M1 and M2 only: M3 is free for the taking.
	rcli M3 DEL "$(key two)" "$(key two):meta" >/dev/null
	held_on two "$t" M1 M2
	alias=$(noinfo M3)
	run -64 --separate-stderr "$RLOCK" -u "$M3_URL" -u "$alias" -u "$M1_URL" run -n two -- touch ran
	assert_stderr_line --index 0 "rlock: run: $M3_URL and redis://127.0.0.2:$M3_PORT reach one server (both read the identity key ${RLOCK_PREFIX}id): a quorum needs independent masters"
	[[ ! -e ran ]]
	held_on two "$t" M1 M2
	gone_on two M3
}

@test "three servers, none of whose users may run INFO, are told apart by the identity key and make a quorum" {
	run -0 --separate-stderr "$RLOCK" -u "$(noinfo M1)" -u "$(noinfo M2)" -u "$(noinfo M3)" run nk -- sh -c 'echo ran'
	assert_output ran
	local a b c
	a=$(rcli M1 GET "${RLOCK_PREFIX}id") b=$(rcli M2 GET "${RLOCK_PREFIX}id") c=$(rcli M3 GET "${RLOCK_PREFIX}id")
	assert_regex "$a" '^[0-9a-f]{32}$'
	[[ $a != "$b" && $b != "$c" && $a != "$c" ]] || fail "identities $a $b $c"
}

@test "a server whose identity key holds another type cannot be identified and does not vote: the other two decide" {
	rcli M3 HSET "${RLOCK_PREFIX}id" junk 1 >/dev/null
	local u3
	u3=$(noinfo M3)
	# Held by another on M1 and M2: M3, which cannot be identified, does
	# not make our grant a quorum with the others busy.
	local t
	t=$("$RLOCK" -u "$M1_URL" -u "$M2_URL" -u "$M4_URL" acquire -t 30s unid)
	run -75 --separate-stderr "$RLOCK" -u "$(noinfo M1)" -u "$(noinfo M2)" -u "$u3" run -n unid -- touch ran
	[[ ! -e ran ]]
	gone_on unid M3
	# Free on M1 and M2: they are a quorum, M3 aside.
	run -0 "$RLOCK" -u "$M1_URL" -u "$M2_URL" -u "$M4_URL" release unid "$t"
	run -0 --separate-stderr "$RLOCK" -u "$(noinfo M1)" -u "$(noinfo M2)" -u "$u3" run -n unid -- sh -c 'redis-cli -p "$1" EXISTS "$RLOCK_KEY"' - "$M3_PORT"
	assert_output 0
	assert_stderr "rlock: run: warning: redis://127.0.0.2:$M3_PORT: cannot tell which server this is, so it does not vote (no run_id, and the identity key: EVAL: key holds the wrong kind of value (WRONGTYPE))"
	[[ $(rcli M3 TYPE "${RLOCK_PREFIX}id") == hash ]]
}

@test "three masters: a nested run with the same URLs is re-entrant; with masters where another holds the name, it is taken as usual (75)" {
	local t
	t=$("$RLOCK" -u "$M4_URL" -u "$M5_URL" -u "$M1_URL" acquire -t 30s nest)
	# The outer run's masters M1..M3: M1 is held by the other client's
	# token, so the outer takes M2 and M3, a quorum.
	run -0 --separate-stderr "$RLOCK" "${U3[@]}" run nest -- sh -c '
		"$RLOCK" -u "$1" -u "$2" -u "$3" run -n nest -- true; echo "same=$?"
		"$RLOCK" -u "$4" -u "$5" -u "$1" run -n nest -- touch ran; echo "other=$?"' \
		- "$M1_URL" "$M2_URL" "$M3_URL" "$M4_URL" "$M5_URL"
	assert_line same=0
	assert_line other=75
	[[ ! -e ran ]]
	held_on nest "$t" M4 M5 M1
}

@test "a majority that grants too late says so, not who holds it" {
	start_proxy P1 "$M1_PORT"
	start_proxy P2 "$M2_PORT"
	proxy_cmd P1 delay down 300
	proxy_cmd P2 delay down 300
	run -75 --separate-stderr timeout 20 "$RLOCK" -u "$P1_URL" -u "$P2_URL" -u "$M3_URL" \
		acquire -n -t 200ms late2
	assert_stderr "rlock: acquire: acquire took longer than the TTL allows"
}

# ---- the history -------------------------------------------------------------
# Each master records what it granted in its own stream; log and last merge
# the records, counting an event once, with how many masters recorded it.

# log_xlen NAME M...: print the length of lock NAME's history on each master.
log_xlen() {
	local name=$1 m out=()
	shift
	for m in "$@"; do
		rq "$m" XLEN "$(hist_key "$name")" || return 1
		out+=("$RQ")
	done
	echo "${out[*]}"
}

@test "three masters: each records the run; log and log --json show each event once, recorded by all three, with the fence handed out" {
	local out f t
	out=$("$RLOCK" "${U3[@]}" run job -- sh -c 'echo "$RLOCK_FENCE $RLOCK_TOKEN"')
	read -r f t <<<"$out"
	assert_fence "$f"
	assert_equal "$(log_xlen job M1 M2 M3)" "2 2 2"
	run -0 --separate-stderr "$RLOCK" "${U3[@]}" log --json job
	assert_equal "$stderr" ""
	assert_equal "${#lines[@]}" 2
	json_check "${lines[0]}" 'd["event"] == "acquired" and d["servers"] == 3' \
		'd["fence"] == int(a[0]) and d["token"] == a[1][:8]' -- "$f" "$t"
	json_check "${lines[1]}" 'd["event"] == "released" and d["servers"] == 3' \
		'd["fence"] == int(a[0]) and d["token"] == a[1][:8] and d["exit"] == 0' -- "$f" "$t"
	run -0 --separate-stderr "$RLOCK" "${U3[@]}" log job
	assert_equal "${#lines[@]}" 2
	assert_regex "${lines[0]}" " acquired .* fence $f .*waited [0-9.]+m?s  sh -c "
	assert_regex "${lines[1]}" " released .* fence $f .* exit 0$"
	run -0 --separate-stderr "$RLOCK" "${U3[@]}" last --json job
	json_check "$output" 'd["last"]["servers"] == 3 and d["last"]["fence"] == int(a[0])' \
		'd["last_success"]["id"] == d["last"]["id"]' -- "$f"
}

@test "a master down during a run: once it is back its events say recorded by 2 of 3, with the holder's fence; last still answers with a master down" {
	# M3 grants the highest fence, the one handed out; its records are
	# lost with it.
	local c f
	c=$(fence_ahead_on job M3)
	run -0 --separate-stderr "$RLOCK" "${U3[@]}" run job -- sh -c \
		"echo \"\$RLOCK_FENCE\" >fence; kill -KILL $(master_pid M3)"
	assert_equal "$stderr" ""
	f=$(cat fence)
	assert_fence "$f" $((c + 1))
	servers_up M3
	assert_equal "$(log_xlen job M1 M2 M3)" "2 2 0"
	run -0 --separate-stderr "$RLOCK" "${U3[@]}" log job
	assert_equal "$stderr" ""
	assert_equal "${#lines[@]}" 2
	assert_regex "${lines[0]}" " acquired .* fence $f .*  \\[recorded by 2 of 3 servers\\]$"
	assert_regex "${lines[1]}" " released .* fence $f .* exit 0  \\[recorded by 2 of 3 servers\\]$"
	run -0 --separate-stderr "$RLOCK" "${U3[@]}" log --json job
	json_check "${lines[0]}" 'd["event"] == "acquired" and d["servers"] == 2 and d["fence"] == int(a[0])' -- "$f"
	json_check "${lines[1]}" 'd["event"] == "released" and d["servers"] == 2 and d["fence"] == int(a[0])' -- "$f"
	kill_master KILL M1
	run -0 --separate-stderr "$RLOCK" "${U3[@]}" last job
	assert_equal "$stderr" ""
	assert_regex "$output" '^job: last run ended [^ ]+ ago on .*: exit 0 after [^ ]+$'
	run -0 --separate-stderr "$RLOCK" "${U3[@]}" last --max-age 1h job
	assert_output ""
}

@test "log -f over three masters prints each event once, until SIGINT" {
	bg_start follow "$RLOCK" "${U3[@]}" log --json -f job
	local fpid=$BG_PID toks=() i
	# Three runs; what a master records later than another must not show
	# again in a later read, before the next run's events.
	for i in 0 1 2; do
		toks+=("$("$RLOCK" "${U3[@]}" run job -- sh -c 'echo "$RLOCK_TOKEN"')")
		wait_until 5 lines_at_least "$BATS_TEST_TMPDIR/follow.out" $((2 * i + 2))
	done
	kill -INT "$fpid"
	bg_wait "$fpid" 10
	assert_equal "$BG_STATUS" 0
	assert_equal "$(bg_err follow)" ""
	python3 -c '
import json, sys
got = [(e["event"], e["token"]) for e in map(json.loads, open(sys.argv[1]))]
want = [(ev, t[:8]) for t in sys.argv[2:] for ev in ("acquired", "released")]
if got != want:
    sys.exit("followed %s, ran %s" % (got, want))' follow.out "${toks[@]}"
}

@test "--with on several masters is a usage error that says so, and takes nothing" {
	run -64 --separate-stderr "$RLOCK" "${U3[@]}" run wa --with wb -- touch ran
	assert_equal "${stderr_lines[0]}" "rlock: run: --with needs one server (or one Sentinel or Cluster URL): several masters would each grant the set in their own order"
	[[ ! -e ran ]]
	run -64 --separate-stderr "$RLOCK" "${U3[@]}" acquire wa --with wb
	assert_equal "$output" ""
}
