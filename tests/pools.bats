#!/usr/bin/env bats
# pools.bats - named pools (issue 35): `rlock pool NAME add|rm|list`, and
# `run`/`acquire --pool NAME [--count K]`, which take K free members in the
# pool's fair line and tell the command which (RLOCK_RESOURCE...).  A pool
# is a lock whose holders each hold a set of its members: the members are
# P{NAME}:members, a holder's the field '#TOKEN' of P{NAME}:holders:meta.

bats_require_minimum_version 1.5.0
load test_helper

hmeta() {
	echo "$(key "$1"):holders:meta"
}

# three NAME: a pool of three members with a url each.
three() {
	"$RLOCK" pool "$1" add env-a url=https://a.example region=eu
	"$RLOCK" pool "$1" add env-b url=https://b.example
	"$RLOCK" pool "$1" add env-c url=https://c.example
}

@test "pool add, list and rm: members, properties, and who holds each, as a table and JSON" {
	local t user host
	user=$(id -un)
	host=$(hostname)
	three envs
	assert_equal "$(rcli R HGET "$(key envs):members" env-a)" $'url=https://a.example\nregion=eu'
	run -0 --separate-stderr "$RLOCK" pool envs
	assert_equal "$stderr" ""
	assert_line --index 0 --regexp '^MEMBER +STATE +HOLDER +PROPERTIES$'
	assert_line --index 1 --regexp '^env-a +free +- +url=https://a.example region=eu$'
	assert_line --index 2 --regexp '^env-b +free +- +url=https://b.example$'
	assert_equal "${#lines[@]}" 4
	t=$("$RLOCK" acquire --pool envs --label job-1)
	run -0 "$RLOCK" pool envs
	assert_line --index 1 --regexp "^env-a +held +$user@$host:[0-9]+ \(${t:0:8}\) +url=https://a.example region=eu\$"
	assert_line --index 2 --regexp '^env-b +free '
	run -0 "$RLOCK" pool --json envs
	json_check "$output" "d['pool'] == 'envs'" "d['key'] == '$(key envs)'" \
		"[m['name'] for m in d['members']] == ['env-a', 'env-b', 'env-c']" \
		"d['members'][0]['properties'] == {'url': 'https://a.example', 'region': 'eu'}" \
		"d['members'][0]['holder']['token_prefix'] == '${t:0:8}'" \
		"d['members'][0]['holder']['command'] == 'job-1'" \
		"d['members'][1]['holder'] is None" "d['members'][0]['removed'] is False"
	# Add again: the properties are replaced.
	"$RLOCK" pool envs add env-b url=https://b2.example
	assert_equal "$(rcli R HGET "$(key envs):members" env-b)" "url=https://b2.example"
	run -0 --separate-stderr "$RLOCK" pool envs rm env-c
	assert_equal "$stderr" ""
	assert_equal "$(rcli R HEXISTS "$(key envs):members" env-c)" 0
	run -0 --separate-stderr "$RLOCK" pool envs rm env-c
	assert_stderr "rlock: pool: envs: env-c was not a member"
	# Options after the operands too.
	run -0 "$RLOCK" pool envs --json
	json_check "$output" "len(d['members']) == 2"
	"$RLOCK" release envs "$t"
}

@test "a pool of three and ten jobs: never two jobs on one member, each told its member and its url" {
	local i pid pids=() c
	three envs
	c="${RLOCK_PREFIX}busy:"
	for ((i = 0; i < 10; i++)); do
		bg_start "j$i" "$RLOCK" run --pool envs -w 60s -- sh -c "
			n=\$(redis-cli -p \$R_PORT INCR '$c'\$RLOCK_RESOURCE)
			echo \"\$RLOCK_RESOURCE \$RLOCK_RESOURCE_URL \$RLOCK_RESOURCE_0 \$n\" >> log
			echo x > held.$i
			$(gate "$BATS_TEST_TMPDIR/go")
			redis-cli -p \$R_PORT DECR '$c'\$RLOCK_RESOURCE > /dev/null"
		pids+=("$BG_PID")
	done
	wait_until 30 eval '[[ $(cat held.* 2>/dev/null | wc -l) == 3 ]]'
	assert_equal "$(cut -d' ' -f1 log | sort | tr '\n' ' ')" "env-a env-b env-c "
	wait_until 30 line_is envs 7
	touch go
	for pid in "${pids[@]}"; do
		bg_wait "$pid" 60
		assert_equal "$BG_STATUS" 0
	done
	assert_equal "$(wc -l <log)" 10
	# Each job alone on its member, told its url, RLOCK_RESOURCE_0 the same.
	run -0 awk '$4 != 1 || $3 != $1 || $2 != "https://" substr($1, 5) ".example"' log
	assert_output ""
	assert_equal "$(rcli R EXISTS "$(key envs):holders" "$(hmeta envs)")" 0
	# The members stay.
	assert_equal "$(rcli R HLEN "$(key envs):members")" 3
}

