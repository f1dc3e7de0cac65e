#!/usr/bin/env bats
# doctor_hostile.bats - rlock doctor against a server whose INFO lies
# (issue 31 item 7, docs/design.md#data-rlock-did-not-write): a replica count of
# 2^63-1, numbers beyond any integer, fields that are no numbers, control
# bytes in values.  The server is the tests' own (hostile_helper.bash):
# it answers PING, INFO and what the probe sends (a grant, the extend and
# the release held, SUBSCRIBE refused so that the wake-up warns, the rest
# as Redis would) with the replies each test writes, so that every other
# check is the same in each test: ok or note, but the wake-up's warning.
# A field that does not read is a warning naming it, its value escaped,
# and doctor exits 1 (a check warns).  The failover check's inputs come
# from a sentinel of the tests' own (SENTINEL MASTER's timing) naming the
# liar as its master (CONFIG GET's replies, in the order asked): junk
# there is "unknown", never a window made of it.

bats_require_minimum_version 1.5.0
load test_helper
load hostile_helper

setup_file() { rl_setup_file; }
teardown_file() { rl_teardown_file; }
setup() { rl_setup; }

teardown() {
	stop_all_hostile
	rl_teardown
}

# ---- helpers ---------------------------------------------------------------

# info_bulk TEXT: TEXT (with \r\n and \xHH escapes) as a RESP bulk string,
# escaped as a rule's reply.
info_bulk() {
	local n
	n=$(printf '%b' "$1" | wc -c)
	printf '$%d\\r\\n%s\\r\\n' "$n" "$1"
}

