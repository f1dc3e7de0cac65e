#!/usr/bin/env bats
# acl.bats - least privilege: the minimal ACL rule that docs/servers.md's
# "Least privilege" documents (read from that page) runs every subcommand,
# and so does its category-based alternative; keys outside the pattern and
# a refused EVALSHA exit 77 with the rule to add; a user without channel
# rights runs, acquires and releases quietly with exit 0, and its waiters
# are still served within about a second.  The history: the guide's rules
# let log, last and status's last line read it; a user without +xadd still
# takes, renews and gives up every kind of lock, records nothing, and hears
# why from -v (once) and doctor; a user without the history's reads gets 77
# from log and last, with the rule that lets them work.

bats_require_minimum_version 1.5.0
load test_helper

setup_file() {
	# A durable server, so that doctor has nothing to warn about.
	start_redis R --appendonly yes --appendfsync always
	export T_DEFAULT_URL=$R_URL
}

# guide_rule WORD: docs/servers.md's "ACL SETUSER app ..." line that has
# WORD, with this test's prefix and user NAME, as words in RULE.
guide_rule() {
	local line
	line=$(grep -E '^ACL SETUSER app on >secret ' "$REPO_DIR/docs/servers.md" | grep -F -- "$1" | head -n 1)
	[[ -n $line ]] || { echo "docs/servers.md has no ACL SETUSER line with $1" >&2; return 1; }
	line=${line//rlock:/$RLOCK_PREFIX}
	set -f
	read -r -a RULE <<<"$line"
	set +f
}

# make_user NAME WORD [EXTRA...]: create user NAME from the guide's rule that
# has WORD, plus EXTRA rules.
make_user() {
	local name=$1 word=$2
	shift 2
	guide_rule "$word" || return 1
	RULE[2]=$name
	rcli R "${RULE[@]}" "$@" >/dev/null
	[[ $(rcli R ACL GETUSER "$name" | head -n 1) == flags ]]
}

# every_subcommand URL: run, acquire (--renew too), extend, status, status
# NAME, release (--force too), log, last, pool, bench and doctor all succeed.
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
	# The history: the run, then the acquire and release.
	assert_line --regexp '^ *last: [^ ]+ ago on .*, released, exit status not recorded after '
	assert_equal "$(hist_names job)" "acquired released acquired released"
	run -0 --separate-stderr "$RLOCK" -u "$url" log job
	[ -z "$stderr" ]
	assert_equal "${#lines[@]}" 4
	assert_regex "${lines[1]}" ' released .* exit 0( |$)'
	assert_regex "${lines[3]}" ' released .* exit \?( |$)'
	run -0 --separate-stderr "$RLOCK" -u "$url" last job
	assert_regex "$output" '^job: last run ended [^ ]+ ago on .*: released, exit status not recorded after '
	run -0 --separate-stderr "$RLOCK" -u "$url" last --max-age 1h job
	assert_output ""
	run -0 --separate-stderr "$RLOCK" -u "$url" acquire --renew --pid $$ kept
	run -0 --separate-stderr "$RLOCK" -u "$url" release kept "$output"
	run -0 --separate-stderr "$RLOCK" -u "$url" acquire kept
	run -0 --separate-stderr "$RLOCK" -u "$url" release --force kept
	run -0 --separate-stderr "$RLOCK" -u "$url" pool envs add env-a url=https://a.example
	run -0 --separate-stderr "$RLOCK" -u "$url" run --pool envs -- sh -c 'echo "$RLOCK_RESOURCE_URL"'
	assert_output "https://a.example"
	run -0 --separate-stderr "$RLOCK" -u "$url" pool envs
	assert_line --regexp '^env-a +free '
	run -0 --separate-stderr "$RLOCK" -u "$url" pool envs rm env-a
	run -0 --separate-stderr "$RLOCK" -u "$url" bench -c 4 -n 100
	assert_line --regexp '^  violations   0$'
	run -0 --separate-stderr "$RLOCK" -u "$url" --json doctor
	json_check "$output" 'all(c["level"] in ("ok", "note") for c in d)' \
		'[c["level"] for c in d if c["check"] == "history"] == ["ok"]'
}

