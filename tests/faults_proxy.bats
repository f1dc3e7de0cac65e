#!/usr/bin/env bats
# faults_proxy.bats - rlock between a fault proxy and redis-server: slow
# replies, a blackhole, resets in the middle of acquire and release.  The
# holder under test talks through the proxy (RLOCK_URL); the rival and the
# checks talk to the server directly.
#
# Order is judged by one append-only events file that both critical
# sections write to: a line's position is the order in which it happened,
# whatever the clocks say.

bats_require_minimum_version 1.5.0
load test_helper
load proxy_helper

setup_file() { rl_setup_file; }
teardown_file() { rl_teardown_file; }

setup() {
	rl_setup
	start_proxy P "$R_PORT"
	export RLOCK_URL=$P_URL
	# Load the acquire and release scripts into the server first, so
	# that a cut hits the script's reply and not a NOSCRIPT answer.
	"$RLOCK" -u "$R_URL" run -n warmup -- true
	# holder.sh TAG: a critical section that logs its start (with its
	# fence and token) and its end to ./events, and runs until ./go.TAG
	# exists or it is told to stop (bounded at 30s).
	cat >holder.sh <<'EOF'
ev=$PWD/events
trap 'echo "$1 end" >>"$ev"; exit 143' TERM
echo "$1 start $RLOCK_FENCE $RLOCK_TOKEN" >>"$ev"
i=0
while [ ! -e "go.$1" ] && [ $i -lt 1500 ]; do sleep 0.02; i=$((i + 1)); done
echo "$1 end" >>"$ev"
EOF
}

teardown() {
	stop_all_proxies
	rl_teardown
}

# line_of TEXT: the line number of the first line of ./events starting
# with TEXT (empty when none).
line_of() {
	grep -n -m 1 "^$1" events | cut -d: -f1
}

# token_of TAG: the token TAG's critical section was given.
token_of() {
	grep -m 1 "^$1 start " events | cut -d' ' -f4
}

# After A's end and B's start are in ./events: A ended first.
assert_a_ended_before_b() {
	local a b
	a=$(line_of "A end")
	b=$(line_of "B start")
	[[ -n $a && -n $b ]] || fail "events: $(cat events)"
	((a < b)) || fail "B started before A ended: $(cat events)"
}

@test "renewal replies delayed past the TTL: the holder stops its command before a rival gets in" {
	bg_start a "$RLOCK" run -t 2s slow -- sh holder.sh A
	local apid=$BG_PID
	wait_until 10 file_has_prefix events "A start"
	# Requests still reach the server (and extend the lease there);
	# only the confirmations are late.
	proxy_cmd P delay down 5000
	bg_start b "$RLOCK" -u "$R_URL" run -w 30s slow -- sh holder.sh B
	local bpid=$BG_PID
	bg_wait "$apid" 20
	assert_equal "$BG_STATUS" 76
	assert_regex "$(bg_err a | grep "^rlock:")" "^rlock: run: slow: lock lost: .*; command stopped$"
	wait_until 20 file_has_prefix events "B start"
	assert_a_ended_before_b
	touch go.B
	bg_wait "$bpid" 10
	assert_equal "$BG_STATUS" 0
	lock_free slow
}

@test "blackhole during a hold: exit 76, command stopped, the next holder's lock untouched" {
	bg_start a "$RLOCK" run -t 4s bh -- sh holder.sh A
	local apid=$BG_PID
	wait_until 10 file_has_prefix events "A start"
	proxy_cmd P hold both
	bg_start b "$RLOCK" -u "$R_URL" run -t 30s -w 30s bh -- sh holder.sh B
	local bpid=$BG_PID
	bg_wait "$apid" 20
	assert_equal "$BG_STATUS" 76
	assert_regex "$(bg_err a | grep "^rlock:")" "^rlock: run: bh: lock lost: .*; command stopped$"
	file_has events "A end"
	wait_until 20 file_has_prefix events "B start"
	assert_a_ended_before_b
	# Let everything A sent while cut off reach the server now, and wait
	# until the proxy has delivered it and closed A's connections.
	proxy_cmd P normal
	wait_until 10 proxy_stat_is P active 0
	held_by bh "$(token_of B)"
	local t
	t=$(pttl bh)
	((t > 15000)) || fail "B's lease was cut to ${t}ms"
	touch go.B
	bg_wait "$bpid" 10
	assert_equal "$BG_STATUS" 0
	lock_free bh
}

