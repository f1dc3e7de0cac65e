#!/usr/bin/env bats
# names.bats - a name costs little and leaves nothing (issue 46): every key
# rlock writes expires (a pool's members, which a user makes, aside), after
# each kind of lock and each feature, while held and once given up; a name
# run once costs at most 1 KB of server memory (its new history copied to
# its size, lib/scripts/shrink.lua), 4.7 KB for a user that may not COPY,
# which still runs; a record of a grant gone early is read as none; and
# the fence never goes back once every key of a name has expired for real
# (docs/design.md#the-fence-after-every-key-expired), with the history and
# with the counter a user without +xadd gets.
#
# Started once for the file: a server R, three independent masters N1..N3,
# the Sentinel topology (M, RPL, S1..S3) and a cluster of three masters.

bats_require_minimum_version 1.5.0
load test_helper
load ha_helper

setup_file() {
	start_redis R || return 1
	export T_DEFAULT_URL=$R_URL
	start_redis N1 || return 1
	start_redis N2 || return 1
	start_redis N3 || return 1
	start_sentinel_topology || return 1
	start_cluster || return 1
}

teardown_file() {
	rl_teardown_file
}

setup() {
	rl_setup
	U3=(-u "$N1_URL" -u "$N2_URL" -u "$N3_URL")
}

teardown() {
	rl_teardown
}

HISTORY_TTL_MS=2592000000

# keys_on SERVER [PATTERN]: the keys under this test's prefix on SERVER
# (PATTERN after the prefix, default every one), without the prefix, one a
# line, sorted.
keys_on() {
	local k
	rcli "$1" --scan --pattern "${RLOCK_PREFIX}${2:-*}" | while read -r k; do
		[[ -n $k ]] && echo "${k#"$RLOCK_PREFIX"}"
	done | LC_ALL=C sort
}

