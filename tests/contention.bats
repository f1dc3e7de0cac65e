#!/usr/bin/env bats
# contention.bats - many processes, one lock: no lost updates, and a waiter
# is woken by the release instead of waiting out the holder's lease.

bats_require_minimum_version 1.5.0
load test_helper

@test "50 contending runs never overlap: no lost updates" {
	local pids=() i pid bad=() c
	echo 0 >counter
	# The fences ahead of the clock: every grant's is above c.
	c=$(fence_ahead counter)
	# Hold the lock until all 50 wait for it, so that they really contend.
	bg_start h "$RLOCK" run -t 30s counter -- sh -c "$(gate "$BATS_TEST_TMPDIR/go")"
	wait_until 5 lock_held counter
	for ((i = 0; i < 50; i++)); do
		bg_start "c$i" "$RLOCK" run -w 60s counter -- sh -c \
			'n=$(cat counter); echo $((n + 1)) > counter'
		pids+=("$BG_PID")
	done
	wait_until 30 has_waiters counter 50
	touch go
	for pid in "${pids[@]}"; do
		bg_wait "$pid" 60
		((BG_STATUS == 0)) || bad+=("$pid:$BG_STATUS")
	done
	assert_equal "${bad[*]}" ""
	assert_equal "$(cat counter)" 50
	# The holder and the 50: 51 grants, no more, each with its own
	# fence above c, the last one's in the grant record.
	assert_equal "$(hist_count counter acquired)" 51
	assert_equal "$(rcli R --json XRANGE "$(hist_key counter)" - + | entry_fields |
		python3 -c '
import json, sys
f = [int(dict(zip(kv[0::2], kv[1::2]))["fence"]) for _, kv in json.load(sys.stdin)
     if dict(zip(kv[0::2], kv[1::2]))["event"] == "acquired"]
print(len(f) == len(set(f)) and f == sorted(f) and f[0] > int(sys.argv[1]))' "$c")" True
	assert_equal "$(meta counter fence)" "$(last_grant counter fence)"
	lock_free counter
}

@test "the fences handed to contending runs are all distinct" {
	local pids=() i pid t0 t1
	t0=$(server_us)
	for ((i = 0; i < 20; i++)); do
		bg_start "f$i" "$RLOCK" run -w 60s fences -- sh -c 'echo "$RLOCK_FENCE" >> fences'
		pids+=("$BG_PID")
	done
	for pid in "${pids[@]}"; do
		bg_wait "$pid" 60
		assert_equal "$BG_STATUS" 0
	done
	t1=$(server_us)
	assert_equal "$(wc -l <fences)" 20
	assert_equal "$(sort -n fences | uniq | wc -l)" 20
	# Each run holds the lock alone, so the order they wrote in is the
	# order of their grants: increasing, from the server's clock then.
	assert_increasing "$t0" $(cat fences)
	assert_fence "$(tail -n 1 fences)" "$t0" "$t1"
	assert_equal "$(sort -n fences | tail -n 1)" "$(meta fences fence)"
	assert_equal "$(hist_count fences acquired)" 20
}

@test "a waiter gets the lock as soon as the holder releases it" {
	bg_start h "$RLOCK" run -t 20s ho -- sh -c "$(gate "$BATS_TEST_TMPDIR/go")"
	local hpid=$BG_PID wpid t0 el
	wait_until 5 lock_held ho
	bg_start w "$RLOCK" run -w 60s ho -- sh -c 'echo "$RLOCK_FENCE" > got'
	wpid=$BG_PID
	wait_until 5 has_waiters ho 1
	local hfence go_us
	hfence=$(meta ho fence)
	go_us=$(server_us)
	t0=$(now_ms)
	touch go
	bg_wait "$hpid" 10
	assert_equal "$BG_STATUS" 0
	bg_wait "$wpid" 15
	el=$(($(now_ms) - t0))
	assert_equal "$BG_STATUS" 0
	# The waiter's grant came after the holder's, once it was let go, and
	# was the last one.
	assert_increasing "$hfence" "$(cat got)"
	assert_fence "$(cat got)" "$go_us"
	assert_equal "$(meta ho fence)" "$(cat got)"
	# Not waiting out the holder's 20s lease: woken by the release.
	((el < 5000)) || fail "hand-off took ${el}ms"
}

@test "acquire/release from scripts hand off too" {
	local t wpid t0 el
	t=$("$RLOCK" acquire -t 20s sc)
	bg_start w "$RLOCK" acquire -w 60s sc
	wpid=$BG_PID
	wait_until 5 has_waiters sc 1
	t0=$(now_ms)
	"$RLOCK" release sc "$t"
	bg_wait "$wpid" 15
	el=$(($(now_ms) - t0))
	assert_equal "$BG_STATUS" 0
	((el < 5000)) || fail "hand-off took ${el}ms"
	held_by sc "$(bg_out w)"
}

@test "waiters are not stuck when the holder dies without releasing" {
	bg_start h "$RLOCK" run -t 1s dies -- sleep 30
	local hpid=$BG_PID wpid
	wait_until 5 lock_held dies
	bg_start w "$RLOCK" run -w 30s dies -- true
	wpid=$BG_PID
	wait_until 5 has_waiters dies 1
	kill -KILL "$hpid"
	bg_wait "$wpid" 15
	assert_equal "$BG_STATUS" 0
}

@test "several waiters all get the lock in turn" {
	bg_start h "$RLOCK" run -t 20s many -- sh -c "$(gate "$BATS_TEST_TMPDIR/go")"
	local hpid=$BG_PID pids=() i pid
	wait_until 5 lock_held many
	for ((i = 0; i < 5; i++)); do
		bg_start "w$i" "$RLOCK" run -w 60s many -- sh -c 'echo x >> turns'
		pids+=("$BG_PID")
	done
	wait_until 5 has_waiters many 5
	touch go
	for pid in "${pids[@]}"; do
		bg_wait "$pid" 15
		assert_equal "$BG_STATUS" 0
	done
	assert_equal "$(wc -l <turns)" 5
}
