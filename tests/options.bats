#!/usr/bin/env bats
# options.bats - options may come before or after the operands, as in GNU
# tools, in every subcommand (issue 32): each subcommand is run both ways
# against a real server and must do the same thing (exit status, output,
# who holds the key).  "--" ends the options; POSIXLY_CORRECT does not turn
# this off; run keeps its own rule (nothing after its COMMAND is rlock's).

bats_require_minimum_version 1.5.0
load test_helper

TOKEN_RE='^[0-9a-f]{32}$'

# ttl_between NAME LO HI: the PTTL of lock NAME is in LO..HI ms.
ttl_between() {
	local t
	t=$(pttl "$1")
	((t >= $2 && t <= $3)) || {
		echo "pttl of $1 is $t, not $2..$3" >&2
		return 1
	}
}

@test "acquire NAME -t 10s is acquire -t 10s NAME" {
	local how name
	for how in before after; do
		name=acq-$how
		if [[ $how == before ]]; then
			run -0 --separate-stderr "$RLOCK" acquire -t 10s "$name"
		else
			run -0 --separate-stderr "$RLOCK" acquire "$name" -t 10s
		fi
		assert_equal "$stderr" ""
		assert_output --regexp "$TOKEN_RE"
		held_by "$name" "$output"
		ttl_between "$name" 9000 10000
	done
	# -n after the name: busy, the conflict status, the holder kept.
	local t
	t=$(holder acq-after)
	run -75 "$RLOCK" acquire acq-after -n -q
	assert_output ""
	held_by acq-after "$t"
	run -0 "$RLOCK" acquire acq-after -n -q -E 0
	held_by acq-after "$t"
}

@test "release NAME TOKEN --status 0 is release --status 0 NAME TOKEN" {
	local how name t
	for how in before after; do
		name=rel-$how
		t=$("$RLOCK" acquire "$name")
		held_by "$name" "$t"
		if [[ $how == before ]]; then
			run -0 --separate-stderr "$RLOCK" release --status 0 "$name" "$t"
		else
			run -0 --separate-stderr "$RLOCK" release "$name" "$t" --status 0
		fi
		assert_equal "$stderr" ""
		assert_output ""
		lock_free "$name"
		# The status was recorded: the run counts as a success.
		run -0 "$RLOCK" last --max-age 1h "$name"
		assert_output ""
	done
	# --force after the name, and a token after it is refused as before.
	t=$("$RLOCK" acquire rel-force)
	run -64 --separate-stderr "$RLOCK" release rel-force --force "$t"
	assert_usage release "rlock: release: --force takes no TOKEN"
	held_by rel-force "$t"
	run -0 --separate-stderr "$RLOCK" release rel-force --force -q
	lock_free rel-force
}

@test "extend NAME TOKEN -t 1m is extend -t 1m NAME TOKEN" {
	local how name t
	for how in before after; do
		name=ext-$how
		t=$("$RLOCK" acquire -t 5s "$name")
		ttl_between "$name" 1 5000
		if [[ $how == before ]]; then
			run -0 --separate-stderr "$RLOCK" extend -t 1m "$name" "$t"
		else
			run -0 --separate-stderr "$RLOCK" extend "$name" "$t" -t 1m
		fi
		assert_equal "$stderr" ""
		held_by "$name" "$t"
		ttl_between "$name" 59000 60000
	done
	# Not the holder's token, the option after it: lost (76).
	run -76 "$RLOCK" extend ext-after 0123456789abcdef0123456789abcdef -t 1m -q
	ttl_between ext-after 1 60000
}

