#!/usr/bin/env bats
# noscripts.bats - a server where scripts cannot run (EVAL and EVALSHA
# renamed away, as a managed service or a Valkey without Lua leaves it):
# doctor fails a "scripts" check that says why (exit 69), and every lock
# command exits 69 with one line naming the server and the cause, runs
# no command and leaves no key.  Valkey's own answer (NOSCRIPT, then
# "Could not find scripting engine 'lua'" to the EVAL) is covered by the
# unit groups noscripts and fanout.

bats_require_minimum_version 1.5.0
load test_helper

setup_file() {
	start_redis R --rename-command EVALSHA "" --rename-command EVAL ""
	export T_DEFAULT_URL=$R_URL
}

# The line every command prints after "rlock: CMD: ".
why() {
	echo "127.0.0.1:$R_PORT cannot run Lua scripts (EVALSHA is an unknown command): rlock needs EVAL and EVALSHA"
}

# Nothing was written: rlock made no key.
no_keys() {
	[ -z "$(rcli R --scan)" ]
}

@test "noscripts: the server really has no EVAL or EVALSHA" {
	run rcli R EVAL 'return 1' 0
	[[ $output == "ERR unknown command 'EVAL'"* ]]
	run rcli R EVALSHA e0e1f9fabfc9d4800c877a703b823ac0578ff8db 0
	[[ $output == "ERR unknown command 'EVALSHA'"* ]]
}

@test "noscripts: run exits 69 with one line, and the command never runs" {
	run -69 --separate-stderr "$RLOCK" run job -- touch "$BATS_TEST_TMPDIR/ran"
	[ "$stderr" = "rlock: run: $(why)" ]
	[ -z "$output" ]
	[ ! -e "$BATS_TEST_TMPDIR/ran" ]
	no_keys
}

@test "noscripts: run -w exits 69 at once, it does not wait" {
	t0=$(now_ms)
	run -69 --separate-stderr "$RLOCK" run -w 10s job -- true
	[ "$stderr" = "rlock: run: $(why)" ]
	(($(now_ms) - t0 < 5000))
}

@test "noscripts: acquire exits 69 with one line and prints no token" {
	run -69 --separate-stderr "$RLOCK" acquire job
	[ "$stderr" = "rlock: acquire: $(why)" ]
	[ -z "$output" ]
	run -69 --separate-stderr "$RLOCK" acquire -s job
	[ "$stderr" = "rlock: acquire: $(why)" ]
	run -69 --separate-stderr "$RLOCK" acquire -l 3 job
	[ "$stderr" = "rlock: acquire: $(why)" ]
	no_keys
}

@test "noscripts: release and release --force exit 69 with one line" {
	run -69 --separate-stderr "$RLOCK" release job 0123456789abcdef0123456789abcdef
	[ "$stderr" = "rlock: release: $(why)" ]
	run -69 --separate-stderr "$RLOCK" release --force job
	[ "$stderr" = "rlock: release: $(why)" ]
}

@test "noscripts: extend exits 69 with one line" {
	run -69 --separate-stderr "$RLOCK" extend job 0123456789abcdef0123456789abcdef
	[ "$stderr" = "rlock: extend: $(why)" ]
}

@test "noscripts: status NAME exits 69 with one line" {
	run -69 --separate-stderr "$RLOCK" status job
	[ "$stderr" = "rlock: status: $(why)" ]
	[ -z "$output" ]
}

@test "noscripts: doctor fails the scripts check and says why (exit 69)" {
	run -69 --separate-stderr "$RLOCK" doctor
	assert_line "  fail  scripts      cannot run Lua scripts (EVALSHA is an unknown command):"
	assert_line --regexp '^ +rlock needs EVAL and EVALSHA$'
	assert_line --regexp '^[0-9]+ ok, [0-9]+ notes?, [0-9]+ warnings?, 1 failure$'
	[ -z "$stderr" ]
	run -69 --separate-stderr "$RLOCK" --json doctor
	json_check "$output" \
		'[(c["level"], c["message"], c["value"]) for c in d if c["check"] == "scripts"] == [("fail", "cannot run Lua scripts (EVALSHA is an unknown command): rlock needs EVAL and EVALSHA", None)]' \
		'not any(c["check"] in ("acquire", "extend", "release", "wakeup") for c in d)' \
		'[c["level"] for c in d if c["check"] == "cleanup"] == ["ok"]'
	no_keys
}