# assert_keys SERVER [KEY...]: the keys under this test's prefix on SERVER
# are exactly KEY... (without the prefix), and each has an expiry (PTTL
# above 0) but a pool's members.
assert_keys() {
	local srv=$1 k p got want=
	shift
	got=$(keys_on "$srv")
	(($#)) && want=$(printf '%s\n' "$@" | LC_ALL=C sort)
	assert_equal "$got" "$want"
	for k in $got; do
		[[ $k == *:members ]] && continue
		p=$(rcli "$srv" PTTL "$RLOCK_PREFIX$k")
		((p > 0)) || fail "$k has no expiry: PTTL $p"
	done
}

# keys_are SERVER KEY...: assert_keys as a condition, for wait_until.
keys_are() {
	local want=
	(($# > 1)) && want=$(printf '%s\n' "${@:2}" | LC_ALL=C sort)
	[[ $(keys_on "$1") == "$want" ]]
}

# key_pttl SERVER KEY: the PTTL of KEY (without the prefix).
key_pttl() {
	rcli "$1" PTTL "$RLOCK_PREFIX$2"
}

# name_bytes SERVER NAME: the sum of MEMORY USAGE of lock NAME's keys.
name_bytes() {
	local k sum=0 b
	for k in $(keys_on "$1" "{$2}*"); do
		b=$(rcli "$1" MEMORY USAGE "$RLOCK_PREFIX$k" SAMPLES 0)
		sum=$((sum + b))
	done
	echo "$sum"
}

# guide_user NAME [RULE...]: ACL user NAME (password secret) with
# docs/servers.md's least-privilege rule for this test's prefix, then RULE.
guide_user() {
	local name=$1 line
	shift
	line=$(grep -E '^ACL SETUSER app on >secret ' "$REPO_DIR/docs/servers.md" | head -n 1)
	[[ -n $line ]] || fail "docs/servers.md has no ACL SETUSER line"
	line=${line//rlock:/$RLOCK_PREFIX}
	set -f
	read -r -a rule <<<"$line"
	set +f
	rule[2]=$name
	assert_equal "$(rcli R "${rule[@]}" "$@")" OK
}

# user_url NAME: R's URL as user NAME.
user_url() {
	echo "redis://$1:secret@127.0.0.1:$R_PORT"
}

# gated NAME [RUN OPTIONS...]: a run of NAME in the background (job
# NAME) whose command says it started (file held-NAME) and waits for file
# go-NAME; returns once it holds.
gated() {
	local name=$1
	shift
	rm -f "held-$name" "go-$name"
	bg_start "$name" "$RLOCK" run "$@" -w 10s "$name" -- \
		sh -c "touch held-$name; while [ ! -e go-$name ]; do sleep 0.05; done"
	wait_until 10 test -e "held-$name"
}

# ---- every key expires, after each kind and feature ------------------------

@test "an exclusive run: its lock, its grant's record and its history while it holds, through renewals; its history alone after, under 1 KB" {
	local p b
	gated a -t 1s
	assert_keys R '{a}' '{a}:grant' '{a}:log'
	# Past its first lease (not a wait for anything: the time a renewal
	# takes to matter), renewed: the record lives with the lock.
	sleep 1.5
	assert_keys R '{a}' '{a}:grant' '{a}:log'
	p=$(key_pttl R '{a}:grant')
	((p <= 1000)) || fail "the record outlives the lease: $p"
	run -0 --separate-stderr "$RLOCK" status --json a
	json_check "$output" 'd["locks"][0]["held"] is True' \
		'd["locks"][0]["pid"] == int(a[0])' -- "$BG_PID"
	touch go-a
	bg_wait "$BG_PID"
	assert_equal "$BG_STATUS" 0
	assert_keys R '{a}:log'
	b=$(name_bytes R a)
	((b <= 1024)) || fail "a name run once costs $b bytes"
	# Again, on the uncontended path (no record written), and one that
	# finds the lock busy (its skip recorded).
	run -0 "$RLOCK" run a -- true
	gated a
	run -75 "$RLOCK" run -n a -- true
	touch go-a
	bg_wait "$BG_PID"
	assert_keys R '{a}:log'
}

@test "acquire, extend and release: the record has the lock's expiry and goes with it" {
	local t p
	t=$("$RLOCK" acquire -t 30s b)
	assert_keys R '{b}' '{b}:grant' '{b}:log'
	p=$(key_pttl R '{b}:grant')
	((p <= 30000)) || fail "record PTTL $p"
	run -0 "$RLOCK" extend -t 90s b "$t"
	p=$(key_pttl R '{b}:grant')
	((p > 60000 && p <= 90000)) || fail "record PTTL after extend: $p"
	run -0 "$RLOCK" release b "$t"
	assert_keys R '{b}:log'
	# The uncontended path writes no record.
	t=$("$RLOCK" acquire -t 30s b)
	assert_keys R '{b}' '{b}:log'
	run -0 "$RLOCK" extend -t 60s b "$t"
	run -0 "$RLOCK" release b "$t"
	assert_keys R '{b}:log'
}

@test "shared: the holders while held, the history and the record of the last runs after" {
	local b
	gated c -s
	assert_keys R '{c}:holders' '{c}:holders:meta' '{c}:log'
	touch go-c
	bg_wait "$BG_PID"
	assert_keys R '{c}:log' '{c}:log:last'
	b=$(name_bytes R c)
	((b <= 1024)) || fail "a shared name run once costs $b bytes"
}

@test "a semaphore: the holders while held, the history and the record of the last runs after" {
	local b
	gated d -l 3
	assert_keys R '{d}:holders' '{d}:holders:meta' '{d}:log'
	touch go-d
	bg_wait "$BG_PID"
	assert_keys R '{d}:log' '{d}:log:last'
	b=$(name_bytes R d)
	((b <= 1024)) || fail "a semaphore run once costs $b bytes"
}

@test "a pool: its members stay (a user made them), every other key expires" {
	run -0 "$RLOCK" pool p add m1 url=https://a.example
	run -0 "$RLOCK" pool p add m2
	assert_equal "$(key_pttl R '{p}:members')" -1
	bg_start p "$RLOCK" run --pool p --count 2 -- \
		sh -c 'touch held-p; while [ ! -e go-p ]; do sleep 0.05; done'
	wait_until 10 test -e held-p
	assert_keys R '{p}:holders' '{p}:holders:meta' '{p}:log' '{p}:members'
	touch go-p
	bg_wait "$BG_PID"
	assert_keys R '{p}:log' '{p}:log:last' '{p}:members'
}

@test "--with: each lock's set record while held, each history after" {
	gated e --with f
	assert_keys R '{e}' '{e}:grant' '{e}:log' '{e}:with' '{f}' '{f}:grant' '{f}:log' '{f}:with'
	touch go-e
	bg_wait "$BG_PID"
	assert_keys R '{e}:log' '{e}:log:last' '{f}:log' '{f}:log:last'
}

@test "--once-per: the period done expires at its end" {
	local p
	run -0 "$RLOCK" run --once-per 1d g -- true
	assert_keys R '{g}:log' '{g}:log:last' '{g}:once'
	p=$(key_pttl R '{g}:once')
	((p <= 86400000)) || fail "the period outlives its day: $p"
	# The period done: the next try gives up (75), and writes nothing.
	run -75 "$RLOCK" run -q --once-per 1d g -- touch ran
	[[ ! -e ran ]]
	assert_keys R '{g}:log' '{g}:log:last' '{g}:once'
}

@test "--min-hold: the lock, its record and the hold stay for the hold's rest, then go together" {
	run -0 "$RLOCK" run --min-hold 2s h -- true
	assert_keys R '{h}' '{h}:grant' '{h}:hold' '{h}:log' '{h}:log:last'
	local k p
	for k in '{h}' '{h}:grant' '{h}:hold'; do
		p=$(key_pttl R "$k")
		((p <= 2000)) || fail "$k outlives the hold: $p"
	done
	run -75 "$RLOCK" run -n h -- true
	wait_until 5 keys_are R '{h}:log' '{h}:log:last'
	run -0 "$RLOCK" run -n h -- true
}

@test "lead: a leader's keys expire, and once it stops its history alone stays" {
	bg_start lead "$RLOCK" lead -t 2s ld -- sh -c 'touch led; sleep 60'
	local lpid=$BG_PID
	wait_until 10 test -e led
	assert_keys R '{ld}' '{ld}:grant' '{ld}:log'
	kill -TERM "$lpid"
	bg_wait "$lpid"
	wait_until 5 lock_free ld
	assert_keys R '{ld}:log' '{ld}:log:last'
}

@test "a failed run: the record of the last runs expires with the history" {
	local p
	run -3 "$RLOCK" run i -- sh -c 'exit 3'
	assert_keys R '{i}:log' '{i}:log:last'
	p=$(key_pttl R '{i}:log:last')
	((p > HISTORY_TTL_MS - 60000 && p <= HISTORY_TTL_MS)) || fail "PTTL $p"
	run -0 --separate-stderr "$RLOCK" last i
	assert_regex "$output" ': exit 3 after '
}

@test "a forced release takes the record with the lock" {
	"$RLOCK" acquire -t 30s j >/dev/null
	assert_keys R '{j}' '{j}:grant' '{j}:log'
	run -0 "$RLOCK" release --force j
	assert_keys R '{j}:log'
}

@test "an abandoned run (rlock killed -9): the lock and its record end with the lease" {
	bg_start ab "$RLOCK" run -t 2s k -- sh -c 'touch held; exec sleep 60'
	local rpid=$BG_PID
	wait_until 10 test -e held
	kill -KILL "$rpid"
	assert_keys R '{k}' '{k}:grant' '{k}:log'
	local p
	p=$(key_pttl R '{k}:grant')
	((p <= 2000)) || fail "the record outlives the lease: $p"
	wait_until 5 keys_are R '{k}:log'
}

@test "a waiter killed in line: the line's keys expire, and go once the lock is handed on" {
	gated w
	local hpid=$BG_PID id
	bg_start waiter "$RLOCK" run -w 30s w -- true
	local wpid=$BG_PID
	wait_until 10 has_waiters w 1
	id=$(rcli R ZRANGE "$(key w):line" 0 0)
	id=${id#*:}
	kill -KILL "$wpid"
	assert_keys R '{w}' '{w}:grant' '{w}:log' '{w}:line' '{w}:line:lease' '{w}:line:who'
	touch go-w
	bg_wait "$hpid"
	assert_equal "$BG_STATUS" 0
	# Nobody can tell the waiter is gone: the release hands it the lock
	# for its short first lease, and its grant waits in its wake-up list,
	# both expiring.
	assert_keys R '{w}' '{w}:grant' '{w}:log' '{w}:log:last' "{w}:wake:$id"
	wait_until 15 keys_are R '{w}:log' '{w}:log:last'
	assert_keys R '{w}:log' '{w}:log:last'
}

@test "an older rlock's keys: its counter and a record without expiry are taken on and go" {
	local k t=0123456789abcdef0123456789abcdef c
	k=$(key u)
	c=$(($(server_us) + 1000))
	# An rlock before 0.2: its lock, record and counter (no expiry).
	rcli R SET "$k" "$t" PX 30000 >/dev/null
	rcli R SET "$k:owner" "$c"$'\n'"$(server_ms)"$'\n0\n4242\noldhost\nolduser\n\nold job' \
		PX 30000 >/dev/null
	rcli R SET "$k:fence" "$c" >/dev/null
	# The rlock before this one: a record of a grant without expiry.
	rcli R SET "$(key u2):grant" $'2\n\n'"$c"$'\n0\nx\n0\nabcdef01\n4242\noldhost\nolduser\n\nold job' \
		>/dev/null
	run -0 "$RLOCK" release u "$t"
	run -0 "$RLOCK" run u -- true
	run -0 "$RLOCK" run u2 -- true
	# The older lock's record goes with the lease it had.
	assert_keys R '{u}:log' '{u}:owner' '{u2}:log'
}

@test "a user without +xadd: the fence counter expires with the history each time it is written" {
	guide_user noxadd -xadd
	local url p
	url=$(user_url noxadd)
	run -0 "$RLOCK" -u "$url" run x -- true
	assert_keys R '{x}:fence'
	p=$(key_pttl R '{x}:fence')
	((p > HISTORY_TTL_MS - 60000 && p <= HISTORY_TTL_MS)) || fail "PTTL $p"
	rcli R PEXPIRE "$(key x):fence" 60000 >/dev/null
	run -0 "$RLOCK" -u "$url" run x -- true
	p=$(key_pttl R '{x}:fence')
	((p > HISTORY_TTL_MS - 60000)) || fail "the counter's expiry not set again: $p"
}

@test "several masters: each master's keys expire and a name run once costs under 1 KB on each" {
	run -0 "$RLOCK" "${U3[@]}" run rl -- true
	local m b
	for m in N1 N2 N3; do
		assert_keys "$m" '{rl}:log' '{rl}:log:last'
		b=$(name_bytes "$m" rl)
		((b <= 1024)) || fail "$m: $b bytes"
	done
}

@test "Sentinel: the history is copied to its size on the master and its replica" {
	local b
	run -0 "$RLOCK" -u "$SENTINEL_URL" run sn -- true
	local m r
	m=$(ha_master)
	r=$(ha_replica)
	assert_keys "$m" '{sn}:log'
	wait_until 10 keys_are "$r" '{sn}:log'
	assert_keys "$r" '{sn}:log'
	b=$(name_bytes "$m" sn)
	((b <= 1024)) || fail "master: $b bytes"
	b=$(name_bytes "$r" sn)
	((b <= 1024)) || fail "replica: $b bytes"
}

@test "Cluster: the copy shares the name's slot, and the history is under 1 KB" {
	local p b
	local port k
	k=$(key cl)
	port=$(cluster_owner_port "$k")
	run -0 "$RLOCK" -u "redis://127.0.0.1:$port" run cl -- true
	run -0 "$RLOCK" -u "redis://127.0.0.1:$(cluster_other_port "$k")" run cl -- true
	assert_equal "$(cluster_slot "$k:log:c")" "$(cluster_slot "$k")"
	assert_equal "$(ccli "$port" EXISTS "$k:log" "$k:log:c" "$k:grant")" 1
	p=$(ccli "$port" PTTL "$k:log")
	((p > HISTORY_TTL_MS - 60000)) || fail "PTTL $p"
	b=$(ccli "$port" MEMORY USAGE "$k:log" SAMPLES 0)
	((b <= 1024)) || fail "$b bytes"
}

# ---- what a name costs ---------------------------------------------------------

@test "a name run once costs at most 1 KB; a user without +copy +rename still runs, and its name costs 4.7 KB" {
	local b n url
	run -0 "$RLOCK" run m1 -- true
	b=$(name_bytes R m1)
	((b <= 1024)) || fail "a name run once costs $b bytes"
	guide_user nocopy -copy -rename
	url=$(user_url nocopy)
	run -0 --separate-stderr "$RLOCK" -u "$url" run m2 -- true
	assert_equal "$stderr" ""
	assert_keys R '{m1}:log' '{m2}:log'
	n=$(name_bytes R m2)
	((n >= 4096)) || fail "without COPY the stream costs $n bytes"
	# Its history answers log and last as the small one does.
	run -0 --separate-stderr "$RLOCK" log m1
	assert_equal "${#lines[@]}" 2
	run -0 --separate-stderr "$RLOCK" log m2
	assert_equal "${#lines[@]}" 2
	run -0 --separate-stderr "$RLOCK" last m1
	assert_regex "$output" '^m1: last run ended '
	# Ten runs later it has grown by small steps.
	for _ in 1 2 3 4 5 6 7 8 9; do "$RLOCK" run m1 -- true; done
	b=$(name_bytes R m1)
	((b <= 2048)) || fail "a name run ten times costs $b bytes"
}

@test "300 names run once grow the server's used_memory by at most 1 KB each" {
	local b a i
	b=$(rcli R INFO memory | tr -d '\r' | sed -n 's/^used_memory://p')
	for ((i = 0; i < 300; i++)); do "$RLOCK" run -q "n$i" -- true || fail "run $i"; done
	a=$(rcli R INFO memory | tr -d '\r' | sed -n 's/^used_memory://p')
	(((a - b) / 300 <= 1024)) || fail "$(((a - b) / 300)) bytes per name"
	[[ $(keys_on R | grep -c ':log$') == 300 ]]
}

@test "a record of a grant gone before its lock is read as none: status, extend and release work" {
	local t
	t=$("$RLOCK" acquire -t 30s rg)
	rcli R DEL "$(key rg):grant" >/dev/null
	run -0 --separate-stderr "$RLOCK" status --json rg
	json_check "$output" 'd["locks"][0]["held"] is True' \
		'd["locks"][0]["pid"] is not None'
	run -0 "$RLOCK" extend -t 60s rg "$t"
	run -0 "$RLOCK" release rg "$t"
	assert_keys R '{rg}:log'
	# Without a history too: nothing to read, nothing fails.
	guide_user nox2 -xadd
	t=$("$RLOCK" -u "$(user_url nox2)" acquire -t 30s rh)
	rcli R DEL "$(key rh):grant" >/dev/null
	run -0 --separate-stderr "$RLOCK" status --json rh
	json_check "$output" 'd["locks"][0]["held"] is True'
	run -0 "$RLOCK" -u "$(user_url nox2)" extend -t 60s rh "$t"
	run -0 "$RLOCK" -u "$(user_url nox2)" release rh "$t"
	assert_keys R '{rg}:log' '{rh}:fence'
}

# ---- the fence after every key expired -----------------------------------------

# expire_name SERVER NAME: every key of lock NAME made to expire for real
# (PEXPIRE 1 each), then polled until none is left.
expire_name() {
	local k
	for k in $(keys_on "$1" "{$2}*"); do
		rcli "$1" PEXPIRE "$RLOCK_PREFIX$k" 1 >/dev/null
	done
	wait_until 5 keys_are "$1"
}

# fences_then_expire URL NAME: fences of NAME (exclusive, shared,
# semaphore, a hand-off) through URL, every key of NAME expired, then a
# new grant: its fence above every one before and at least the clock.
fences_then_expire() {
	local url=$1 name=$2 t b
	local -a f=()
	f+=("$("$RLOCK" -u "$url" run "$name" -- sh -c 'echo "$RLOCK_FENCE"')")
	f+=("$("$RLOCK" -u "$url" run -s "$name" -- sh -c 'echo "$RLOCK_FENCE"')")
	f+=("$("$RLOCK" -u "$url" run -l 2 "$name" -- sh -c 'echo "$RLOCK_FENCE"')")
	t=$("$RLOCK" -u "$url" acquire -t 30s "$name")
	f+=("$("$RLOCK" -u "$url" status --json "$name" |
		python3 -c 'import json, sys; print(json.load(sys.stdin)["locks"][0]["fence"])')")
	"$RLOCK" -u "$url" release "$name" "$t"
	assert_increasing "${f[@]}"
	[[ -n $(keys_on R "{$name}*") ]] || fail "the name left no key to expire"
	expire_name R "$name"
	b=$(server_us R)
	f+=("$("$RLOCK" -u "$url" run "$name" -- sh -c 'echo "$RLOCK_FENCE"')")
	assert_increasing "${f[@]}"
	assert_fence "${f[-1]}" "$b"
}

@test "the fence after every key of a name expired is above every one before: the history's ids" {
	fences_then_expire "$R_URL" fe
	assert_keys R '{fe}:log'
}

@test "the fence after every key of a name expired is above every one before: the counter, the stream refused" {
	guide_user nofence -xadd
	fences_then_expire "$(user_url nofence)" fc
	assert_keys R '{fc}:fence'
}