# no_history_kept: no history stream under this test's prefix.
no_history_kept() {
	assert_equal "$(rcli R --scan --pattern "${RLOCK_PREFIX}*:log")" ""
}

# history_warning USER: what -v says when the server will not record.
history_warning() {
	echo "warning: 127.0.0.1:$R_PORT refused to record the lock's history (XADD): history is not kept; allow it with ACL SETUSER $1 +xadd +xrange +xrevrange"
}

@test "acl: docs/servers.md's minimal rule lets every subcommand work" {
	make_user app -@all
	every_subcommand "redis://app:secret@127.0.0.1:$R_PORT"
	# Nothing beyond it: a key outside the prefix is refused.
	run --separate-stderr rcli R --user app --pass secret GET other
	[[ $output == *NOPERM* ]]
	run --separate-stderr rcli R --user app --pass secret CONFIG GET maxmemory
	[[ $output == *NOPERM* ]]
}

@test "acl: docs/servers.md's minimal rule lets the line's policies work: --priority and --supersede in line, --once-per's period" {
	local url token w1 w2
	make_user pol -@all
	url="redis://pol:secret@127.0.0.1:$R_PORT"
	token=$("$RLOCK" -u "$url" acquire -t 60s pj)
	bg_start w1 "$RLOCK" -u "$url" run -w 20s --supersede --label first pj -- true
	w1=$BG_PID
	wait_until 10 eval '[[ $(rcli R ZCARD "$(key pj):line") == 1 ]]'
	bg_start w2 "$RLOCK" -u "$url" run -w 20s --supersede --priority 5 --label second pj -- sh -c 'echo "$RLOCK_FENCE" > second.ran'
	w2=$BG_PID
	bg_wait "$w1" 5
	assert_equal "$BG_STATUS" 75
	assert_equal "$(bg_err w1)" "rlock: run: pj: superseded by $(id -un)@$(hostname):$w2 (second)"
	"$RLOCK" -u "$url" release pj "$token"
	bg_wait "$w2" 10
	assert_equal "$BG_STATUS" 0
	[ -s second.ran ]
	run -0 --separate-stderr "$RLOCK" -u "$url" run --once-per 30d po -- true
	[ -z "$stderr" ]
	run -75 --separate-stderr "$RLOCK" -u "$url" run --once-per 30d po -- true
	assert_regex "$stderr" "^rlock: run: po: done this period by $(id -un)@$(hostname) pid [0-9]+ at "
	run -1 --separate-stderr "$RLOCK" -u "$url" status po
	assert_line --regexp "^  done this period: $(id -un)@$(hostname) pid [0-9]+ at "
}

@test "acl: docs/servers.md's minimal rule lets a waiter wait on its one connection, blocked on its wake-up list, and be handed the lock" {
	local url token w
	make_user blk -@all
	rcli R ACL LOG RESET >/dev/null
	url="redis://blk:secret@127.0.0.1:$R_PORT"
	token=$("$RLOCK" -u "$url" acquire -t 60s bl)
	bg_start w "$RLOCK" -u "$url" run -w 20s bl -- sh -c 'echo "$RLOCK_FENCE" >bl.ran'
	w=$BG_PID
	# Its one connection, blocked in BLPOP (flags b), none refused.
	wait_until 10 eval '[[ $(rcli R CLIENT LIST | grep ' flags=b ' | grep -c ' user=blk ') == 1 ]]'
	assert_equal "$(rcli R CLIENT LIST | grep -c 'user=blk ')" 1
	"$RLOCK" -u "$url" release bl "$token"
	bg_wait "$w" 10
	assert_equal "$BG_STATUS" 0
	assert_equal "$(bg_err w)" ""
	[ -s bl.ran ]
	# Nothing it did was refused.
	assert_equal "$(rcli R ACL LOG | grep -c blk)" 0
}

