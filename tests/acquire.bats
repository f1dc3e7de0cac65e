#!/usr/bin/env bats
# acquire.bats - rlock acquire: take a lock for a script, print the token
# (or JSON, or shell assignments), optionally keep it alive in the
# background.

bats_require_minimum_version 1.5.0
load test_helper

@test "acquire prints a token that the key holds, with the TTL" {
	run -0 --separate-stderr "$RLOCK" acquire -t 10s a
	assert_regex "$output" '^[0-9a-f]{32}$'
	assert_equal "${#lines[@]}" 1
	assert_equal "$stderr" ""
	held_by a "$output"
	local p
	p=$(pttl a)
	((p > 8000 && p <= 10000)) || fail "pttl $p"
	# The record of the grant names it (it is the holder's while the key's
	# token starts with its TOKEN8): P{a}:grant, with the lock's expiry,
	# or the grant's entry in the history; no record in the older :owner,
	# no counter.
	assert_equal "$(grant_tok a)" "${output:0:8}"
	p=$(rcli R PTTL "$(key a):grant")
	[[ $p == -2 ]] || ((p > 0 && p <= 10000)) || fail "record pttl $p"
	[[ $(rcli R EXISTS "$(key a):owner" "$(key a):fence") == 0 ]]
}

@test "the default TTL is 30s" {
	"$RLOCK" acquire d >/dev/null
	local p
	p=$(pttl d)
	((p > 28000 && p <= 30000)) || fail "pttl $p"
}

@test "acquire writes the holder's record" {
	"$RLOCK" acquire --label "deploy web" m >/dev/null
	assert_equal "$(meta m command)" "deploy web"
	assert_equal "$(meta m user)" "$(id -un)"
	assert_regex "$(meta m host)" "^$(hostname -s)"
	assert_regex "$(meta m pid)" '^[0-9]+$'
	assert_regex "$(meta m since)" '^1[0-9]{12}$'
	# The fence of the grant's history entry.
	assert_fence "$(meta m fence)"
	assert_equal "$(meta m fence)" "$(last_grant m fence)"
	assert_equal "$(last_grant m command)" "deploy web"
}

@test "the fence increases with every acquisition" {
	local t1 t2 f1 f2 b1 a1 b2 a2
	b1=$(server_us)
	t1=$("$RLOCK" acquire f)
	a1=$(server_us)
	f1=$(meta f fence)
	"$RLOCK" release f "$t1"
	b2=$(server_us)
	t2=$("$RLOCK" acquire f)
	a2=$(server_us)
	f2=$(meta f fence)
	# Each grant took the server's clock at that moment, and the second
	# one is above the first.
	assert_fence "$f1" "$b1" "$a1"
	assert_fence "$f2" "$b2" "$a2"
	assert_increasing "$f1" "$f2"
	assert_equal "$(last_grant f fence)" "$f2"
	assert_not_equal "$t1" "$t2"
}

@test "acquire --json and --format json" {
	run -0 --separate-stderr "$RLOCK" acquire --json -t 5s j
	echo "$output" | python3 -c '
import json, re, sys
d = json.load(sys.stdin)
assert set(d) == {"name", "key", "token", "fence", "ttl_ms"}, d
assert d["name"] == "j", d
assert d["key"] == sys.argv[1], d
assert re.fullmatch("[0-9a-f]{32}", d["token"]), d
assert isinstance(d["fence"], int) and d["fence"] >= 1, d
assert d["ttl_ms"] == 5000, d
print(d["token"])' "$(key j)" >tok
	held_by j "$(cat tok)"
	# The fence in the JSON is the one the server keeps, digit for digit.
	assert_regex "$output" ',"fence":[0-9]+,'
	assert_equal "$(sed 's/.*,"fence":\([0-9]*\),.*/\1/' <<<"$output")" "$(meta j fence)"

	run -0 "$RLOCK" acquire --format json j2
	python3 -c 'import json,sys; d=json.loads(sys.argv[1]); assert d["ttl_ms"] == 30000 and d["name"] == "j2"' "$output"
	run -0 "$RLOCK" --json acquire j3
	python3 -c 'import json,sys; d=json.loads(sys.argv[1]); assert d["name"] == "j3"' "$output"
}

@test "acquire --json escapes the name" {
	local name='q"uo\te'
	run -0 "$RLOCK" acquire --json "$name"
	python3 -c 'import json,sys; d=json.loads(sys.argv[1]); assert d["name"] == sys.argv[2], d' "$output" "$name"
}

@test "acquire --format env sets the variables for eval" {
	run -0 "$RLOCK" acquire --format env -t 7s e
	assert_line "RLOCK_NAME='e'; export RLOCK_NAME"
	eval "$output"
	assert_equal "$RLOCK_NAME" e
	assert_equal "$RLOCK_KEY" "$(key e)"
	assert_regex "$RLOCK_TOKEN" '^[0-9a-f]{32}$'
	held_by e "$RLOCK_TOKEN"
	assert_equal "$RLOCK_FENCE" "$(meta e fence)"
	assert_equal "$RLOCK_TTL_MS" 7000
	# and the exported token is what release uses
	run -0 "$RLOCK" release e
	lock_free e
}