@test "status x --json is status --json x: JSON for x only" {
	"$RLOCK" acquire x >/dev/null
	"$RLOCK" acquire y >/dev/null
	local first
	for args in "x --json" "--json x"; do
		# shellcheck disable=SC2086
		run -0 --separate-stderr "$RLOCK" status $args
		assert_equal "$stderr" ""
		json_check "$output" \
			'[l["name"] for l in d["locks"]] == ["x"]' \
			'd["locks"][0]["held"] is True'
	done
	# A free lock named after the option: exit 1, JSON all the same.
	run -1 --separate-stderr "$RLOCK" status free1 -q --json
	json_check "$output" '[(l["name"], l["held"]) for l in d["locks"]] == [("free1", False)]'
	# Global options after the names: another prefix, where x is free.
	run -1 --separate-stderr "$RLOCK" status x --prefix "other.$RLOCK_PREFIX" --json
	json_check "$output" '[(l["name"], l["held"]) for l in d["locks"]] == [("x", False)]'
}

@test "log NAME -n 1 is log -n 1 NAME" {
	run -0 "$RLOCK" run lg -- true
	run -3 "$RLOCK" run lg -- sh -c 'exit 3'
	run -0 --separate-stderr "$RLOCK" log -n 1 lg
	local before=$output
	assert_equal "${#lines[@]}" 1
	assert_output --partial "released"
	assert_output --partial "exit 3"
	run -0 --separate-stderr "$RLOCK" log lg -n 1
	assert_equal "$stderr" ""
	assert_equal "$output" "$before"
	run -0 --separate-stderr "$RLOCK" log lg --json -n 1
	json_check "$output" 'd["event"] == "released"' 'd["exit"] == 3'
	# Two names, however the options are placed, are still too many.
	run -64 --separate-stderr "$RLOCK" log lg -n 1 other
	assert_usage log "rlock: log: too many arguments"
}

@test "last j --max-age 26h fails after a failed run, as last --max-age 26h j does" {
	run -2 "$RLOCK" run j -- sh -c 'exit 2'
	run -1 --separate-stderr "$RLOCK" last j --max-age 26h
	assert_output --regexp '^j: no successful run within 26h0m: last success never; last run .*: exit 2 after '
	local after=$output
	run -1 --separate-stderr "$RLOCK" last --max-age 26h j
	assert_output --regexp '^j: no successful run within 26h0m: last success never; '
	# Not a lock named "--max-age": no line for it, under POSIXLY_CORRECT
	# too (GNU getopt's permutation is off there; ours is not).
	refute_output --partial -- "--max-age"
	POSIXLY_CORRECT=1 run -1 --separate-stderr "$RLOCK" last j --max-age 26h
	assert_output --regexp '^j: no successful run within 26h0m: '
	# A successful run: both forms are silent and 0.
	run -0 "$RLOCK" run j -- true
	run -0 --separate-stderr "$RLOCK" last j --max-age 26h
	assert_output ""
	run -0 --separate-stderr "$RLOCK" last --max-age 26h j
	assert_output ""
	# Several names with the option between them.
	run -1 --separate-stderr "$RLOCK" last j --max-age 26h never-ran
	assert_output "never-ran: no successful run within 26h0m: last success never; never ran"
	run -0 --separate-stderr "$RLOCK" last j --json
	json_check "$output" 'd["lock"] == "j"' 'd["last_success"]["exit"] == 0'
}

@test "doctor NAME --json is doctor --json NAME" {
	local a b
	run --separate-stderr "$RLOCK" doctor --json dr
	a=$status
	json_check "$output" '[k["check"] for k in d][0] == "reach"' \
		'all(k["level"] != "fail" for k in d)'
	local checks
	checks=$(python3 -c 'import json,sys; print([(k["check"], k["level"]) for k in json.load(sys.stdin)])' <<<"$output")
	run --separate-stderr "$RLOCK" doctor dr --json
	b=$status
	assert_equal "$b" "$a"
	assert_equal "$(python3 -c 'import json,sys; print([(k["check"], k["level"]) for k in json.load(sys.stdin)])' <<<"$output")" "$checks"
	run -64 --separate-stderr "$RLOCK" doctor dr --json other
	assert_usage doctor "rlock: doctor: too many arguments"
}

