#!/usr/bin/env bats
# doctor_failover.bats - doctor's failover check (issue 33 item 3) against
# real Sentinel sets started once for the file: ha_helper's topology (a
# master M, sentinels S1..S3 with down-after 1000ms, failover-timeout
# 4000ms, parallel-syncs 1; diskless sync with delay 0) given a second
# replica, and a master with one replica and one sentinel of its own.
# Each test asserts the exact figures doctor states for those settings
# (the data's size, which the server's memory decides, aside).  No test
# fails a server over: the sets stay as started.

bats_require_minimum_version 1.5.0
load test_helper
load ha_helper

setup_file() {
	start_sentinel_topology || return 1
	start_redis RPL2 --repl-diskless-sync-delay 0 --replicaof 127.0.0.1 "$M_PORT" || return 1
	ha_wait 10 _ha_is_replica_of RPL2 "$M_PORT" || return 1
	ha_wait 20 sentinels_know 2 || return 1
	# One master, one replica, one sentinel (quorum 1).
	start_redis M1 --repl-diskless-sync-delay 0 || return 1
	start_redis R1 --repl-diskless-sync-delay 0 --replicaof 127.0.0.1 "$M1_PORT" || return 1
	ha_wait 10 _ha_is_replica_of R1 "$M1_PORT" || return 1
	start_sentinel T1 "$M1_PORT" --master-name one --quorum 1 || return 1
	export ONE_URL="redis-sentinel://127.0.0.1:$T1_PORT#one"
}

teardown_file() { rl_teardown_file; }
setup() { rl_setup; }
# What a test changed, undone should it have failed half-way.
teardown() {
	rcli M1 CONFIG SET min-replicas-to-write 0 >/dev/null 2>&1
	rcli M ACL DELUSER nocfg >/dev/null 2>&1
	rl_teardown
}

# sentinels_know N: every sentinel of mymaster knows N replicas.
sentinels_know() {
	local s
	for s in S1 S2 S3; do
		[[ $(rcli "$s" SENTINEL MASTER mymaster | sed -n '/^num-slaves$/{n;p}') == "$1" ]] || return 1
	done
}

# failover_of JSON: the failover check's level, value and message, a line
# each, the data's size (which the server's memory decides) as N; then
# its figures, "name=value" a line, dataset_bytes left out.
failover_of() {
	python3 -c '
import json, re, sys
for c in json.loads(sys.argv[1]):
    if c["check"] == "failover":
        print(c["level"])
        print(c["value"])
        print(re.sub(r", [0-9.]+[kMG]?B of data", ", NkB of data", c["message"]))
        for k, v in c.get("figures", {}).items():
            if k != "dataset_bytes":
                print("%s=%s" % (k, "null" if v is None else v))
' "$1"
}

WINDOW_3S="failover window ~3s: down-after 1000ms, ~2s to elect and promote (a failed try is retried after 8s, 2 x failover-timeout). Hold with -t 5s or more (renewals come every TTL/3), wait with -w 3s plus the hold."
RESYNC_9S="(~9s once it is back: 8s to take it back as a replica, diskless delay 0s, NkB of data at 50MB/s)"

@test "doctor_failover: a master with two replicas, sentinels with down-after 1000ms: a 3s window, -t 5s, --wait-replicas 1 -t 8s" {
	run -1 --separate-stderr "$RLOCK" -u "$SENTINEL_URL" --json doctor
	run -0 failover_of "$output"
	assert_equal "$output" "note
3000
$WINDOW_3S --wait-replicas 1: -t 8s, -w 5s plus the hold; the new master keeps 1 replica, back by partial resync ~1s per parallel-syncs batch of 1, or by a full one (~1s more) when they got writes the promoted one missed; N above 1 waits for the old master's full resync $RESYNC_9S, for good if it never returns.
window_ms=3000
ttl_ms=5000
wait_ms=3000
detect_ms=1000
retry_ms=8000
replicas=2
wait1_window_ms=5000
wait1_ttl_ms=8000
resync_ms=9000
min_replicas=0
sentinel_replicas=2"
	# The table, for people.
	run -1 --separate-stderr "$RLOCK" -u "$SENTINEL_URL" doctor
	assert_line --regexp "^  note  failover     failover window ~3s: down-after 1000ms, ~2s to elect and$"
	[[ $(tr -s ' \n' ' ' <<<"$output") == *"Hold with -t 5s or more (renewals come every TTL/3), wait with -w 3s plus the hold. --wait-replicas 1: -t 8s, -w 5s plus the hold;"* ]] ||
		fail "$output"
}

@test "doctor_failover: a master with one replica warns that --wait-replicas 1 cannot ride out a failover" {
	run -1 --separate-stderr "$RLOCK" -u "$ONE_URL" --json doctor
	run -0 failover_of "$output"
	assert_equal "$output" "warn
3000
$WINDOW_3S --wait-replicas 1 cannot ride it out: the new master has no replica, so no grant or renewal counts until the old master is back and fully resynced $RESYNC_9S, none at all if it never returns; add a replica.
window_ms=3000
ttl_ms=5000
wait_ms=3000
detect_ms=1000
retry_ms=8000
replicas=1
wait1_window_ms=null
wait1_ttl_ms=null
resync_ms=9000
min_replicas=0
sentinel_replicas=1"
}

@test "doctor_failover: min-replicas-to-write 1 with one replica warns that the new master would refuse writes" {
	rcli M1 CONFIG SET min-replicas-to-write 1 >/dev/null
	run -1 --separate-stderr "$RLOCK" -u "$ONE_URL" --json doctor
	rcli M1 CONFIG SET min-replicas-to-write 0 >/dev/null
	run -0 failover_of "$output"
	assert_equal "${lines[0]}" warn
	assert_equal "${lines[2]}" "failover window ~3s: down-after 1000ms, ~2s to elect and promote (a failed try is retried after 8s, 2 x failover-timeout); but min-replicas-to-write 1 with 1 replica online: the new master refuses writes (no grant, no renewal) until the old master is back and resynced $RESYNC_9S, for good if it never returns; add a replica or lower min-replicas-to-write"
	assert_line min_replicas=1
}

@test "doctor_failover: a user without CONFIG: Redis's defaults for what CONFIG would tell, named as assumed" {
	rcli M ACL SETUSER nocfg on '>pw' '~*' '&*' '+@all' '-config' >/dev/null
	run -1 --separate-stderr "$RLOCK" -u "redis-sentinel://nocfg:pw@127.0.0.1:$S1_PORT#mymaster" --json doctor
	rcli M ACL DELUSER nocfg >/dev/null
	run -0 failover_of "$output"
	assert_equal "${lines[0]}" note
	assert_equal "${lines[2]}" "$WINDOW_3S --wait-replicas 1: -t 15s, -w 10s plus the hold; the new master keeps 1 replica, back by partial resync ~1s per parallel-syncs batch of 1, or by a full one (~6s more) when they got writes the promoted one missed; N above 1 waits for the old master's full resync (~14s once it is back: 8s to take it back as a replica, diskless delay 5s, NkB of data at 50MB/s), for good if it never returns. Unknown, so Redis's defaults assumed: repl-diskless-sync yes (CONFIG refused), repl-diskless-sync-delay 5 (CONFIG refused), min-replicas-to-write 0 (CONFIG refused; INFO has no min_slaves_good_slaves)."
}