@test "acl: without +blpop a waiter keeps its place and is let in at its next beat" {
	local url token w
	make_user noblk -@all -blpop
	url="redis://noblk:secret@127.0.0.1:$R_PORT"
	token=$("$RLOCK" -u "$url" acquire -t 60s nb)
	bg_start w "$RLOCK" -u "$url" run -w 20s nb -- sh -c 'echo "$RLOCK_FENCE" >nb.ran'
	w=$BG_PID
	wait_until 10 eval '[[ $(rcli R ZCARD "$(key nb):line") == 1 ]]'
	"$RLOCK" -u "$url" release nb "$token"
	bg_wait "$w" 10
	assert_equal "$BG_STATUS" 0
	assert_equal "$(bg_err w)" ""
	[ -s nb.ran ]
	# doctor says so, with the rule.
	run --separate-stderr "$RLOCK" -u "$url" --json doctor
	json_check "$output" \
		'[c["level"] for c in d if c["check"] == "pop"] == ["warn"]' \
		'[c["message"] for c in d if c["check"] == "pop"][0].startswith("BLPOP refused: waiters are let in at their next beat, up to 0.4s late, instead of at once; ")' \
		'"+blpop" in [c["message"] for c in d if c["check"] == "pop"][0]'
	rcli R ACL LOG RESET >/dev/null
}

@test "acl: docs/servers.md's category rule lets every subcommand work" {
	make_user cats -@dangerous
	every_subcommand "redis://cats:secret@127.0.0.1:$R_PORT"
}

@test "acl: keys outside the user's pattern exit 77 with the rule and --prefix" {
	make_user app -@all
	local words
	words=$(refused_words R app secret GET other:x)
	[[ $words == NOPERM* ]] || fail "GET other:x as app: $words"
	run -77 --separate-stderr "$RLOCK" -u "redis://app:secret@127.0.0.1:$R_PORT" --prefix other: acquire job
	assert_stderr "rlock: acquire: 127.0.0.1:$R_PORT: permission refused to user 'app' ($words): allow it with ACL SETUSER app ~other:*, or use a --prefix the user's keys are under"
	run -77 --separate-stderr "$RLOCK" -u "redis://app:secret@127.0.0.1:$R_PORT" --prefix other: run job -- true
	[[ $stderr == *"allow it with ACL SETUSER app ~other:*"* ]]
}

