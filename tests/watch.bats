#!/usr/bin/env bats
# watch.bats - a holder learns at once that its server restarted or failed
# over, not at its next renewal.  Between renewals the renewal connection
# (run's, and acquire --renew's) is idle, and the kernel tells it when the
# server closes or resets it: rlock then reconnects (following the
# sentinels), checks its token at once and stops the command when the
# token is gone (76), or keeps running when it is still there.
#
# Servers: R (plain) and T (TLS), both restarted without persistence by
# the tests, and a Sentinel set (master, replica, three sentinels) for a
# forced failover to a replica that never got the lock.  Every holder
# runs with -t 30s, so its next renewal would come 10s later: a holder
# stopped within 5s was stopped by the watch.

bats_require_minimum_version 1.5.0
load test_helper
load tls_helper
load ha_helper

setup_file() {
	tls_make_certs
	start_redis R || return 1
	# Without TLS (a server built without it) the TLS test fails with the
	# reason (need_tls); the others run.
	start_redis_tls T || [[ -n ${TLS_MISSING:-} ]] || return 1
	# Tests SIGKILL them.
	disown_servers R T
	start_sentinel_topology || return 1
	export T_DEFAULT_URL=$R_URL
}

teardown_file() { rl_teardown_file; }
setup() { rl_setup; }
teardown() {
	rl_teardown
	sentinels_up
}

# start_watched NAME [rlock options...]: a background `rlock run -t 30s`
# of NAME whose command writes its pid to cmd-NAME and runs until go-NAME
# exists; a TERM makes it write term-NAME first.
start_watched() {
	local name=$1
	shift
	bg_start "holder-$name" "$RLOCK" "$@" run -t 30s "$name" -- bash -c \
		"trap 'touch term-$name; exit 143' TERM; echo \$\$ >cmd-$name; $(gate "$BATS_TEST_TMPDIR/go-$name") & wait"
	HOLDER_PID=$BG_PID
	wait_until 10 file_nonempty "cmd-$name"
	CHILD=$(<"cmd-$name")
	track_pid "$CHILD"
}

# crash NAME: SIGKILL the server (its sockets close as a crash closes
# them), then start it again empty on its port.
crash() {
	local dir
	dir=$(_rl_dir_of "$1") || return 1
	kill -KILL "$(<"$dir/pid")"
	restart_redis "$1" || return 1
	disown "$(<"$dir/pid")" 2>/dev/null || true
}

# assert_stopped_for_loss: the holder exited 76 within 5s, its command
# was sent TERM and is gone, and stderr says the lock was lost.
assert_stopped_for_loss() {
	local name=$1
	# What the holder said is the only trace of why, when it did not
	# stop (the failover test failed now and then under load, and with
	# the sanitizers, cause unknown: its holder runs with -v).
	wait_until 5 pid_gone "$HOLDER_PID" ||
		fail "rlock run still runs 5s after the server lost its lock; it said: $(bg_err "holder-$name")"
	bg_wait "$HOLDER_PID" 1
	assert_equal "$BG_STATUS" 76
	[[ -e term-$name ]] || fail "the command was not sent TERM"
	pid_gone "$CHILD"
	run bg_err "holder-$name"
	assert_output --partial "$name: lock lost: the token no longer holds it; command stopped"
}

@test "a server restarted without persistence: the holder stops its command within seconds (76), and a waiter takes the lock" {
	start_watched rs
	bg_start waiter "$RLOCK" run -w 20s rs -- sh -c 'echo "$RLOCK_TOKEN" >waiter-ran'
	local wpid=$BG_PID
	wait_until 10 has_waiters rs 1
	crash R
	assert_stopped_for_loss rs
	bg_wait "$wpid" 20
	assert_equal "$BG_STATUS" 0
	[[ -s waiter-ran ]]
	lock_free rs
}

@test "a connection the server closed while the lock is intact: the token is checked at once and the command runs on (0)" {
	start_watched ck
	local p
	# Let the lease age a second, then kill the holder's connection: a
	# renewal at once brings the TTL back to 30s, ten seconds early.
	wait_until 5 eval '(( $(pttl ck) < 29000 ))'
	rcli R CLIENT KILL TYPE normal >/dev/null
	wait_until 5 eval '(( $(pttl ck) > 29500 ))' ||
		fail "no renewal after the connection dropped: pttl $(pttl ck)"
	pid_alive "$CHILD"
	[[ ! -e term-ck ]]
	touch go-ck
	bg_wait "$HOLDER_PID" 10
	assert_equal "$BG_STATUS" 0
	run bg_err holder-ck
	assert_output ""
	lock_free ck
}

