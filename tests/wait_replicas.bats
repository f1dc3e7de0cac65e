#!/usr/bin/env bats
# wait_replicas.bats - --wait-replicas N (run and acquire): WAIT until N
# replicas have the lock before going on; when fewer acknowledge within the
# I/O timeout, give the lock back and exit 69 naming how many did.  A
# master (M) and one replica (RPL) started once for the file; the tests
# that freeze the replica thaw it in teardown.

bats_require_minimum_version 1.5.0
load test_helper
load ha_helper

setup_file() {
	start_redis M --repl-diskless-sync-delay 0 || return 1
	start_redis RPL --repl-diskless-sync-delay 0 --replicaof 127.0.0.1 "$M_PORT" || return 1
	ha_wait 10 _ha_is_replica_of RPL "$M_PORT" || return 1
	export T_DEFAULT_URL=$M_URL
}

teardown_file() {
	rl_teardown_file
}

setup() {
	rl_setup
	ha_wait 10 _ha_is_replica_of RPL "$M_PORT"
}

teardown() {
	kill -CONT "$(server_pid RPL)" 2>/dev/null || true
	rl_teardown
}

elapsed_since() {
	echo $(($(now_ms) - $1))
}

# freeze_replica: SIGSTOP the replica (the master keeps it as connected).
freeze_replica() {
	local pid
	pid=$(server_pid RPL)
	kill -STOP "$pid"
	wait_until 5 pid_stopped "$pid"
}

@test "acquire --wait-replicas 1: the replica has the lock when acquire returns" {
	local token
	token=$("$RLOCK" acquire --wait-replicas 1 wr)
	# Read at once, no polling: WAIT already saw the replica acknowledge.
	assert_equal "$(rcli RPL GET "$(key wr)")" "$token"
	local f
	f=$(meta wr fence M)
	assert_fence "$f"
	assert_equal "$(last_grant wr fence M)" "$f"
	assert_equal "$(meta wr fence RPL)" "$f"
	assert_equal "$(last_grant wr fence RPL)" "$f"
	run -0 "$RLOCK" release wr "$token"
	lock_free wr M
}

@test "run --wait-replicas 1: the command starts with its token on the replica" {
	run -0 --separate-stderr "$RLOCK" run --wait-replicas 1 wrun -- \
		sh -c 'echo "$RLOCK_TOKEN"; redis-cli -h 127.0.0.1 -p "$1" GET "$RLOCK_KEY"' sh "$RPL_PORT"
	assert_equal "$stderr" ""
	assert_equal "${#lines[@]}" 2
	assert_regex "${lines[0]}" '^[0-9a-f]{32}$'
	assert_equal "${lines[1]}" "${lines[0]}"
	lock_free wrun M
}

@test "--wait-replicas 0 waits for nobody" {
	local token
	freeze_replica
	token=$("$RLOCK" --io-timeout 500ms acquire --wait-replicas 0 w0)
	held_by w0 "$token" M
}

@test "a frozen replica: acquire --wait-replicas 1 exits 69 naming the shortfall and leaves nothing behind" {
	freeze_replica
	local t0
	t0=$(now_ms)
	run -69 --separate-stderr "$RLOCK" --io-timeout 500ms acquire --wait-replicas 1 wf
	(($(elapsed_since "$t0") < 3000)) || fail "took $(elapsed_since "$t0")ms"
	assert_stderr --partial "only 0 of 1 replicas acknowledged"
	assert_equal "${#stderr_lines[@]}" 1
	assert_equal "$output" ""
	# Given back on the master: the lock is gone, the record of its grant
	# stays (no longer a holder's), and the history has the grant.
	lock_free wf M
	assert_equal "$(rcli M EXISTS "$(key wf):owner")" 0
	assert_fence "$(meta wf fence M)"
	[[ $(hist_names wf M) == acquired* ]] || fail "history: $(hist_names wf M)"
	# And another client can take it at once.
	run -0 "$RLOCK" acquire -n wf
}

@test "a frozen replica: run --wait-replicas 1 exits 69 without running the command" {
	freeze_replica
	run -69 --separate-stderr "$RLOCK" --io-timeout 500ms run --wait-replicas 1 wfr -- touch ran
	assert_stderr --partial "only 0 of 1 replicas acknowledged"
	[[ ! -e ran ]]
	lock_free wfr M
}