@test "acl: a refused EVALSHA exits 77 with the rule to add" {
	make_user noeval -@all -evalsha
	local words
	words=$(refused_words R noeval secret EVALSHA "$(printf %040d 0)" 0)
	[[ $words == "NOPERM "*"'evalsha' command" ]] || fail "EVALSHA as noeval: $words"
	run -77 --separate-stderr "$RLOCK" -u "redis://noeval:secret@127.0.0.1:$R_PORT" acquire job
	assert_stderr "rlock: acquire: 127.0.0.1:$R_PORT: permission refused to user 'noeval' ($words): allow it with ACL SETUSER noeval +evalsha"
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
	# Nobody in line: nothing is published, so nothing refused.
	token=$("$RLOCK" -u "$url" acquire job)
	run -0 --separate-stderr "$RLOCK" -u "$url" -v release job "$token"
	[ "$stderr" = "rlock: release: job: released" ]
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

@test "acl: without +xadd every kind of lock is taken, renewed and given up as usual, nothing is recorded, -v says so once and doctor warns" {
	make_user noxadd -@all -xadd
	url="redis://noxadd:secret@127.0.0.1:$R_PORT"
	# run: the command's status, and nothing on stderr.
	run -0 --separate-stderr "$RLOCK" -u "$url" run job -- echo ran
	assert_output ran
	assert_equal "$stderr" ""
	lock_free job
	run -3 --separate-stderr "$RLOCK" -u "$url" run job -- sh -c 'exit 3'
	assert_equal "$stderr" ""
	lock_free job
	# acquire, extend, release.
	run -0 --separate-stderr "$RLOCK" -u "$url" acquire -t 20s job
	token=$output
	assert_equal "$stderr" ""
	held_by job "$token"
	run -0 --separate-stderr "$RLOCK" -u "$url" extend -t 60s job "$token"
	assert_equal "$stderr" ""
	(($(pttl job) > 20000)) || fail "extend did not reach the server: pttl $(pttl job)"
	run -0 --separate-stderr "$RLOCK" -u "$url" release job "$token"
	assert_equal "$stderr" ""
	lock_free job
	# A waiter with -v is served at the release, and says once, with the
	# rule, that the history is not kept.
	token=$("$RLOCK" -u "$url" acquire -t 60s job)
	bg_start waiter "$RLOCK" -u "$url" -v run -w 20s job -- echo served
	wait_until 5 has_waiters job 1
	run -0 --separate-stderr "$RLOCK" -u "$url" release job "$token"
	assert_equal "$stderr" ""
	bg_wait "$BG_PID" 10
	assert_equal "$BG_STATUS" 0
	assert_equal "$(bg_out waiter)" served
	run bg_err waiter
	assert_line "rlock: run: $(history_warning noxadd)"
	assert_equal "$(grep -c history <<<"$output")" 1
	lock_free job
	# acquire -v: that line, and nothing else.
	run -0 --separate-stderr "$RLOCK" -u "$url" -v acquire -t 30s job
	token=$output
	assert_stderr "rlock: acquire: $(history_warning noxadd)"
	run -0 --separate-stderr "$RLOCK" -u "$url" release job "$token"
	assert_equal "$stderr" ""
	# acquire --renew leaves a renewer that keeps a 1s lease past its
	# TTL, until release ends it.  (The record of a grant with no history
	# entry has no time of its own: counted from before the acquire.)
	local since
	since=$(server_ms)
	run -0 --separate-stderr "$RLOCK" -u "$url" acquire --renew --pid $$ -t 1s kept
	token=$output
	assert_equal "$stderr" ""
	assert_equal "$(grant_tok kept)" "${token:0:8}"
	assert_fence "$(meta kept fence)"
	renewed_past() {
		held_by kept "$token" && (($(server_ms) - since > 1500))
	}
	wait_until 10 renewed_past
	run -0 --separate-stderr "$RLOCK" -u "$url" release kept "$token"
	assert_equal "$stderr" ""
	lock_free kept
	wait_until 5 no_rlock_pids
	# release --force.
	"$RLOCK" -u "$url" acquire -t 30s kept >/dev/null
	run -0 --separate-stderr "$RLOCK" -u "$url" release --force kept
	assert_regex "$stderr" '^rlock: release: kept: removed lock held by .* pid [0-9]+ \(rlock acquire\)$'
	lock_free kept
	# Shared holders, and a semaphore of two places.
	local s1 s2 p1 p2
	s1=$("$RLOCK" -u "$url" acquire -s sh)
	s2=$("$RLOCK" -u "$url" acquire -s sh)
	holders_is sh 2
	run -75 --separate-stderr "$RLOCK" -u "$url" acquire -x -n sh
	"$RLOCK" -u "$url" release sh "$s1"
	"$RLOCK" -u "$url" release sh "$s2"
	holders_is sh 0
	run -0 --separate-stderr "$RLOCK" -u "$url" run -s sh -- true
	assert_equal "$stderr" ""
	p1=$("$RLOCK" -u "$url" acquire -l 2 sem)
	p2=$("$RLOCK" -u "$url" acquire -l 2 sem)
	run -75 --separate-stderr "$RLOCK" -u "$url" acquire -l 2 -n sem
	holders_is sem 2
	"$RLOCK" -u "$url" release sem "$p1"
	"$RLOCK" -u "$url" release sem "$p2"
	holders_is sem 0
	run -0 --separate-stderr "$RLOCK" -u "$url" run -l 2 sem -- true
	assert_equal "$stderr" ""
	# Nothing was recorded, and the user, who may read, finds nothing.
	no_history_kept
	run -1 --separate-stderr "$RLOCK" -u "$url" log job
	assert_output ""
	assert_stderr "rlock: log: job: no history"
	run -0 --separate-stderr "$RLOCK" -u "$url" last job
	assert_output "job: never ran"
	# doctor: the history check warns with the rule, the rest is fine.
	run -1 --separate-stderr "$RLOCK" -u "$url" --json doctor
	json_check "$output" \
		'[c["level"] for c in d if c["check"] == "history"] == ["warn"]' \
		'all(c["level"] in ("ok", "note") for c in d if c["check"] != "history")' \
		'[c["message"] for c in d if c["check"] == "history"][0].endswith("allow it with ACL SETUSER noxadd +xadd +xrange +xrevrange")'
	no_history_kept
}

@test "acl: without the history's reads locks work and are recorded; log and last exit 77 with the rule, and with it they work" {
	make_user noread -@all -xrange -xrevrange
	url="redis://noread:secret@127.0.0.1:$R_PORT"
	run -0 --separate-stderr "$RLOCK" -u "$url" run job -- true
	assert_equal "$stderr" ""
	# XADD is allowed: -v has nothing to say about the history.
	run -0 --separate-stderr "$RLOCK" -u "$url" -v run job -- true
	refute_stderr --partial history
	assert_equal "$(hist_names job)" "acquired released acquired released"
	# status works, without the last run it cannot read.
	run -1 --separate-stderr "$RLOCK" -u "$url" status job
	assert_equal "$stderr" ""
	refute_output --partial 'last:'
	local words why
	words=$(refused_words R noread secret XREVRANGE "$(key job):log" + - COUNT 1)
	[[ $words == "NOPERM "*"'xrevrange' command" ]] || fail "XREVRANGE as noread: $words"
	why="127.0.0.1:$R_PORT: permission refused to user 'noread' ($words): allow it with ACL SETUSER noread +xrange +xrevrange"
	run -77 --separate-stderr "$RLOCK" -u "$url" log job
	assert_output ""
	assert_stderr "rlock: log: $why"
	run -77 --separate-stderr "$RLOCK" -u "$url" log -f job
	assert_output ""
	assert_stderr "rlock: log: $why"
	run -77 --separate-stderr "$RLOCK" -u "$url" last job
	assert_output ""
	assert_stderr "rlock: last: $why"
	run -77 --separate-stderr "$RLOCK" -u "$url" last --prometheus job
	assert_output ""
	assert_stderr "rlock: last: $why"
	# The rule it names is enough for log, log -f, last and status.
	local -a rule
	read -r -a rule <<<"${why#*allow it with }"
	rcli R "${rule[@]}" >/dev/null
	run -0 --separate-stderr "$RLOCK" -u "$url" log job
	assert_equal "${#lines[@]}" 4
	run -0 --separate-stderr "$RLOCK" -u "$url" last job
	assert_regex "$output" '^job: last run ended [^ ]+ ago on .*: exit 0 after '
	run -1 --separate-stderr "$RLOCK" -u "$url" status job
	assert_line --regexp '^ *last: [^ ]+ ago on .*, exit 0 after '
	bg_start follow "$RLOCK" -u "$url" log -f job
	local fpid=$BG_PID
	wait_until 5 lines_at_least "$BATS_TEST_TMPDIR/follow.out" 4
	run -0 "$RLOCK" -u "$url" run job -- true
	wait_until 5 lines_at_least "$BATS_TEST_TMPDIR/follow.out" 6
	kill -INT "$fpid"
	bg_wait "$fpid" 10
	assert_equal "$BG_STATUS" 0
	assert_equal "$(bg_err follow)" ""
	assert_equal "$(wc -l <follow.out)" 6
}

@test "acl: docs/servers.md's minimal rule lets a set of locks work: --with waits in line, is granted, shown, released by its token" {
	local url token
	make_user sets -@all
	url="redis://sets:secret@127.0.0.1:$R_PORT"
	token=$("$RLOCK" -u "$url" acquire -t 60s wb)
	bg_start w "$RLOCK" -u "$url" run -w 20s wa --with wb -- sh -c 'echo "$RLOCK_FENCE_1" > set.ran'
	wait_until 10 eval '[[ $(rcli R ZCARD "$(key wb):line") == 1 ]]'
	run -0 --separate-stderr "$RLOCK" -u "$url" release wb "$token"
	[ -z "$stderr" ]
	bg_wait "$BG_PID" 10
	assert_equal "$BG_STATUS" 0
	assert_equal "$(bg_err w)" ""
	[ -s set.ran ]
	run -0 --separate-stderr "$RLOCK" -u "$url" acquire wa --with wb
	token=$output
	run -0 --separate-stderr "$RLOCK" -u "$url" status wa
	assert_line "  with: wb"
	run -0 --separate-stderr "$RLOCK" -u "$url" release wb "$token"
	[ -z "$stderr" ]
	lock_free wa
	lock_free wb
}
