#!/usr/bin/env bats
# fifo.bats - the wait line (issue 9): waiters are served in the order they
# arrived, a release wakes only the next one, a waiter that dies or gives
# up does not hold the line up, -n does not barge past the line, and the
# lock's string key is still the plain SET NX PX convention other clients
# share.

bats_require_minimum_version 1.5.0
load test_helper

# The lease of a place in line (LINE_LEASE_MS in lib/protocol.h).
LINE_LEASE_MS=1500

# lease_of NAME MEMBER: when MEMBER's place in line lapses (server ms),
# empty when it has none.
lease_of() {
	rcli R ZSCORE "$(key "$1"):line:lease" "$2"
}

# lease_lapsed NAME MEMBER: MEMBER's place in line has run out.
lease_lapsed() {
	local s
	s=$(lease_of "$1" "$2")
	[[ -z $s ]] || ((s <= $(server_ms)))
}

# numsub CHANNEL: its subscribers.
numsub() {
	rcli R PUBSUB NUMSUB "$1" | sed -n 2p
}

# The wake-up channel of a member "KIND:ID" of NAME's line.
wake_chan() {
	echo "$(key "$1"):wake:${2#*:}"
}

@test "waiters are served in the order they arrived" {
	local t i pid pids=() c h
	# The fences ahead of the clock: every grant's is above c.
	c=$(fence_ahead ord)
	t=$("$RLOCK" acquire -t 30s ord)
	h=$(meta ord fence)
	# Each one starts only once the one before has its place.
	for ((i = 1; i <= 4; i++)); do
		bg_start "w$i" "$RLOCK" run -w 30s --label "w$i" ord -- \
			sh -c "echo w$i \$RLOCK_FENCE >> order"
		pids+=("$BG_PID")
		wait_until 10 line_is ord "$i"
	done
	# The line's own order is theirs, and status names the first.
	run -0 "$RLOCK" status --json ord
	json_check "$output" "d['locks'][0]['next']['pid'] == int(a[0])" \
		"d['locks'][0]['waiters'] == 4" -- "${pids[0]}"
	"$RLOCK" release ord "$t"
	for pid in "${pids[@]}"; do
		bg_wait "$pid" 15
		assert_equal "$BG_STATUS" 0
	done
	# Served in their order, each with a fence above the one before.
	assert_equal "$(cut -d' ' -f1 order | tr '\n' ' ')" "w1 w2 w3 w4 "
	assert_increasing "$c" "$h" $(cut -d' ' -f2 order)
	assert_equal "$(meta ord fence)" "$(sed -n 4p order | cut -d' ' -f2)"
	assert_equal "$(hist_count ord acquired)" 5
	lock_free ord
	line_is ord 0
}

# With the thundering herd every release woke all the waiters, and each
# ran the acquire script: ~280 scripts per hand-off with 150 waiters,
# ~40000 in all.  A release now wakes only the next in line; what is left
# per waiter is its own acquire and release and the beats that keep its
# place while it waits (one per ~375ms, N*elapsed/750 in all).  Measured
# on 2 cores: ~8 EVALSHA per waiter (1230-1310 for 150 waiters, 4.5-5s of
# hand-offs).  The bound is 12 per waiter, or on a machine so loaded that
# the hand-offs took over 6s, 4 per waiter plus a beat per 500ms.
@test "150 waiters: a hand-off costs a few scripts, not one per waiter" {
	local t n=150 before after used el t0 bound
	start_redis H
	export RLOCK_URL=$H_URL
	local c
	c=$(fence_ahead herd H)
	t=$("$RLOCK" acquire -t 60s herd)
	bg_start herd bash -c 'for ((i = 0; i < '$n'; i++)); do
		( "$RLOCK" run -w 90s herd -- true; echo $? >> statuses ) &
	done; wait'
	wait_until 40 line_is herd "$n" H
	before=$(evalsha_calls H)
	t0=$(now_ms)
	"$RLOCK" release herd "$t"
	bg_wait "$BG_PID" 90
	el=$(($(now_ms) - t0))
	after=$(evalsha_calls H)
	used=$((after - before))
	assert_equal "$(grep -c '^0$' statuses)" "$n"
	# Each one took it once, in turn: n + 1 grants, the last one's
	# fence above c.
	assert_equal "$(hist_count herd acquired H)" $((n + 1))
	assert_fence "$(meta herd fence H)" $((c + 1))
	lock_free herd H
	assert_equal "$(rcli H EXISTS "$(key herd):line")" 0
	bound=$((12 * n))
	if ((4 * n + n * el / 500 > bound)); then
		bound=$((4 * n + n * el / 500))
	fi
	((used <= bound)) ||
		fail "$used scripts for $n hand-offs in ${el}ms (at most $bound)"
}

