#!/usr/bin/env bats
# doctor.bats - rlock doctor against real servers, each configuration
# started once for the file: a default server (no AOF), allkeys-lru and
# volatile-ttl with a maxmemory, a durable one (AOF, appendfsync always,
# noeviction), a replica, ACL users without channels, without INFO and
# without the keys; nothing listening; several masters; --json read by a
# parser; and the keyspace unchanged by a run.  Sentinel and Cluster
# topologies are not covered here.

bats_require_minimum_version 1.5.0
load test_helper

setup_file() {
	start_redis R
	start_redis LRU --maxmemory 100mb --maxmemory-policy allkeys-lru
	start_redis VTTL --maxmemory 100mb --maxmemory-policy volatile-ttl
	start_redis DUR --appendonly yes --appendfsync always --maxmemory-policy noeviction
	# The replica's master is VTTL, whose tests look only at eviction.
	start_redis REP --replicaof 127.0.0.1 "$VTTL_PORT"
	wait_until 10 eval '[[ $(rcli REP INFO replication) == *master_link_status:up* ]]'
	rcli R ACL SETUSER nochan on '>pw' '~*' resetchannels '+@all' >/dev/null
	rcli R ACL SETUSER noinfo on '>pw' '~*' '&*' '+@all' '-info' >/dev/null
	rcli R ACL SETUSER nokeys on '>pw' '~other:*' '&*' '+@all' >/dev/null
	# One server by three URLs: 127.0.0.1, 127.0.0.2 and a unix socket.
	export AL_SOCK="/tmp/rlt-al.$$.sock"
	start_redis AL --bind 127.0.0.1 127.0.0.2 --unixsocket "$AL_SOCK" --unixsocketperm 700
	rcli AL ACL SETUSER noinfo on '>pw' '~*' '&*' '+@all' '-info' >/dev/null
	export T_DEFAULT_URL=$R_URL
}

teardown_file() {
	rl_teardown_file
	rm -f "$AL_SOCK"
}

# level JSON CHECK [SERVER]: the level of the first check named CHECK.
level() {
	python3 -c '
import json, sys
for c in json.loads(sys.argv[1]):
    if c["check"] == sys.argv[2] and (len(sys.argv) < 4 or c["server"] == sys.argv[3]):
        print(c["level"]); break
' "$@"
}

# message JSON CHECK: the message of the first check named CHECK.
message() {
	python3 -c '
import json, sys
for c in json.loads(sys.argv[1]):
    if c["check"] == sys.argv[2]:
        print(c["message"]); break
' "$@"
}

# keyspace NAME: every key of server NAME with its value's type, sorted.
keyspace() {
	rcli "$1" --scan | sort | while read -r k; do
		echo "$k $(rcli "$1" TYPE "$k")"
	done
}

@test "doctor: a default server warns that without AOF a restart forgets every lock, with both fixes (exit 1)" {
	run -1 --separate-stderr "$RLOCK" doctor
	assert_line --regexp '^  warn  persistence  no AOF: a restart forgets every lock'
	# The table wraps the message: read it as one line.
	[[ $(tr -s ' \n' ' ' <<<"$output") == *"a second holder can start while the first runs on (fences still increase); fix: keep a restarted server out of service for the longest TTL in use, or appendonly yes with appendfsync always"* ]]
	assert_line --regexp '^  ok    role         master$'
	assert_line --regexp '^  note  replication  no replicas'
	assert_line --regexp '^  ok    eviction     noeviction'
	assert_line --regexp '^  ok    cleanup      the probe left no key behind'
	assert_line "127.0.0.1:$R_PORT"
	refute_line --regexp '^  fail'
	[ -z "$stderr" ]
}

@test "doctor: allkeys-lru with a maxmemory warns that a held lock or its fence can be evicted" {
	run -1 --separate-stderr "$RLOCK" -u "$LRU_URL" --json doctor
	json=$output
	[ "$(level "$json" eviction)" = warn ]
	msg=$(message "$json" eviction)
	[[ $msg == "allkeys-lru with maxmemory 100.00M: any key can be evicted, a held lock's (two holders) or its history, whose IDs are its fences; set maxmemory-policy noeviction" ]]
}

