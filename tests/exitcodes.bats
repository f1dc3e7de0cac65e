#!/usr/bin/env bats
# exitcodes.bats - one test per row of the exit-status table
# (docs/design.md#exit-status).  71 (system error) is provoked by
# interposing on libc: shims make one chosen allocation fail
# (tests/shim/failcalloc.c) or every thread fail to start
# (tests/shim/failthread.c).

bats_require_minimum_version 1.5.0
load test_helper

@test "0: the command succeeded" {
	run -0 "$RLOCK" run x -- true
}

@test "0: status of held locks" {
	"$RLOCK" acquire x >/dev/null
	run -0 "$RLOCK" status x
}

@test "1: status of a free lock" {
	run -1 "$RLOCK" status x
}

@test "N: the command's own status" {
	run -42 "$RLOCK" run x -- sh -c 'exit 42'
	run -1 "$RLOCK" run x -- false
	run -255 "$RLOCK" run x -- sh -c 'exit 255'
}

@test "128+N: the command was killed by signal N" {
	run -138 "$RLOCK" run x -- sh -c 'kill -USR1 $$'
	run -137 "$RLOCK" run x -- sh -c 'kill -KILL $$'
}

@test "64: usage error" {
	run -64 --separate-stderr "$RLOCK" run
	assert_try run
	run -64 --separate-stderr "$RLOCK" run --nope x -- true
	assert_try run
}

@test "69: connection refused" {
	start_redis C
	local port=$C_PORT
	stop_redis C
	run -69 --separate-stderr "$RLOCK" -u "redis://127.0.0.1:$port" run x -- touch ran
	assert_stderr "rlock: run: cannot connect to 127.0.0.1:$port: Connection refused"
	[[ ! -e ran ]]
	run -69 --separate-stderr "$RLOCK" -u "redis://127.0.0.1:$port" acquire x
	assert_stderr "rlock: acquire: cannot connect to 127.0.0.1:$port: Connection refused"
	run -69 --separate-stderr "$RLOCK" -u "redis://127.0.0.1:$port" status
	assert_stderr "rlock: status: cannot connect to 127.0.0.1:$port: Connection refused"
	# A name and an IPv6 address go through the resolver, and the
	# address is named as in a URL (a machine without IPv6 refuses in
	# words of its own).
	run -69 --separate-stderr "$RLOCK" -u "redis://localhost:$port" run x -- touch ran
	assert_stderr "rlock: run: cannot connect to localhost:$port: Connection refused"
	run -69 --separate-stderr "$RLOCK" -u "redis://[::1]:$port" run x -- touch ran
	assert_stderr --regexp "^rlock: run: cannot connect to \[::1\]:$port: [A-Z]"
	[[ ! -e ran ]]
}

@test "69: the default server, tried when none was given, is said to be the default" {
	# In a network namespace of its own nothing listens on 127.0.0.1:6379
	# (a machine's own Redis would answer there); without one, only
	# where nothing listens there.
	local ns=(unshare -rn)
	unset RLOCK_URL REDIS_URL
	if ! unshare -rn true 2>/dev/null; then
		ns=()
		if (exec 9<>/dev/tcp/127.0.0.1/6379) 2>/dev/null; then
			fail "something listens on 127.0.0.1:6379 and unshare -rn is refused: the default server cannot be tested here"
		fi
	fi
	run -69 --separate-stderr "${ns[@]}" "$RLOCK" run x -- touch ran
	assert_stderr --regexp "^rlock: run: cannot connect to 127\.0\.0\.1:6379 \(the default; set -u or RLOCK_URL\): [A-Z][a-z ]+$"
	[[ ! -e ran ]]
	run -69 --separate-stderr "${ns[@]}" "$RLOCK" status
	assert_stderr --regexp "^rlock: status: cannot connect to 127\.0\.0\.1:6379 \(the default; set -u or RLOCK_URL\): "
	# Named by the user, it is theirs: no note.
	run -69 --separate-stderr "${ns[@]}" "$RLOCK" -u redis://127.0.0.1:6379 run x -- touch ran
	assert_stderr --regexp "^rlock: run: cannot connect to 127\.0\.0\.1:6379: [A-Z][a-z ]+$"
	RLOCK_URL=redis://127.0.0.1:6379 run -69 --separate-stderr "${ns[@]}" "$RLOCK" acquire x
	assert_stderr --regexp "^rlock: acquire: cannot connect to 127\.0\.0\.1:6379: [A-Z][a-z ]+$"
	REDIS_URL=redis://127.0.0.1:6379 run -69 --separate-stderr "${ns[@]}" "$RLOCK" acquire x
	assert_stderr --regexp "^rlock: acquire: cannot connect to 127\.0\.0\.1:6379: [A-Z][a-z ]+$"
	[[ ! -e ran ]]
}

