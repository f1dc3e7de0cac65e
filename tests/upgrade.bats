#!/usr/bin/env bats
# upgrade.bats - what an rlock before 0.2 left in Redis, read and taken on
# by this one (issue 34): a lock it holds (the holder's record in
# P{NAME}:owner, the fence counter P{NAME}:fence), its shared holders, and
# its history's entries (field by field, where this rlock packs a grant
# into "a1" and a release into "r1").  The old keys are written here with
# redis-cli, as the older rlock wrote them.

bats_require_minimum_version 1.5.0
load test_helper

# old_hold NAME TOKEN FENCE: NAME held by an older rlock with TOKEN and
# FENCE (also its counter), pid 4242 on oldhost, for 30s, and its grant in
# the history.
old_hold() {
	local k since
	k=$(key "$1")
	since=$(server_ms)
	rcli R SET "$k" "$2" PX 30000 >/dev/null
	rcli R SET "$k:owner" "$3"$'\n'"$since"$'\n0\n4242\noldhost\nolduser\n\nold job' \
		PX 30000 >/dev/null
	rcli R SET "$k:fence" "$3" >/dev/null
	rcli R XADD "$k:log" '*' event acquired host oldhost user olduser \
		pid 4242 fence "$3" token "${2:0:8}" command 'old job' >/dev/null
}

@test "a lock an older rlock holds: status names its holder, run -n exits 75 naming it, its token releases it" {
	local t=0123456789abcdef0123456789abcdef c
	c=$(($(server_us) + 1000))
	old_hold up "$t" "$c"
	run -0 --separate-stderr "$RLOCK" status --json up
	json_check "$output" 'd["locks"][0]["held"] is True' \
		'd["locks"][0]["host"] == "oldhost" and d["locks"][0]["pid"] == 4242' \
		'd["locks"][0]["user"] == "olduser"' \
		'd["locks"][0]["fence"] == int(a[0])' \
		'd["locks"][0]["command"] == "old job"' -- "$c"
	run -75 --separate-stderr "$RLOCK" run -n up -- touch ran
	assert_stderr "rlock: run: up: held by oldhost pid 4242 (old job)"
	[[ ! -e ran ]]
	run -0 "$RLOCK" release up "$t"
	lock_free up
	# Its record is no holder's any more (it expires with the lease it had).
	run -1 --separate-stderr "$RLOCK" status --json up
	json_check "$output" 'd["locks"][0]["held"] is False'
	# This rlock's own grant shows its own record.
	"$RLOCK" run up -- "$RLOCK" status --json up >st
	json_check "$(<st)" 'd["locks"][0]["pid"] != 4242' \
		'd["locks"][0]["host"] == a[0]' -- "$(uname -n)"
}

@test "the first grant after an older rlock's takes its counter as a floor, even one ahead of the clock" {
	local t=0123456789abcdef0123456789abcdef c f g
	# A counter a day ahead (a clock that was stepped back).
	c=$(($(server_us) + 86400000000))
	old_hold fl "$t" "$c"
	"$RLOCK" release fl "$t"
	f=$("$RLOCK" run fl -- sh -c 'echo "$RLOCK_FENCE"')
	g=$("$RLOCK" run fl -- sh -c 'echo "$RLOCK_FENCE"')
	assert_increasing "$c" "$f" "$g"
	assert_equal "$(meta fl fence)" "$g"
}

@test "an older rlock's history and this one's read as one: log, log --json and last" {
	local t=0123456789abcdef0123456789abcdef c
	c=$(($(server_us) + 1000))
	old_hold hi "$t" "$c"
	rcli R XADD "$(hist_key hi)" '*' event released fence "$c" token "${t:0:8}" \
		exit 0 >/dev/null
	rcli R DEL "$(key hi)" "$(key hi):owner" >/dev/null
	"$RLOCK" run hi -- sh -c 'exit 3' || true
	run -0 --separate-stderr "$RLOCK" log --json hi
	assert_equal "${#lines[@]}" 4
	json_check "${lines[0]}" 'd["event"] == "acquired" and d["host"] == "oldhost"' \
		'd["fence"] == int(a[0]) and d["command"] == "old job"' -- "$c"
	json_check "${lines[1]}" 'd["event"] == "released" and d["exit"] == 0' \
		'd["host"] == "oldhost" and d["fence"] == int(a[0])' -- "$c"
	json_check "${lines[2]}" 'd["event"] == "acquired" and d["host"] == a[0]' \
		'd["kind"] == "x" and d["fence"] > int(a[1])' -- "$(uname -n)" "$c"
	json_check "${lines[3]}" 'd["event"] == "released" and d["exit"] == 3' \
		'd["host"] == a[0] and d["fence"] > int(a[1])' -- "$(uname -n)" "$c"
	run -0 --separate-stderr "$RLOCK" last --json hi
	json_check "$output" 'd["last"]["exit"] == 3' \
		'd["last_success"]["host"] == "oldhost"'
}

@test "an older rlock's shared holder (no grant record here) keeps an exclusive run out" {
	local k t=fedcba9876543210fedcba9876543210 until
	k=$(key sh)
	until=$(($(server_ms) + 30000))
	rcli R ZADD "$k:holders" "$until" "$t" >/dev/null
	rcli R HSET "$k:holders:meta" limit s "$t" \
		"7"$'\n'"$(server_ms)"$'\n0\n4343\noldhost\nolduser\n\nreader' >/dev/null
	rcli R PEXPIREAT "$k:holders" "$until" >/dev/null
	rcli R PEXPIREAT "$k:holders:meta" "$until" >/dev/null
	run -75 --separate-stderr "$RLOCK" run -n sh -- touch ran
	[[ ! -e ran ]]
	lock_free sh
	# A shared run joins it.
	run -0 "$RLOCK" run -s -n sh -- true
}