@test "doctor: volatile-ttl with a maxmemory warns that it evicts exactly the keys of held locks" {
	run -1 --separate-stderr "$RLOCK" -u "$VTTL_URL" --json doctor
	json=$output
	[ "$(level "$json" eviction)" = warn ]
	msg=$(message "$json" eviction)
	[[ $msg == "volatile-ttl with maxmemory 100.00M: evicts keys with a TTL, which every held lock has"* ]]
	[[ $msg == *"set maxmemory-policy noeviction" ]]
}

@test "doctor: a durable server (AOF, appendfsync always, noeviction) exits 0, persistence ok" {
	run -0 --separate-stderr "$RLOCK" -u "$DUR_URL" --json doctor
	json=$output
	[ "$(level "$json" persistence)" = ok ]
	[ "$(message "$json" persistence)" = "AOF with appendfsync always: a crash loses no lock" ]
	[ "$(level "$json" eviction)" = ok ]
	json_check "$json" 'all(c["level"] in ("ok", "note") for c in d)'
}

@test "doctor: a user without channel rights: one server's waiters pop their lists, so the release channel's refusal is a note that names the ACL to add" {
	run --separate-stderr "$RLOCK" -u "redis://nochan:pw@127.0.0.1:$R_PORT" --json doctor
	json=$output
	[ "$(level "$json" wakeup)" = note ]
	msg=$(message "$json" wakeup)
	[[ $msg == "SUBSCRIBE refused: waiters of several masters (not one server's) poll, up to 1s late; permission refused to user 'nochan' "*"allow it with ACL SETUSER nochan &$RLOCK_PREFIX*"* ]]
	[ "$(level "$json" pop)" = ok ]
	[ "$(level "$json" acquire)" = ok ]
	[ "$(level "$json" release)" = ok ]
	[ "$(level "$json" cleanup)" = ok ]
	[ -z "$stderr" ]
}

@test "doctor: a user without INFO gets 'unknown' notes, not an error" {
	run -0 --separate-stderr "$RLOCK" -u "redis://noinfo:pw@127.0.0.1:$R_PORT" --json doctor
	json=$output
	for c in memory eviction persistence replication; do
		[ "$(level "$json" "$c")" = note ]
		[ "$(message "$json" "$c")" = "unknown: INFO refused; allow it with ACL SETUSER noinfo +info" ]
	done
	[ "$(level "$json" version)" = ok ]
	[ "$(level "$json" role)" = ok ]
	[ -z "$stderr" ]
}

@test "doctor: a user whose keys are elsewhere fails the probe with the ACL rule (exit 77)" {
	run -77 --separate-stderr "$RLOCK" -u "redis://nokeys:pw@127.0.0.1:$R_PORT" --json doctor
	json=$output
	[ "$(level "$json" acquire)" = fail ]
	[[ $(message "$json" acquire) == *"allow it with ACL SETUSER nokeys ~$RLOCK_PREFIX*, or use a --prefix the user's keys are under" ]]
}

@test "doctor: a replica fails the role check (exit 69) and is not probed" {
	before=$(keyspace VTTL)
	run -69 --separate-stderr "$RLOCK" -u "$REP_URL" --json doctor
	json=$output
	[ "$(level "$json" role)" = fail ]
	[[ $(message "$json" role) == "a replica of 127.0.0.1:$VTTL_PORT: locks must be taken on the master"* ]]
	json_check "$json" 'not any(c["check"] == "acquire" for c in d)'
	[ "$(keyspace VTTL)" = "$before" ]
}

@test "doctor: nothing listening fails at once (exit 69)" {
	port=$(_rl_random_port)
	t0=$(now_ms)
	run -69 --separate-stderr "$RLOCK" -u "redis://127.0.0.1:$port" doctor
	(($(now_ms) - t0 < 1500))
	assert_line --regexp "^  fail  reach        cannot connect to 127.0.0.1:$port: Connection refused$"
}

