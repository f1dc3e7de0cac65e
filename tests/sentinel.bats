#!/usr/bin/env bats
# sentinel.bats - rlock through Redis Sentinel (redis-sentinel:// URLs): a
# master, one replica and three redis-sentinel processes started once for
# the file (ha_helper), plus a password-protected master watched by one
# password-protected sentinel for the credential tests, and two plain
# servers for a Redlock with a sentinel-managed member.  Discovery, dead
# and frozen sentinels, unknown masters, a replica given directly, how
# RLOCK_URL is split, sentinel passwords, the lock's history (recorded on
# the master, read with log, last and status), the line's policies
# (--once-per, --supersede, --priority), and forced failovers
# (SENTINEL FAILOVER) under a running command, a waiter, a renewer and a
# history follower (log -f).  A failover
# swaps M and RPL: every test finds the master with ha_master, so that the
# order of the tests does not matter (the failover tests come last anyway).

bats_require_minimum_version 1.5.0
load test_helper
load tls_helper
load ha_helper
load history_helper

setup_file() {
	start_sentinel_topology || return 1
	# Credentials: the master's password differs from its sentinel's.
	start_redis AM --requirepass m-secret || return 1
	start_sentinel AS "$AM_PORT" --master-name authm --quorum 1 \
		--master-pass m-secret --sentinel-pass s-secret || return 1
	export AUTH_URL="redis-sentinel://127.0.0.1:$AS_PORT#authm"
	# Two plain servers, for a Redlock with a sentinel-managed member.
	start_redis X || return 1
	start_redis Y || return 1
	printf 'm-secret\n' >"$BATS_FILE_TMPDIR/master.pw"
	printf 's-secret\n' >"$BATS_FILE_TMPDIR/sentinel.pw"
	printf 'wrong\n' >"$BATS_FILE_TMPDIR/wrong.pw"
	export T_MPW=$BATS_FILE_TMPDIR/master.pw T_SPW=$BATS_FILE_TMPDIR/sentinel.pw
	export T_WPW=$BATS_FILE_TMPDIR/wrong.pw
}

teardown_file() {
	rl_teardown_file
}

setup() {
	rl_setup
	SU=(-u "$SENTINEL_URL")
}

# A test that stops or freezes sentinels leaves them to this.
teardown() {
	rl_teardown
	sentinels_up
}

# ---- locks on whichever node is master now ----------------------------------

mholder() { holder "$1" "$(ha_master)"; }
mheld_by() { held_by "$1" "$2" "$(ha_master)"; }
mlock_free() { lock_free "$1" "$(ha_master)"; }
mpttl() { pttl "$1" "$(ha_master)"; }

# elapsed_since T0: milliseconds since now_ms said T0.
elapsed_since() {
	echo $(($(now_ms) - $1))
}

# ---- discovery --------------------------------------------------------------

@test "acquire, status, extend and release through the sentinels act on the master" {
	local token
	run -0 --separate-stderr "$RLOCK" "${SU[@]}" acquire -t 10s disc
	token=$output
	assert_regex "$token" '^[0-9a-f]{32}$'
	assert_equal "$stderr" ""
	# On the master the sentinels name, as redis-cli sees it.
	assert_equal "$(redis-cli -h 127.0.0.1 -p "$(sentinel_master_port)" GET "$(key disc)")" "$token"
	run -0 "$RLOCK" "${SU[@]}" status disc
	assert_fence "$(meta disc fence "$(ha_master)")"
	assert_status_row "${lines[1]}" disc held "$(meta disc fence "$(ha_master)")"
	run -0 "$RLOCK" "${SU[@]}" extend -t 60s disc "$token"
	local p
	p=$(mpttl disc)
	((p > 10000 && p <= 60000)) || fail "pttl after extend: $p"
	run -0 "$RLOCK" "${SU[@]}" release disc "$token"
	mlock_free disc
	run -1 "$RLOCK" "${SU[@]}" status disc
	assert_regex "${lines[1]}" '^disc +free '
}

@test "run through the sentinels: the command runs while the master holds its token" {
	local mp
	mp=$(sentinel_master_port)
	run -0 --separate-stderr "$RLOCK" "${SU[@]}" run rn -- \
		sh -c 'echo "$RLOCK_TOKEN"; redis-cli -h 127.0.0.1 -p "$1" GET "$RLOCK_KEY"' sh "$mp"
	assert_equal "${#lines[@]}" 2
	assert_regex "${lines[0]}" '^[0-9a-f]{32}$'
	assert_equal "${lines[1]}" "${lines[0]}"
	mlock_free rn
}

@test "through the sentinels a waiting run is handed the lock by the release itself, on the master" {
	baton_handoff "$(ha_master)" sb "${SU[@]}"
}

@test "through the sentinels: waiters in arrival order, shared holders together, a semaphore's places" {
	local token i
	token=$("$RLOCK" "${SU[@]}" acquire -t 30s line)
	local -a pids
	for i in 1 2 3; do
		bg_start "w$i" "$RLOCK" "${SU[@]}" run -w 20s line -- sh -c "echo $i >> order"
		pids+=("$BG_PID")
		wait_until 10 has_waiters line "$i" "$(ha_master)"
	done
	"$RLOCK" "${SU[@]}" release line "$token"
	for i in 0 1 2; do
		bg_wait "${pids[i]}" 10
		assert_equal "$BG_STATUS" 0
	done
	assert_equal "$(tr '\n' ' ' <order)" "1 2 3 "
	# Two shared holders at once; a semaphore of 2 refuses a third place.
	local s1 s2
	s1=$("$RLOCK" "${SU[@]}" acquire -s sh)
	s2=$("$RLOCK" "${SU[@]}" acquire -s sh)
	run -0 "$RLOCK" "${SU[@]}" status sh
	assert_line "  shared: 2 holders"
	run -75 --separate-stderr "$RLOCK" "${SU[@]}" acquire -x -n sh
	"$RLOCK" "${SU[@]}" release sh "$s1"
	"$RLOCK" "${SU[@]}" release sh "$s2"
	"$RLOCK" "${SU[@]}" acquire -l 2 sem >/dev/null
	"$RLOCK" "${SU[@]}" acquire -l 2 sem >/dev/null
	run -75 --separate-stderr "$RLOCK" "${SU[@]}" acquire -l 2 -n sem
	assert_equal "$(redis-cli -h 127.0.0.1 -p "$(sentinel_master_port)" ZCARD "$(key sem):holders")" 2
}

