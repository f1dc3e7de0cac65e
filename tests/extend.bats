#!/usr/bin/env bats
# extend.bats - rlock extend: push a held lock's expiry out, by token.

bats_require_minimum_version 1.5.0
load test_helper

@test "extend pushes the expiry to the new TTL" {
	local t p
	t=$("$RLOCK" acquire -t 2s e)
	run -0 --separate-stderr "$RLOCK" extend -t 60s e "$t"
	assert_output ""
	assert_equal "$stderr" ""
	p=$(pttl e)
	((p > 55000 && p <= 60000)) || fail "pttl $p"
	# The grant's record (when one was written) moves with the lock, and
	# still names the holder.
	p=$(rcli R PTTL "$(key e):grant")
	[[ $p == -2 ]] || ((p > 55000 && p <= 60000)) || fail "record pttl $p"
	assert_equal "$(grant_tok e)" "${t:0:8}"
	held_by e "$t"
}

@test "extend defaults to 30s" {
	local t p
	t=$("$RLOCK" acquire -t 2s e)
	run -0 "$RLOCK" extend e "$t"
	p=$(pttl e)
	((p > 25000 && p <= 30000)) || fail "pttl $p"
}

@test "extend can also shorten the lease" {
	local t p
	t=$("$RLOCK" acquire -t 60s e)
	run -0 "$RLOCK" extend --ttl 3s e "$t"
	p=$(pttl e)
	((p > 0 && p <= 3000)) || fail "pttl $p"
}

@test "extend with a wrong token exits 76 and changes nothing" {
	local t p
	t=$("$RLOCK" acquire -t 5s e)
	run -76 --separate-stderr "$RLOCK" extend -t 60s e 0123456789abcdef0123456789abcdef
	assert_stderr "rlock: extend: e: token does not hold the lock"
	held_by e "$t"
	p=$(pttl e)
	((p <= 5000)) || fail "pttl $p"
}

@test "extend after the lease ran out exits 76" {
	local t
	t=$("$RLOCK" acquire -t 100ms gone)
	wait_until 5 lock_free gone
	run -76 --separate-stderr "$RLOCK" extend gone "$t"
	assert_stderr "rlock: extend: gone: token does not hold the lock"
	lock_free gone
}

@test "extend takes the token from RLOCK_TOKEN" {
	local t p
	t=$("$RLOCK" acquire -t 2s e)
	RLOCK_TOKEN=$t run -0 "$RLOCK" extend -t 60s e
	p=$(pttl e)
	((p > 55000)) || fail "pttl $p"
	run -64 --separate-stderr "$RLOCK" extend e
	assert_usage extend "rlock: extend: missing TOKEN (give it or set RLOCK_TOKEN)"
}

@test "extend works on a lock taken with plain SET NX PX (other clients)" {
	local p
	rcli R SET "$(key plain)" foreign-token NX PX 2000
	run -0 "$RLOCK" extend -t 60s plain foreign-token
	p=$(pttl plain)
	((p > 55000)) || fail "pttl $p"
}

@test "extend rejects a bad TTL" {
	local t
	t=$("$RLOCK" acquire -t 5s e)
	run -64 --separate-stderr "$RLOCK" extend -t 0 e "$t"
	assert_try extend
	run -64 --separate-stderr "$RLOCK" extend -t 31d e "$t"
	assert_try extend
}