@test "doctor: an address that never answers fails within the connect timeout (exit 69)" {
	t0=$(now_ms)
	# 192.0.2.0/24 is TEST-NET-1: never routed, so the connect hangs.
	run -69 --separate-stderr "$RLOCK" -u redis://192.0.2.1:6379 --connect-timeout 300ms doctor
	(($(now_ms) - t0 < 2000))
	[[ $output == *"fail  reach"* ]]
}

@test "doctor: several masters are each checked, the worst finding decides" {
	run -1 --separate-stderr "$RLOCK" -u "$R_URL" -u "$DUR_URL" -u "$LRU_URL" --json doctor
	json=$output
	for p in "$R_PORT" "$DUR_PORT" "$LRU_PORT"; do
		[ "$(level "$json" reach "127.0.0.1:$p")" = ok ]
		[ "$(level "$json" cleanup "127.0.0.1:$p")" = ok ]
	done
	[ "$(level "$json" persistence "127.0.0.1:$R_PORT")" = warn ]
	[ "$(level "$json" persistence "127.0.0.1:$DUR_PORT")" = ok ]
	[ "$(level "$json" eviction "127.0.0.1:$LRU_PORT")" = warn ]
}

@test "doctor: one server by two URLs (127.0.0.2, a unix socket, a user without INFO) is a failure naming both, 64 as run's refusal" {
	local a2="redis://127.0.0.2:$AL_PORT" sock="unix://$AL_SOCK"
	run -64 --separate-stderr "$RLOCK" -u "$AL_URL" -u "$R_URL" -u "$a2" doctor
	assert_line --regexp "^  fail  distinct +$AL_URL and $a2 reach$"
	assert_line --partial "1 failure"
	run -64 --separate-stderr "$RLOCK" -u "$sock" -u "$R_URL" -u "$AL_URL" --json doctor
	json_check "$output" \
		'[(c["server"], c["level"]) for c in d if c["check"] == "distinct"] == [("all", "fail")]' \
		'[c["message"] for c in d if c["check"] == "distinct"] == [a[0] + " and " + a[1] + " reach one server (run_id " + a[2] + "): a quorum needs independent masters"]' \
		-- "$sock" "$AL_URL" "$(rcli AL INFO server | sed -n 's/^run_id:\(.\{12\}\).*/\1/p')"
	# Without INFO, the identity key tells.
	run -64 --separate-stderr "$RLOCK" -u "$AL_URL" -u "$R_URL" -u "redis://noinfo:pw@127.0.0.2:$AL_PORT" --json doctor
	json_check "$output" \
		'[c["message"] for c in d if c["check"] == "distinct"] == [a[0] + " reach one server (both read the identity key " + a[1] + "id): a quorum needs independent masters"]' \
		-- "$AL_URL and redis://127.0.0.2:$AL_PORT" "$RLOCK_PREFIX"
	# Three servers: no such failure (the worst finding is a warning).
	run -1 --separate-stderr "$RLOCK" -u "$AL_URL" -u "$R_URL" -u "$DUR_URL" --json doctor
	json_check "$output" '[c for c in d if c["check"] == "distinct"] == []'
}

@test "doctor: --json is a list of {check, server, level, message, value}, the version's with its product" {
	# The product of the server under test, as it names itself (Redis or
	# Valkey).
	local product
	product=$(redis-server --version | cut -d' ' -f1)
	[[ $product == Redis || $product == Valkey ]] || fail "redis-server --version: $(redis-server --version)"
	run -1 --separate-stderr "$RLOCK" --json doctor
	json_check "$output" \
		'isinstance(d, list) and len(d) >= 15' \
		'all(sorted(c) == ["check", "level", "message", "server", "value"] for c in d if c["check"] != "version")' \
		'[sorted(c) for c in d if c["check"] == "version"] == [["check", "level", "message", "product", "server", "value"]]' \
		'[(c["product"], c["message"].startswith(a[1] + " " + c["value"] + ": ")) for c in d if c["check"] == "version"] == [(a[1].lower(), True)]' \
		'all(c["level"] in ("ok", "note", "warn", "fail") for c in d)' \
		'all(c["server"] == a[0] for c in d)' \
		'[c["check"] for c in d][:4] == ["reach", "tls", "auth", "rtt"]' \
		'all(isinstance(c["value"], (int, float)) and c["value"] >= 0 for c in d if c["check"] in ("rtt", "wakeup", "reach"))' \
		'[c["value"] for c in d if c["check"] == "version"][0].count(".") == 2' \
		-- "127.0.0.1:$R_PORT" "$product"
}