# ---- line policies: --once-per, --supersede, --priority -----------------------

# utc MS: a time in ms since the epoch as rlock prints it.
utc() {
	date -u -d "@$(($1 / 1000))" '+%Y-%m-%d %H:%M:%S UTC'
}

@test "slots and a pool through the sentinels: kept on the master, each holder told its own" {
	local mp t1 t2
	mp=$(sentinel_master_port)
	t1=$("$RLOCK" "${SU[@]}" acquire -l 2 sl)
	run -0 "$RLOCK" "${SU[@]}" run -l 2 sl -- sh -c 'echo "$RLOCK_SLOT"'
	assert_output 1
	assert_equal "$(redis-cli -h 127.0.0.1 -p "$mp" HGET "$(key sl):holders:meta" "#$t1")" 0
	"$RLOCK" "${SU[@]}" pool envs add env-a url=https://a.example
	"$RLOCK" "${SU[@]}" pool envs add env-b url=https://b.example
	assert_equal "$(redis-cli -h 127.0.0.1 -p "$mp" HLEN "$(key envs):members")" 2
	t2=$("$RLOCK" "${SU[@]}" acquire --pool envs)
	run -0 "$RLOCK" "${SU[@]}" run --pool envs -- sh -c 'echo "$RLOCK_RESOURCE $RLOCK_RESOURCE_URL"'
	assert_output "env-b https://b.example"
	run -0 "$RLOCK" "${SU[@]}" pool --json envs
	json_check "$output" "d['members'][0]['holder']['token_prefix'] == '${t2:0:8}'"
	"$RLOCK" "${SU[@]}" release envs "$t2"
	"$RLOCK" "${SU[@]}" release sl "$t1"
}

@test "--once-per 30d through the sentinels: a run marks the period on the master (and its replica), the next skips (75) naming it, status shows it" {
	export USER=tester
	local m r k host pid fence since done until period=2592000000
	host=$(uname -n)
	m=$(ha_master)
	r=$(ha_replica)
	k=$(key daily)
	run -0 --separate-stderr "$RLOCK" "${SU[@]}" run --once-per 30d daily -- \
		sh -c 'echo "$PPID $RLOCK_FENCE" > ran1'
	assert_equal "$stderr" ""
	read -r pid fence <ran1
	# The record is on the master, for the period of its clock the grant
	# fell in, and replicated: a failover keeps the period done.
	assert_equal "$(rcli "$m" HGET "$k:once" pid)" "$pid"
	assert_equal "$(rcli "$m" HGET "$k:once" fence)" "$fence"
	assert_equal "$(rcli "$m" HGET "$k:once" host)" "$host"
	since=$(rcli "$m" HGET "$k:once" since)
	done=$(rcli "$m" HGET "$k:once" done)
	until=$(rcli "$m" HGET "$k:once" until)
	assert_equal "$until" $(((since / period + 1) * period))
	wait_until 5 eval '[[ $(rcli "$r" HGET "$k:once" until) == "$until" ]]'
	run -75 --separate-stderr "$RLOCK" "${SU[@]}" run --once-per 30d daily -- touch ran2
	assert_equal "$output" ""
	assert_stderr "rlock: run: daily: done this period by tester@$host pid $pid at $(utc "$since"); the next period starts $(utc "$until")"
	# -E sets the code, -q keeps the line back.
	run -9 --separate-stderr "$RLOCK" "${SU[@]}" -q run -E 9 --once-per 30d daily -- touch ran2
	assert_equal "$stderr" ""
	[[ ! -e ran2 ]]
	# The skips never held the lock.
	assert_equal "$(meta daily fence "$m")" "$fence"
	lock_free daily "$m"
	run -1 --separate-stderr "$RLOCK" "${SU[@]}" status --json daily
	assert_equal "$stderr" ""
	json_check "$output" 'd["locks"][0]["held"] is False' \
		'd["locks"][0]["once"] == {"host": a[0], "user": "tester", "pid": int(a[1]), "fence": int(a[2]), "since_ms": int(a[3]), "done_ms": int(a[4]), "next_ms": int(a[5]), "period_ms": 2592000000}' \
		-- "$host" "$pid" "$fence" "$since" "$done" "$until"
	run -1 --separate-stderr "$RLOCK" "${SU[@]}" status daily
	assert_line "  done this period: tester@$host pid $pid at $(utc "$since"), next period $(utc "$until")"
}

@test "--supersede through the sentinels: the holder stays, the first --supersede waiter leaves within a second (75) naming the second, which runs after the holder" {
	export USER=tester
	local m k host t0 el opid npid wfence
	host=$(uname -n)
	m=$(ha_master)
	k=$(key sup)
	start_holder sup -t 30s
	bg_start old "$RLOCK" "${SU[@]}" run -w 30s --supersede sup -- touch old-ran
	opid=$BG_PID
	wait_until 10 line_is sup 1 "$m"
	t0=$(now_ms)
	bg_start new "$RLOCK" "${SU[@]}" run -w 30s --supersede --label deploy-v43 sup -- \
		sh -c '[ -e done-sup ] && echo "$RLOCK_FENCE" > new-ran'
	npid=$BG_PID
	# Within a second of the newcomer's arrival (its start included).
	bg_wait "$opid" 5
	el=$(elapsed_since "$t0")
	assert_equal "$BG_STATUS" 75
	((el < 1500)) || fail "the superseded waiter left ${el}ms after the newcomer started"
	assert_equal "$(bg_err old)" "rlock: run: sup: superseded by tester@$host:$npid (deploy-v43)"
	[[ ! -e old-ran ]]
	held_by sup "$TOKEN" "$m"
	pid_alive "$npid"
	line_is sup 1 "$m"
	assert_equal "$(rcli "$m" HGET "$k:line:who" "$(line_members sup "$m")" | sed -n 2p)" "$npid"
	assert_equal "$(rcli "$m" ZRANGE "$k:line:lease" 0 -1)" "$(line_members sup "$m")"
	newest_served "$npid"
	lock_free sup "$m"
	assert_equal "$(rcli "$m" EXISTS "$k:line" "$k:line:lease")" 0
}