@test "TLS: a server restarted without persistence stops the holder within seconds (76)" {
	need_tls
	start_watched tr -u "$T_URL" --cacert "$CERTS/ca.crt"
	tlock_held tr
	crash T
	assert_stopped_for_loss tr
	tlock_free tr
}

@test "acquire --renew: a server restarted without persistence is noticed at once, --on-lost term is sent, release says lost (76)" {
	bg_start sleeper bash -c "trap 'touch term-seen; exit 0' TERM; $(gate "$BATS_TEST_TMPDIR/never") & wait"
	local spid=$BG_PID token
	token=$(timeout 10 "$RLOCK" acquire --renew --pid "$spid" --on-lost term -t 30s ar)
	held_by ar "$token"
	crash R
	wait_until 5 test -e term-seen ||
		fail "the followed process was not sent TERM within 5s"
	run -76 --separate-stderr "$RLOCK" release ar "$token"
	assert_stderr --partial "ar: the lock was lost at "
	assert_stderr --partial "the token no longer holds it"
	wait_until 5 no_rlock_pids
}

# full_syncs NODE: how many full resyncs NODE has served as a master.
full_syncs() {
	rcli "$1" INFO stats | tr -d '\r' | awk -F: '$1 == "sync_full" { print $2 }'
}

# failover_story OLD NEW KEY: each node's role, whether it has KEY, its
# clients, the full resyncs it served and the keys it last loaded from a
# master, and what the sentinels logged of failovers.
failover_story() {
	local n s
	for n in "$1" "$2"; do
		echo "$n: $(rcli "$n" ROLE | head -1), the key: $(rcli "$n" EXISTS "$3"), clients: $(rcli "$n" CLIENT LIST | wc -l), full resyncs served: $(full_syncs "$n"), $(rcli "$n" INFO persistence | grep -a rdb_last_load_keys_loaded | tr -d '\r')"
	done
	for s in "${SENTINELS[@]}"; do
		local d="${s}_DIR"
		grep -aE 'failover|switch-master|convert-to-slave|slave-reconf' "${!d}/log" | tail -8 | sed "s/^/$s: /"
	done
}

@test "a forced failover to a replica that never got the lock: the holder stops its command within seconds (76)" {
	local old new k synced
	old=$(ha_master)
	new=$(ha_replica)
	# -v: should it not stop in time, what it tried is in the failure.
	start_watched fo -v -u "$SENTINEL_URL"
	k=$(key fo)
	held_by fo "$(rcli "$old" GET "$k")" "$old"
	wait_until 10 eval "[[ \$(rcli $new EXISTS '$k') == 1 ]]"
	# The replica forgets the lock, as one that missed the grant would.
	rcli "$new" CONFIG SET replica-read-only no >/dev/null
	rcli "$new" DEL "$k" "$k:grant" >/dev/null
	rcli "$new" CONFIG SET replica-read-only yes >/dev/null
	synced=$(full_syncs "$old")
	sentinel_failover
	assert_equal "$(ha_master)" "$new"
	# Under load the sentinels may give up a failover midway and turn the
	# replica back into one of the old master, which resyncs it in full:
	# it then has the lock again when the next attempt promotes it, and
	# the holder rightly holds on.  Take the lock away again and drop the
	# clients as a promotion does, so that the node promoted lacks it.
	if (($(full_syncs "$old") > synced)) &&
		[[ $(rcli "$new" EXISTS "$k") == 1 ]]; then
		rcli "$new" DEL "$k" "$k:grant" >/dev/null
		rcli "$new" CLIENT KILL TYPE normal >/dev/null
	fi
	# Should the holder not stop, say where each node stands.
	wait_until 5 pid_gone "$HOLDER_PID" ||
		fail "rlock run still runs 5s after the failover; it said: $(bg_err holder-fo)
$(failover_story "$old" "$new" "$k")"
	assert_stopped_for_loss fo
	lock_free fo "$new"
}