@test "doctor: the table fits 80 columns and has no colour when not on a terminal" {
	run -1 --separate-stderr "$RLOCK" -u "redis://nochan:pw@127.0.0.1:$R_PORT" doctor
	while IFS= read -r line; do
		((${#line} <= 80)) || { echo "too long: $line"; return 1; }
	done <<<"$output"
	[[ $output != *$'\033'* ]]
	assert_line --regexp '^[0-9]+ ok, [0-9]+ notes?, 1 warning, 0 failures$'
}

@test "doctor: the keyspace is unchanged by a run, fences included, and a held lock is not touched" {
	token=$("$RLOCK" acquire -t 60s held)
	local fence
	fence=$(meta held fence)
	assert_fence "$fence"
	assert_equal "$(last_grant held fence)" "$fence"
	before=$(keyspace R)
	[[ $before == *"$(key held):log stream"* ]]
	run -1 --separate-stderr "$RLOCK" --json doctor held
	json=$output
	[[ $(python3 -c 'import json,sys; print([c["value"] for c in json.loads(sys.argv[1]) if c["check"] == "acquire"][0])' "$json") == held.doctor-* ]]
	[ "$(keyspace R)" = "$before" ]
	held_by held "$token"
	[ "$(last_grant held fence)" = "$fence" ]
	[ "$(meta held fence)" = "$fence" ]
	run -1 --separate-stderr "$RLOCK" doctor
	[ "$(keyspace R)" = "$before" ]
}

@test "doctor: NAME is checked like any lock name; extra operands are usage errors" {
	run -64 --separate-stderr "$RLOCK" doctor a b
	assert_usage doctor "rlock: doctor: too many arguments"
	run -64 --separate-stderr "$RLOCK" doctor ''
	assert_usage doctor "rlock: doctor: invalid lock name: empty"
}

@test "doctor: AOF with appendfsync everysec warns that a crash loses the last second, with both fixes" {
	start_redis EVS --appendonly yes --appendfsync everysec --maxmemory-policy noeviction
	run -1 --separate-stderr "$RLOCK" -u "$EVS_URL" --json doctor
	json=$output
	[ "$(level "$json" persistence)" = warn ]
	[ "$(message "$json" persistence)" = "AOF with appendfsync everysec: a crash loses the locks of its last second or more; fix: appendfsync always, or keep a restarted server out of service for the longest TTL in use" ]
}

@test "doctor: AOF where CONFIG is refused: a note on what to check, not an error" {
	rcli DUR ACL SETUSER noconf on '>pw' '~*' '&*' '+@all' '-config' >/dev/null
	run -0 --separate-stderr "$RLOCK" -u "redis://noconf:pw@127.0.0.1:$DUR_PORT" --json doctor
	rcli DUR ACL DELUSER noconf >/dev/null
	json=$output
	[ "$(level "$json" persistence)" = note ]
	[ "$(message "$json" persistence)" = "AOF on; appendfsync unknown (CONFIG refused): with always a crash loses no lock, with everysec the last second of them (then keep a restarted server out of service for the longest TTL in use)" ]
}

@test "doctor: a master with replicas and no AOF: the cure is not to restart it at once, and --wait-replicas for failovers" {
	run -1 --separate-stderr "$RLOCK" -u "$VTTL_URL" --json doctor
	json=$output
	[ "$(level "$json" persistence)" = warn ]
	[[ $(message "$json" persistence) == *"fix: never restart a crashed master at once (its replicas would copy its empty data): keep it out for the longest TTL in use, or appendonly yes with appendfsync always" ]]
	[[ $(message "$json" replication) == "1 replica, lag "*"use --wait-replicas 1" ]]
}