@test "--priority through the sentinels: a high-priority waiter queued after two low ones goes first, the low ones in arrival order; status shows it next" {
	export USER=tester
	local m k n hpid
	local -a pids
	m=$(ha_master)
	k=$(key prio)
	start_holder prio -t 30s
	for n in 1 2; do
		bg_start "low$n" "$RLOCK" "${SU[@]}" run -w 30s prio -- sh -c "echo low$n >> order"
		pids+=("$BG_PID")
		wait_until 10 line_is prio "$n" "$m"
	done
	bg_start high "$RLOCK" "${SU[@]}" run -w 30s --priority 10 --label hotfix prio -- \
		sh -c 'echo high >> order'
	hpid=$BG_PID
	pids+=("$hpid")
	wait_until 10 line_is prio 3 "$m"
	served_by_priority "${pids[@]}" -- "${SU[@]}"
	lock_free prio "$m"
	assert_equal "$(rcli "$m" EXISTS "$k:line" "$k:line:lease" "$k:line:who")" 0
}

@test "a dead first sentinel is skipped at once" {
	stop_redis S1
	local t0 token
	t0=$(now_ms)
	run -0 "$RLOCK" "${SU[@]}" acquire dead1
	token=$output
	(($(elapsed_since "$t0") < 1500)) || fail "took $(elapsed_since "$t0")ms"
	mheld_by dead1 "$token"
	run -0 "$RLOCK" "${SU[@]}" release dead1 "$token"
	mlock_free dead1
}

@test "a first sentinel that does not answer is skipped within the connect timeout" {
	kill -STOP "$(server_pid S1)"
	wait_until 5 pid_stopped "$(server_pid S1)"
	local t0 token
	t0=$(now_ms)
	run -0 "$RLOCK" "${SU[@]}" --connect-timeout 400ms acquire frozen1
	token=$output
	# Not the 2s I/O timeout: a sentinel gets the connect timeout.
	(($(elapsed_since "$t0") < 1800)) || fail "took $(elapsed_since "$t0")ms"
	mheld_by frozen1 "$token"
}

@test "no sentinel reachable: 69 at once, saying so" {
	local url t0
	url="redis-sentinel://127.0.0.1:$(closed_port),127.0.0.1:$(closed_port),127.0.0.1:$(closed_port)#mymaster"
	t0=$(now_ms)
	run -69 --separate-stderr "$RLOCK" -u "$url" --connect-timeout 1s run nosent -- touch ran
	(($(elapsed_since "$t0") < 2000)) || fail "took $(elapsed_since "$t0")ms"
	assert_stderr --partial "no sentinel reachable"
	assert_equal "${#stderr_lines[@]}" 1
	[[ ! -e ran ]]
}

@test "no sentinel answers: 69 within three connect timeouts" {
	local s
	for s in S1 S2 S3; do
		kill -STOP "$(server_pid "$s")"
	done
	local t0
	t0=$(now_ms)
	run -69 --separate-stderr "$RLOCK" "${SU[@]}" --connect-timeout 300ms acquire mute
	(($(elapsed_since "$t0") < 2500)) || fail "took $(elapsed_since "$t0")ms"
	assert_stderr --partial "no sentinel reachable"
}

