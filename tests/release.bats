#!/usr/bin/env bats
# release.bats - rlock release: give up a lock by token (argument or
# RLOCK_TOKEN), or remove anyone's with --force.

bats_require_minimum_version 1.5.0
load test_helper

@test "release with the right token exits 0 and removes key and meta" {
	local t f
	t=$("$RLOCK" acquire r)
	f=$(meta r fence)
	assert_fence "$f"
	run -0 --separate-stderr "$RLOCK" release r "$t"
	assert_output ""
	assert_equal "$stderr" ""
	lock_free r
	[[ $(rcli R EXISTS "$(key r):owner") == 0 ]]
	# the record of the grant goes with the lock; the history keeps the
	# holder's fence and token
	assert_equal "$(meta r fence)" "$f"
	assert_equal "$(grant_tok r)" "${t:0:8}"
	[[ $(rcli R EXISTS "$(key r):grant") == 0 ]]
	assert_equal "$(hist_names r)" "acquired released"
}

@test "release with a wrong token exits 76 and leaves the key" {
	local t
	t=$("$RLOCK" acquire r)
	run -76 --separate-stderr "$RLOCK" release r 0123456789abcdef0123456789abcdef
	assert_stderr "rlock: release: r: token does not hold the lock"
	held_by r "$t"
	assert_equal "$(grant_tok r)" "${t:0:8}"
	assert_fence "$(meta r fence)"
	assert_equal "$(hist_names r)" "acquired"
}

@test "release of a free lock exits 76" {
	run -76 --separate-stderr "$RLOCK" release free 0123456789abcdef0123456789abcdef
	assert_stderr "rlock: release: free: token does not hold the lock"
}

@test "release twice: the second one exits 76" {
	local t
	t=$("$RLOCK" acquire r2)
	run -0 "$RLOCK" release r2 "$t"
	run -76 "$RLOCK" release r2 "$t"
}

@test "release takes the token from RLOCK_TOKEN" {
	local t
	t=$("$RLOCK" acquire env)
	RLOCK_TOKEN=$t run -0 "$RLOCK" release env
	lock_free env
	t=$("$RLOCK" acquire env)
	# an argument beats the environment
	RLOCK_TOKEN=0123456789abcdef0123456789abcdef run -0 "$RLOCK" release env "$t"
	lock_free env
}

@test "release without a token exits 64" {
	run -64 --separate-stderr "$RLOCK" release x
	assert_usage release "rlock: release: missing TOKEN (give it or set RLOCK_TOKEN)"
}

@test "release --force removes another's lock and says whose it was" {
	local t host pid
	t=$("$RLOCK" acquire --label "their job" f)
	host=$(meta f host)
	pid=$(meta f pid)
	run -0 --separate-stderr "$RLOCK" release --force f
	assert_stderr "rlock: release: f: removed lock held by $host pid $pid (their job)"
	lock_free f
	[[ $(rcli R EXISTS "$(key f):owner") == 0 ]]
}

@test "release --force of a running holder's lock" {
	bg_start h "$RLOCK" run -t 30s --on-lost ignore frun -- sh -c "$(gate "$BATS_TEST_TMPDIR/go")"
	wait_until 5 lock_held frun
	run -0 --separate-stderr "$RLOCK" release --force frun
	assert_stderr_line --index 0 --partial "rlock: release: frun: removed lock held by $(hostname -s)"
	assert_stderr_line --index 0 --partial "pid $BG_PID ("
	touch go
}

@test "release --force of a free lock says it was not held" {
	run -0 --separate-stderr "$RLOCK" release --force nothing
	assert_stderr "rlock: release: nothing: was not held"
	assert_output ""
}

@test "release --force wakes a waiter" {
	"$RLOCK" acquire -t 30s fw >/dev/null
	bg_start w "$RLOCK" run -w 20s fw -- true
	local pid=$BG_PID
	wait_until 5 has_waiters fw 1
	run -0 "$RLOCK" release --force fw
	bg_wait "$pid" 5
	assert_equal "$BG_STATUS" 0
}