@test "69: a unix socket that is not there" {
	run -69 --separate-stderr "$RLOCK" -u "unix://$BATS_TEST_TMPDIR/none.sock" run x -- touch ran
	assert_stderr_line --index 0 --partial "rlock: run: cannot connect to"
	assert_stderr_line --index 0 --partial "No such file or directory"
	[[ ! -e ran ]]
}

@test "69: wrong password" {
	start_redis P --requirepass s3cret
	run -69 --separate-stderr "$RLOCK" -u "redis://:wrong@127.0.0.1:$P_PORT" run x -- touch ran
	assert_stderr --regexp "^rlock: run: 127\.0\.0\.1:$P_PORT: authentication failed: WRONGPASS"
	[[ ! -e ran ]]
}

@test "69: no password for a server that wants one" {
	start_redis P --requirepass s3cret
	run -69 --separate-stderr "$RLOCK" -u "$P_URL" run x -- touch ran
	assert_stderr --regexp "^rlock: run: 127\.0\.0\.1:$P_PORT: .*NOAUTH"
	[[ ! -e ran ]]
}

@test "70: the lock key holds the wrong kind of value" {
	rcli R RPUSH "$(key wt)" a >/dev/null
	local t0
	t0=$(now_ms)
	run -70 --separate-stderr timeout 10 "$RLOCK" acquire wt
	assert_stderr "rlock: acquire: $(key wt) holds a list, not the string rlock keeps there (another client's data): 'rlock release --force wt' removes it"
	run -70 --separate-stderr timeout 10 "$RLOCK" run -w 30s wt -- touch ran
	assert_stderr "rlock: run: $(key wt) holds a list, not the string rlock keeps there (another client's data): 'rlock release --force wt' removes it"
	[[ ! -e ran ]]
	(($(now_ms) - t0 < 8000)) || fail "took $(($(now_ms) - t0))ms"
	[[ $(rcli R TYPE "$(key wt)") == list ]]
	run -70 --separate-stderr timeout 10 "$RLOCK" status wt
	assert_stderr "rlock: status: $(key wt) holds a list, not the string rlock keeps there (another client's data): 'rlock release --force wt' removes it"
	# The fix the line names works, and the lock is usable again.
	run -0 --separate-stderr "$RLOCK" release --force wt
	assert_stderr "rlock: release: wt: removed 1 key of another type (another client's data)"
	[[ $(rcli R EXISTS "$(key wt)") == 0 ]]
	run -0 "$RLOCK" run wt -- true
}

@test "70: the fence counter is not an integer" {
	rcli R SET "$(key wf):fence" abc >/dev/null
	run -70 --separate-stderr timeout 10 "$RLOCK" acquire wf
	assert_stderr_line --index 0 --partial "rlock: acquire: "
	assert_stderr_line --index 0 --partial "$(key wf):fence holds 'abc', which is not a fence rlock wrote"
	lock_free wf
	rcli R DEL "$(key wf):fence" >/dev/null
	rcli R RPUSH "$(key wf):fence" a >/dev/null
	run -70 --separate-stderr timeout 10 "$RLOCK" run wf -- touch ran
	assert_stderr "rlock: run: $(key wf):fence holds a list, not the string rlock keeps there (another client's data): 'rlock release --force wf' removes it"
	[[ ! -e ran ]]
	lock_free wf
	run -0 --separate-stderr "$RLOCK" release --force wf
	assert_stderr "rlock: release: wf: removed 1 key of another type (another client's data)"
	run -0 "$RLOCK" run wf -- true
}

@test "75: busy with -n" {
	"$RLOCK" acquire busy >/dev/null
	run -75 "$RLOCK" run -n busy -- true
	run -75 "$RLOCK" acquire -n busy
}

@test "75: -w ran out" {
	"$RLOCK" acquire busy >/dev/null
	run -75 "$RLOCK" run -w 200ms busy -- true
}

@test "76: release or extend with a token that does not hold the lock" {
	"$RLOCK" acquire l >/dev/null
	run -76 "$RLOCK" release l 0123456789abcdef0123456789abcdef
	run -76 "$RLOCK" extend l 0123456789abcdef0123456789abcdef
}

@test "76: run lost the lock while the command ran" {
	run -76 --separate-stderr "$RLOCK" run -t 300ms lost -- sh -c '
		redis-cli -p "$R_PORT" DEL "$RLOCK_KEY" >/dev/null
		exec sleep 30'
	assert_stderr --regexp '^rlock: run: lost: lock lost: .*; command stopped$'
}