@test "a master the sentinels do not know: 69 naming it" {
	local url=${SENTINEL_URL%#*}#nosuchmaster
	run -69 --separate-stderr "$RLOCK" -u "$url" acquire unk
	assert_stderr --partial "do not know master 'nosuchmaster'"
	assert_equal "$output" ""
}

@test "a replica given directly as redis:// is refused with a clear error" {
	local rep
	rep=$(ha_replica)
	run -69 --separate-stderr "$RLOCK" -u "redis://127.0.0.1:$(_rl_port_of "$rep")" acquire direct
	assert_stderr --partial "is a replica"
	assert_equal "$output" ""
	run -69 --separate-stderr "$RLOCK" -u "redis://127.0.0.1:$(_rl_port_of "$rep")" run direct -- touch ran
	assert_stderr --partial "is a replica"
	[[ ! -e ran ]]
	mlock_free direct
}

@test "sentinels that name a replica: asked again until the wait is spent, then 69 naming it" {
	# A sentinel whose "master" is really a replica (as one that missed a
	# failover would say).
	start_redis ZM
	start_redis ZR --replicaof 127.0.0.1 "$ZM_PORT"
	start_sentinel ZS "$ZR_PORT" --master-name stale --quorum 1
	local t0 ms
	# No wait (-n): asked again within the I/O timeout.
	t0=$(now_ms)
	run -69 --separate-stderr "$RLOCK" -u "redis-sentinel://127.0.0.1:$ZS_PORT#stale" \
		--connect-timeout 1s --io-timeout 1s run -n stale -- touch ran
	(($(elapsed_since "$t0") < 3000)) || fail "took $(elapsed_since "$t0")ms"
	assert_stderr --partial "127.0.0.1:$ZR_PORT as master 'stale', but it is a replica"
	# A wait of 3s: asked again until it is spent, not given up at once.
	t0=$(now_ms)
	run -69 --separate-stderr "$RLOCK" -u "redis-sentinel://127.0.0.1:$ZS_PORT#stale" \
		--connect-timeout 1s run -w 3s stale -- touch ran
	ms=$(elapsed_since "$t0")
	((ms >= 2900 && ms < 6000)) || fail "took ${ms}ms, not the 3s wait"
	assert_stderr --partial "is a replica (a failover under way?)"
	[[ ! -e ran ]]
	assert_equal "$(rcli ZM EXISTS "$(key stale)")" 0
	assert_equal "$(rcli ZR EXISTS "$(key stale)")" 0
}

@test "a sentinel that names a replica is passed over for the next one, which names the master" {
	start_redis ZM
	start_redis ZR --replicaof 127.0.0.1 "$ZM_PORT"
	# The first sentinel missed the failover; the second knows.
	start_sentinel ZS "$ZR_PORT" --master-name both --quorum 1
	start_sentinel ZT "$ZM_PORT" --master-name both --quorum 1
	run -0 --separate-stderr "$RLOCK" \
		-u "redis-sentinel://127.0.0.1:$ZS_PORT,127.0.0.1:$ZT_PORT#both" \
		--connect-timeout 1s run -n both -- sh -c 'echo "$RLOCK_FENCE" >ran'
	[[ -s ran ]]
	# And at once: one round, not a wait.
	assert_equal "$(rcli ZM EXISTS "$(key both)")" 0
	run -0 "$RLOCK" -u "redis-sentinel://127.0.0.1:$ZS_PORT,127.0.0.1:$ZT_PORT#both" \
		acquire -n both
	assert_equal "$(rcli ZM GET "$(key both)")" "$output"
}

# How many connections server NAME took.
connections() {
	rcli "$1" INFO stats | tr -d '\r' |
		sed -n 's/^total_connections_received:\([0-9]*\)$/\1/p'
}

connected_at_least() { (($(connections "$1") >= $2)); }

@test "a run whose sentinels name a replica waits for the failover to end, within -w" {
	start_redis ZM
	start_redis ZR --replicaof 127.0.0.1 "$ZM_PORT"
	start_sentinel ZS "$ZR_PORT" --master-name promo --quorum 1
	local before
	before=$(connections ZR)
	"$RLOCK" -u "redis-sentinel://127.0.0.1:$ZS_PORT#promo" --connect-timeout 1s \
		run -w 20s promo -- sh -c 'echo "$RLOCK_FENCE" >ran' 2>err &
	local pid=$!
	# Named the replica, refused it, asked again (each a connection to
	# it): then the failover ends.
	wait_until 10 connected_at_least ZR $((before + 3))
	kill -0 "$pid"
	rcli ZR REPLICAOF NO ONE >/dev/null
	wait "$pid" || fail "exit $?: $(cat err)"
	[[ -s ran ]]
}

named_port() {
	[[ $(rcli "$1" SENTINEL get-master-addr-by-name "$2" | tail -n 1) == "$3" ]]
}

# failed_over SENTINEL MASTER PORT: the sentinel names PORT, or is asked
# to fail over (again: a sentinel may refuse, or abort a failover it
# started when its news of the replica goes stale at the wrong moment).
failed_over() {
	named_port "$1" "$2" "$3" && return 0
	rcli "$1" SENTINEL FAILOVER "$2" >/dev/null 2>&1
	return 1
}

# deposed_waiter NAME [RUN-OPTION...]: a master ZM that cannot be told it
# is one no longer (its REPLICAOF is renamed, as a master cut off from the
# sentinels would not hear it either), with a replica ZR and a sentinel ZS;
# another client holds NAME on ZM, and "rlock run -w 30s NAME RUN-OPTIONS"
# waits in its line there.  The sentinel fails over to ZR: ZM keeps
# answering as a master, with the old lock.  Only the sentinels know
# better: the holder releases where they say the master is now, and the
# waiter, in line there since its master changed, gets the lock.
deposed_waiter() {
	local name=$1 url token pid
	shift
	start_redis ZM --rename-command REPLICAOF zm-replicaof \
		--rename-command SLAVEOF zm-slaveof
	start_redis ZR --replicaof 127.0.0.1 "$ZM_PORT"
	start_sentinel ZS "$ZM_PORT" --master-name dep --quorum 1
	url="redis-sentinel://127.0.0.1:$ZS_PORT#dep"
	token=$("$RLOCK" -u "$url" acquire -t 60s "$name")
	"$RLOCK" -u "$url" run -w 30s "$name" "$@" -- sh -c 'echo "$RLOCK_FENCE" >ran' 2>err &
	pid=$!
	wait_until 10 eval '[[ $(line_len "$name" ZM) == 1 ]]'
	wait_until 10 eval '[[ $(rcli ZR ZCARD "$(key "$name"):line") == 1 ]]'
	wait_until 30 failed_over ZS dep "$ZR_PORT"
	assert_equal "$(rcli ZM ROLE | head -n 1)" master
	assert_equal "$(rcli ZM GET "$(key "$name")")" "$token"
	run -0 "$RLOCK" -u "$url" release "$name" "$token"
	wait_until 10 eval '[[ -s ran ]]'
	wait "$pid" || fail "exit $?: $(cat err)"
	assert_equal "$(rcli ZM GET "$(key "$name")")" "$token"
	assert_equal "$(rcli ZR EXISTS "$(key "$name")")" 0
}

@test "a waiter hears of a failover from the sentinels, though its deposed master still says master" {
	deposed_waiter dep
}

@test "a waiting set (--with) hears of a failover from the sentinels as a single waiter does, though its deposed master still says master" {
	deposed_waiter dsa --with dsb
	# The set was taken on the new master, and released there.
	assert_equal "$(rcli ZR EXISTS "$(key dsb)" "$(key dsa):with")" 0
	assert_equal "$(rcli ZM EXISTS "$(key dsb)")" 0
	run -0 --separate-stderr "$RLOCK" -u "redis://127.0.0.1:$ZR_PORT" log --json dsb
	json_check "$(head -n 1 <<<"$output")" 'd["event"] == "acquired" and d["with"] == ["dsa"]'

}

@test "a grant from a master the sentinels replaced while the request was out is given back, and taken on the new one" {
	# A master frozen past a failover answers, when it thaws, what was
	# sent to it before: here a waiter's request, granted because the
	# holder's lease ran out meanwhile.  The sentinels said otherwise in
	# between: the waiter gives that grant back and holds the lock on the
	# new master while its command runs.
	start_redis ZM --rename-command REPLICAOF zm-replicaof \
		--rename-command SLAVEOF zm-slaveof
	start_redis ZR --replicaof 127.0.0.1 "$ZM_PORT"
	start_sentinel ZS "$ZM_PORT" --master-name frz --quorum 1
	local url="redis-sentinel://127.0.0.1:$ZS_PORT#frz" k pid zm until
	k=$(key frz)
	"$RLOCK" -u "$url" acquire -t 2s frz >/dev/null
	until=$(($(now_ms) + 2000))
	"$RLOCK" -u "$url" --io-timeout 20s run -w 60s frz -- \
		sh -c "redis-cli -p $ZR_PORT GET '$k' >seen; echo \"\$RLOCK_TOKEN\" >tok" 2>err &
	pid=$!
	wait_until 10 eval '[[ $(line_len frz ZM) == 1 ]]'
	zm=$(server_pid ZM)
	kill -STOP "$zm"
	# The holder's lease runs out while the master is frozen, and the
	# waiter, asking every 400ms, has a request out to it.
	wait_until 10 eval '(($(now_ms) > until + 500))'
	wait_until 30 failed_over ZS frz "$ZR_PORT"
	kill -CONT "$zm"
	wait "$pid" || fail "exit $?: $(cat err)"
	[[ -s tok ]]
	assert_equal "$(cat seen)" "$(cat tok)"
}

# granted_on_thaw MASTER HELD RUN-ARGS...: a master ZM that cannot be
# demoted (REPLICAOF renamed) with a replica ZR and a sentinel ZS naming
# it MASTER; "rlock run -n RUN-ARGS -- touch ran" sent to ZM while it is
# frozen, connected to it and answered only when it thaws, after the
# failover and after another client took HELD on the new master ZR.
# Sets ST, the run's exit status, and TOKEN, the other client's.
granted_on_thaw() {
	local master=$1 held=$2 url pid zm
	shift 2
	start_redis ZM --rename-command REPLICAOF zm-replicaof \
		--rename-command SLAVEOF zm-slaveof
	start_redis ZR --replicaof 127.0.0.1 "$ZM_PORT"
	start_sentinel ZS "$ZM_PORT" --master-name "$master" --quorum 1
	url="redis-sentinel://127.0.0.1:$ZS_PORT#$master"
	# Run once, so that the sentinel knows the replica.
	run -0 "$RLOCK" -u "$url" run -n "$@" -- true
	zm=$(server_pid ZM)
	kill -STOP "$zm"
	"$RLOCK" -u "$url" --connect-timeout 30s --io-timeout 30s run -n \
		"$@" -- touch ran 2>err &
	pid=$!
	wait_until 30 failed_over ZS "$master" "$ZR_PORT"
	run -0 "$RLOCK" -u "redis://127.0.0.1:$ZR_PORT" acquire -t 60s "$held"
	TOKEN=$output
	kill -CONT "$zm"
	ST=0
	wait "$pid" || ST=$?
}

@test "a first try answered by a master the sentinels replaced meanwhile is given back: the new master's holder stays alone" {
	# It grants on thaw; the slow grant is checked with the sentinels,
	# who name the new master: given back, asked there, busy (75), and
	# the command never runs.
	granted_on_thaw first first first
	assert_equal "$ST" 75
	[[ ! -e ran ]] || fail "the command ran beside the new master's holder"
	assert_equal "$(rcli ZR GET "$(key first)")" "$TOKEN"
	assert_equal "$(rcli ZM EXISTS "$(key first)")" 0
	# Busy on the new master, with its holder's details.
	run cat err
	assert_output --regexp "^rlock: run: first: held by [^ ]+ pid [0-9]+ \(rlock acquire\)$"
}

@test "a set (--with) answered by a master the sentinels replaced meanwhile is given back the same way" {
	granted_on_thaw fset fb fa --with fb
	assert_equal "$ST" 75
	[[ ! -e ran ]] || fail "the command ran beside the new master's holder"
	assert_equal "$(rcli ZR GET "$(key fb)")" "$TOKEN"
	assert_equal "$(rcli ZR EXISTS "$(key fa)")" 0
	assert_equal "$(rcli ZM EXISTS "$(key fa)" "$(key fb)")" 0
}

@test "a run whose master is frozen waits for the failover within -w, not one connect timeout" {
	start_redis ZM
	start_redis ZR --replicaof 127.0.0.1 "$ZM_PORT"
	start_sentinel ZS "$ZM_PORT" --master-name ice --quorum 1
	local url="redis-sentinel://127.0.0.1:$ZS_PORT#ice" zm
	# Connected once, so that the sentinel knows the replica.
	run -0 "$RLOCK" -u "$url" run -n ice -- true
	zm=$(server_pid ZM)
	kill -STOP "$zm"
	# The sentinel (down-after 1s) fails over by itself, after the run's
	# first 1s with the frozen master.
	run -0 --separate-stderr "$RLOCK" -u "$url" --io-timeout 1s \
		--connect-timeout 1s run -w 30s ice -- sh -c 'echo "$RLOCK_FENCE" >ran'
	[[ -s ran ]]
	named_port ZS ice "$ZR_PORT"
	kill -CONT "$zm"
}

# ---- RLOCK_URL ------------------------------------------------------------

@test "RLOCK_URL holding a sentinel URL keeps its comma-separated sentinels" {
	local token
	token=$(RLOCK_URL=$SENTINEL_URL "$RLOCK" acquire envurl)
	mheld_by envurl "$token"
	RLOCK_URL=$SENTINEL_URL run -0 "$RLOCK" release envurl "$token"
	mlock_free envurl
}

@test "RLOCK_URL splits at a comma only where a scheme follows" {
	# Two URLs (a sentinel one with its own commas, then a plain one)
	# cannot form a quorum: a usage error about two servers.
	RLOCK_URL="$SENTINEL_URL,redis://127.0.0.1:$(closed_port)" \
		run -64 --separate-stderr "$RLOCK" acquire split
	assert_stderr --partial "two servers cannot form a quorum"
	refute_stderr --partial "invalid URL"
	mlock_free split
}

@test "RLOCK_URL with a sentinel URL and two plain URLs is a Redlock of three" {
	local token
	token=$(RLOCK_URL="$SENTINEL_URL,$X_URL,$Y_URL" "$RLOCK" acquire trio)
	assert_regex "$token" '^[0-9a-f]{32}$'
	mheld_by trio "$token"
	held_by trio "$token" X
	held_by trio "$token" Y
	RLOCK_URL="$SENTINEL_URL,$X_URL,$Y_URL" run -0 "$RLOCK" release trio "$token"
	mlock_free trio
	lock_free trio X
	lock_free trio Y
}

@test "a Redlock member whose sentinels are all down: the quorum holds, and status names that master" {
	local token dead
	dead="redis-sentinel://127.0.0.1:$(closed_port)#gone"
	token=$("$RLOCK" -u "$dead" -u "$X_URL" -u "$Y_URL" acquire trio2)
	held_by trio2 "$token" X
	held_by trio2 "$token" Y
	run -0 --separate-stderr "$RLOCK" -u "$dead" -u "$X_URL" -u "$Y_URL" status trio2
	assert_line --index 2 --regexp "^  gone +error  no sentinel reachable for master 'gone'"
	run -0 "$RLOCK" -u "$dead" -u "$X_URL" -u "$Y_URL" release trio2 "$token"
	lock_free trio2 X
	lock_free trio2 Y
}

# ---- passwords --------------------------------------------------------------

@test "sentinel and master passwords from files: both needed, neither in argv" {
	bg_start sleeper sleep 30
	local spid=$BG_PID token pid
	timeout 10 "$RLOCK" -u "$AUTH_URL" --sentinel-password-file "$T_SPW" \
		--password-file "$T_MPW" acquire --renew --pid "$spid" -t 1s pwf >tok
	token=$(cat tok)
	assert_regex "$token" '^[0-9a-f]{32}$'
	held_by pwf "$token" AM
	# No password in the argv of the renewer it left.
	wait_until 5 eval '[[ -n $(rlock_pids) ]]'
	for pid in $(rlock_pids); do
		run grep -c -a -e m-secret -e s-secret "/proc/$pid/cmdline"
		assert_output 0
	done
	kill -TERM "$spid"
	wait_until 10 lock_free pwf AM
}

@test "sentinel and master passwords from RLOCK_SENTINEL_PASSWORD and REDISCLI_AUTH" {
	RLOCK_SENTINEL_PASSWORD=s-secret REDISCLI_AUTH=m-secret \
		run -0 --separate-stderr "$RLOCK" -u "$AUTH_URL" run pwe -- \
		sh -c 'redis-cli -h 127.0.0.1 -p "$1" -a m-secret --no-auth-warning GET "$RLOCK_KEY"' sh "$AM_PORT"
	assert_regex "$output" '^[0-9a-f]{32}$'
	lock_free pwe AM
}

@test "the URL's userinfo is the master's password, not the sentinel's" {
	local url="redis-sentinel://:m-secret@127.0.0.1:$AS_PORT#authm"
	RLOCK_URL=$url RLOCK_SENTINEL_PASSWORD=s-secret run -0 "$RLOCK" run pwu -- true
	# Without the sentinel's own password the sentinel refuses.
	RLOCK_URL=$url run -69 --separate-stderr "$RLOCK" run pwu -- touch ran
	assert_stderr --regexp 'sentinel ([^ ]+ )?requires a password'
	[[ ! -e ran ]]
}

@test "no sentinel password for a sentinel that requires one: 69" {
	run -69 --separate-stderr "$RLOCK" -u "$AUTH_URL" --password-file "$T_MPW" acquire nospw
	assert_stderr --regexp 'sentinel ([^ ]+ )?requires a password'
	lock_free nospw AM
}

@test "a wrong sentinel password: 69, sentinel authentication failed" {
	run -69 --separate-stderr "$RLOCK" -u "$AUTH_URL" --sentinel-password-file "$T_WPW" \
		--password-file "$T_MPW" acquire badspw
	assert_stderr --partial "sentinel authentication failed"
	RLOCK_SENTINEL_PASSWORD=wrong REDISCLI_AUTH=m-secret \
		run -69 --separate-stderr "$RLOCK" -u "$AUTH_URL" acquire badspw
	assert_stderr --partial "sentinel authentication failed"
	lock_free badspw AM
}

@test "the sentinel's password is not the master's: the master still wants its own" {
	run -69 --separate-stderr "$RLOCK" -u "$AUTH_URL" --sentinel-password-file "$T_SPW" \
		acquire nompw
	refute_stderr --partial "sentinel requires a password"
	refute_stderr --partial "sentinel authentication failed"
	assert_stderr --partial "$AM_PORT"
	lock_free nompw AM
}

# ---- TLS ------------------------------------------------------------------------

@test "rediss-sentinel://: TLS to the sentinel and to the master it names" {
	start_redis_tls TM
	start_sentinel TS "$TM_PORT" --master-name tlsm --quorum 1 --tls
	local url="rediss-sentinel://localhost:$TS_PORT#tlsm" token
	token=$("$RLOCK" -u "$url" --cacert "$CERTS/ca.crt" acquire tl)
	assert_regex "$token" '^[0-9a-f]{32}$'
	assert_equal "$(tholder tl TM)" "$token"
	run -0 "$RLOCK" -u "$url" --cacert "$CERTS/ca.crt" release tl "$token"
	tlock_free tl TM
	# Without the CA the sentinel's certificate is not trusted.
	run -69 --separate-stderr "$RLOCK" -u "$url" acquire tl
	tlock_free tl TM
	# A plain sentinel URL to a TLS sentinel: 69 with a hint.
	run -69 --separate-stderr "$RLOCK" -u "redis-sentinel://127.0.0.1:$TS_PORT#tlsm" acquire tl
	assert_stderr --partial "rediss-sentinel://"
	tlock_free tl TM
}

# ---- history ----------------------------------------------------------------

# log_cli NAME ARGS...: redis-cli against the master now (history_helper
# reads the stream with it).
log_cli() {
	shift
	mcli "$@"
}

@test "history through the sentinels: run, acquire and release record it on the master (and its replica); log, last, last --max-age and status read it" {
	export USER=tester
	local t host pid fence
	host=$(uname -n)
	run -0 "$RLOCK" "${SU[@]}" run --note "first" hs -- true
	t=$("$RLOCK" "${SU[@]}" acquire -t 30s hs)
	pid=$(meta hs pid "$(ha_master)")
	fence=$(meta hs fence "$(ha_master)")
	run -75 "$RLOCK" "${SU[@]}" run -n hs -- touch ran
	[[ ! -e ran ]]
	run -0 "$RLOCK" "${SU[@]}" release --status 4 hs "$t"
	assert_equal "$(event_names hs)" "acquired released acquired skipped released"
	json_check "$(events hs)" \
		'd[0]["note"] == "first" and d[1]["exit"] == "0"' \
		'd[2]["token"] == a[0][:8] and d[4]["token"] == a[0][:8] and d[4]["exit"] == "4"' \
		'd[3]["reason"] == "held by tester@%s pid %s" % (a[1], a[2])' \
		-- "$t" "$host" "$pid"
	# The replica has the same stream: a failover keeps the history.
	wait_until 5 eval '[[ $(rcli "$(ha_replica)" XLEN "$(logkey hs)") == 5 ]]'
	assert_equal "$(rcli "$(ha_replica)" XRANGE "$(logkey hs)" - +)" "$(mcli XRANGE "$(logkey hs)" - +)"
	run -0 --separate-stderr "$RLOCK" "${SU[@]}" log hs
	assert_equal "$stderr" ""
	assert_equal "${#lines[@]}" 5
	assert_regex "${lines[0]}" " acquired  tester@$host pid [0-9]+  fence [0-9]+  .*  note: first$"
	assert_regex "${lines[3]}" " skipped   tester@$host pid [0-9]+  .*\\(held by tester@$host pid $pid\\)"
	log_line_matches "${lines[4]}" released "$pid" "$fence"
	assert_regex "${lines[4]}" '  exit 4( |$)'
	run -0 --separate-stderr "$RLOCK" "${SU[@]}" log --json hs
	log_matches_stream "$output" "$(events hs)"
	run -0 --separate-stderr "$RLOCK" "${SU[@]}" last hs
	assert_regex "$output" "^hs: last run ended [^ ]+ ago on $host \\(tester pid $pid\\): exit 4 after [^ ]+$"
	# The first run's success is within the hour, not within 1ms.
	run -0 --separate-stderr "$RLOCK" "${SU[@]}" last --max-age 1h hs
	assert_output ""
	run -1 --separate-stderr "$RLOCK" "${SU[@]}" last --max-age 1ms hs never
	assert_equal "$stderr" ""
	assert_equal "${#lines[@]}" 2
	assert_regex "${lines[0]}" "^hs: no successful run within 1ms: last success [^ ]+ ago on $host \\(tester pid [0-9]+\\); last run [^ ]+ ago on $host \\(tester pid $pid\\): exit 4 after [^ ]+$"
	assert_regex "${lines[1]}" '^never: no successful run within 1ms: last success never; never ran$'
	run -1 --separate-stderr "$RLOCK" "${SU[@]}" status hs
	assert_line --regexp "^ *last: [^ ]+ ago on $host, exit 4 after [^ ]+$"
}

# ---- failovers (each leaves the other node master) ------------------------

# start_holder NAME [run options...]: a `run` through the sentinels whose
# command writes "FENCE TOKEN PID" to seen-NAME and then waits for the file
# go-NAME; it writes done-NAME when it ends normally.  HOLDER_PID is rlock,
# FENCE, TOKEN and CHILD what the command saw.
start_holder() {
	local name=$1
	shift
	bg_start "holder-$name" "$RLOCK" "${SU[@]}" run "$@" "$name" -- sh -c \
		"echo \"\$RLOCK_FENCE \$RLOCK_TOKEN \$\$\" > seen-$name; $(gate "$BATS_TEST_TMPDIR/go-$name"); touch done-$name"
	HOLDER_PID=$BG_PID
	wait_until 10 file_nonempty "seen-$name"
	read -r FENCE TOKEN CHILD <"seen-$name"
	track_pid "$CHILD"
}

# fence_intact NAME FENCE: the current master has FENCE in NAME's meta (the
# record of its grant) and as the fence of the newest grant in its history
# (the acquisition was not lost in the failover).
fence_intact() {
	assert_equal "$(meta "$1" fence "$(ha_master)")" "$2"
	assert_equal "$(last_grant "$1" fence "$(ha_master)")" "$2"
}

@test "doctor through the sentinels: each sentinel names the master, they agree, and the master is probed" {
	local master
	master=127.0.0.1:$(sentinel_master_port)
	run -1 --separate-stderr "$RLOCK" "${SU[@]}" doctor --json
	json_check "$output" \
		'sum(1 for c in d if c["check"] == "sentinel" and c["level"] == "ok" and c["value"] == a[0]) == 3' \
		'any(c["check"] == "sentinels" and c["level"] == "ok" and c["value"] == a[0] for c in d)' \
		'any(c["check"] == "role" and c["server"] == a[0] and c["level"] == "ok" for c in d)' \
		'any(c["check"] == "cleanup" and c["server"] == a[0] and c["level"] == "ok" for c in d)' \
		'any(c["check"] == "replication" and c["server"] == a[0] for c in d)' \
		-- "$master"
	# The probe left nothing on the master.
	[[ -z $(rcli "$(ha_master)" --scan --pattern "$RLOCK_PREFIX*") ]]
}

@test "a forced failover: run --wait-replicas 1 finishes (exit 0) and acquire --renew keeps renewing, both on the new master" {
	# The leases outlast the failover: between the promotion and the old
	# master's demotion (a second or two), renewals can still land on the
	# old master, and only the copy replicated before keeps the new one's.
	start_holder fw -t 4s --wait-replicas 1
	bg_start sleeper sleep 60
	local spid=$BG_PID rtoken old new t0 p
	timeout 10 "$RLOCK" "${SU[@]}" acquire --renew --pid "$spid" -t 4s --wait-replicas 1 ar >tok
	rtoken=$(cat tok)
	old=$(ha_master)
	held_by fw "$TOKEN" "$old"
	held_by ar "$rtoken" "$old"
	sentinel_failover
	new=$(ha_master)
	[[ $new != "$old" ]] || fail "no failover"
	t0=$(now_ms)
	# Past the 4s leases: the keys are there only if rlock renews them on
	# the new master.
	while (($(elapsed_since "$t0") < 4500)); do
		pid_alive "$HOLDER_PID" || fail "rlock run exited during the failover: $(bg_err holder-fw)"
		held_by fw "$TOKEN" "$new" || fail "run's key on $new: '$(holder fw "$new")' after $(elapsed_since "$t0")ms"
		held_by ar "$rtoken" "$new" || fail "the renewer's key on $new: '$(holder ar "$new")' after $(elapsed_since "$t0")ms"
		sleep 0.25
	done
	p=$(pttl fw "$new")
	((p > 0 && p <= 4000)) || fail "pttl $p"
	fence_intact fw "$FENCE"
	touch go-fw
	bg_wait "$HOLDER_PID" 10
	assert_equal "$BG_STATUS" 0
	[[ -e done-fw ]]
	lock_free fw "$new"
	kill -TERM "$spid"
	wait_until 10 lock_free ar "$new"
	wait_until 5 no_rlock_pids
}

@test "failover during run without --wait-replicas: the lock survives (exit 0) or the command is stopped (76), never both unlocked and running" {
	start_holder fn -t 2s
	local new t0 outcome=
	sentinel_failover
	new=$(ha_master)
	t0=$(now_ms)
	# Once a lease has passed since the failover, a command still running
	# must be covered by its token on the new master.
	while (($(elapsed_since "$t0") < 4000)); do
		if pid_gone "$HOLDER_PID"; then
			outcome=exited
			break
		fi
		if (($(elapsed_since "$t0") > 2500)) && pid_alive "$CHILD"; then
			held_by fn "$TOKEN" "$new" ||
				fail "the command runs but $new has '$(holder fn "$new")' for the lock"
		fi
		sleep 0.25
	done
	if [[ $outcome != exited ]]; then
		held_by fn "$TOKEN" "$new"
		fence_intact fn "$FENCE"
		touch go-fn
	fi
	bg_wait "$HOLDER_PID" 10
	if [[ $BG_STATUS == 0 ]]; then
		[[ -e done-fn ]]
	else
		assert_equal "$BG_STATUS" 76
		wait_until 5 pid_gone "$CHILD"
		[[ ! -e done-fn ]] || fail "the command finished normally but rlock says lost"
		run bg_err holder-fn
		assert_output --partial "lock lost"
	fi
	lock_free fn "$new"
}

@test "a waiter follows the failover and is woken by the release on the new master" {
	start_holder hw -t 10s --wait-replicas 1
	local old new t0
	old=$(ha_master)
	bg_start waiter "$RLOCK" "${SU[@]}" run -w 30s hw -- sh -c 'echo "$RLOCK_FENCE $RLOCK_TOKEN" > got'
	local wpid=$BG_PID
	wait_until 10 has_waiters hw 1 "$old"
	sentinel_failover
	new=$(ha_master)
	# The waiter listens on the new master now.
	wait_until 10 has_waiters hw 1 "$new"
	[[ ! -e got ]]
	held_by hw "$TOKEN" "$new"
	local go_us
	go_us=$(server_us "$new")
	t0=$(now_ms)
	touch go-hw
	bg_wait "$wpid" 15
	assert_equal "$BG_STATUS" 0
	# Woken by the release, not by the end of the holder's 10s lease.
	(($(elapsed_since "$t0") < 4000)) || fail "the waiter took $(elapsed_since "$t0")ms"
	bg_wait "$HOLDER_PID" 5
	assert_equal "$BG_STATUS" 0
	local wfence wtoken
	read -r wfence wtoken <got
	# Granted by the new master after the release, above the holder's
	# fence, and the last one it handed out.
	assert_increasing "$FENCE" "$wfence"
	assert_fence "$wfence" "$go_us"
	assert_equal "$(meta hw fence "$new")" "$wfence"
	[[ $wtoken != "$TOKEN" ]]
	lock_free hw "$new"
}

# stream_readers SERVER N: N clients of SERVER last ran XRANGE (as a
# follower does every 250ms).
stream_readers() {
	[[ $(rcli "$1" CLIENT LIST | grep -c ' cmd=xrange ') == "$2" ]]
}

@test "log -f and log -f --json through the sentinels follow a failover: what the new master records is printed once, and neither exits until told" {
	export USER=tester
	local old new
	run -0 "$RLOCK" "${SU[@]}" run sf -- true
	bg_start text "$RLOCK" "${SU[@]}" log -f sf
	local tpid=$BG_PID
	bg_start json "$RLOCK" "${SU[@]}" log -f --json sf
	local jpid=$BG_PID
	wait_until 10 has_lines text.out 2
	wait_until 10 has_lines json.out 2
	old=$(ha_master)
	wait_until 5 stream_readers "$old" 2
	wait_until 5 eval '[[ $(rcli "$(ha_replica)" XLEN "$(logkey sf)") == 2 ]]'
	sentinel_failover
	new=$(ha_master)
	[[ $new != "$old" ]] || fail "no failover"
	# Cut off from the old master, both read the new one now.
	wait_until 5 stream_readers "$new" 2
	wait_until 5 stream_readers "$old" 0
	run -2 "$RLOCK" "${SU[@]}" run --note "after failover" sf -- sh -c 'exit 2'
	wait_until 10 has_lines text.out 4
	wait_until 10 has_lines json.out 4
	assert_equal "$(rcli "$new" XLEN "$(logkey sf)")" 4
	# One more: once shown, everything before it was.
	run -0 "$RLOCK" "${SU[@]}" run --note "last one" sf -- true
	wait_until 10 has_lines text.out 6
	wait_until 10 has_lines json.out 6
	assert_equal "$(event_names sf)" "acquired released acquired released acquired released"
	log_matches_stream "$(cat json.out)" "$(events sf)"
	local -a t fences
	mapfile -t t <text.out
	mapfile -t fences < <(event_field sf fence)
	assert_equal "${#t[@]}" 6
	assert_increasing "${fences[0]}" "${fences[2]}" "${fences[4]}"
	assert_regex "${t[2]}" " acquired  tester@.* pid [0-9]+  fence ${fences[2]}  .*  note: after failover$"
	assert_regex "${t[3]}" " released  tester@.* pid [0-9]+  fence ${fences[3]}  .*  exit 2( |$)"
	assert_regex "${t[4]}" " acquired .*  note: last one$"
	stop_followers "$tpid" "$jpid" 6
}

@test "--with through the sentinels: the set is taken on the master, released by its token from any name" {
	local token
	run -0 --separate-stderr "$RLOCK" "${SU[@]}" acquire sw1 --with sw2
	token=$output
	assert_equal "$(mholder sw1)" "$token"
	assert_equal "$(mholder sw2)" "$token"
	run -75 "$RLOCK" "${SU[@]}" run -n sw3 --with sw2 -- true
	mlock_free sw3
	run -0 "$RLOCK" "${SU[@]}" release sw2 "$token"
	mlock_free sw1
	mlock_free sw2
	run -0 "$RLOCK" "${SU[@]}" run -n sw3 --with sw2 -- sh -c 'echo "$RLOCK_LOCKS"'
	assert_output 2
}
