#!/usr/bin/env bats
# fence.bats - the fence never goes back.  A grant's fence is the id of
# its entry in the lock's history, the stream P{N}:log: (MS + 1) * 1000 +
# SEQ (lib/scripts/entry.lua), about the server's clock in µs; a new
# stream starts above the :fence counter (an older rlock's, or the one
# several masters raise) and at the clock.  So a server that forgot the
# stream still hands out a fence above every one before: a restart without
# persistence, the stream deleted, a replica promoted that missed the last
# grants (by hand, by the sentinels, in a cluster), masters of a Redlock
# restarted.  Each test takes fences, makes the server forget, shows that
# it did forget (the record of the last grant, P{N}:grant, is gone or
# behind), and compares the next fence with every one before and with the
# server's TIME around it.  And a fence is exact: the same digits, below
# 2^53, wherever rlock shows it.
#
# Started once for the file: a server R (the tests restart it), three
# independent masters N1..N3, the Sentinel topology (M, RPL, S1..S3) and a
# cluster of three masters with a replica each (ha_helper).  The failover
# tests come last in their group and leave the topology whole.  The master
# and replica promoted by hand are the test's own.

bats_require_minimum_version 1.5.0
load test_helper
load ha_helper

setup_file() {
	start_redis R || return 1
	export T_DEFAULT_URL=$R_URL
	start_redis N1 || return 1
	start_redis N2 || return 1
	start_redis N3 || return 1
	start_sentinel_topology || return 1
	start_cluster --replicas || return 1
	# Tests SIGKILL data nodes.
	disown_servers M RPL $CLUSTER_NODES_LIST
}

teardown_file() {
	rl_teardown_file
}

setup() {
	rl_setup
	servers_up R N1 N2 N3
	U3=(-u "$N1_URL" -u "$N2_URL" -u "$N3_URL")
	SU=(-u "$SENTINEL_URL")
}

teardown() {
	rl_teardown
}

# take_fence [rlock options...] NAME: run NAME (waiting up to 10s for it)
# with a command that prints its RLOCK_FENCE.
take_fence() {
	local name=${*: -1}
	"$RLOCK" "${@:1:$#-1}" run -w 10s "$name" -- sh -c 'echo "$RLOCK_FENCE"'
}

# counter NAME [SERVER]: lock NAME's fence counter (empty when none): a
# grant reads it only when it makes the stream; several masters raise it.
counter() {
	rcli "${2:-R}" GET "$(key "$1"):fence"
}

# gfence NAME [SERVER]: the fence of lock NAME's last exclusive grant, as
# its record P{NAME}:grant has it while it holds, and its history after.
gfence() {
	meta "$1" fence "${2:-R}"
}

# last_fence NAME [SERVER]: the fence of the newest grant (exclusive,
# shared or semaphore) in lock NAME's history: its entry's id's.
last_fence() {
	last_grant "$1" fence "${2:-R}"
}

# holder_fence NAME TOKEN [SERVER]: the fence in a shared or semaphore
# holder's metadata (its first line).
holder_fence() {
	rcli "${3:-R}" HGET "$(key "$1"):holders:meta" "$2" | sed -n 1p
}

# replica_up NAME MASTER_PORT: NAME replicates the server on MASTER_PORT
# with its link up.
replica_up() {
	local info
	info=$(rcli "$1" INFO replication | tr -d '\r')
	[[ $info == *role:slave* && $info == *"master_port:$2"$'\n'* &&
		$info == *master_link_status:up* ]]
}