@test "126: the command could not be executed" {
	: >noexec
	chmod 644 noexec
	run -126 "$RLOCK" run x -- ./noexec
}

@test "127: the command was not found" {
	run -127 "$RLOCK" run x -- ./does-not-exist
}

# fail_handle N CMD...: run CMD with the Nth allocation of a library handle
# failing (1: the first; run makes no other).
fail_handle() {
	local nth=$1
	shift
	cc -shared -fPIC -o failcalloc.so "$BATS_TEST_DIRNAME/shim/failcalloc.c" -ldl
	run --separate-stderr env LD_PRELOAD="$PWD/failcalloc.so" \
		ASAN_OPTIONS=verify_asan_link_order=0 \
		FAIL_CALLOC_SIZE="$("$HELPERS/sizes" rlock)" FAIL_CALLOC_NTH="$nth" "$@"
}

@test "71: out of memory making the handle is a system error, not a usage error" {
	fail_handle 1 "$RLOCK" run x -- true
	assert_equal "$status" 71
	assert_stderr "rlock: run: out of memory"
	fail_handle 1 "$RLOCK" acquire x
	assert_equal "$status" 71
	lock_free x
}

@test "71: a run whose renewal thread cannot start stops its command, releases and exits 71" {
	cc -shared -fPIC -o failthread.so "$BATS_TEST_DIRNAME/shim/failthread.c"
	# -t 900ms: the first renewal, and so the thread, is due at 300ms.
	run --separate-stderr env LD_PRELOAD="$PWD/failthread.so" \
		ASAN_OPTIONS=verify_asan_link_order=0 \
		"$RLOCK" run -t 900ms x -- sh -c 'sleep 5; touch ran'
	assert_equal "$status" 71
	assert_stderr "rlock: run: cannot start the renewal thread: Resource temporarily unavailable; command killed"
	[[ ! -e ran ]]
	lock_free x
	run -0 "$RLOCK" run -n x -- true
}

@test "77: the server's ACL refuses a key, a command or a channel rlock needs, with the rule to add" {
	local u=acl$$ words rule
	# Each refusal in the words of the server under test (Redis 7.0 and
	# Valkey differ), whole.
	rcli R ACL SETUSER "${u}k" on '>pw' '~other:*' '&*' '+@all' >/dev/null
	words=$(refused_words R "${u}k" pw GET "$(key x)")
	[[ $words == NOPERM* ]] || fail "GET as ${u}k: $words"
	run -77 --separate-stderr "$RLOCK" -u "redis://${u}k:pw@127.0.0.1:$R_PORT" acquire x
	assert_stderr "rlock: acquire: 127.0.0.1:$R_PORT: permission refused to user '${u}k' ($words): allow it with ACL SETUSER ${u}k ~$RLOCK_PREFIX*, or use a --prefix the user's keys are under"
	rcli R ACL SETUSER "${u}e" on '>pw' '~*' '&*' '+@all' '-evalsha' >/dev/null
	words=$(refused_words R "${u}e" pw EVALSHA "$(printf %040d 0)" 0)
	[[ $words == "NOPERM "*"'evalsha' command" ]] || fail "EVALSHA as ${u}e: $words"
	run -77 --separate-stderr "$RLOCK" -u "redis://${u}e:pw@127.0.0.1:$R_PORT" run x -- true
	assert_stderr "rlock: run: 127.0.0.1:$R_PORT: permission refused to user '${u}e' ($words): allow it with ACL SETUSER ${u}e +evalsha"
	# Refused inside a script (SET of the fence): nothing was written.
	# Redis 7.0 does not name the command (the rule names every one the
	# scripts call); Valkey and Redis 7.2 do (the rule names it).
	rcli R ACL SETUSER "${u}i" on '>pw' '~*' '&*' '+@all' '-set' >/dev/null
	words=$(refused_words R "${u}i" pw EVAL "return redis.call('set', KEYS[1], 'v')" 1 "$(key x)")
	case $words in
	"ERR The user executing the script can't run this command or subcommand") rule="+evalsha +eval +get +set +pexpire" ;;
	"ERR ACL failure in script: User ${u}i has no permissions to run the 'set' command") rule=+set ;;
	*) fail "a script's SET as ${u}i: $words" ;;
	esac
	run -77 --separate-stderr "$RLOCK" -u "redis://${u}i:pw@127.0.0.1:$R_PORT" acquire x
	assert_stderr --partial "permission refused to user '${u}i' ($words): allow it with ACL SETUSER ${u}i $rule"
	lock_free x
	rcli R ACL DELUSER "${u}k" "${u}e" "${u}i" >/dev/null
}