@test "lost while the command ignores SIGTERM: it is killed before a rival can get the lock" {
	# The command ignores TERM (and so do its children); only KILL ends it.
	# rlock must send that before the lease's end less the drift allowance
	# (TTL/100 + 2ms: 52ms of a 5s lease).
	bg_start a "$RLOCK" run -t 5s term -- sh -c 'trap "" TERM; echo $$ >a.pid; echo "A start" >>events
		i=0; while [ $i -lt 1500 ]; do sleep 0.02; i=$((i + 1)); done'
	local apid=$BG_PID
	wait_until 10 file_has_prefix events "A start"
	proxy_cmd P hold both
	# B notes whether A's command is still alive when B's section starts.
	bg_start b "$RLOCK" -u "$R_URL" run -w 30s term -- sh -c '
		s=$(sed -n "s/^State:[[:space:]]*\(.\).*/\1/p" /proc/$(cat a.pid)/status 2>/dev/null)
		if [ -n "$s" ] && [ "$s" != Z ]; then echo "B start while A runs" >>events
		else echo "B start" >>events; fi'
	local bpid=$BG_PID
	bg_wait "$bpid" 30
	assert_equal "$BG_STATUS" 0
	bg_wait "$apid" 20
	assert_equal "$BG_STATUS" 76
	file_has events "B start" || fail "A's command outlived its lease: $(cat events)"
}

@test "a release stuck in a blackhole: reported, the lease runs out, and it never deletes the next holder's lock" {
	bg_start a "$RLOCK" --io-timeout 1s run -t 3s rel -- sh holder.sh A
	local apid=$BG_PID
	wait_until 10 file_has_prefix events "A start"
	proxy_cmd P hold up
	touch go.A
	bg_wait "$apid" 20
	# The command succeeded; the release could not be confirmed.
	assert_equal "$BG_STATUS" 0
	assert_regex "$(bg_err a)" "^rlock: run: rel: cannot release: .*no reply within 1s"
	# Left behind, but only for the rest of its lease.
	wait_until 5 lock_free rel
	bg_start b "$RLOCK" -u "$R_URL" run -t 30s -w 10s rel -- sh holder.sh B
	local bpid=$BG_PID
	wait_until 10 file_has_prefix events "B start"
	# Now A's stale release reaches the server: token-checked, a no-op.
	proxy_cmd P normal
	wait_until 10 proxy_stat_is P active 0
	held_by rel "$(token_of B)"
	touch go.B
	bg_wait "$bpid" 10
	assert_equal "$BG_STATUS" 0
}

@test "reset after the acquire request reached the server: the retry finds its own token, no phantom lock" {
	proxy_cmd P cut "$(proxy_pattern_acquire)"
	# With the fences ahead of the clock, every grant's is above c.
	local c
	c=$(fence_ahead ph)
	# Waiting out a phantom lock would take the whole 30s TTL: -w 20s
	# turns that into exit 75.
	run -0 --separate-stderr "$RLOCK" run -t 30s -w 20s ph -- sh -c 'echo "$RLOCK_FENCE" >fence'
	assert_equal "$(proxy_stat P cuts)" 1
	assert_fence "$(cat fence)" $((c + 1))
	# The server granted once: one fence, and nothing left behind but the
	# record of that grant.
	assert_equal "$(hist_count ph acquired)" 1
	assert_equal "$(meta ph fence)" "$(cat fence)"
	lock_free ph
	assert_equal "$(rcli R EXISTS "$(key ph):owner")" 0
}

@test "reset before the acquire request reached the server: the retry takes the lock once" {
	proxy_cmd P drop "$(proxy_pattern_acquire)"
	local c
	c=$(fence_ahead dr)
	run -0 --separate-stderr "$RLOCK" run -t 30s -w 20s dr -- sh -c 'echo "$RLOCK_FENCE" >fence'
	assert_equal "$(proxy_stat P drops)" 1
	assert_fence "$(cat fence)" $((c + 1))
	assert_equal "$(hist_count dr acquired)" 1
	assert_equal "$(meta dr fence)" "$(cat fence)"
	lock_free dr
}

@test "reset after the release reached the server: released, and rlock says so truthfully" {
	bg_start a "$RLOCK" -v run -t 30s rr -- sh holder.sh A
	local apid=$BG_PID
	wait_until 10 file_has_prefix events "A start"
	proxy_cmd P cut "$(proxy_pattern_release)"
	touch go.A
	bg_wait "$apid" 20
	assert_equal "$(proxy_stat P cuts)" 1
	# The lock is gone at once, not after its 30s lease.
	lock_free rr
	# The server did release it for our token: that is not a lost lock.
	assert_equal "$BG_STATUS" 0
	assert_equal "$(bg_err a | grep -v ': acquired (fence ')" \
		"rlock: run: rr: released (the reply was lost; the retry found the lock free)"
}