# info_text [FIELD:VALUE...]: a Redis 7.0 INFO of a durable master with no
# replicas, each FIELD given replacing its line (or added).
info_text() {
	local -A set=()
	local kv k out='' line
	for kv in "$@"; do
		set[${kv%%:*}]=${kv#*:}
	done
	for line in '# Server' redis_version:7.0.15 redis_mode:standalone '' \
		'# Replication' role:master connected_slaves:0 '' \
		'# Memory' used_memory:1048576 used_memory_human:1.00M \
		maxmemory:0 maxmemory_human:0B maxmemory_policy:noeviction '' \
		'# Persistence' aof_enabled:1 aof_last_write_status:ok; do
		k=${line%%:*}
		if [[ $line == *:* && -v set[$k] ]]; then
			line="$k:${set[$k]}"
			unset "set[$k]"
		fi
		out+="$line\\r\\n"
	done
	for k in "${!set[@]}"; do
		out+="$k:${set[$k]}\\r\\n"
	done
	printf '%s' "$out"
}

# start_liar [FIELD:VALUE...]: the server H, answering INFO with
# info_text's text.
start_liar() {
	start_hostile H \
		'PING +PONG\r\n' \
		"INFO $(info_bulk "$(info_text "$@")")" \
		"acquire $GRANT" \
		"extend $OK_1" \
		"release $OK_1" \
		'SUBSCRIBE -NOPERM this user has no permissions to access one of the channels\r\n' \
		'BLPOP *-1\r\n' \
		'PUBSUB *2\r\n$1\r\nc\r\n:0\r\n' \
		'XREVRANGE *1\r\n*2\r\n$3\r\n1-0\r\n*2\r\n$1\r\ne\r\n$1\r\nx\r\n' \
		'DEL :4\r\n' \
		'EXISTS :0\r\n' \
		'SCAN *2\r\n$1\r\n0\r\n*0\r\n' \
		'CONFIG *2\r\n$11\r\nappendfsync\r\n$6\r\nalways\r\n'
}

# doctor_json: rlock doctor --json against H, bounded: a doctor that
# loops on what the server claims is killed (124) and fails the test.
doctor_json() {
	run --separate-stderr timeout 20 "$RLOCK" -u "$H_URL" doctor --json
	((status != 124)) || fail "doctor did not finish within 20s"
}

# field JSON CHECK KEY: KEY of the first check named CHECK.
field() {
	python3 -c '
import json, sys
for c in json.loads(sys.argv[1]):
    if c["check"] == sys.argv[2]:
        print(c[sys.argv[3]]); break
' "$@"
}

# warned JSON: the checks that warn or fail, one a line.
warned() {
	python3 -c '
import json, sys
for c in json.loads(sys.argv[1]):
    if c["level"] in ("warn", "fail"):
        print(c["check"])
' "$1"
}

UNREADABLE_TAIL="the server's INFO is not what Redis writes; check the server"

# ---- tests -----------------------------------------------------------------

@test "doctor_hostile: the server's honest INFO: every check ok or a note, the refused release channel a note on one server (exit 0)" {
	start_liar
	doctor_json
	assert_equal "$status" 0
	assert_equal "$(warned "$output")" ""
	assert_equal "$(field "$output" wakeup level)" note
	assert_equal "$(field "$output" pop level)" ok
	assert_equal "$(field "$output" memory message)" "used 1.00M, no maxmemory"
	assert_equal "$(field "$output" persistence message)" \
		"AOF with appendfsync always: a crash loses no lock"
	assert_equal "$(field "$output" replication level)" note
	assert_equal "$(field "$output" failover message)" \
		"no failover (a direct URL): while it is down no lock can be taken"
	assert_equal "$(field "$output" failover level)" note
}

@test "doctor_hostile: connected_slaves:9223372036854775807 is unreadable, and doctor finishes at once" {
	start_liar connected_slaves:9223372036854775807
	doctor_json
	assert_equal "$status" 1
	assert_equal "$(field "$output" replication level)" warn
	assert_equal "$(field "$output" replication message)" \
		"unknown: INFO field connected_slaves is unreadable ('9223372036854775807'): $UNREADABLE_TAIL"
	assert_equal "$(warned "$output" | sort | tr '\n' ' ')" "replication "
}

@test "doctor_hostile: a count of replicas is no loop bound: 3 claimed, 1 described online, 2 not online" {
	start_liar connected_slaves:3 slave0:ip=10.0.0.2,port=6379,state=online,offset=1,lag=0
	doctor_json
	assert_equal "$status" 1
	assert_equal "$(field "$output" replication message)" \
		"3 replicas, 2 not online, worst lag 0s: a failover now would lose recent locks; use --wait-replicas 1 and fix the replicas"
}

@test "doctor_hostile: a slave line whose lag is no number is unreadable" {
	start_liar connected_slaves:1 slave0:ip=10.0.0.2,port=6379,state=online,offset=1,lag=99999999999999999999
	doctor_json
	assert_equal "$status" 1
	assert_equal "$(field "$output" replication message)" \
		"unknown: a slave line of INFO is unreadable (no state, or a lag that is not a number): check the server"
}

@test "doctor_hostile: used_memory:18446744073709551615 with maxmemory:1 is unreadable, not a wrapped percentage" {
	start_liar used_memory:18446744073709551615 maxmemory:1 maxmemory_human:1B
	doctor_json
	assert_equal "$status" 1
	assert_equal "$(field "$output" memory level)" warn
	assert_equal "$(field "$output" memory message)" \
		"unknown: INFO field used_memory is unreadable ('18446744073709551615'): $UNREADABLE_TAIL"
}

@test "doctor_hostile: used_memory:9223372036854775807 of maxmemory:1 warns without overflow" {
	start_liar used_memory:9223372036854775807 used_memory_human:8E maxmemory:1 maxmemory_human:1B
	doctor_json
	assert_equal "$status" 1
	assert_equal "$(field "$output" memory message)" \
		"used 8E of maxmemory 1B (1000000%): near the limit, new locks will be refused (OOM) or keys evicted; raise maxmemory"
	assert_equal "$(field "$output" memory value)" 1000000
}

@test "doctor_hostile: maxmemory:abc and maxmemory:-1 are unreadable, never 'no maxmemory'" {
	local v
	for v in abc -1 ' 5' 5x; do
		start_liar "maxmemory:$v" maxmemory_policy:allkeys-lru
		doctor_json
		assert_equal "$status" 1
		assert_equal "$(field "$output" memory message)" \
			"unknown: INFO field maxmemory is unreadable ('$v'): $UNREADABLE_TAIL"
		assert_equal "$(field "$output" eviction message)" \
			"unknown: INFO field maxmemory is unreadable ('$v'): $UNREADABLE_TAIL"
		stop_all_hostile
	done
}

@test "doctor_hostile: aof_enabled:2 and a field said twice are unreadable" {
	start_liar aof_enabled:2
	doctor_json
	assert_equal "$status" 1
	assert_equal "$(field "$output" persistence message)" \
		"unknown: INFO field aof_enabled is unreadable ('2'): $UNREADABLE_TAIL"
	stop_all_hostile
	start_liar 'maxmemory_policy:noeviction\r\nmaxmemory_policy:allkeys-lru'
	doctor_json
	assert_equal "$status" 1
	assert_equal "$(field "$output" eviction message)" \
		"unknown: INFO field maxmemory_policy is unreadable ('noeviction'): $UNREADABLE_TAIL"
}

@test "doctor_hostile: control bytes in INFO values reach neither the table nor the JSON raw" {
	start_liar 'used_memory_human:\x1b[2J1.00M' 'maxmemory:\x1b]0;pwned\x07' 'redis_mode:\x9b2Jstandalone'
	run --separate-stderr timeout 20 "$RLOCK" -u "$H_URL" doctor
	assert_equal "$status" 1
	[[ $output$stderr != *$'\e'* && $output$stderr != *$'\x9b'* && $output$stderr != *$'\a'* ]] ||
		fail "a raw control byte reached the terminal: $(od -c <<<"$output" | head)"
	[[ $(tr -s ' \n' ' ' <<<"$output") == *"INFO field maxmemory is unreadable ('\\x1b]0;pwned\\x07')"* ]] ||
		fail "no escaped value: $output"
	assert_line --regexp '^  ok    mode         \\x9b2Jstandalone$'
	doctor_json
	assert_equal "$status" 1
	[[ $output != *$'\e'* ]] || fail "a raw ESC in the JSON"
	# JSON carries the server's bytes as they were, each control byte as
	# \uXXXX: a program reads the value itself.
	[[ $output == *'unreadable (\u0027\u001b]0;pwned\u0007\u0027)'* ||
	   $output == *"unreadable ('\\u001b]0;pwned\\u0007')"* ]] ||
		fail "the JSON does not carry the value: $output"
	assert_equal "$(field "$output" memory message)" \
		"unknown: INFO field maxmemory is unreadable ('"$'\e'"]0;pwned"$'\a'"'): $UNREADABLE_TAIL"
}

@test "doctor_hostile: an INFO of junk lines and no trailing CRLF: each check says what it cannot read" {
	start_hostile H \
		'PING +PONG\r\n' \
		"INFO $(info_bulk 'garbage\r\n:\r\nrole:master\r\nconnected_slaves:0')" \
		'SUBSCRIBE -NOPERM no\r\n'
	doctor_json
	((status != 0)) || fail "doctor passed an INFO of junk"
	assert_equal "$(field "$output" replication level)" note
	assert_equal "$(field "$output" eviction message)" \
		"unknown: INFO has no field maxmemory_policy"
	assert_equal "$(field "$output" persistence message)" \
		"unknown: INFO has no field aof_enabled"
	assert_equal "$(field "$output" memory message)" \
		"unknown: INFO has no field used_memory"
}

@test "doctor_hostile: a grant whose fence is 0, a string or 2^63-1 is no grant: acquire fails (exit 70)" {
	local grant
	for grant in '*2\r\n:1\r\n:0\r\n' '*2\r\n:1\r\n$2\r\n42\r\n' \
		'*2\r\n:1\r\n:9223372036854775807\r\n' '*2\r\n:2\r\n:5\r\n'; do
		start_hostile H 'PING +PONG\r\n' \
			"INFO $(info_bulk "$(info_text)")" "acquire $grant"
		doctor_json
		assert_equal "$status" 70
		assert_equal "$(field "$output" acquire level)" fail
		assert_equal "$(field "$output" acquire message)" \
			"unexpected reply to the acquire script"
		stop_all_hostile
	done
}

@test "doctor_hostile: a PING answered with anything but PONG fails rtt (exit 70)" {
	start_hostile H 'PING :1\r\n'
	doctor_json
	assert_equal "$status" 70
	assert_equal "$(field "$output" rtt message)" "PING: the reply is not PONG"
}

# ---- the failover check: a sentinel's and a master's configuration ----------

# resp_array WORD...: the words as a RESP array of bulk strings, escaped as
# a rule's reply.
resp_array() {
	local out w
	out="*$#\\r\\n"
	for w in "$@"; do
		out+="\$${#w}\\r\\n$w\\r\\n"
	done
	printf '%s' "$out"
}

# sentinel_master FIELD:VALUE...: SENTINEL MASTER's reply naming H, with
# ha_helper's timing (one sentinel, quorum 1), each FIELD given replacing
# its value (ABSENT: left out).
sentinel_master() {
	local -A set=()
	local kv k
	local -a words=()
	for kv in "$@"; do
		[[ -n $kv ]] && set[${kv%%:*}]=${kv#*:}
	done
	for kv in name:mymaster ip:127.0.0.1 "port:$H_PORT" flags:master \
		quorum:1 num-other-sentinels:0 num-slaves:2 \
		down-after-milliseconds:1000 failover-timeout:4000 \
		parallel-syncs:1; do
		k=${kv%%:*}
		if [[ -v set[$k] ]]; then
			[[ ${set[$k]} == ABSENT ]] || words+=("$k" "${set[$k]}")
		else
			words+=("$k" "${kv#*:}")
		fi
	done
	resp_array "${words[@]}"
}

TWO_REPLICAS=(connected_slaves:2
	slave0:ip=10.0.0.2,port=6379,state=online,offset=1,lag=0
	slave1:ip=10.0.0.3,port=6379,state=online,offset=1,lag=0)

# start_sentinel_liar SENTINEL_MASTER_REPLY [CONFIG_REPLY...]: H, a master
# with two replicas answering CONFIG GET with appendfsync always and then
# the replies given (the last repeating; by default diskless sync, delay 0,
# no min-replicas), and HS, a sentinel naming it.  SENTINEL_URL points at
# HS.
start_sentinel_liar() {
	local master=$1
	shift
	local -a config=("$@") rules=()
	local c
	((${#config[@]})) || config=("$(resp_array repl-diskless-sync yes)"
		"$(resp_array repl-diskless-sync-delay 0)"
		"$(resp_array min-replicas-to-write 0)"
		"$(resp_array min-replicas-max-lag 10)")
	for c in "${config[@]}"; do
		rules+=("CONFIG $c")
	done
	start_hostile H \
		'PING +PONG\r\n' \
		"INFO $(info_bulk "$(info_text "${TWO_REPLICAS[@]}")")" \
		"acquire $GRANT" "extend $OK_1" "release $OK_1" \
		'SUBSCRIBE -NOPERM this user has no permissions to access one of the channels\r\n' \
		'BLPOP *-1\r\n' \
		'PUBSUB *2\r\n$1\r\nc\r\n:0\r\n' \
		'XREVRANGE *1\r\n*2\r\n$3\r\n1-0\r\n*2\r\n$1\r\ne\r\n$1\r\nx\r\n' \
		'DEL :4\r\n' 'EXISTS :0\r\n' 'SCAN *2\r\n$1\r\n0\r\n*0\r\n' \
		'CONFIG *2\r\n$11\r\nappendfsync\r\n$6\r\nalways\r\n' \
		"${rules[@]}"
	start_hostile HS "SENTINEL $(sentinel_master "$master")" \
		"SENTINEL $(resp_array 127.0.0.1 "$H_PORT")"
	export SENTINEL_URL="redis-sentinel://127.0.0.1:$HS_PORT#mymaster"
}

# sentinel_doctor: doctor --json through HS, bounded.
sentinel_doctor() {
	run --separate-stderr timeout 20 "$RLOCK" -u "$SENTINEL_URL" doctor --json
	((status != 124)) || fail "doctor did not finish within 20s"
}

# failover JSON KEY: KEY of the failover check.
failover() {
	field "$1" failover "$2"
}

# figures JSON: the failover check's figures, "name=value" a line.
figures() {
	python3 -c '
import json, sys
for c in json.loads(sys.argv[1]):
    if c["check"] == "failover":
        for k, v in c.get("figures", {}).items():
            print("%s=%s" % (k, "null" if v is None else v))
' "$1"
}

FO_WINDOW="failover window ~3s: down-after 1000ms, ~2s to elect and promote (a failed try is retried after 8s, 2 x failover-timeout). Hold with -t 5s or more (renewals come every TTL/3), wait with -w 3s plus the hold."

@test "doctor_hostile: an honest sentinel and master with two replicas: the failover window in numbers" {
	start_sentinel_liar ""
	sentinel_doctor
	assert_equal "$status" 0
	assert_equal "$(warned "$output")" ""
	assert_equal "$(field "$output" sentinel level)" ok
	assert_equal "$(failover "$output" level)" note
	assert_equal "$(failover "$output" value)" 3000
	assert_equal "$(failover "$output" message)" \
		"$FO_WINDOW --wait-replicas 1: -t 8s, -w 5s plus the hold; the new master keeps 1 replica, back by partial resync ~1s per parallel-syncs batch of 1, or by a full one (~1s more) when they got writes the promoted one missed; N above 1 waits for the old master's full resync (~9s once it is back: 8s to take it back as a replica, diskless delay 0s, 1.0MB of data at 50MB/s), for good if it never returns."
	assert_equal "$(figures "$output" | tr '\n' ' ')" \
		"window_ms=3000 ttl_ms=5000 wait_ms=3000 detect_ms=1000 retry_ms=8000 replicas=2 wait1_window_ms=5000 wait1_ttl_ms=8000 resync_ms=9000 dataset_bytes=1048576 min_replicas=0 sentinel_replicas=2 "
}

@test "doctor_hostile: a sentinel's down-after of junk, negative, zero or huge is unreadable, never a window" {
	local v
	for v in abc -1 0 ' 1000' 1000x 2147483648 99999999999999999999 1e3; do
		start_sentinel_liar "down-after-milliseconds:$v"
		sentinel_doctor
		assert_equal "$status" 1
		assert_equal "$(field "$output" sentinel level)" ok
		assert_equal "$(failover "$output" level)" warn
		assert_equal "$(failover "$output" message)" \
			"unknown: sentinel 127.0.0.1:$HS_PORT's down-after-milliseconds is unreadable ('$v'): the failover window cannot be judged; check the sentinel"
		assert_equal "$(failover "$output" value)" None
		assert_equal "$(figures "$output")" ""
		assert_equal "$(warned "$output" | sort | tr '\n' ' ')" "failover "
		stop_all_hostile
	done
}

@test "doctor_hostile: a sentinel's failover-timeout, parallel-syncs or num-slaves of junk, or none, is named" {
	local fv
	for fv in failover-timeout:9223372036854775807 parallel-syncs:0 \
		parallel-syncs:-3 num-slaves:two; do
		start_sentinel_liar "$fv"
		sentinel_doctor
		assert_equal "$(failover "$output" message)" \
			"unknown: sentinel 127.0.0.1:$HS_PORT's ${fv%%:*} is unreadable ('${fv#*:}'): the failover window cannot be judged; check the sentinel"
		stop_all_hostile
	done
	start_sentinel_liar down-after-milliseconds:ABSENT
	sentinel_doctor
	assert_equal "$(failover "$output" level)" warn
	assert_equal "$(failover "$output" message)" \
		"unknown: sentinel 127.0.0.1:$HS_PORT does not say its down-after-milliseconds: the failover window cannot be judged; check the sentinel"
}

@test "doctor_hostile: a sentinel's timing with control bytes reaches the table escaped" {
	start_sentinel_liar $'down-after-milliseconds:\e]0;pwned\a'
	run --separate-stderr timeout 20 "$RLOCK" -u "$SENTINEL_URL" doctor
	assert_equal "$status" 1
	[[ $output$stderr != *$'\e'* && $output$stderr != *$'\a'* ]] ||
		fail "a raw control byte reached the terminal: $(od -c <<<"$output" | head)"
	[[ $(tr -s ' \n' ' ' <<<"$output") == *"down-after-milliseconds is unreadable ('\\x1b]0;pwned\\x07')"* ]] ||
		fail "no escaped value: $output"
}

@test "doctor_hostile: CONFIG GET of junk for the failover's parameters is unreadable, never a number" {
	local on delay min
	on=$(resp_array repl-diskless-sync yes)
	delay=$(resp_array repl-diskless-sync-delay 0)
	min=$(resp_array min-replicas-to-write 0)
	start_sentinel_liar "" "$on" "$(resp_array repl-diskless-sync-delay abc)"
	sentinel_doctor
	assert_equal "$(failover "$output" level)" warn
	assert_equal "$(failover "$output" message)" \
		"unknown: CONFIG GET repl-diskless-sync-delay is unreadable ('abc'): the failover window cannot be judged; check the server"
	assert_equal "$(figures "$output")" ""
	stop_all_hostile
	start_sentinel_liar "" "$(resp_array repl-diskless-sync maybe)"
	sentinel_doctor
	assert_equal "$(failover "$output" message)" \
		"unknown: CONFIG GET repl-diskless-sync is unreadable ('maybe'): the failover window cannot be judged; check the server"
	stop_all_hostile
	start_sentinel_liar "" "$on" "$delay" "$(resp_array min-replicas-to-write -1)"
	sentinel_doctor
	assert_equal "$(failover "$output" message)" \
		"unknown: CONFIG GET min-replicas-to-write is unreadable ('-1'): the failover window cannot be judged; check the server"
	stop_all_hostile
	# Another parameter's name, or a number where a string belongs.
	start_sentinel_liar "" "$on" "$delay" "$min" "$(resp_array appendfsync 10)"
	sentinel_doctor
	assert_equal "$(failover "$output" message)" \
		"unknown: CONFIG GET min-replicas-max-lag is unreadable (''): the failover window cannot be judged; check the server"
	stop_all_hostile
	start_sentinel_liar "" "$on" '*2\r\n$24\r\nrepl-diskless-sync-delay\r\n:0\r\n'
	sentinel_doctor
	assert_equal "$(failover "$output" message)" \
		"unknown: CONFIG GET repl-diskless-sync-delay is unreadable (''): the failover window cannot be judged; check the server"
}

@test "doctor_hostile: CONFIG refused: Redis's defaults, named as assumed, and min-replicas from INFO" {
	start_sentinel_liar "" '-NOPERM this user has no permissions to run the config command\r\n'
	sentinel_doctor
	assert_equal "$(failover "$output" level)" note
	assert_equal "$(failover "$output" message)" \
		"$FO_WINDOW --wait-replicas 1: -t 15s, -w 10s plus the hold; the new master keeps 1 replica, back by partial resync ~1s per parallel-syncs batch of 1, or by a full one (~6s more) when they got writes the promoted one missed; N above 1 waits for the old master's full resync (~14s once it is back: 8s to take it back as a replica, diskless delay 5s, 1.0MB of data at 50MB/s), for good if it never returns. Unknown, so Redis's defaults assumed: repl-diskless-sync yes (CONFIG refused), repl-diskless-sync-delay 5 (CONFIG refused), min-replicas-to-write 0 (CONFIG refused; INFO has no min_slaves_good_slaves)."
	stop_all_hostile
	# INFO's min_slaves_good_slaves says min-replicas is set: one assumed,
	# which a failover of two replicas leaves met a batch later.
	TWO_REPLICAS+=(min_slaves_good_slaves:2)
	start_sentinel_liar "" '-ERR unknown command\r\n'
	sentinel_doctor
	[[ $(failover "$output" message) == "failover window ~4s: down-after 1000ms, ~2s to elect and promote, ~1s for min-replicas-to-write's 1 replica to reconnect "*"Unknown, so Redis's defaults assumed: repl-diskless-sync yes (CONFIG refused), repl-diskless-sync-delay 5 (CONFIG refused), min-replicas-to-write 1 or more (CONFIG refused; INFO has min_slaves_good_slaves)." ]] ||
		fail "$(failover "$output" message)"
	assert_equal "$(figures "$output" | grep min_replicas=)" "min_replicas=null"
}