@test "release of a lock taken with --min-hold leaves it until the hold ends" {
	local t p
	t=$("$RLOCK" acquire --min-hold 2s mh)
	run -0 "$RLOCK" release mh "$t"
	held_by mh "$t"
	p=$(pttl mh)
	((p > 0 && p <= 2000)) || fail "pttl $p"
}

@test "release works on a lock taken with plain SET NX PX (other clients)" {
	rcli R SET "$(key plain)" foreign-token NX PX 30000
	run -76 "$RLOCK" release plain 0123456789abcdef0123456789abcdef
	held_by plain foreign-token
	run -0 "$RLOCK" release plain foreign-token
	lock_free plain
}

# With one server every waiter waits in line and listens on a channel of
# its own: a release with nobody in line publishes nothing.  A second
# channel, published on after the release, shows that nothing came
# before it (one connection's messages arrive in order).
@test "with one server, a release with nobody in line publishes nothing on the released channel" {
	local t
	t=$("$RLOCK" acquire pub)
	bg_start sub timeout 10 redis-cli -p "$R_PORT" SUBSCRIBE "$(key pub):released" "$(key pub):marker"
	wait_until 5 eval '[[ $(rcli R PUBSUB NUMSUB "$(key pub):marker" | sed -n 2p) == 1 ]]'
	run -0 "$RLOCK" release pub "$t"
	lock_free pub
	rcli R PUBLISH "$(key pub):marker" after >/dev/null
	wait_until 5 eval '[[ $(bg_out sub) == *after* ]]'
	run bg_out sub
	assert_line --index 6 message
	assert_line --index 7 "$(key pub):marker"
	assert_line --index 8 after
	assert_equal "${#lines[@]}" 9
}

# Redis 7 gives a new ACL user no pub/sub channel unless granted
# (acl-pubsub-default resetchannels): such a user's release has happened
# once the DEL ran, and must say so with exit 0, not with the PUBLISH's
# error.  On one server no channel is used: waiters are woken on lists,
# which are keys.
@test "a user without channel rights: release exits 0 quietly, run is clean, a waiter is woken as usual" {
	local user=nochan$$ url t start took
	rcli R ACL SETUSER "$user" on '>pw' '~*' '+@all' >/dev/null
	url="redis://$user:pw@127.0.0.1:$R_PORT"
	t=$("$RLOCK" -u "$url" acquire nc)
	run -0 --separate-stderr "$RLOCK" -u "$url" release nc "$t"
	assert_output ""
	assert_equal "$stderr" ""
	lock_free nc
	# Nobody in line: nothing is published, so nothing refused.
	run -0 --separate-stderr "$RLOCK" -v -u "$url" release nc "$("$RLOCK" -u "$url" acquire nc)"
	assert_stderr "rlock: release: nc: released"
	run -0 --separate-stderr "$RLOCK" -u "$url" run nc -- true
	assert_equal "$stderr" ""
	# A waiter in line, whose wake-up the releasing user writes to its
	# list: nothing refused.
	t=$("$RLOCK" -u "$url" acquire -t 30s nc)
	bg_start inline "$RLOCK" run -w 20s nc -- true
	wait_until 5 has_waiters nc 1
	run -0 --separate-stderr "$RLOCK" -v -u "$url" release nc "$t"
	assert_stderr "rlock: release: nc: released"
	bg_wait "$BG_PID" 10
	assert_equal "$BG_STATUS" 0
	# A waiter polls (at most every second) and is served soon after the
	# release, long before the holder's 30s lease would end.
	t=$("$RLOCK" -u "$url" acquire -t 30s nc)
	bg_start waiter "$RLOCK" -u "$url" run -w 20s nc -- true
	wait_until 5 grep -q "$user" <(rcli R CLIENT LIST)
	start=$(now_ms)
	"$RLOCK" -u "$url" release nc "$t"
	bg_wait "$BG_PID" 10
	took=$(($(now_ms) - start))
	assert_equal "$BG_STATUS" 0
	assert_equal "$(bg_err waiter)" ""
	((took < 8000)) || { echo "waiter took ${took}ms after the release"; return 1; }
	rcli R ACL DELUSER "$user" >/dev/null
}