@test "reset before the release reached the server: the retry releases it" {
	bg_start a "$RLOCK" run -t 30s rd -- sh holder.sh A
	local apid=$BG_PID
	wait_until 10 file_has_prefix events "A start"
	proxy_cmd P drop "$(proxy_pattern_release)"
	touch go.A
	bg_wait "$apid" 20
	assert_equal "$(proxy_stat P drops)" 1
	assert_equal "$BG_STATUS" 0
	assert_equal "$(bg_err a)" ""
	lock_free rd
}

@test "the proxy refuses connections: rlock run fails with 69 and names the cause" {
	proxy_cmd P refuse
	run -69 --separate-stderr "$RLOCK" --connect-timeout 1s run -n rf -- true
	assert_stderr --regexp "^rlock: run: cannot connect to 127\.0\.0\.1:$P_PORT: Connection refused$"
	proxy_cmd P normal
	run -0 "$RLOCK" run -n rf -- true
}

@test "a connection reset between connect and send does not hang rlock" {
	# A shim makes every send(2) wait 50ms, so that the reset of a proxy
	# whose server is down arrives after the connect and before the
	# request.  rlock_eval_all then schedules the resend 10ms after a
	# time read before that wait, and used to poll no descriptors with a
	# negative timeout: for ever, deaf to SIGTERM (blocked for its
	# signalfd).  It must give up with 69 within the I/O timeout.
	build_slowsend
	# Nothing listens on port 1: the proxy accepts and resets.
	start_proxy DEAD 1
	local attempt
	for ((attempt = 0; attempt < 5; attempt++)); do
		run -69 --separate-stderr env LD_PRELOAD="$PWD/slowsend.so" \
			ASAN_OPTIONS=verify_asan_link_order=0 \
			timeout -s KILL 10 "$RLOCK" -u "$DEAD_URL" --io-timeout 2s \
			run -n dead -- true
		assert_stderr --regexp "^rlock: run: (cannot connect to )?127\.0\.0\.1:$DEAD_PORT: "
	done
}

@test "the same reset during a renewal does not hang the renewal thread: the lock is declared lost" {
	# As above, but in the renewal thread: if its request hangs, nothing
	# ever declares the lease lost and the command runs on unchecked.
	build_slowsend
	start_redis S
	start_proxy SP "$S_PORT"
	bg_start a env LD_PRELOAD="$PWD/slowsend.so" \
		ASAN_OPTIONS=verify_asan_link_order=0 "$RLOCK" -u "$SP_URL" \
		run -t 1s ren -- sh holder.sh A
	local apid=$BG_PID
	wait_until 10 file_has_prefix events "A start"
	# The server goes away: the renewal thread's new connection to the
	# proxy is accepted and reset.
	stop_redis S
	bg_wait "$apid" 10 || fail "rlock still running 10s after its 1s lease could not be renewed"
	assert_equal "$BG_STATUS" 76
	file_has events "A end"
}

# file_has_prefix FILE TEXT: some line of FILE starts with TEXT.
file_has_prefix() {
	[[ -f $1 ]] && grep -q "^$2" "$1"
}

# build_slowsend: compile tests/shim/slowsend.c (every send(2) waits 50ms)
# into ./slowsend.so for LD_PRELOAD.
build_slowsend() {
	cc -shared -fPIC -o slowsend.so "$BATS_TEST_DIRNAME/shim/slowsend.c" -ldl
}

@test "--with: reset after the set's acquire reached the server: the retry finds its own token, one grant per lock" {
	"$RLOCK" -u "$R_URL" run -n warmup --with warmup2 -- true
	proxy_cmd P cut "$("$HELPERS/scriptsha" with)"
	run -0 --separate-stderr "$RLOCK" run -t 30s -w 20s wpa --with wpb -- sh -c 'echo "$RLOCK_FENCE_0 $RLOCK_FENCE_1" >fence'
	assert_equal "$(proxy_stat P cuts)" 1
	assert_equal "$(hist_count wpa acquired)" 1
	assert_equal "$(hist_count wpb acquired)" 1
	assert_equal "$(cut -d' ' -f1 fence)" "$(last_grant wpa fence)"
	lock_free wpa
	lock_free wpb
}

@test "--with: reset after the set's release reached the server: released, and rlock says so truthfully" {
	"$RLOCK" -u "$R_URL" run -n warmup --with warmup2 -- true
	bg_start a "$RLOCK" -v run -t 30s wra --with wrb -- sh holder.sh A
	local apid=$BG_PID
	wait_until 10 file_has_prefix events "A start"
	proxy_cmd P cut "$("$HELPERS/scriptsha" with)"
	touch go.A
	bg_wait "$apid" 20
	assert_equal "$(proxy_stat P cuts)" 1
	lock_free wra
	lock_free wrb
	assert_equal "$BG_STATUS" 0
	assert_equal "$(bg_err a | grep -v ': acquired (fence ')" \
		"rlock: run: wra: released (the reply was lost; the retry found the locks free)"
}