@test "acquire --format env quotes awkward names" {
	local name="it's a \$lock \`x\`"
	local out
	out=$("$RLOCK" acquire --format env "$name")
	(
		eval "$out"
		[[ $RLOCK_NAME == "$name" ]]
		[[ $(sh -c 'printf %s "$RLOCK_NAME"') == "$name" ]]
	)
	out=$("$RLOCK" acquire --format token "name2")
	assert_regex "$out" '^[0-9a-f]{32}$'
}

@test "acquire -n on a held lock exits 75 and leaves it" {
	local t
	t=$("$RLOCK" acquire --label holder-cmd busy)
	run -75 --separate-stderr "$RLOCK" acquire -n busy
	assert_output ""
	assert_stderr "rlock: acquire: busy: held by $(meta busy host) pid $(meta busy pid) (holder-cmd)"
	held_by busy "$t"
	run -4 "$RLOCK" acquire -n -E 4 busy
	run -75 --separate-stderr "$RLOCK" acquire -q -w 0 busy
	assert_stderr ""
	held_by busy "$t"
}

@test "acquire -w times out with 75" {
	local t t0 el
	t=$("$RLOCK" acquire --label holder-cmd busyw)
	t0=$(now_ms)
	run -75 --separate-stderr "$RLOCK" acquire -w 1s busyw
	el=$(($(now_ms) - t0))
	((el >= 900 && el < 10000)) || fail "took ${el}ms"
	assert_output ""
	assert_stderr "rlock: acquire: busyw: timed out after 1s; held by $(meta busyw host) pid $(meta busyw pid) (holder-cmd)"
	held_by busyw "$t"
}

@test "a waiting acquire gets the lock on release" {
	local t1
	t1=$("$RLOCK" acquire -t 30s wait)
	bg_start w "$RLOCK" acquire -w 20s wait
	local pid=$BG_PID
	wait_until 5 has_waiters wait 1
	run -0 "$RLOCK" release wait "$t1"
	bg_wait "$pid" 10
	assert_equal "$BG_STATUS" 0
	run bg_out w
	assert_regex "$output" '^[0-9a-f]{32}$'
	held_by wait "$output"
}

@test "acquire --min-hold records hold_until" {
	local t
	t=$("$RLOCK" acquire --min-hold 5s mh)
	local hu since
	hu=$(meta mh hold_until)
	since=$(meta mh since)
	assert_equal "$((hu - since))" 5000
}

# ---- --renew ----------------------------------------------------------------

# acquire --renew with its output in a file, so that a renewer that kept
# our stdout open could not hang the suite (a test checks that it doesn't).
acquire_renew() {
	timeout 10 "$RLOCK" acquire --renew "$@" >renew.out
	cat renew.out
}

@test "acquire --renew keeps a short lease alive until --pid exits" {
	bg_start sleeper sleep 30
	local spid=$BG_PID token t0
	token=$(acquire_renew --pid "$spid" -t 500ms rn)
	assert_regex "$token" '^[0-9a-f]{32}$'
	t0=$(now_ms)
	while (($(now_ms) - t0 < 1600)); do
		held_by rn "$token" || fail "lost the key after $(($(now_ms) - t0))ms"
		sleep 0.05
	done
	kill -TERM "$spid"
	bg_wait "$spid" 5
	wait_until 5 lock_free rn
	wait_until 5 no_rlock_pids
}

@test "acquire --renew stops when the lock is released by token" {
	bg_start sleeper sleep 30
	local token
	token=$(acquire_renew --pid "$BG_PID" -t 300ms rr)
	held_by rr "$token"
	[[ -n $(rlock_pids) ]] || fail "no renewer process"
	run -0 "$RLOCK" release rr "$token"
	lock_free rr
	wait_until 5 no_rlock_pids
	lock_free rr
}

@test "acquire --renew defaults to the calling shell" {
	bg_start sh sh -c "\"\$RLOCK\" acquire --renew -t 500ms rd > tok 2> err; $(gate "$BATS_TEST_TMPDIR/go")"
	local shpid=$BG_PID token t0
	wait_until 10 file_nonempty tok
	token=$(cat tok)
	t0=$(now_ms)
	while (($(now_ms) - t0 < 1600)); do
		held_by rd "$token" || fail "lost the key after $(($(now_ms) - t0))ms"
		sleep 0.05
	done
	touch go
	bg_wait "$shpid" 5
	wait_until 5 lock_free rd
	wait_until 5 no_rlock_pids
}

@test "acquire --renew --json still prints the JSON" {
	bg_start sleeper sleep 30
	local out
	out=$(acquire_renew --pid "$BG_PID" --json -t 1s rj)
	python3 -c 'import json,sys; d=json.loads(sys.argv[1]); assert d["ttl_ms"] == 1000' "$out"
}

@test "the renewer keeps neither the caller's stdout nor its stdin" {
	bg_start sleeper sleep 30
	local pid fd target
	: >in.txt
	timeout 10 "$RLOCK" acquire --renew --pid "$BG_PID" -t 1s rf >out.txt <in.txt
	wait_until 5 eval '[[ -n $(rlock_pids) ]]'
	for pid in $(rlock_pids); do
		for fd in /proc/"$pid"/fd/*; do
			target=$(readlink "$fd") || continue
			case $target in
			*/out.txt | */in.txt) fail "renewer $pid keeps $fd -> $target" ;;
			esac
		done
	done
}