@test "--count 2: two members, each with its properties; acquire prints them (json, env)" {
	local out
	three envs
	run -0 "$RLOCK" run --pool envs --count 2 -- sh -c 'env | grep ^RLOCK_RESOURCE | sort'
	assert_output "RLOCK_RESOURCE=env-a
RLOCK_RESOURCE_0=env-a
RLOCK_RESOURCE_0_REGION=eu
RLOCK_RESOURCE_0_URL=https://a.example
RLOCK_RESOURCE_1=env-b
RLOCK_RESOURCE_1_URL=https://b.example
RLOCK_RESOURCE_REGION=eu
RLOCK_RESOURCE_URL=https://a.example"
	run -0 "$RLOCK" acquire --pool envs --count 2 --format json
	json_check "$output" "[r['name'] for r in d['resources']] == ['env-a', 'env-b']" \
		"d['resources'][1]['properties'] == {'url': 'https://b.example'}" \
		"'slot' not in d"
	out=$("$RLOCK" acquire --pool envs --format env)
	run -0 sh -c "$out"'; echo "$RLOCK_RESOURCE $RLOCK_RESOURCE_URL $RLOCK_RESOURCE_0_URL"'
	assert_output "env-c https://c.example https://c.example"
	# Now all three are held: another asks in vain.
	run -75 "$RLOCK" run --pool envs -n -- true
}