# hold_fence [rlock options...] NAME: acquire NAME (waiting up to 10s)
# and leave it held: HF its fence, HT its token.
hold_fence() {
	local out
	out=$("$RLOCK" "${@:1:$#-1}" acquire --json -w 10s "${*: -1}") || return 1
	[[ $out =~ \"fence\":([0-9]+), ]] || return 1
	HF=${BASH_REMATCH[1]}
	HT=$(json_token "$out")
}

# json_token JSON: the token in acquire's JSON.
json_token() {
	python3 -c 'import json, sys; print(json.loads(sys.argv[1])["token"])' "$1"
}

# no_replicas NAME: server NAME has no replica connected.
no_replicas() {
	[[ $(rcli "$1" INFO replication | tr -d '\r') == *connected_slaves:0* ]]
}

# ---- one server ---------------------------------------------------------------

@test "a fence is the same digits in acquire --json, RLOCK_FENCE, status --json, the table and meta: below 2^53, never an exponent" {
	local json f g
	run -0 --separate-stderr "$RLOCK" acquire --json -t 30s ex
	json=$output
	# As the JSON text has it: plain digits, then the next member.
	[[ $json =~ \"fence\":([0-9]+), ]] || fail "no plain fence in $json"
	f=${BASH_REMATCH[1]}
	assert_fence "$f"
	json_check "$json" 'type(d["fence"]) is int' 'd["fence"] == int(a[0])' \
		'd["fence"] < 2**53 and int(float(d["fence"])) == d["fence"]' -- "$f"
	assert_equal "$(meta ex fence)" "$f"
	# The id of its history entry, and no counter written.
	assert_equal "$(last_fence ex)" "$f"
	assert_equal "$(counter ex)" ""
	run -0 --separate-stderr "$RLOCK" status --json ex
	assert_equal "$(grep -o '"fence":[^,}]*' <<<"$output" | sort -u)" "\"fence\":$f"
	json_check "$output" 'd["locks"][0]["fence"] == int(a[0])' \
		'd["locks"][0]["holders"][0]["fence"] == int(a[0])' -- "$f"
	run -0 --separate-stderr "$RLOCK" status ex
	assert_status_row "${lines[1]}" ex held "$f"
	"$RLOCK" release ex "$(json_token "$json")"

	# In the environment, for the shell's own arithmetic (bash's and sh's,
	# 64-bit): one more is the next integer, as Python counts.
	eval "$("$RLOCK" acquire --format env ex)"
	assert_fence "$RLOCK_FENCE" "$((f + 1))"
	assert_equal "$((RLOCK_FENCE + 1))" "$(python3 -c 'import sys; print(int(sys.argv[1]) + 1)' "$RLOCK_FENCE")"
	assert_equal "$(meta ex fence)" "$RLOCK_FENCE"
	"$RLOCK" release ex
	run -0 "$RLOCK" run ex -- sh -c 'echo "$RLOCK_FENCE $((RLOCK_FENCE + 1))"'
	g=${output%% *}
	assert_fence "$g" "$((RLOCK_FENCE + 1))"
	assert_equal "${output#* }" "$(python3 -c 'import sys; print(int(sys.argv[1]) + 1)' "$g")"
	assert_equal "$(gfence ex)" "$g"
	assert_equal "$(last_fence ex)" "$g"

	# A shared holder's and a semaphore holder's metadata: digits too.
	local name
	for name in hs hl; do
		if [[ $name == hs ]]; then
			eval "$("$RLOCK" acquire -s --format env "$name")"
		else
			eval "$("$RLOCK" acquire -l 2 --format env "$name")"
		fi
		assert_fence "$RLOCK_FENCE"
		assert_equal "$(holder_fence "$name" "$RLOCK_TOKEN")" "$RLOCK_FENCE"
		assert_equal "$(last_fence "$name")" "$RLOCK_FENCE"
		run -0 "$RLOCK" status --json "$name"
		json_check "$output" 'd["locks"][0]["holders"][0]["fence"] == int(a[0])' -- "$RLOCK_FENCE"
	done
}

@test "a server restarted without persistence: the next fence is above every one before" {
	local f=() b a t
	f[0]=$(take_fence rs)
	f[1]=$(take_fence rs)
	# Held across the restart, which forgets it.
	t=$("$RLOCK" acquire -t 60s rs)
	f[2]=$(meta rs fence)
	assert_increasing "${f[@]}"
	restart_redis R
	assert_equal "$(rcli R EXISTS "$(key rs)" "$(key rs):grant" "$(key rs):log" "$(key rs):fence")" 0
	b=$(server_us)
	f[3]=$(take_fence rs)
	a=$(server_us)
	assert_increasing "${f[@]}"
	# From the clock, the stream being gone.
	assert_fence "${f[3]}" "$b" "$a"
	assert_equal "$(gfence rs)" "${f[3]}"
	assert_equal "$(last_fence rs)" "${f[3]}"
	run -76 "$RLOCK" release rs "$t"
}

@test "an old small counter (from before the clock floor) is overtaken: the next fence is the clock's, above it" {
	local b a f
	rcli R SET "$(key up):fence" 41 >/dev/null
	b=$(server_us)
	f=$(take_fence up)
	a=$(server_us)
	assert_fence "$f" "$b" "$a"
	((f > 41))
	assert_equal "$(gfence up)" "$f"
	# Taken as the new stream's floor, then deleted.
	assert_equal "$(counter up)" ""
}

@test "a counter ahead of the clock is a new stream's floor (then deleted), and a stream whose ids are ahead goes on from them: fences above, increasing, across a full millisecond" {
	local c f g ms e h
	c=$(($(server_us) + 1000000000))
	rcli R SET "$(key ah):fence" "$c" >/dev/null
	f=$(take_fence ah)
	# Above the counter, within the millisecond after it.
	assert_fence "$f" $((c + 1))
	((f <= c + 1000)) || fail "fence $f not within the millisecond after $c"
	assert_equal "$(gfence ah)" "$f"
	run -0 --separate-stderr "$RLOCK" acquire --json ah
	g=$(python3 -c 'import json, sys; print(json.loads(sys.argv[1])["fence"])' "$output")
	assert_increasing "$c" "$f" "$g"
	assert_equal "$(meta ah fence)" "$g"
	# The counter was taken as the floor and deleted: the stream's ids go
	# on.
	assert_equal "$(counter ah)" ""
	"$RLOCK" release ah "$(json_token "$output")"

	# A stream whose last id is far ahead of the clock and one short of
	# its millisecond's 1000 ids: the next grant takes the last of them,
	# the one after the next millisecond's first.
	ms=$(($(server_ms) + 86400000))
	e=$(rcli R XADD "$(key ah):log" "$ms-998" event skipped reason x)
	assert_equal "$e" "$ms-998"
	f=$(take_fence ah)
	h=$(take_fence ah)
	assert_increasing "$g" "$f" "$h"
	assert_equal "$f" $(((ms + 1) * 1000 + 999))
	assert_fence "$h" $(((ms + 2) * 1000))
	((h < (ms + 3) * 1000)) || fail "fence $h beyond the next millisecond"
	assert_equal "$(gfence ah)" "$h"
	assert_equal "$(last_fence ah)" "$h"
}

# spent_limit NAME VALUE VERB [OPTIONS...]: VERB (run or acquire) of lock
# NAME whose counter holds VALUE, a fence with none above it: 70 with the
# line that says so and never advises what would lower a fence; no command,
# no token, nothing held, the counter as it was and no history made.
spent_limit() {
	local name=$1 v=$2 verb=$3
	shift 3
	rcli R DEL "$(key "$name"):log" >/dev/null
	rcli R SET "$(key "$name"):fence" "$v" >/dev/null
	if [[ $verb == run ]]; then
		run -70 --separate-stderr "$RLOCK" run "$@" "$name" -- touch ran
		[[ ! -e ran ]] || fail "the command ran ($*)"
	else
		run -70 --separate-stderr "$RLOCK" acquire "$@" "$name"
	fi
	assert_output ""
	assert_stderr "rlock: $verb: $(key "$name"):fence holds $v, above which no fence can be handed out (fences stay below 2^53 - 2^20, and a history's at or below 9007199253691999): nothing granted; take the lock under another name or --prefix (deleting or lowering the key would let fences go back)"
	assert_equal "$(counter "$name")" "$v"
	assert_equal "$(rcli R EXISTS "$(key "$name"):log")" 0
	lock_free "$name" && holders_is "$name" 0 && line_is "$name" 0 ||
		fail "held after the refused grant ($*): $(rcli R --scan --pattern "$(key "$name")*")"
}

@test "a counter at the end of the range: 70 saying no larger fence can be handed out and to go on under another name, the counter left as it was, no history made, nothing run" {
	local v mode
	# 2^53 - 2^20 - 1, the last fence; 9007199253691999, the last a
	# history's id gives (a new stream's floor must be below it).
	for v in 9007199253692415 9007199253691999; do
		for mode in "" -s "-l 3"; do
			# shellcheck disable=SC2086
			spent_limit end "$v" run $mode
			# shellcheck disable=SC2086
			spent_limit end "$v" acquire $mode
		done
	done
}

@test "the last fence a history's ids give is handed out once; every grant after it: 70, nothing granted, the name spent, never a lower fence" {
	local f mode
	rcli R SET "$(key last):fence" 9007199253691998 >/dev/null
	f=$(take_fence last)
	assert_equal "$f" 9007199253691999
	assert_equal "$(counter last)" ""
	for mode in "" -s "-l 3"; do
		# shellcheck disable=SC2086
		run -70 --separate-stderr "$RLOCK" run $mode last -- touch ran
		[[ ! -e ran ]] || fail "the command ran ($mode)"
		[[ $stderr == "rlock: run: $(key last):log gave the id '9007199253690-1"[0-9][0-9][0-9]"', which gives no fence (its ms must be 13 digits, before the year 2255, and its sequence number at most 999): nothing granted, and no later grant can have a larger fence; take the lock under another name or --prefix (deleting the key would let fences go back)" ]] ||
			fail "$mode: $stderr"
		# shellcheck disable=SC2086
		run -70 --separate-stderr "$RLOCK" acquire $mode last
		assert_output ""
		lock_free last && holders_is last 0 && line_is last 0 || fail "held ($mode)"
	done
	assert_equal "$(counter last)" ""
	assert_equal "$(last_fence last)" 9007199253691999
}

@test "the counter's fences (a history key of another type) end at 2^53 - 2^20 - 1: handed out once, then 70 saying so, the counter left at it" {
	local f
	rcli R SET "$(key cnt):log" junk >/dev/null
	rcli R SET "$(key cnt):fence" 9007199253692414 >/dev/null
	run -0 --separate-stderr "$RLOCK" run cnt -- sh -c 'echo "$RLOCK_FENCE"'
	assert_output 9007199253692415
	assert_equal "$(counter cnt)" 9007199253692415
	run -70 --separate-stderr "$RLOCK" run cnt -- touch ran
	[[ ! -e ran ]] || fail "the command ran"
	assert_stderr "rlock: run: $(key cnt):fence holds 9007199253692415, above which no fence can be handed out (fences stay below 2^53 - 2^20, and a history's at or below 9007199253691999): nothing granted; take the lock under another name or --prefix (deleting or lowering the key would let fences go back)"
	assert_equal "$(counter cnt)" 9007199253692415
	lock_free cnt
}

@test "the history stream (whose ids are the fences) deleted by hand between two grants, or under a shared holder: the next fence is greater" {
	local f1 f2 b a s1 t1
	f1=$(take_fence dl)
	# No counter to delete: the fences are the stream's.
	assert_equal "$(rcli R EXISTS "$(key dl):fence")" 0
	assert_equal "$(rcli R DEL "$(key dl):log")" 1
	b=$(server_us)
	f2=$(take_fence dl)
	a=$(server_us)
	assert_increasing "$f1" "$f2"
	assert_fence "$f2" "$b" "$a"
	assert_equal "$(gfence dl)" "$f2"
	assert_equal "$(last_fence dl)" "$f2"

	# A shared holder keeps its fence; the next one gets a greater one.
	eval "$("$RLOCK" acquire -s --format env sd)"
	s1=$RLOCK_FENCE
	t1=$RLOCK_TOKEN
	assert_equal "$(rcli R DEL "$(key sd):log")" 1
	eval "$("$RLOCK" acquire -s --format env sd)"
	assert_increasing "$s1" "$RLOCK_FENCE"
	assert_equal "$(holder_fence sd "$t1")" "$s1"
	assert_equal "$(holder_fence sd "$RLOCK_TOKEN")" "$RLOCK_FENCE"
}

@test "shared and semaphore holders: distinct fences, increasing, above every one from before a restart" {
	local s=() m=() i
	for i in 0 1; do
		eval "$("$RLOCK" acquire -s -t 60s --format env sh)"
		s[i]=$RLOCK_FENCE
		eval "$("$RLOCK" acquire -l 3 -t 60s --format env sem)"
		m[i]=$RLOCK_FENCE
	done
	restart_redis R
	assert_equal "$(rcli R EXISTS "$(key sh):fence" "$(key sem):fence" "$(key sh):log" "$(key sem):log")" 0
	for i in 2 3 4; do
		eval "$("$RLOCK" acquire -s -t 60s --format env sh)"
		s[i]=$RLOCK_FENCE
		assert_equal "$(holder_fence sh "$RLOCK_TOKEN")" "${s[i]}"
		eval "$("$RLOCK" acquire -l 3 -t 60s --format env sem)"
		m[i]=$RLOCK_FENCE
		assert_equal "$(holder_fence sem "$RLOCK_TOKEN")" "${m[i]}"
	done
	holders_is sh 3
	holders_is sem 3
	assert_increasing "${s[@]}"
	assert_increasing "${m[@]}"
	assert_equal "$(last_fence sh)" "${s[4]}"
	assert_equal "$(last_fence sem)" "${m[4]}"
}

@test "a replica promoted by hand after its master handed out fences it never got: the next fence is above them all" {
	local f=() b a
	start_redis PM --repl-diskless-sync-delay 0
	start_redis PR --replicaof 127.0.0.1 "$PM_PORT"
	wait_until 10 replica_up PR "$PM_PORT"
	f[0]=$(RLOCK_URL=$PM_URL take_fence pr)
	wait_until 5 eval '[[ $(gfence pr PR) == "${f[0]}" ]]'
	# Frozen, with its link cut: what the master sent would otherwise wait
	# in the frozen replica's socket and be applied when it thaws.
	kill -STOP "$PR_PID"
	wait_until 5 pid_stopped "$PR_PID"
	rcli PM CLIENT KILL TYPE replica >/dev/null
	wait_until 5 no_replicas PM
	f[1]=$(RLOCK_URL=$PM_URL take_fence pr)
	f[2]=$(RLOCK_URL=$PM_URL take_fence pr)
	assert_increasing "${f[@]}"
	# The master dies with them; the replica is made master.
	disown "$PM_PID"
	kill -KILL "$PM_PID"
	wait_until 5 pid_gone "$PM_PID"
	kill -CONT "$PR_PID"
	assert_equal "$(rcli PR REPLICAOF NO ONE)" OK
	# It never got the last two.
	assert_equal "$(gfence pr PR)" "${f[0]}"
	assert_equal "$(last_fence pr PR)" "${f[0]}"
	b=$(server_us PR)
	f[3]=$(RLOCK_URL=$PR_URL take_fence pr)
	a=$(server_us PR)
	assert_increasing "${f[@]}"
	assert_fence "${f[3]}" "$b" "$a"
	assert_equal "$(gfence pr PR)" "${f[3]}"
}

# ---- several masters (Redlock) ---------------------------------------------------

@test "three masters restarted without persistence, one or two at a time: the next fence is above every one before" {
	local f=() b a m
	f[0]=$(take_fence "${U3[@]}" rl)
	f[1]=$(take_fence "${U3[@]}" rl)
	restart_redis N1
	f[2]=$(take_fence "${U3[@]}" rl)
	assert_increasing "${f[@]}"
	# Two restarted and the third down: the majority that grants has no
	# history, record or counter at all.
	restart_redis N1
	restart_redis N2
	stop_redis N3
	for m in N1 N2; do
		assert_equal "$(rcli "$m" EXISTS "$(key rl):log" "$(key rl):grant" "$(key rl):fence")" 0
	done
	b=$(server_us N1)
	hold_fence --connect-timeout 1s "${U3[@]}" rl
	f[3]=$HF
	a=$(server_us N1)
	assert_increasing "${f[@]}"
	assert_fence "${f[3]}" "$b" "$a"
	# Both granting masters hold the fence handed out (the lower one
	# raised to it): the record of the grant on each, while it holds (it
	# goes with the lock).
	assert_equal "$(gfence rl N1)" "${f[3]}"
	assert_equal "$(gfence rl N2)" "${f[3]}"
	"$RLOCK" --connect-timeout 1s "${U3[@]}" release rl "$HT"
	# The third back, empty: all three grant, above the last, and a
	# majority keeps the fence handed out (none has more).
	restart_redis N3
	hold_fence "${U3[@]}" rl
	f[4]=$HF
	assert_increasing "${f[@]}"
	local at=0 c
	for m in N1 N2 N3; do
		c=$(gfence rl "$m")
		assert_fence "$c" "${f[3]}" "${f[4]}"
		((c <= f[4])) || fail "master $m at $c, above the fence ${f[4]}"
		[[ $c == "${f[4]}" ]] && at=$((at + 1))
	done
	((at >= 2)) || fail "the fence ${f[4]} on $at of 3 masters"
	"$RLOCK" "${U3[@]}" release rl "$HT"
}

@test "three masters: acquire --json and status --json agree on the fence, the highest any master has" {
	local f t m c hi=0
	run -0 --separate-stderr "$RLOCK" "${U3[@]}" acquire --json rj
	[[ $output =~ \"fence\":([0-9]+), ]] || fail "no plain fence in $output"
	f=${BASH_REMATCH[1]}
	t=$(json_token "$output")
	assert_fence "$f"
	# Each master's record of the grant has plain digits, none above it.
	for m in N1 N2 N3; do
		c=$(meta rj fence "$m")
		assert_fence "$c" 1 "$f"
		((c <= f)) || fail "master $m at $c, above the fence $f"
		((c > hi)) && hi=$c
	done
	assert_equal "$hi" "$f"
	run -0 --separate-stderr "$RLOCK" "${U3[@]}" status --json rj
	json_check "$output" 'd["locks"][0]["fence"] == int(a[0])' -- "$f"
	run -0 "$RLOCK" "${U3[@]}" release rj "$t"
}

# ---- Sentinel ----------------------------------------------------------------

@test "sentinel: after a forced failover the next fence through the sentinels is above every one before" {
	local f=() old new b a
	f[0]=$(take_fence "${SU[@]}" sf)
	f[1]=$(take_fence "${SU[@]}" sf)
	old=$(ha_master)
	new=$(ha_replica)
	wait_until 5 eval '[[ $(gfence sf "$new") == "${f[1]}" ]]'
	sentinel_failover
	assert_equal "$(ha_master)" "$new"
	b=$(server_us "$new")
	f[2]=$(take_fence "${SU[@]}" sf)
	a=$(server_us "$new")
	assert_increasing "${f[@]}"
	assert_fence "${f[2]}" "$b" "$a"
	assert_equal "$(gfence sf "$new")" "${f[2]}"
}

# sentinels_name NODE: every sentinel names NODE (M or RPL) the master, and
# NODE says it is one.
sentinels_name() {
	local s p port="${1}_PORT"
	for s in "${SENTINELS[@]}"; do
		p=$(rcli "$s" SENTINEL GET-MASTER-ADDR-BY-NAME mymaster 2>/dev/null | sed -n 2p)
		[[ $p == "${!port}" ]] || return 1
	done
	[[ $(rcli "$1" ROLE 2>/dev/null | head -n 1) == master ]]
}

# sentinel_failover_to NODE: SENTINEL FAILOVER (asked again while the
# sentinels find no good replica yet), until every sentinel names NODE.
sentinel_failover_to() {
	local s out t0
	t0=$(now_ms)
	while (($(now_ms) - t0 < 30000)); do
		for s in "${SENTINELS[@]}"; do
			out=$(rcli "$s" SENTINEL FAILOVER mymaster 2>&1)
			[[ $out == OK || $out == INPROG* ]] && break
		done
		if [[ $out == OK || $out == INPROG* ]]; then
			ha_wait 10 sentinels_name "$1" && return 0
		fi
		sentinels_name "$1" && return 0
		sleep 0.1
	done
	echo "sentinel_failover_to $1: last answer '$out'" >&2
	return 1
}

@test "sentinel: the master dies with fences its replica never got; after the failover the next fence is above them all" {
	local f=() old new b a
	old=$(ha_master)
	new=$(ha_replica)
	f[0]=$(take_fence "${SU[@]}" sk)
	wait_until 5 eval '[[ $(gfence sk "$new") == "${f[0]}" ]]'
	# The replica frozen, its link cut (see the hand promotion above).
	kill -STOP "$(server_pid "$new")"
	wait_until 5 pid_stopped "$(server_pid "$new")"
	rcli "$old" CLIENT KILL TYPE replica >/dev/null
	wait_until 5 no_replicas "$old"
	f[1]=$(take_fence "${SU[@]}" sk)
	f[2]=$(take_fence "${SU[@]}" sk)
	assert_increasing "${f[@]}"
	assert_equal "$(gfence sk "$old")" "${f[2]}"
	kill -KILL "$(server_pid "$old")"
	wait_until 5 pid_gone "$(server_pid "$old")"
	kill -CONT "$(server_pid "$new")"
	sentinel_failover_to "$new"
	assert_equal "$(gfence sk "$new")" "${f[0]}"
	b=$(server_us "$new")
	f[3]=$(take_fence "${SU[@]}" sk)
	a=$(server_us "$new")
	assert_increasing "${f[@]}"
	assert_fence "${f[3]}" "$b" "$a"
	# The old master back (empty), made the new one's replica.
	restart_redis "$old"
	ha_wait 30 _ha_settled "$new" "$old"
	wait_until 5 eval '[[ $(gfence sk "$old") == "${f[3]}" ]]'
}

# ---- Cluster -----------------------------------------------------------------

# node_url PORT
node_url() {
	echo "redis://127.0.0.1:$1"
}

# cnode_us PORT: the clock (TIME) of the cluster node on PORT, in µs.
cnode_us() {
	ccli "$1" TIME | time_us
}

# ccounter NAME PORT: the fence of lock NAME's last exclusive grant (its
# record P{NAME}:grant) on the node on PORT, read on a replica too.
ccounter() {
	owner_field fence "$(grant_meta "$(cluster_grant_record "$2" "$1")")"
}

# name_away_from PORT: a lock name whose slot's master and that master's
# replica are both other nodes than PORT's (the helpers ask C1).
name_away_from() {
	local n=0 o
	while :; do
		o=$(cluster_owner_port "$(key "cf$n")")
		if [[ $o != "$1" && $(cluster_replica_port "$o") != "$1" ]]; then
			echo "cf$n"
			return 0
		fi
		n=$((n + 1))
	done
}

@test "cluster: after a CLUSTER FAILOVER of the slot's master the next fence is above every one before" {
	local f=() seed k o rp b a
	seed=$(node_url "$C1_PORT")
	k=$(key cfo)
	o=$(cluster_owner_port "$k")
	rp=$(cluster_replica_port "$o")
	[[ -n $rp ]] || fail "no replica of $o"
	f[0]=$(take_fence -u "$seed" cfo)
	f[1]=$(take_fence -u "$seed" cfo)
	cluster_failover "$rp"
	assert_equal "$(cluster_owner_port "$k")" "$rp"
	assert_equal "$(ccounter cfo "$rp")" "${f[1]}"
	b=$(cnode_us "$rp")
	f[2]=$(take_fence -u "$seed" cfo)
	a=$(cnode_us "$rp")
	assert_increasing "${f[@]}"
	assert_fence "${f[2]}" "$b" "$a"
	assert_equal "$(ccounter cfo "$rp")" "${f[2]}"
}

@test "cluster: the slot's master dies with fences its replica never got; after a takeover the next fence is above them all" {
	local f=() seed name k o rp rname oname b a
	seed=$(node_url "$C1_PORT")
	name=$(name_away_from "$C1_PORT")
	k=$(key "$name")
	o=$(cluster_owner_port "$k")
	rp=$(cluster_replica_port "$o")
	[[ -n $rp ]] || fail "no replica of $o"
	oname=$(cluster_node_name "$o")
	rname=$(cluster_node_name "$rp")
	f[0]=$(take_fence -u "$seed" "$name")
	wait_until 5 eval '[[ $(ccounter "$name" "$rp") == "${f[0]}" ]]'
	# The replica frozen, its link cut (see the hand promotion above).
	kill -STOP "$(server_pid "$rname")"
	wait_until 5 pid_stopped "$(server_pid "$rname")"
	ccli "$o" CLIENT KILL TYPE replica >/dev/null
	wait_until 5 eval '[[ $(ccli "$o" INFO replication | tr -d "\r") == *connected_slaves:0* ]]'
	f[1]=$(take_fence -u "$seed" "$name")
	f[2]=$(take_fence -u "$seed" "$name")
	assert_increasing "${f[@]}"
	assert_equal "$(ccounter "$name" "$o")" "${f[2]}"
	kill -KILL "$(server_pid "$oname")"
	wait_until 5 pid_gone "$(server_pid "$oname")"
	kill -CONT "$(server_pid "$rname")"
	assert_equal "$(ccli "$rp" CLUSTER FAILOVER TAKEOVER)" OK
	ha_wait 20 eval '[[ $(cluster_owner_port "$k") == "$rp" ]]'
	assert_equal "$(ccounter "$name" "$rp")" "${f[0]}"
	b=$(cnode_us "$rp")
	f[3]=$(take_fence -u "$seed" "$name")
	a=$(cnode_us "$rp")
	assert_increasing "${f[@]}"
	assert_fence "${f[3]}" "$b" "$a"
	# The old master back (empty), a replica of the new one; the next
	# fence is above again.
	restart_redis "$oname"
	ha_wait 30 cluster_stable
	f[4]=$(take_fence -u "$seed" "$name")
	assert_increasing "${f[@]}"
	wait_until 5 eval '[[ $(ccounter "$name" "$o") == "${f[4]}" ]]'
}