# two_in_line NAME ACMD BCMD: NAME held for 30s (its token in t), and two
# runs in line behind it, a (sh -c ACMD, first, its member in first) and b
# (sh -c BCMD, then waits for the file "go").
two_in_line() {
	t=$("$RLOCK" acquire -t 30s "$1")
	bg_start a "$RLOCK" run -w 30s "$1" -- sh -c "$2"
	a=$BG_PID
	wait_until 10 line_is "$1" 1
	first=$(line_members "$1")
	bg_start b "$RLOCK" run -w 30s "$1" -- sh -c "$3; $(gate "$BATS_TEST_TMPDIR/go")"
	b=$BG_PID
	wait_until 10 line_is "$1" 2
}

@test "a SIGKILLed waiter handed the lock holds the line up for a beat: the next takes the grant back" {
	local t a b first s0 since p
	two_in_line dead 'touch aran' :
	kill -KILL "$a"
	bg_wait "$a" 5
	assert_equal "$BG_STATUS" 137
	# Its place would last a minute more (LINE_LEASE_MS at most in
	# life; longer here so that a loaded machine cannot let it lapse
	# first): the release hands it the lock, for the short first lease
	# of a 30s TTL (1.5s + 3.002s), and its grant waits in its list.
	rcli R ZADD "$(key dead):line:lease" XX $(($(server_ms) + 60000)) "$first" >/dev/null
	s0=$(server_ms)
	"$RLOCK" release dead "$t"
	assert_equal "$(rcli R ZSCORE "$(key dead):line" "$first")" ""
	assert_equal "$(meta dead pid)" "$a"
	p=$(pttl dead)
	((p > 0 && p <= 4502)) || fail "the first lease: pttl $p"
	# Nobody pops it: the next in line takes it back at its beat, once
	# it has waited LINE_BEAT_MS (0.4s), long before that lease ends.
	wait_until 10 eval '[[ $(meta dead pid) == "$b" ]]'
	since=$(meta dead since)
	(((since - s0) >= 400)) || fail "taken back $((since - s0))ms after the release"
	(((since - s0) < 4502)) || fail "taken back only $((since - s0))ms after the release"
	assert_equal "$(rcli R EXISTS "$(key dead):wake:${first#*:}")" 0
	touch go
	bg_wait "$b" 10
	assert_equal "$BG_STATUS" 0
	[[ ! -e aran ]]
	line_is dead 0
	"$RLOCK" log --json dead | grep -q '"reason": *"handed over to a waiter that never took it"' ||
		fail "no record of the grant taken back: $("$RLOCK" log dead)"
}

@test "a stopped waiter whose grant the next took back never runs on it: once thawed it waits its turn again" {
	local t a b first
	two_in_line thaw 'echo "$RLOCK_FENCE" >a.ran' 'echo "$RLOCK_FENCE" >b.ran'
	kill -STOP "$a"
	wait_until 5 pid_stopped "$a"
	rcli R ZADD "$(key thaw):line:lease" XX $(($(server_ms) + 60000)) "$first" >/dev/null
	"$RLOCK" release thaw "$t"
	wait_until 10 test -e b.ran
	assert_equal "$(meta thaw pid)" "$b"
	# Thawed while b holds it: its grant's message is gone; it asks,
	# finds b holding, and waits.
	kill -CONT "$a"
	if wait_until 1 test -e a.ran 2>/dev/null; then
		fail "a ran while b held the lock"
	fi
	pid_alive "$a"
	assert_equal "$(meta thaw pid)" "$b"
	touch go
	bg_wait "$b" 10
	assert_equal "$BG_STATUS" 0
	bg_wait "$a" 10
	assert_equal "$BG_STATUS" 0
	(($(cat a.ran) > $(cat b.ran))) || fail "a's fence $(cat a.ran) is not above b's $(cat b.ran)"
	lock_free thaw
}

@test "waiters that give up (-w ran out, SIGINT) leave the line at once" {
	local t w1 w2 m1 host pid
	t=$("$RLOCK" acquire -t 30s quit)
	host=$(meta quit host)
	pid=$(meta quit pid)
	bg_start w2 "$RLOCK" run quit -- touch w2ran
	w2=$BG_PID
	wait_until 10 line_is quit 1
	bg_start w1 "$RLOCK" run -w 2s quit -- touch w1ran
	w1=$BG_PID
	wait_until 10 line_is quit 2
	m1=$(line_members quit | sed -n 2p)
	[[ $m1 == x:* ]]

	bg_wait "$w1" 10
	assert_equal "$BG_STATUS" 75
	assert_equal "$(bg_err w1)" \
		"rlock: run: quit: timed out after 2s; held by $host pid $pid (rlock acquire)"
	# Gone as it exited, not when its place would have lapsed.
	line_is quit 1
	assert_equal "$(rcli R ZSCORE "$(key quit):line:lease" "$m1")" ""
	assert_equal "$(rcli R HEXISTS "$(key quit):line:who" "$m1")" 0
	run -0 "$RLOCK" status quit
	assert_equal "$(awk '$1 == "quit" { print $7 }' <<<"$output")" 1
	run -0 "$RLOCK" status --json quit
	json_check "$output" "d['locks'][0]['waiters'] == 1" \
		"d['locks'][0]['next']['pid'] == int(a[0])" -- "$w2"

	kill -INT "$w2"
	bg_wait "$w2" 5
	assert_equal "$BG_STATUS" 130
	assert_equal "$(rcli R EXISTS "$(key quit):line" "$(key quit):line:lease" \
		"$(key quit):line:who")" 0
	run -0 "$RLOCK" status quit
	assert_equal "$(awk '$1 == "quit" { print $7 }' <<<"$output")" 0
	[[ ! -e w1ran && ! -e w2ran ]]
	held_by quit "$t"
}

@test "-n is refused while someone waits in line, even when the lock is free for a moment" {
	local t w m
	t=$("$RLOCK" acquire -t 30s nb)
	# acquire, not run: a waiting run is handed the lock by the release
	# itself (see the tests below); acquire takes it when woken.
	bg_start w "$RLOCK" acquire -w 30s nb
	w=$BG_PID
	wait_until 10 line_is nb 1
	m=$(line_members nb)
	# Stopped, the waiter cannot take the lock when the release wakes
	# it, and keeps its place until its lease lapses (pushed a minute
	# away, so that a loaded machine cannot let it lapse meanwhile).
	kill -STOP "$w"
	wait_until 5 pid_stopped "$w"
	rcli R ZADD "$(key nb):line:lease" XX $(($(server_ms) + 60000)) "$m" >/dev/null
	"$RLOCK" release nb "$t"
	lock_free nb
	line_is nb 1
	run -75 --separate-stderr "$RLOCK" acquire -n nb
	assert_output ""
	assert_equal "${#stderr_lines[@]}" 1
	assert_regex "$stderr" '^rlock: acquire: nb: '
	run -75 --separate-stderr "$RLOCK" run -n nb -- touch nran
	assert_regex "$stderr" '^rlock: run: nb: '
	run -75 "$RLOCK" acquire -w 0 nb
	[[ ! -e nran ]]
	lock_free nb
	kill -CONT "$w"
	bg_wait "$w" 10
	assert_equal "$BG_STATUS" 0
	held_by nb "$(bg_out w)"
	"$RLOCK" release nb "$(bg_out w)"
}

@test "the release hands the lock to a waiting run: a stopped one holds it for its short first lease only" {
	baton_grant R bt
	# Still stopped when that lease ends: the lock is free again.
	wait_until 10 lock_free bt
	kill -CONT "$BATON_PID"
	bg_wait "$BATON_PID" 10
	assert_equal "$BG_STATUS" 0
	# The grant it slept through was too old to trust: it took the lock
	# anew, with a new fence.
	(($(cat baton.fence) > BATON_FENCE))
	lock_free bt
}

# last_events NAME N FIELD: the last N events of lock NAME's history, as
# "event:pid:FIELD" (None where an event has no value), on one line.
last_events() {
	"$RLOCK" log --json "$1" | python3 -c '
import json, sys
es = [json.loads(l) for l in sys.stdin]
n, f = int(sys.argv[1]), sys.argv[2]
print(" ".join("%s:%s:%s" % (e["event"], e["pid"], e[f]) for e in es[-n:]))' "$2" "$3"
}

pttl_above() { (($(pttl "$1") > $2)); }

pttl_below() {
	local p
	p=$(pttl "$1")
	((p >= 0 && p < $2))
}

@test "a waiting run whose grant from the release came too late to trust asks again: the same grant, with a new fence" {
	baton_grant R bs
	# Over 0.5s since the grant (the waiter counts from before it): too
	# old to trust, and still held.
	wait_until 10 pttl_below bs 2800
	kill -CONT "$BATON_PID"
	bg_wait "$BATON_PID" 10
	assert_equal "$BG_STATUS" 0
	local f
	f=$(cat baton.fence)
	((f > BATON_FENCE))
	lock_free bs
	# Its record went with the lock; the release's entry has the new fence.
	assert_equal "$(rcli R EXISTS "$(key bs):grant")" 0
	# One grant (the release's), renewed: not a second one.
	assert_equal "$(last_events bs 2 fence)" \
		"acquired:$BATON_PID:$BATON_FENCE released:$BATON_PID:$f"
}

@test "a run handed the lock by the release renews its short first lease to the full TTL at once" {
	local t w
	t=$("$RLOCK" acquire -t 30s bk)
	# A 3s TTL: the first lease is 1.5s + 0.302s; the command outlasts
	# both.
	bg_start w "$RLOCK" run -t 3s -w 30s bk -- sh -c 'sleep 4; echo "$RLOCK_FENCE" >wran'
	w=$BG_PID
	wait_until 10 line_is bk 1
	"$RLOCK" release bk "$t"
	assert_equal "$(meta bk pid)" "$w"
	wait_until 5 pttl_above bk 1802
	bg_wait "$w" 20
	assert_equal "$BG_STATUS" 0
	assert_equal "$(bg_err w)" ""
	assert_equal "$(cat wran)" "$(meta bk fence)"
	lock_free bk
}

@test "a waiting run handed the lock as a signal ends its wait gives it back, and the history says so" {
	baton_grant R bq
	local w=$BATON_PID
	# The signal and the grant wait for it together: the signal wins.
	kill -TERM "$w"
	kill -CONT "$w"
	bg_wait "$w" 10
	assert_equal "$BG_STATUS" 143
	[[ ! -e baton.fence ]]
	lock_free bq
	# The record of the grant stays, naming it: the key is gone.
	assert_equal "$(meta bq pid)" "$w"
	assert_equal "$(last_events bq 3 reason)" \
		"acquired:$w:None released:$w:handed over as its wait ended skipped:$w:interrupted"
}

@test "a waiter whose host vanished loses its place, and still gets the lock once back" {
	local t a b first t0
	two_in_line gone 'echo a >> order' 'echo b >> order'
	kill -STOP "$a"
	t0=$(now_ms)
	wait_until 5 pid_stopped "$a"
	wait_until 5 lease_lapsed gone "$first"
	run -0 "$RLOCK" status --json gone
	json_check "$output" "d['locks'][0]['waiters'] == 1" \
		"d['locks'][0]['next']['pid'] == int(a[0])" -- "$b"
	"$RLOCK" release gone "$t"
	wait_until 10 file_has order b
	assert_equal "$(meta gone pid)" "$b"
	# Stopped for more than two seconds in all.
	wait_until 5 eval '(($(now_ms) - t0 >= 2000))'
	kill -CONT "$a"
	# Back, it finds its place gone and queues again.
	wait_until 10 line_is gone 1
	pid_alive "$a"
	touch go
	bg_wait "$b" 10
	assert_equal "$BG_STATUS" 0
	bg_wait "$a" 10
	assert_equal "$BG_STATUS" 0
	assert_equal "$(cat order)" "$(printf 'b\na')"
}

@test "a SIGKILLed holder: the first in line takes over when its lease ends, not before" {
	local h w1 w2 p s expiry since
	bg_start h "$RLOCK" run -t 2s hk -- sleep 60
	h=$BG_PID
	wait_until 10 lock_held hk
	bg_start w1 "$RLOCK" run -w 30s hk -- sh -c "echo w1 >> order; $(gate "$BATS_TEST_TMPDIR/go")"
	w1=$BG_PID
	wait_until 10 line_is hk 1
	bg_start w2 "$RLOCK" run -w 30s hk -- sh -c 'echo w2 >> order'
	w2=$BG_PID
	wait_until 10 line_is hk 2
	kill -KILL "$h"
	wait_until 5 pid_gone "$h"
	s=$(server_ms)
	p=$(pttl hk)
	((p > 0)) || fail "pttl $p after the kill"
	# At the latest: the time was read before the PTTL.
	expiry=$((s + p))
	wait_until 10 eval '[[ $(meta hk pid) == "$w1" ]]'
	since=$(meta hk since)
	((since >= expiry)) || fail "w1 took it $((expiry - since))ms before the lease ended"
	(((since - expiry) < 2000)) || fail "w1 took it $((since - expiry))ms after the lease ended"
	touch go
	bg_wait "$w1" 10
	assert_equal "$BG_STATUS" 0
	bg_wait "$w2" 10
	assert_equal "$BG_STATUS" 0
	assert_equal "$(cat order)" "$(printf 'w1\nw2')"
}

@test "the line's keys live while someone waits and are gone when everyone is" {
	local t w sfx p
	t=$("$RLOCK" acquire -t 30s exp)
	bg_start w "$RLOCK" run -w 30s exp -- true
	w=$BG_PID
	wait_until 10 line_is exp 1
	for sfx in :line :line:lease :line:who; do
		p=$(rcli R PTTL "$(key exp)$sfx")
		((p > 0 && p <= 4 * LINE_LEASE_MS)) || fail "PTTL of $sfx: $p"
	done
	"$RLOCK" release exp "$t"
	bg_wait "$w" 10
	assert_equal "$BG_STATUS" 0
	assert_equal "$(rcli R EXISTS "$(key exp):line" "$(key exp):line:lease" \
		"$(key exp):line:who")" 0
	assert_equal "$(rcli R PUBSUB CHANNELS "$(key exp):wake:*")" ""
	lock_free exp

	# A waiter killed while the lock is held, and no release to drop it:
	# its place and the keys expire on their own.
	t=$("$RLOCK" acquire -t 30s exp)
	bg_start w "$RLOCK" run -w 30s exp -- true
	w=$BG_PID
	wait_until 10 line_is exp 1
	kill -KILL "$w"
	wait_until $((5 * LINE_LEASE_MS / 1000 + 1)) eval \
		'[[ $(rcli R EXISTS "$(key exp):line" "$(key exp):line:lease" "$(key exp):line:who") == 0 ]]'
	held_by exp "$t"
}

@test "the lock's key is still plain SET NX PX: shared with other clients" {
	local k t w s0 since cas
	k=$(key py)
	cas="if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('del', KEYS[1]) else return 0 end"
	# Another client's SET NX PX keeps rlock out...
	assert_equal "$(rcli R SET "$k" foreign NX PX 60000)" OK
	run -75 --separate-stderr "$RLOCK" run -n py -- touch ran
	assert_stderr "rlock: run: py: held by another client (no rlock metadata)"
	[[ ! -e ran ]]
	held_by py foreign
	assert_equal "$(rcli R EVAL "$cas" 1 "$k" foreign)" 1
	# ...rlock's holder keeps it out...
	t=$("$RLOCK" acquire py)
	assert_equal "$(rcli R SET "$k" other NX PX 60000)" ""
	held_by py "$t"
	assert_equal "$(rcli R EVAL "$cas" 1 "$k" other)" 0
	"$RLOCK" release py "$t"
	lock_free py
	# ...and its compare-and-delete hands the lock to a waiting rlock.
	assert_equal "$(rcli R SET "$k" foreign NX PX 120000)" OK
	bg_start w "$RLOCK" run -w 120s py -- sh -c "$(gate "$BATS_TEST_TMPDIR/go")"
	w=$BG_PID
	wait_until 10 line_is py 1
	s0=$(server_ms)
	assert_equal "$(rcli R EVAL "$cas" 1 "$k" foreign)" 1
	# Nobody announced it: the first in line looks again within a beat.
	wait_until 10 eval '[[ $(meta py pid) == "$w" ]]'
	since=$(meta py since)
	(((since - s0) < 2000)) || fail "the waiter got the lock $((since - s0))ms after the delete"
	touch go
	bg_wait "$w" 10
	assert_equal "$BG_STATUS" 0
	lock_free py
}

@test "status shows the next in line, and --json the kind, holders and next" {
	local h w1 w2 host user
	bg_start h "$RLOCK" run --label holder-job st -- sh -c "$(gate "$BATS_TEST_TMPDIR/go1")"
	h=$BG_PID
	wait_until 10 lock_held st
	host=$(meta st host)
	user=$(meta st user)
	bg_start w1 "$RLOCK" run -w 30s --label first-waiter st -- sh -c "$(gate "$BATS_TEST_TMPDIR/go2")"
	w1=$BG_PID
	wait_until 10 line_is st 1
	bg_start w2 "$RLOCK" run -s -w 30s --label reader st -- true
	w2=$BG_PID
	wait_until 10 line_is st 2

	run -0 --separate-stderr "$RLOCK" status st
	assert_equal "$(awk '$1 == "st" { print $2, $7, $8, $9 }' <<<"$output")" \
		"held 2 $user@$host:$h holder-job"
	assert_line --regexp "^  next: $user@$host:$w1, waiting [0-9.]+(ms|s)  first-waiter\$"
	assert_equal "${#lines[@]}" 3
	assert_fence "$(meta st fence)"
	assert_status_row "${lines[1]}" st held "$(meta st fence)"
	run -0 "$RLOCK" status --json st
	json_check "$output" \
		"d['locks'][0]['kind'] == 'exclusive'" \
		"d['locks'][0]['limit'] is None" \
		"d['locks'][0]['waiters'] == 2" \
		"[x['pid'] for x in d['locks'][0]['holders']] == [int(a[0])]" \
		"d['locks'][0]['holders'][0]['command'] == 'holder-job'" \
		"d['locks'][0]['holders'][0]['fence'] == int(a[4])" \
		"d['locks'][0]['fence'] == int(a[4])" \
		"d['locks'][0]['holders'][0]['ttl_ms'] > 0" \
		"d['locks'][0]['next'] == {'kind': 'exclusive', 'host': a[2], 'pid': int(a[1]), 'user': a[3], 'command': 'first-waiter', 'waited_ms': d['locks'][0]['next']['waited_ms'], 'priority': 0}" \
		"0 <= d['locks'][0]['next']['waited_ms'] < 30000" \
		-- "$h" "$w1" "$host" "$user" "$(meta st fence)"

	# The first waiter holds it: the shared one is next.
	touch go1
	bg_wait "$h" 10
	assert_equal "$BG_STATUS" 0
	wait_until 10 line_is st 1
	run -0 "$RLOCK" status st
	assert_line --regexp "^  next: $user@$host:$w2 \\(shared\\), waiting [0-9.]+(ms|s)  reader\$"
	run -0 "$RLOCK" status --json st
	json_check "$output" "d['locks'][0]['next']['kind'] == 'shared'" \
		"d['locks'][0]['next']['pid'] == int(a[0])" \
		"d['locks'][0]['holders'][0]['pid'] == int(a[1])" \
		"d['locks'][0]['waiters'] == 1" -- "$w2" "$w1"
	touch go2
	bg_wait "$w1" 10
	assert_equal "$BG_STATUS" 0
	bg_wait "$w2" 10
	assert_equal "$BG_STATUS" 0

	run -1 "$RLOCK" status --json st
	json_check "$output" "d['locks'][0]['kind'] is None" \
		"d['locks'][0]['holders'] == []" "d['locks'][0]['next'] is None" \
		"d['locks'][0]['waiters'] == 0"
}

@test "a waiter that lost its place (a new master without the line) takes it again where it arrived, not at the end" {
	local token pa pb first
	token=$("$RLOCK" acquire -t 60s back)
	"$RLOCK" run -w 30s back -- sh -c 'echo A >>order' 2>erra &
	pa=$!
	wait_until 10 line_is back 1
	first=$(line_members back)
	"$RLOCK" run -w 30s back -- sh -c 'echo B >>order' 2>errb &
	pb=$!
	wait_until 10 line_is back 2
	# The line is gone, as on a master that never had it; the first
	# waiter is frozen, so the second takes its place again first.
	kill -STOP "$pa"
	rcli R DEL "$(key back):line" "$(key back):line:lease" \
		"$(key back):line:who" >/dev/null
	wait_until 10 line_is back 1
	[[ $(line_members back) != "$first" ]]
	kill -CONT "$pa"
	wait_until 10 line_is back 2
	assert_equal "$(line_members back | head -n 1)" "$first"
	run -0 "$RLOCK" release back "$token"
	wait "$pa" || fail "A: exit $?: $(cat erra)"
	wait "$pb" || fail "B: exit $?: $(cat errb)"
	assert_equal "$(tr '\n' ' ' <order)" "A B "
}

@test "a place taken again keeps its arrival only as far back as the waiter has waited" {
	local token now member score
	token=$("$RLOCK" acquire -t 60s early)
	# A waiter's request claiming an arrival a day old, though it says it
	# has waited 1s: its place is no earlier than a second ago.
	local k
	k=$(key early)
	[[ -x $HELPERS/scriptsha && $HELPERS/scriptsha -nt $RLOCK ]] ||
		make -s -C "$REPO_DIR" build/helpers/scriptsha >&2
	now=$(server_us)
	# KEYS: the lock key alone.  ARGV: token, ttl, the holder's fields
	# "KIND\nWAITED\nTOKEN8\nPID\nHOST\nUSER\nNOTE\nCOMMAND" (waited
	# 1000 ms), and the options "FAST\nDETAILS\nWAITER\nJOIN\nMIN-HOLD\n
	# HMAX\nHTTL\nPRIORITY\nSUPERSEDE\nONCE\nBATON-LEASE\nBATON-STAMP\n
	# ARRIVAL" (lib/scripts/acquire.lua).
	run -0 rcli R EVALSHA "$("$HELPERS/scriptsha" acquire)" 1 "$k" \
		tok 60000 $'x\n1000\ntok\n1\nh\nu\n\nc' \
		$'-\n0\nabcdef0123456789\n1\n0\n1000\n0\n0\n0\n0\n0\n0\n'"$((now - 86400000000))"
	score=$(rcli R ZSCORE "$(key early):line" x:abcdef0123456789)
	((${score%.*} >= now - 1000000 - 100000)) || fail "placed at $score, now $now"
	run -0 "$RLOCK" release early "$token"
}