@test "a SIGKILLed holder's members come back once its lease ends, not before" {
	local k w end since wtok a b
	three envs
	bg_start k "$RLOCK" run --pool envs --count 3 -t 2s -- sh -c 'echo "$RLOCK_TOKEN" > tok.tmp; mv tok.tmp tok; exec sleep 60'
	k=$BG_PID
	wait_until 10 file_nonempty tok
	bg_start w "$RLOCK" run --pool envs --count 2 -w 60s -- sh -c \
		"echo \"\$RLOCK_TOKEN \$RLOCK_RESOURCE_0 \$RLOCK_RESOURCE_1\" > w.tmp; mv w.tmp w"
	w=$BG_PID
	wait_until 10 line_is envs 1
	kill -KILL "$k"
	wait_until 5 pid_gone "$k"
	end=$(rcli R ZSCORE "$(key envs):holders" "$(cat tok)")
	[[ -n $end ]] || fail "the killed holder's place is already gone"
	bg_wait "$w" 20
	assert_equal "$BG_STATUS" 0
	read -r wtok a b <w
	assert_equal "$a $b" "env-a env-b"
	assert_equal "$(last_grant envs token)" "${wtok:0:8}"
	# Its grant came after the dead holder's lease.
	run -0 "$RLOCK" log --json envs
	since=$(python3 -c '
import json, sys
print([e for e in map(json.loads, sys.stdin) if e["event"] == "acquired" and e["token"] == sys.argv[1]][0]["time_ms"])' "${wtok:0:8}" <<<"$output")
	((since >= end)) || fail "members given back $((end - since))ms before the lease ended"
}

@test "a member removed while held stays with its holder and is not handed out again" {
	local t user host
	three envs
	t=$("$RLOCK" acquire --pool envs)
	run -0 --separate-stderr "$RLOCK" pool envs rm env-a
	assert_stderr --regexp "^rlock: pool: envs: env-a stays with its holder .* until it is released\$"
	run -0 "$RLOCK" pool envs
	assert_line --index 3 --regexp "^env-a +removed +[^ ]+ \(${t:0:8}\) +\$"
	run -0 "$RLOCK" pool --json envs
	json_check "$output" "d['members'][-1]['name'] == 'env-a'" "d['members'][-1]['removed'] is True"
	# Added back while held: still its holder's.
	"$RLOCK" pool envs add env-a url=https://a2.example
	run -0 "$RLOCK" run --pool envs --count 2 -- sh -c 'echo $RLOCK_RESOURCE_0 $RLOCK_RESOURCE_1'
	assert_output "env-b env-c"
	"$RLOCK" pool envs rm env-a
	"$RLOCK" release envs "$t"
	# Gone with its holder's release.
	run -0 "$RLOCK" run --pool envs --count 2 -- sh -c 'echo $RLOCK_RESOURCE_0 $RLOCK_RESOURCE_1'
	assert_output "env-b env-c"
	run -64 --separate-stderr "$RLOCK" run --pool envs --count 3 -- true
	assert_stderr "rlock: run: $(key envs):members has 2 member(s), fewer than --count asks for: add some with 'rlock pool NAME add MEMBER'"
}

@test "the line is fair: a waiter for two members is not overtaken by later waiters for one" {
	local t1 t2 w1
	three envs
	t1=$("$RLOCK" acquire --pool envs --count 2)
	bg_start big "$RLOCK" run --pool envs --count 2 -w 60s -- sh -c 'echo big >> order'
	w1=$BG_PID
	wait_until 10 line_is envs 1
	bg_start small "$RLOCK" run --pool envs -w 60s -- sh -c 'echo small >> order'
	wait_until 10 line_is envs 2
	# env-c is free, but the waiter for two came first.
	t2=$("$RLOCK" acquire --pool envs -w 0 2>/dev/null) && fail "took env-c past the line"
	[[ ! -e order ]]
	"$RLOCK" release envs "$t1"
	bg_wait "$w1" 20
	assert_equal "$BG_STATUS" 0
	wait_until 20 eval '[[ $(wc -l <order) == 2 ]]'
	# Granted in the order they came, by the server's history.
	run -0 "$RLOCK" log --json envs
	assert_equal "$(python3 -c '
import json, sys
print(" ".join(e["kind"] for e in map(json.loads, sys.stdin) if e["event"] == "acquired"))' <<<"$output")" "p2 p2 p1"
}

@test "status, log, last and Prometheus work per pool" {
	local t
	three envs
	t=$("$RLOCK" acquire --pool envs --count 2 --label deploy)
	run -0 --separate-stderr "$RLOCK" status envs
	assert_equal "$stderr" ""
	assert_line "  pool: 1 holder (rlock pool NAME lists its members)"
	assert_line --regexp "^    ${t:0:8} members env-a,env-b fence [0-9]+ +age "
	run -0 "$RLOCK" status --json envs
	json_check "$output" "d['locks'][0]['kind'] == 'pool'" \
		"d['locks'][0]['holders'][0]['members'] == ['env-a', 'env-b']"
	"$RLOCK" release envs "$t"
	run -0 "$RLOCK" log envs
	assert_line --index 0 --regexp "  acquired  .*  members env-a,env-b  waited "
	assert_line --index 1 --regexp "  released  .*  members env-a,env-b  held "
	run -0 "$RLOCK" log --json envs
	json_check "$(sed -n 1p <<<"$output")" "d['members'] == ['env-a', 'env-b']" "d['kind'] == 'p2'"
	run -0 "$RLOCK" last --json envs
	json_check "$output" "d['last']['members'] == ['env-a', 'env-b']" "d['last']['exit'] is None"
	run -0 "$RLOCK" last --prometheus envs
	assert_line --regexp '^rlock_last_run_timestamp_seconds\{lock="envs"\} [0-9]+\.[0-9]+$'
	assert_line --regexp '^rlock_last_run_duration_seconds\{lock="envs"\} [0-9.]+$'
	# A pool is not a lock of another kind, nor the other way round.
	t=$("$RLOCK" acquire --pool envs)
	run -64 --separate-stderr "$RLOCK" run envs -- true
	assert_stderr "rlock: run: envs: is a pool held with --pool, not an exclusive lock: every user of a name must ask for the same kind and --limit"
	run -64 --separate-stderr "$RLOCK" run -l 2 envs -- true
	assert_stderr "rlock: run: envs: is a pool held with --pool, not a semaphore of 2 (--limit 2): every user of a name must ask for the same kind and --limit"
}

@test "usage: --count 0, --pool with -l or -s, an empty member, a bad KEY=VALUE: exit 64, one line" {
	run -64 --separate-stderr "$RLOCK" run --pool envs --count 0 -- true
	assert_usage run "rlock: run: invalid --count '0': must be 1..64"
	run -64 --separate-stderr "$RLOCK" acquire --pool envs --count 65
	assert_usage acquire "rlock: acquire: invalid --count '65': must be 1..64"
	run -64 --separate-stderr "$RLOCK" run --pool envs -l 3 -- true
	assert_usage run "rlock: run: --pool cannot be combined with --limit: a pool's holders take its members"
	run -64 --separate-stderr "$RLOCK" run -s --pool envs -- true
	assert_usage run "rlock: run: --pool cannot be combined with --shared: a pool's holders take its members"
	run -64 --separate-stderr "$RLOCK" run --count 2 envs -- true
	assert_usage run "rlock: run: --count needs --pool"
	run -64 --separate-stderr "$RLOCK" acquire --pool envs other
	assert_usage acquire "rlock: acquire: give --pool NAME or a lock NAME, not both"
	run -64 --separate-stderr "$RLOCK" run --pool '' -- true
	assert_usage run "rlock: run: invalid lock name: empty"
	run -64 --separate-stderr "$RLOCK" pool envs add ''
	assert_usage pool "rlock: pool: invalid member name: empty"
	run -64 --separate-stderr "$RLOCK" pool envs add $'a\tb'
	assert_usage pool "rlock: pool: invalid member name: contains a control character"
	run -64 --separate-stderr "$RLOCK" pool envs add m url
	assert_usage pool "rlock: pool: invalid property 'url': not KEY=VALUE"
	run -64 --separate-stderr "$RLOCK" pool envs add m 1x=2
	assert_usage pool "rlock: pool: invalid property '1x=2': its KEY must be 1 to 64 letters, digits and '_', not starting with a digit"
	run -64 --separate-stderr "$RLOCK" pool envs add m my-url=x
	assert_usage pool "rlock: pool: invalid property 'my-url=x': its KEY must be 1 to 64 letters, digits and '_', not starting with a digit"
	run -64 --separate-stderr "$RLOCK" pool envs add m =x
	assert_usage pool "rlock: pool: invalid property '=x': its KEY must be 1 to 64 letters, digits and '_', not starting with a digit"
	run -64 --separate-stderr "$RLOCK" pool envs add m url=a URL=b
	assert_usage pool "rlock: pool: invalid property 'URL=b': its KEY is given twice (keys are upper-cased for variables)"
	run -64 --separate-stderr "$RLOCK" pool envs add m $'url=a\nb'
	assert_usage pool "rlock: pool: invalid property 'url=a\\x0ab': its VALUE contains a control character"
	run -64 --separate-stderr "$RLOCK" pool envs move m
	assert_usage pool "rlock: pool: unknown pool command 'move': add or rm"
	run -64 --separate-stderr "$RLOCK" pool envs rm
	assert_usage pool "rlock: pool: missing MEMBER"
	run -64 --separate-stderr "$RLOCK" pool
	assert_usage pool "rlock: pool: missing pool NAME"
	# Nothing was written.
	assert_equal "$(rcli R EXISTS "$(key envs):members")" 0
	# A pool of no members.
	run -64 --separate-stderr "$RLOCK" run --pool envs -- touch ran
	assert_stderr "rlock: run: $(key envs):members has 0 member(s), fewer than --count asks for: add some with 'rlock pool NAME add MEMBER'"
	[[ ! -e ran ]]
}

@test "members and properties rlock did not write: one line, never a command on junk" {
	local t
	three envs
	rcli R HSET "$(key envs):members" env-a $'url=a\x01b' >/dev/null
	run -70 --separate-stderr "$RLOCK" run --pool envs -- touch ran
	assert_stderr --regexp "^rlock: run: .*acquire \(a pool's member or property that rlock did not write\)"
	assert_equal "${#stderr_lines[@]}" 1
	[[ ! -e ran ]]
	run -70 --separate-stderr "$RLOCK" pool envs
	assert_equal "${#stderr_lines[@]}" 1
	assert_stderr --partial "a member or a property that rlock did not write"
	rcli R HSET "$(key envs):members" env-a 'url' >/dev/null
	run -70 "$RLOCK" run --pool envs -- touch ran
	[[ ! -e ran ]]
	rcli R HSET "$(key envs):members" env-a 'url=https://a.example' >/dev/null
	# A holder's members field of junk: status says so, shows none.
	t=$("$RLOCK" acquire --pool envs)
	rcli R HSET "$(hmeta envs)" "#$t" $'env-a\n' >/dev/null
	run -0 --separate-stderr "$RLOCK" status envs
	assert_stderr "rlock: status: envs: members 'env-a\\x0a' is not what rlock writes (another client's data): shown as unknown"
}

@test "a pool needs one server: with several masters --pool and pool exit 64, nothing written" {
	local s msg
	start_redis A
	start_redis B
	msg="pools need one server (or one Sentinel or Cluster URL): on several independent masters a quorum could give a member to two holders"
	run -64 --separate-stderr "$RLOCK" -u "$R_URL" -u "$A_URL" -u "$B_URL" run --pool envs -- touch ran
	assert_usage run "rlock: run: $msg"
	run -64 --separate-stderr "$RLOCK" -u "$R_URL" -u "$A_URL" -u "$B_URL" acquire --pool envs
	assert_usage acquire "rlock: acquire: $msg"
	run -64 --separate-stderr "$RLOCK" -u "$R_URL" -u "$A_URL" -u "$B_URL" pool envs add m
	assert_stderr "rlock: pool: $msg"
	[[ ! -e ran ]]
	for s in R A B; do
		assert_equal "$(rcli "$s" KEYS "${RLOCK_PREFIX}*")" ""
	done
}
