#!/usr/bin/env bats
# acl.bats - least privilege: the minimal ACL rule that README's "Least
# privilege" documents (read from the README itself) runs every subcommand,
# and so does its category-based alternative; keys outside the pattern and
# a refused EVALSHA exit 77 with the rule to add; a user without channel
# rights runs, acquires and releases quietly with exit 0, and its waiters
# are still served within about a second.

bats_require_minimum_version 1.5.0
load test_helper

setup_file() {
	# A durable server, so that doctor has nothing to warn about.
	start_redis R --appendonly yes --appendfsync always
	export T_DEFAULT_URL=$R_URL
}

# readme_rule WORD: README's "ACL SETUSER app ..." line that has WORD, with
# this test's prefix and user NAME, as words in RULE.
readme_rule() {
	local line
	line=$(grep -E '^ACL SETUSER app on >secret ' "$REPO_DIR/README.md" | grep -F -- "$1" | head -n 1)
	[[ -n $line ]] || { echo "README has no ACL SETUSER line with $1" >&2; return 1; }
	line=${line//rlock:/$RLOCK_PREFIX}
	set -f
	read -r -a RULE <<<"$line"
	set +f
}

# make_user NAME WORD [EXTRA...]: create user NAME from README's rule that
# has WORD, plus EXTRA rules.
make_user() {
	local name=$1 word=$2
	shift 2
	readme_rule "$word" || return 1
	RULE[2]=$name
	rcli R "${RULE[@]}" "$@" >/dev/null
	[[ $(rcli R ACL GETUSER "$name" | head -n 1) == flags ]]
}

# every_subcommand URL: run, acquire (--renew too), extend, status, status
# NAME, release (--force too), bench and doctor all succeed.
every_subcommand() {
	local url=$1 token
	run -0 --separate-stderr "$RLOCK" -u "$url" run job -- true
	[ -z "$stderr" ]
	run -0 --separate-stderr "$RLOCK" -u "$url" acquire -t 30s job
	token=$output
	run -0 --separate-stderr "$RLOCK" -u "$url" extend -t 40s job "$token"
	run -0 --separate-stderr "$RLOCK" -u "$url" status
	assert_line --regexp '^job +held '
	run -0 --separate-stderr "$RLOCK" -u "$url" status job
	run -0 --separate-stderr "$RLOCK" -u "$url" release job "$token"
	[ -z "$stderr" ]
	run -1 --separate-stderr "$RLOCK" -u "$url" status job
	run -0 --separate-stderr "$RLOCK" -u "$url" acquire --renew --pid $$ kept
	run -0 --separate-stderr "$RLOCK" -u "$url" release kept "$output"
	run -0 --separate-stderr "$RLOCK" -u "$url" acquire kept
	run -0 --separate-stderr "$RLOCK" -u "$url" release --force kept
	run -0 --separate-stderr "$RLOCK" -u "$url" bench -c 4 -n 100
	assert_line --regexp '^  violations   0$'
	run -0 --separate-stderr "$RLOCK" -u "$url" --json doctor
	json_check "$output" 'all(c["level"] in ("ok", "note") for c in d)'
}

@test "acl: README's minimal rule lets every subcommand work" {
	make_user app -@all
	every_subcommand "redis://app:secret@127.0.0.1:$R_PORT"
	# Nothing beyond it: a key outside the prefix is refused.
	run --separate-stderr rcli R --user app --pass secret GET other
	[[ $output == *NOPERM* ]]
	run --separate-stderr rcli R --user app --pass secret CONFIG GET maxmemory
	[[ $output == *NOPERM* ]]
}

@test "acl: README's category rule lets every subcommand work" {
	make_user cats -@dangerous
	every_subcommand "redis://cats:secret@127.0.0.1:$R_PORT"
}

@test "acl: keys outside the user's pattern exit 77 with the rule and --prefix" {
	make_user app -@all
	run -77 --separate-stderr "$RLOCK" -u "redis://app:secret@127.0.0.1:$R_PORT" --prefix other: acquire job
	assert_stderr "rlock: acquire: 127.0.0.1:$R_PORT: permission refused to user 'app' (NOPERM this user has no permissions to access one of the keys used as arguments): allow it with ACL SETUSER app ~other:*, or use a --prefix the user's keys are under"
	run -77 --separate-stderr "$RLOCK" -u "redis://app:secret@127.0.0.1:$R_PORT" --prefix other: run job -- true
	[[ $stderr == *"allow it with ACL SETUSER app ~other:*"* ]]
}

@test "acl: a refused EVALSHA exits 77 with the rule to add" {
	make_user noeval -@all -evalsha
	run -77 --separate-stderr "$RLOCK" -u "redis://noeval:secret@127.0.0.1:$R_PORT" acquire job
	assert_stderr "rlock: acquire: 127.0.0.1:$R_PORT: permission refused to user 'noeval' (NOPERM this user has no permissions to run the 'evalsha' command): allow it with ACL SETUSER noeval +evalsha"
	lock_free job
}

@test "acl: without channel rights run, acquire and release are quiet and exit 0" {
	make_user nochan -@all resetchannels
	url="redis://nochan:secret@127.0.0.1:$R_PORT"
	run -0 --separate-stderr "$RLOCK" -u "$url" run job -- echo ran
	[ "$output" = ran ]
	[ -z "$stderr" ]
	lock_free job
	run -0 --separate-stderr "$RLOCK" -u "$url" acquire job
	token=$output
	[ -z "$stderr" ]
	run -0 --separate-stderr "$RLOCK" -u "$url" release job "$token"
	[ -z "$stderr" ]
	lock_free job
	token=$("$RLOCK" -u "$url" acquire job)
	run -0 --separate-stderr "$RLOCK" -u "$url" -v release job "$token"
	[[ $stderr == *"refused the wake-up message"* ]]
	[ "${#stderr_lines[@]}" -eq 1 ]
}

@test "acl: without channel rights a waiter is still served within about a second" {
	make_user nochan -@all resetchannels
	url="redis://nochan:secret@127.0.0.1:$R_PORT"
	token=$("$RLOCK" -u "$url" acquire -t 60s job)
	bg_start waiter "$RLOCK" -u "$url" acquire -w 20s job
	waiter=$BG_PID
	# The waiter has tried once and found it held: its connection is up.
	wait_until 5 eval '[[ $(rcli R CLIENT LIST) == *"user=nochan"* ]]'
	pid_alive "$waiter"
	t0=$(now_ms)
	"$RLOCK" -u "$url" release job "$token"
	bg_wait "$waiter" 10
	elapsed=$(($(now_ms) - t0))
	[ "$BG_STATUS" -eq 0 ]
	held_by job "$(bg_out waiter)"
	((elapsed < 1600)) || { echo "served after ${elapsed}ms"; return 1; }
	[ -z "$(bg_err waiter)" ]
}

@test "acl: without PUBSUB, status still counts the waiters in line" {
	make_user nopubsub -@all -pubsub
	url="redis://nopubsub:secret@127.0.0.1:$R_PORT"
	token=$("$RLOCK" -u "$url" acquire job)
	bg_start waiter "$RLOCK" -u "$url" acquire -w 20s job
	wait_until 5 has_waiters job 1
	run -0 --separate-stderr "$RLOCK" -u "$url" status job
	local fence
	fence=$(meta job fence)
	assert_fence "$fence"
	assert_line --regexp "^job +held +$fence .* +1 +"
	assert_status_row "${lines[1]}" job held "$fence"
	[ -z "$stderr" ]
	run -0 --separate-stderr "$RLOCK" -u "$url" --json status job
	json_check "$output" 'd["locks"][0]["waiters"] == 1'
	"$RLOCK" -u "$url" release job "$token"
	bg_wait "$BG_PID" 10
	[ "$BG_STATUS" -eq 0 ]
}