@test "--wait-replicas 2 with one replica: 69, only 1 of 2, nothing left" {
	run -69 --separate-stderr "$RLOCK" --io-timeout 500ms acquire --wait-replicas 2 w2
	assert_stderr --partial "only 1 of 2 replicas acknowledged"
	lock_free w2 M
	run -69 --separate-stderr "$RLOCK" --io-timeout 500ms run --wait-replicas 2 w2 -- touch ran
	assert_stderr --partial "only 1 of 2 replicas acknowledged"
	[[ ! -e ran ]]
	lock_free w2 M
}

@test "--wait-replicas takes an integer from 0 to 1000" {
	local v
	for v in -1 x '' 1.5 1001 1x ' 1' +1; do
		run -64 --separate-stderr "$RLOCK" acquire --wait-replicas "$v" wv
		assert_try acquire
		run -64 --separate-stderr "$RLOCK" run --wait-replicas "$v" wv -- touch ran
		assert_try run
	done
	run -64 --separate-stderr "$RLOCK" acquire wv --wait-replicas
	assert_try acquire
	[[ ! -e ran ]]
	lock_free wv M
	# 1000 is accepted (and then not met).
	run -69 --separate-stderr "$RLOCK" --io-timeout 300ms acquire --wait-replicas 1000 wv
	assert_stderr --partial "only 1 of 1000 replicas acknowledged"
	lock_free wv M
}

@test "a frozen replica within -w: the shortfall is asked again until the replica thaws, then the command runs (0)" {
	freeze_replica
	bg_start waiter "$RLOCK" --io-timeout 500ms run -w 20s --wait-replicas 1 wt -- sh -c 'echo "$RLOCK_TOKEN" >ran'
	local wpid=$BG_PID
	# It grants, waits for the replica, gives the lock back, and asks again.
	wait_until 10 eval '(( $(rcli M INFO commandstats | tr -d "\r" | sed -n "s/^cmdstat_wait:calls=\([0-9]*\),.*/\1/p") >= 2 ))'
	pid_alive "$wpid"
	[[ ! -e ran ]]
	kill -CONT "$(server_pid RPL)"
	bg_wait "$wpid" 15
	assert_equal "$BG_STATUS" 0
	[[ -s ran ]]
	lock_free wt M
}

@test "a frozen replica for all of -w: 69 once the wait runs out, naming the shortfall, nothing left" {
	freeze_replica
	local t0
	t0=$(now_ms)
	run -69 --separate-stderr "$RLOCK" --io-timeout 300ms run -w 2s --wait-replicas 1 wo -- touch ran
	(($(elapsed_since "$t0") >= 2000)) || fail "gave up after $(elapsed_since "$t0")ms, before the 2s wait"
	assert_stderr --partial "only 0 of 1 replicas acknowledged"
	assert_equal "${#stderr_lines[@]}" 1
	[[ ! -e ran ]]
	lock_free wo M
	assert_equal "$(rcli M EXISTS "$(key wo):owner")" 0
}

# ---- min-replicas-to-write: the master refuses writes (NOREPLICAS) ----------

# tried_at_least SERVER N: N scripts or more were sent to it (EVALSHA, or
# EVAL after NOSCRIPT), whether they ran or were refused.
tried_at_least() {
	(($(rcli "$1" INFO commandstats | tr -d '\r' | awk -F'[:=,]' '
		$1 ~ /^cmdstat_(evalsha|eval)$/ { n += $3 + $9 }
		END { print n + 0 }') >= $2))
}

@test "min-replicas-to-write unmet: asked again until -w is spent, then 69 naming NOREPLICAS" {
	start_redis MR --min-replicas-to-write 1
	local t0 ms
	t0=$(now_ms)
	run -69 --separate-stderr "$RLOCK" -u "$MR_URL" acquire -w 3s norep
	ms=$(elapsed_since "$t0")
	((ms >= 2900 && ms < 4500)) || fail "took ${ms}ms, not the 3s wait"
	assert_stderr "rlock: acquire: 127.0.0.1:$MR_PORT: NOREPLICAS Not enough good replicas to write."
	assert_equal "$(rcli MR EXISTS "$(key norep)")" 0
}

@test "min-replicas-to-write met within -w (a replica back): the run goes on" {
	start_redis MR --min-replicas-to-write 1 --repl-diskless-sync-delay 0
	"$RLOCK" -u "$MR_URL" run -w 20s norep -- touch ran 2>err &
	local pid=$!
	# Refused twice (each try an EVALSHA, or an EVAL after NOSCRIPT).
	wait_until 10 tried_at_least MR 2
	kill -0 "$pid"
	start_redis MRR --replicaof 127.0.0.1 "$MR_PORT"
	wait "$pid" || fail "exit $?: $(cat err)"
	[[ -e ran ]]
}