@test "bench: its options and the global ones in any order; an operand anywhere is refused" {
	run -0 --separate-stderr "$RLOCK" bench --json -c 2 -n 20 --no-ping --prefix "b.$RLOCK_PREFIX"
	json_check "$output" 'd["clients"] == 2' 'd["cycles"] == 20'
	run -64 --separate-stderr "$RLOCK" bench -c 2 x -n 20
	assert_usage bench "rlock: bench: unexpected argument 'x'"
	run -64 --separate-stderr "$RLOCK" bench x -c 2
	assert_usage bench "rlock: bench: unexpected argument 'x'"
}

@test "help: an option after the command name, and before it" {
	local want
	want=$("$RLOCK" status --help)
	run -0 --separate-stderr "$RLOCK" help status -q
	assert_equal "$output" "$want"
	run -0 --separate-stderr "$RLOCK" help -q status
	assert_equal "$output" "$want"
	run -64 --separate-stderr "$RLOCK" help status --bogus
	assert_usage help "rlock: help: unknown option '--bogus'"
}

@test "-- ends the options: a following -x is a lock name" {
	run -64 --separate-stderr "$RLOCK" status -x
	assert_usage status "rlock: status: unknown option '-x'"
	run -1 --separate-stderr "$RLOCK" status -- -x
	assert_equal "$stderr" ""
	assert_line --index 1 --regexp '^-x +free '
	run -1 --separate-stderr "$RLOCK" status --json -- -x
	json_check "$output" '[(l["name"], l["held"]) for l in d["locks"]] == [("-x", False)]'
	# acquire takes the lock named "-n", not -n; release gives it back.
	run -0 "$RLOCK" acquire -t 10s -- -n
	assert_output --regexp "$TOKEN_RE"
	local t=$output
	held_by -n "$t"
	ttl_between -n 9000 10000
	run -0 "$RLOCK" release -- -n "$t"
	lock_free -n
	# Options before "--" still count; after it nothing is an option.
	run -64 --separate-stderr "$RLOCK" acquire x -- -t 10s
	assert_usage acquire "rlock: acquire: too many arguments"
	lock_free x
}

@test "POSIXLY_CORRECT=1 in the environment changes nothing" {
	export POSIXLY_CORRECT=1
	run -0 "$RLOCK" acquire px -t 10s
	local t=$output
	held_by px "$t"
	ttl_between px 9000 10000
	run -0 "$RLOCK" extend px "$t" -t 1m
	ttl_between px 59000 60000
	run -0 --separate-stderr "$RLOCK" status px --json
	json_check "$output" '[l["name"] for l in d["locks"]] == ["px"]'
	run -0 "$RLOCK" release px "$t" --status 0
	lock_free px
}

@test "bad options after the operands: the same usage errors as before them" {
	run -64 --separate-stderr "$RLOCK" status x --bogus
	assert_usage status "rlock: status: unknown option '--bogus'"
	run -64 --separate-stderr "$RLOCK" log x -n
	assert_usage log "rlock: log: option '-n' requires a value"
	run -64 --separate-stderr "$RLOCK" acquire x --ttl=5ms
	assert_usage acquire "rlock: acquire: invalid --ttl '5ms': must be between 10ms and 30d"
	run -64 --separate-stderr "$RLOCK" release x --json=1
	assert_usage release "rlock: release: option '--json' takes no value"
	run -64 --separate-stderr "$RLOCK" acquire a -t 1s b
	assert_usage acquire "rlock: acquire: too many arguments"
	run -64 --separate-stderr "$RLOCK" extend x -t 1m
	assert_usage extend "rlock: extend: missing TOKEN (give it or set RLOCK_TOKEN)"
	lock_free x
	lock_free a
}

@test "run: options after NAME are rlock's, after COMMAND the command's" {
	run -0 --separate-stderr "$RLOCK" run rn -t 10s -- sh -c 'printf %s "$RLOCK_NAME"'
	assert_output "rn"
	# -n after the command is echo's, not rlock's nonblock.
	run -0 --separate-stderr "$RLOCK" run rn -- echo -n hi
	assert_output "hi"
	run -0 --separate-stderr "$RLOCK" run rn echo --json
	assert_output "--json"
	lock_free rn
}
