#!/usr/bin/env bats
# cluster.bats - rlock against Redis Cluster through plain redis:// URLs of
# its nodes: three masters with one replica each, made once for the file
# with redis-cli --cluster create (ha_helper).  MOVED from a seed that does
# not serve the slot, many names through one seed, hand-off and contention
# through different seeds, status across masters, a slot migrated while a
# lock is held (ASK, TRYAGAIN, the new owner), the lock's history (log,
# log -f while a queue of deploys goes through, last, status) read through
# other nodes and followed across a slot move and a failover, a master
# failing over under a running command, names with an empty hash tag,
# the line's policies through nodes that do not serve the slot (--once-per's
# record on the owner, --supersede, --priority), and bench.  Migrations and failovers move slots and swap roles: every test
# asks the cluster who serves what (cluster_owner_port,
# cluster_master_ports), never assumes.

bats_require_minimum_version 1.5.0
load test_helper
load ha_helper
load history_helper

setup_file() {
	start_cluster --replicas || return 1
	# A test SIGKILLs a node.
	disown_servers $CLUSTER_NODES_LIST
}

teardown_file() {
	rl_teardown_file
}

setup() {
	rl_setup
}

teardown() {
	rl_teardown
}

# line_up_through_nodes NAME SCRIPT: four `run -w 30s NAME` waiters, the
# Nth entered through master N % 3 once the one before has its place in line
# (on the slot's owner), each running `sh -c "N=n; SCRIPT"`; their pids are
# appended to the caller's array pids.
line_up_through_nodes() {
	local name=$1 script=$2 n
	local -a ports
	mapfile -t ports < <(cluster_master_ports)
	for n in 1 2 3 4; do
		bg_start "$name$n" "$RLOCK" -u "$(node_url "${ports[n % 3]}")" \
			run -w 30s "$name" -- sh -c "N=$n; $script"
		pids+=("$BG_PID")
		wait_until 10 chas_waiters "$name" "$n"
	done
}

# node_url PORT
node_url() {
	echo "redis://127.0.0.1:$1"
}

# owner_url NAME / other_url NAME: a seed that serves lock NAME's slot / a
# master that does not.
owner_url() { node_url "$(cluster_owner_port "$(key "$1")")"; }
other_url() { node_url "$(cluster_other_port "$(key "$1")")"; }

elapsed_since() {
	echo $(($(now_ms) - $1))
}

# cfence NAME: the fence of the newest grant in lock NAME's history (its
# entry id's) on its slot's owner.
cfence() {
	local k
	k="$(key "$1"):log"
	ccli "$(cluster_owner_port "$k")" --json XRANGE "$k" - + | entry_fields | python3 -c '
import json, sys
g = [dict(zip(kv[0::2], kv[1::2])) for _, kv in json.load(sys.stdin) or []]
g = [e["fence"] for e in g if e.get("event") == "acquired"]
print(g[-1] if g else "")'
}

# grant_fence_on PORT NAME: the fence in the record of lock NAME's last
# exclusive grant (P{NAME}:grant) on the node on PORT.
grant_fence_on() {
	owner_field fence "$(grant_meta "$(cluster_grant_record "$1" "$2")")"
}

# cnode_us PORT: the clock (TIME) of the node on PORT, in µs.
cnode_us() {
	ccli "$1" TIME | time_us
}

# cfence_ahead NAME: put lock NAME's fences on its slot's owner 10^12 µs
# ahead of the clock (as test_helper's fence_ahead) and print that value:
# every later fence is above it, wherever the slot's keys go.
cfence_ahead() {
	local k p c id
	k="$(key "$1")"
	p=$(cluster_owner_port "$k")
	c=$(($(cnode_us "$p") + 1000000000000))
	if [[ $(ccli "$p" EXISTS "$k:log") == 1 ]]; then
		id="$((c / 1000 - 1))-$((c % 1000))"
		[[ $(ccli "$p" XADD "$k:log" "$id" f '') == "$id" ]] || return 1
		ccli "$p" XDEL "$k:log" "$id" >/dev/null || return 1
	else
		[[ $(ccli "$p" SET "$k:fence" "$c") == OK ]] || return 1
	fi
	echo "$c"
}

# cmeta NAME FIELD: a field of the record of lock NAME's last exclusive
# grant on its slot's owner.
cmeta() {
	owner_field "$2" "$(grant_meta "$(cluster_grant_record "$(cluster_owner_port "$(key "$1")")" "$1")")"
}

# start_holder URL NAME [run options...]: `rlock -u URL run NAME` whose
# command writes "FENCE TOKEN PID" to seen-NAME, waits for go-NAME, and
# writes done-NAME when it ends normally.  Sets HOLDER_PID, FENCE, TOKEN,
# CHILD.
start_holder() {
	local url=$1 name=$2
	shift 2
	bg_start "holder-$name" "$RLOCK" -u "$url" run "$@" "$name" -- sh -c \
		"echo \"\$RLOCK_FENCE \$RLOCK_TOKEN \$\$\" > seen-$name; $(gate "$BATS_TEST_TMPDIR/go-$name"); touch done-$name"
	HOLDER_PID=$BG_PID
	wait_until 10 file_nonempty "seen-$name"
	read -r FENCE TOKEN CHILD <"seen-$name"
	track_pid "$CHILD"
}

# ---- redirections -----------------------------------------------------------

@test "thirty names through one seed: every one taken, every key on its slot's owner" {
	local seed n token keys=() tokens=() port val
	local -A owners=()
	seed=$(node_url "$(cluster_master_ports | head -n 1)")
	for n in $(seq 30); do
		token=$("$RLOCK" -u "$seed" acquire -t 30s "many$n") || fail "acquire many$n failed"
		tokens+=("$token")
		keys+=("$(key "many$n")")
	done
	# Each key is on the one master that serves its slot, with its token.
	n=0
	while read -r port val; do
		[[ $port != none ]] || fail "${keys[n]} is on no master"
		assert_equal "$val" "${tokens[n]}"
		owners[$port]=1
		n=$((n + 1))
	done < <(cluster_get "${keys[@]}")
	assert_equal "$n" 30
	# Thirty names cover all three masters (chance of missing one: 1e-5).
	assert_equal "${#owners[@]}" 3
	assert_equal "$(cluster_owner_port "${keys[0]}")" "$(cluster_get "${keys[0]}" | cut -d' ' -f1)"
	for n in $(seq 30); do
		"$RLOCK" -u "$seed" release "many$n" "${tokens[n - 1]}" || fail "release many$n failed"
	done
	while read -r port val; do
		assert_equal "$val" ""
	done < <(cluster_get "${keys[@]}")
}

@test "acquire, status, extend and release through a master that does not serve the slot" {
	local url token p
	url=$(other_url mv)
	run -0 --separate-stderr "$RLOCK" -u "$url" acquire -t 10s mv
	token=$output
	assert_equal "$stderr" ""
	assert_regex "$token" '^[0-9a-f]{32}$'
	assert_equal "$(cholder mv)" "$token"
	run -0 --separate-stderr "$RLOCK" -u "$url" status mv
	assert_equal "$stderr" ""
	assert_fence "$(cmeta mv fence)"
	assert_equal "$(cfence mv)" "$(cmeta mv fence)"
	assert_status_row "${lines[1]}" mv held "$(cmeta mv fence)"
	run -0 "$RLOCK" -u "$url" extend -t 60s mv "$token"
	p=$(cpttl mv)
	((p > 10000 && p <= 60000)) || fail "pttl after extend: $p"
	run -76 "$RLOCK" -u "$url" release mv not-the-token
	assert_equal "$(cholder mv)" "$token"
	run -0 "$RLOCK" -u "$url" release mv "$token"
	clock_free mv
	run -1 "$RLOCK" -u "$url" status mv
	assert_regex "${lines[1]}" '^mv +free '
}

@test "acquire --renew from a strict-mode script through a node that does not serve the slot: held past its lease, --on-lost term on a loss" {
	local t pid t0
	start_strict_renewer cr "$(other_url cr)"
	t=$STRICT_TOKEN
	pid=$BG_PID
	t0=$(now_ms)
	while (($(now_ms) - t0 < 2500)); do
		[[ $(cholder cr) == "$t" ]] || fail "not held $(($(now_ms) - t0))ms on"
		sleep 0.1
	done
	assert_equal "$(cmeta cr pid)" "$pid"
	run -0 --separate-stderr "$RLOCK" -u "$(other_url cr)" release --force cr
	wait_until 5 file_has got term
	bg_wait "$BG_PID"
	assert_equal "$BG_STATUS" 3
	[[ ! -e errs ]]
	run -76 --separate-stderr "$RLOCK" -u "$(other_url cr)" release cr "$t"
	assert_regex "$stderr" '^rlock: release: cr: the lock was lost at [0-9-]{10} [0-9:]{8} [A-Z]+: the token no longer holds it$'
	wait_until 5 no_rlock_pids
}

@test "run through a seed that does not serve the slot: the owner holds the command's token" {
	local owner
	owner=$(cluster_owner_port "$(key rn)")
	run -0 --separate-stderr "$RLOCK" -u "$(other_url rn)" run rn -- \
		sh -c 'echo "$RLOCK_TOKEN"; redis-cli -h 127.0.0.1 -p "$1" GET "$RLOCK_KEY"' sh "$owner"
	assert_equal "${#lines[@]}" 2
	assert_regex "${lines[0]}" '^[0-9a-f]{32}$'
	assert_equal "${lines[1]}" "${lines[0]}"
	clock_free rn
}

@test "a replica given as the seed redirects to the master" {
	local owner rep token
	owner=$(cluster_owner_port "$(key viarep)")
	rep=$(cluster_replica_port "$owner")
	[[ -n $rep ]] || fail "no replica of $owner"
	token=$("$RLOCK" -u "$(node_url "$rep")" acquire viarep)
	assert_equal "$(cholder viarep)" "$token"
	run -0 "$RLOCK" -u "$(node_url "$rep")" release viarep "$token"
	clock_free viarep
}

@test "a name whose hash tag would be empty is a usage error on a cluster" {
	local seed
	seed=$(node_url "$(cluster_master_ports | head -n 1)")
	run -64 --separate-stderr "$RLOCK" -u "$seed" acquire '}x'
	assert_stderr --partial "empty hash tag"
	assert_equal "$output" ""
	run -64 --separate-stderr "$RLOCK" -u "$seed" run '}y' -- touch ran
	assert_stderr --partial "empty hash tag"
	[[ ! -e ran ]]
}

# ---- waiters, status, contention --------------------------------------------

@test "hand-off: a waiter connected through another node is woken by the release at once" {
	start_holder "$(owner_url ho)" ho -t 30s
	bg_start waiter "$RLOCK" -u "$(other_url ho)" run -w 20s ho -- \
		sh -c 'echo "$RLOCK_FENCE $RLOCK_TOKEN" > got'
	local wpid=$BG_PID t0
	wait_until 10 chas_waiters ho 1
	[[ ! -e got ]]
	# status through the owner counts the waiter wherever it subscribed.
	run -0 "$RLOCK" -u "$(owner_url ho)" status --json ho
	json_check "$output" 'd["locks"][0]["held"] is True' 'd["locks"][0]["waiters"] == 1'
	local go_us
	go_us=$(cnode_us "$(cluster_owner_port "$(key ho):fence")")
	t0=$(now_ms)
	touch go-ho
	bg_wait "$wpid" 10
	assert_equal "$BG_STATUS" 0
	# Far sooner than the holder's 30s lease.
	(($(elapsed_since "$t0") < 3000)) || fail "the waiter took $(elapsed_since "$t0")ms"
	bg_wait "$HOLDER_PID" 5
	assert_equal "$BG_STATUS" 0
	local wfence wtoken
	read -r wfence wtoken <got
	# The waiter's grant came after the holder's, once it was let go, and
	# was the last one.
	assert_increasing "$FENCE" "$wfence"
	assert_fence "$wfence" "$go_us"
	assert_equal "$(cfence ho)" "$wfence"
	[[ $wtoken != "$TOKEN" ]]
	clock_free ho
}

@test "through a node that does not serve the slot a waiting run is handed the lock by the release itself" {
	local k
	k=$(key cb)
	baton_handoff "$(cluster_node_name "$(cluster_owner_port "$k")")" cb \
		-u "$(node_url "$(cluster_other_port "$k")")"
}

@test "status without names lists the locks held on every master" {
	local n=0 name p
	local -A byowner=()
	# One name served by each master.
	while ((${#byowner[@]} < 3)); do
		name="st$n"
		p=$(cluster_owner_port "$(key "$name")")
		[[ -n ${byowner[$p]:-} ]] || byowner[$p]=$name
		n=$((n + 1))
	done
	local seed names=()
	seed=$(node_url "$(cluster_master_ports | head -n 1)")
	for p in "${!byowner[@]}"; do
		names+=("${byowner[$p]}")
		"$RLOCK" -u "$seed" acquire "${byowner[$p]}" >/dev/null || fail "acquire ${byowner[$p]}"
	done
	run -0 --separate-stderr "$RLOCK" -u "$seed" status --json
	assert_equal "$stderr" ""
	json_check "$output" \
		'sorted(l["name"] for l in d["locks"]) == sorted(a)' \
		'all(l["held"] for l in d["locks"])' -- "${names[@]}"
	run -0 --separate-stderr "$RLOCK" -u "$seed" status
	assert_equal "${#lines[@]}" 4
	for name in "${names[@]}"; do
		assert_line --regexp "^$name +held "
	done
}

@test "contention through three seeds: fifteen read-sleep-write runs lose no update" {
	local p pids=() n
	echo 0 >counter
	: >fences
	for n in 1 2 3 4 5; do
		for p in $(cluster_master_ports); do
			bg_start "c$n-$p" "$RLOCK" -u "$(node_url "$p")" run -w 60s -t 10s cnt -- sh -c \
				'v=$(cat counter); sleep 0.05; echo $((v + 1)) > counter; echo "$RLOCK_FENCE" >> fences'
			pids+=("$BG_PID")
		done
	done
	for p in "${pids[@]}"; do
		bg_wait "$p" 60
		assert_equal "$BG_STATUS" 0
	done
	assert_equal "$(cat counter)" 15
	assert_equal "$(sort -u fences | wc -l)" 15
	assert_equal "$(cfence cnt)" "$(sort -n fences | tail -n 1)"
	clock_free cnt
}

@test "waiters through three nodes are served in arrival order, each woken by the one release before it" {
	start_holder "$(owner_url fo)" fo -t 30s
	local -a pids
	local i
	line_up_through_nodes fo 'echo $N >> order'
	touch go-fo
	for i in 0 1 2 3; do
		bg_wait "${pids[i]}" 15
		assert_equal "$BG_STATUS" 0
	done
	assert_equal "$(tr '\n' ' ' <order)" "1 2 3 4 "
	bg_wait "$HOLDER_PID" 5
	clock_free fo
	# The line's keys went with the last waiter.
	local k
	k=$(key fo)
	assert_equal "$(ccli "$(cluster_owner_port "$k")" EXISTS "$k:line" "$k:line:lease" "$k:line:who")" 0
}

@test "a semaphore of 2 through different nodes: two hold together, never a third" {
	local -a ports pids
	mapfile -t ports < <(cluster_master_ports)
	local i
	for i in 1 2 3 4 5 6; do
		bg_start "s$i" "$RLOCK" -u "$(node_url "${ports[i % 3]}")" run -l 2 -w 30s sem -- \
			sh -c 'n=$(redis-cli -p "$1" INCR "$2"); echo "$n" >> peaks; sleep 0.3; redis-cli -p "$1" DECR "$2" >/dev/null' \
			sh "$(cluster_owner_port "$(key sem)")" "$(key sem):count"
		pids+=("$BG_PID")
	done
	for i in 0 1 2 3 4 5; do
		bg_wait "${pids[i]}" 30
		assert_equal "$BG_STATUS" 0
	done
	assert_equal "$(sort -n peaks | tail -n 1)" 2
	assert_equal "$(wc -l <peaks)" 6
	local k
	k=$(key sem)
	assert_equal "$(ccli "$(cluster_owner_port "$k")" EXISTS "$k:holders" "$k:holders:meta")" 0
}

@test "slots and a pool through nodes that do not serve the slot: each holder told its own slot or member, recorded on the slot's owner" {
	local -a ports pids
	local i k owner
	mapfile -t ports < <(cluster_master_ports)
	k=$(key sl)
	owner=$(cluster_owner_port "$k")
	for i in 0 1 2; do
		bg_start "s$i" "$RLOCK" -u "$(node_url "${ports[i % 3]}")" run -l 3 sl -- \
			sh -c "echo \$RLOCK_SLOT >> slots; $(gate "$BATS_TEST_TMPDIR/go")"
		pids+=("$BG_PID")
	done
	wait_until 20 eval '[[ $(wc -l <slots 2>/dev/null) == 3 ]]'
	assert_equal "$(sort slots | tr '\n' ' ')" "0 1 2 "
	run -0 "$RLOCK" -u "$(node_url "${ports[1]}")" status --json sl
	json_check "$output" "sorted(h['slot'] for h in d['locks'][0]['holders']) == [0, 1, 2]"
	touch go
	for i in 0 1 2; do
		bg_wait "${pids[i]}" 20
		assert_equal "$BG_STATUS" 0
	done
	# A pool: its members under the pool's hash tag, on its slot's owner.
	k=$(key envs)
	owner=$(cluster_owner_port "$k")
	"$RLOCK" -u "$(node_url "${ports[0]}")" pool envs add env-a url=https://a.example
	"$RLOCK" -u "$(node_url "${ports[1]}")" pool envs add env-b url=https://b.example
	assert_equal "$(ccli "$owner" HLEN "$k:members")" 2
	run -0 "$RLOCK" -u "$(node_url "${ports[2]}")" run --pool envs --count 2 -- \
		sh -c 'echo "$RLOCK_RESOURCE_0 $RLOCK_RESOURCE_1 $RLOCK_RESOURCE_1_URL"'
	assert_output "env-a env-b https://b.example"
	run -0 "$RLOCK" -u "$(node_url "${ports[1]}")" pool --json envs
	json_check "$output" "[m['name'] for m in d['members']] == ['env-a', 'env-b']"
	assert_equal "$(ccli "$owner" EXISTS "$k:holders" "$k:holders:meta")" 0
}

# ---- line policies: --once-per, --supersede, --priority -----------------------

# cline_is PORT NAME N: lock NAME's wait line has exactly N places on the
# master on PORT (its slot's owner: the caller asks once, not every poll).
cline_is() {
	[[ $(ccli "$1" ZCARD "$(key "$2"):line") == "$3" ]]
}

# masters_but PORT: the two masters other than the one on PORT, one a line.
masters_but() {
	cluster_master_ports | grep -vxF "$1"
}

# lock_nodes NAME: into the caller's k, owner and others, lock NAME's key,
# the master that owns its slot, and the other masters.
lock_nodes() {
	k=$(key "$1")
	owner=$(cluster_owner_port "$k")
	mapfile -t others < <(masters_but "$owner")
}

# utc MS: a time in ms since the epoch as rlock prints it.
utc() {
	date -u -d "@$(($1 / 1000))" '+%Y-%m-%d %H:%M:%S UTC'
}

@test "--once-per 30d through masters that do not serve the slot: a run marks the period on the slot's owner, a run through another master skips (75) naming it, status through a third node shows it" {
	export USER=tester
	local k owner rep host pid fence since done until now p period=2592000000
	local -a others
	host=$(uname -n)
	lock_nodes daily
	rep=$(cluster_replica_port "$owner")
	[[ -n $rep ]] || fail "no replica of $owner"
	run -0 --separate-stderr "$RLOCK" -u "$(node_url "${others[0]}")" run --once-per 30d daily -- \
		sh -c 'echo "$PPID $RLOCK_FENCE" > ran1'
	assert_equal "$stderr" ""
	read -r pid fence <ran1
	# The period's record is on the slot's owner; the other masters send
	# a client there (redis-cli -c follows them).
	assert_equal "$(ccli "$owner" TYPE "$k:once")" hash
	for p in "${others[@]}"; do
		assert_equal "$(ccli "$p" EXISTS "$k:once")" "MOVED $(cluster_slot "$k") 127.0.0.1:$owner"
		assert_equal "$(ccli "$p" -c HGET "$k:once" fence)" "$fence"
	done
	assert_equal "$(ccli "$owner" HGET "$k:once" pid)" "$pid"
	assert_equal "$(ccli "$owner" HGET "$k:once" host)" "$host"
	assert_equal "$(ccli "$owner" HGET "$k:once" user)" tester
	since=$(ccli "$owner" HGET "$k:once" since)
	done=$(ccli "$owner" HGET "$k:once" done)
	until=$(ccli "$owner" HGET "$k:once" until)
	# The period of the owner's clock the grant fell in, which the record
	# outlives by no more than what is left of it.
	assert_equal "$until" $(((since / period + 1) * period))
	((since <= done)) || fail "done $done before since $since"
	now=$(($(cnode_us "$owner") / 1000))
	p=$(ccli "$owner" PTTL "$k:once")
	((p > 0 && p <= until - now)) || fail "pttl $p, the period ends in $((until - now))ms"
	# Through another master that does not serve the slot: the period is
	# done, the command does not start, the lock is never taken.
	run -75 --separate-stderr "$RLOCK" -u "$(node_url "${others[1]}")" run --once-per 30d daily -- touch ran2
	assert_equal "$output" ""
	assert_stderr "rlock: run: daily: done this period by tester@$host pid $pid at $(utc "$since"); the next period starts $(utc "$until")"
	[[ ! -e ran2 ]]
	assert_equal "$(cfence daily)" "$fence"
	clock_free daily
	# status through a third node (the owner's replica, which redirects).
	run -1 --separate-stderr "$RLOCK" -u "$(node_url "$rep")" status --json daily
	assert_equal "$stderr" ""
	json_check "$output" 'd["locks"][0]["held"] is False' \
		'd["locks"][0]["once"] == {"host": a[0], "user": "tester", "pid": int(a[1]), "fence": int(a[2]), "since_ms": int(a[3]), "done_ms": int(a[4]), "next_ms": int(a[5]), "period_ms": 2592000000}' \
		-- "$host" "$pid" "$fence" "$since" "$done" "$until"
	run -1 --separate-stderr "$RLOCK" -u "$(node_url "$rep")" status daily
	assert_line "  done this period: tester@$host pid $pid at $(utc "$since"), next period $(utc "$until")"
	# The skip is in the history, on the owner.
	assert_equal "$(event_names daily)" "acquired released skipped"
	json_check "$(events daily)" 'd[2]["reason"].startswith("done this period by tester@%s pid %s" % (a[0], a[1]))' \
		-- "$host" "$pid"
}

@test "--once-per 30d with waiters through other masters: a failed run does not use up the period, the next in line runs it, the rest skip (75) at once naming it" {
	export USER=tester
	local k owner host n t0
	local -a others pids
	host=$(uname -n)
	lock_nodes cron
	bg_start first "$RLOCK" -u "$(node_url "$owner")" run --once-per 30d cron -- \
		sh -c "echo first >> ran; $(gate "$BATS_TEST_TMPDIR/go"); exit 3"
	local fpid=$BG_PID
	wait_until 10 file_has ran first
	for n in 1 2 3; do
		bg_start "w$n" "$RLOCK" -u "$(node_url "${others[n % 2]}")" run -w 30s --once-per 30d cron -- \
			sh -c "echo w$n >> ran"
		pids+=("$BG_PID")
		wait_until 10 cline_is "$owner" cron "$n"
	done
	t0=$(now_ms)
	touch go
	bg_wait "$fpid" 10
	assert_equal "$BG_STATUS" 3
	bg_wait "${pids[0]}" 10
	assert_equal "$BG_STATUS" 0
	for n in 1 2; do
		bg_wait "${pids[n]}" 10
		assert_equal "$BG_STATUS" 75
		assert_equal "$(bg_err "w$((n + 1))")" "rlock: run: cron: done this period by tester@$host pid ${pids[0]} at $(utc "$(ccli "$owner" HGET "$k:once" since)"); the next period starts $(utc "$(ccli "$owner" HGET "$k:once" until)")"
	done
	(($(elapsed_since "$t0") < 3000)) || fail "the line took $(elapsed_since "$t0")ms to drain"
	assert_equal "$(tr '\n' ' ' <ran)" "first w1 "
	assert_equal "$(ccli "$owner" HGET "$k:once" pid)" "${pids[0]}"
	clock_free cron
	assert_equal "$(ccli "$owner" EXISTS "$k:line" "$k:line:lease" "$k:line:who")" 0
	assert_equal "$(event_names cron)" "acquired released acquired released skipped skipped"
}

@test "--supersede through three masters: the holder stays, the first --supersede waiter leaves within a second (75) naming the second, which runs after the holder" {
	export USER=tester
	local k owner host t0 el opid npid wfence
	local -a others
	host=$(uname -n)
	lock_nodes sup
	start_holder "$(node_url "$owner")" sup -t 30s
	bg_start old "$RLOCK" -u "$(node_url "${others[0]}")" run -w 30s --supersede sup -- touch old-ran
	opid=$BG_PID
	wait_until 10 cline_is "$owner" sup 1
	t0=$(now_ms)
	bg_start new "$RLOCK" -u "$(node_url "${others[1]}")" run -w 30s --supersede --label deploy-v43 sup -- \
		sh -c '[ -e done-sup ] && echo "$RLOCK_FENCE" > new-ran'
	npid=$BG_PID
	# Within a second of the newcomer's arrival (its start included).
	bg_wait "$opid" 5
	el=$(elapsed_since "$t0")
	assert_equal "$BG_STATUS" 75
	((el < 1500)) || fail "the superseded waiter left ${el}ms after the newcomer started"
	assert_equal "$(bg_err old)" "rlock: run: sup: superseded by tester@$host:$npid (deploy-v43)"
	assert_equal "$(bg_out old)" ""
	[[ ! -e old-ran ]]
	# The holder untouched; the newcomer alone in line, nothing of the
	# removed waiter left there.
	assert_equal "$(cholder sup)" "$TOKEN"
	pid_alive "$HOLDER_PID"
	pid_alive "$npid"
	cline_is "$owner" sup 1
	assert_equal "$(ccli "$owner" ZCARD "$k:line:lease")" 1
	assert_equal "$(ccli "$owner" ZRANGE "$k:line:lease" 0 -1)" "$(ccli "$owner" ZRANGE "$k:line" 0 -1)"
	assert_equal "$(ccli "$owner" HGET "$k:line:who" "$(ccli "$owner" ZRANGE "$k:line" 0 -1)" | sed -n 2p)" "$npid"
	ccli "$owner" HVALS "$k:line:who" | grep -qxF "$opid" && fail "the removed waiter's pid is still in $k:line:who"
	# It runs once the holder's command has ended, with the next fence.
	newest_served "$npid"
	assert_equal "$(cfence sup)" "$wfence"
	clock_free sup
	assert_equal "$(ccli "$owner" EXISTS "$k:line" "$k:line:lease")" 0
	assert_equal "$(event_names sup)" "acquired skipped released acquired released"
	json_check "$(events sup)" 'd[1]["reason"].startswith("superseded by tester@%s:%s" % (a[0], a[1])) and d[1]["pid"] == a[2]' \
		-- "$host" "$npid" "$opid"
}

@test "--priority through four nodes: a high-priority waiter queued after two low ones goes first, the low ones in arrival order; status through another node shows it next" {
	export USER=tester
	local k owner rep n hpid
	local -a others pids
	lock_nodes prio
	rep=$(cluster_replica_port "$owner")
	[[ -n $rep ]] || fail "no replica of $owner"
	start_holder "$(node_url "$owner")" prio -t 30s
	for n in 1 2; do
		bg_start "low$n" "$RLOCK" -u "$(node_url "${others[n - 1]}")" run -w 30s prio -- \
			sh -c "echo low$n >> order"
		pids+=("$BG_PID")
		wait_until 10 cline_is "$owner" prio "$n"
	done
	bg_start high "$RLOCK" -u "$(node_url "$rep")" run -w 30s --priority 10 --label hotfix prio -- \
		sh -c 'echo high >> order'
	hpid=$BG_PID
	pids+=("$hpid")
	wait_until 10 cline_is "$owner" prio 3
	served_by_priority "${pids[@]}" -- -u "$(node_url "${others[0]}")"
	clock_free prio
	assert_equal "$(ccli "$owner" EXISTS "$k:line" "$k:line:lease" "$k:line:who")" 0
}

# ---- slot migration ---------------------------------------------------------

@test "a slot migrated during a hold: ASK while it moves, then renewal, extend, release and the waiter follow it" {
	local k slot from to
	k=$(key mg)
	slot=$(cluster_slot "$k")
	from=$(cluster_owner_port "$k")
	to=$(cluster_other_port "$k")
	# The fences ahead of the clock, so that the fences below show they
	# went on from where they were: the history moved with the slot.
	local c
	c=$(cfence_ahead mg)
	start_holder "$(node_url "$from")" mg -t 2s
	assert_fence "$FENCE" $((c + 1))
	# A second lock in the same slot, taken with acquire, for extend and
	# release by token after the move.
	local other token2
	other=$(same_slot_name mg)
	assert_equal "$(cluster_slot "$(key "$other")")" "$slot"
	token2=$("$RLOCK" -u "$(node_url "$from")" acquire -t 60s "$other")
	bg_start waiter "$RLOCK" -u "$(node_url "$to")" run -w 30s mg -- \
		sh -c 'echo "$RLOCK_FENCE $RLOCK_TOKEN" > got'
	local wpid=$BG_PID
	wait_until 10 chas_waiters mg 1
	cluster_migrate_start "$slot" "$from" "$to"
	cluster_migrate_keys "$slot" "$from" "$to"
	# The keys are on the importing node now: the source answers ASK.
	assert_equal "$(ccli "$from" GET "$k")" "ASK $slot 127.0.0.1:$to"
	# A request naming keys of which the importing node has some, not all
	# (the lock has no shared holders), is refused with TRYAGAIN until
	# the move ends: retried for the I/O timeout, then 69.  The holder's
	# renewals name only its key and meta, which moved together.
	run -69 --separate-stderr "$RLOCK" -u "$(node_url "$from")" --io-timeout 500ms acquire -n mg
	assert_stderr "rlock: acquire: 127.0.0.1:$to: the lock's slot is being migrated (TRYAGAIN)"
	cluster_migrate_finish "$slot" "$to"
	assert_equal "$(cluster_owner_port "$k")" "$to"
	# Two leases later, the holder's renewals reach the new owner.
	local t0
	t0=$(now_ms)
	while (($(elapsed_since "$t0") < 4000)); do
		pid_alive "$HOLDER_PID" || fail "rlock exited: $(bg_err holder-mg)"
		assert_equal "$(ccli "$to" GET "$k")" "$TOKEN"
		sleep 0.25
	done
	# extend and release through the old owner (MOVED now).
	assert_equal "$(ccli "$to" GET "$(key "$other")")" "$token2"
	run -0 "$RLOCK" -u "$(node_url "$from")" extend -t 120s "$other" "$token2"
	local p
	p=$(ccli "$to" PTTL "$(key "$other")")
	((p > 60000 && p <= 120000)) || fail "pttl after extend: $p"
	run -0 "$RLOCK" -u "$(node_url "$from")" release "$other" "$token2"
	assert_equal "$(ccli "$to" EXISTS "$(key "$other")")" 0
	[[ ! -e got ]]
	t0=$(now_ms)
	touch go-mg
	bg_wait "$HOLDER_PID" 10
	assert_equal "$BG_STATUS" 0
	bg_wait "$wpid" 10
	assert_equal "$BG_STATUS" 0
	(($(elapsed_since "$t0") < 3000)) || fail "the waiter took $(elapsed_since "$t0")ms"
	local wfence wtoken
	read -r wfence wtoken <got
	assert_increasing "$c" "$FENCE" "$wfence"
	assert_equal "$(grant_fence_on "$to" mg)" "$wfence"
	assert_equal "$(ccli "$to" EXISTS "$k")" 0
}

@test "a free lock in a migrating slot is taken once the migration ends (TRYAGAIN is retried)" {
	local k slot from to token
	k=$(key tg)
	# Taken and released once: the record of the grant and the history
	# stay, so the acquire script gets TRYAGAIN while the slot is split
	# between two nodes.  From ahead of the clock, the fences show the
	# history moved.
	local c f1
	c=$(cfence_ahead tg)
	token=$("$RLOCK" -u "$(owner_url tg)" acquire tg)
	f1=$(cmeta tg fence)
	"$RLOCK" -u "$(owner_url tg)" release tg "$token"
	slot=$(cluster_slot "$k")
	from=$(cluster_owner_port "$k")
	to=$(cluster_other_port "$k")
	cluster_migrate_start "$slot" "$from" "$to"
	cluster_migrate_keys "$slot" "$from" "$to"
	bg_start acq "$RLOCK" -u "$(node_url "$from")" --io-timeout 15s acquire -w 15s tg
	local apid=$BG_PID
	cluster_migrate_finish "$slot" "$to"
	bg_wait "$apid" 20
	assert_equal "$BG_STATUS" 0
	token=$(bg_out acq)
	assert_equal "$(ccli "$to" GET "$k")" "$token"
	assert_increasing "$c" "$f1" "$(grant_fence_on "$to" tg)"
	assert_equal "$(cluster_grant_record "$to" tg | sed -n 7p)" "${token:0:8}"
}

# ---- history ------------------------------------------------------------------

# log_cli NAME ARGS...: redis-cli against the master serving lock NAME's
# slot (history_helper reads the stream with it).
log_cli() {
	local p
	p=$(cluster_owner_port "$(key "$1")")
	shift
	ccli "$p" "$@"
}

# one_per_master PREFIX: three lock names, each served by another master.
one_per_master() {
	local n=0 name p
	local -A byowner=()
	while ((${#byowner[@]} < 3)); do
		name="$1$n"
		p=$(cluster_owner_port "$(key "$name")")
		[[ -n ${byowner[$p]:-} ]] || byowner[$p]=$name
		n=$((n + 1))
	done
	echo "${byowner[@]}"
}

@test "log -f and log -f --json through nodes that do not serve the slot, while a queue of deploys goes through: each event once, in order, fences increasing; exit 0 on SIGINT and SIGTERM" {
	export USER=tester
	local owner rep
	owner=$(cluster_owner_port "$(key deploy)")
	rep=$(cluster_replica_port "$owner")
	[[ -n $rep ]] || fail "no replica of $owner"
	start_holder "$(owner_url deploy)" deploy -t 30s
	local -a pids=("$HOLDER_PID") fences=("$FENCE")
	# The followers, through another master and through the owner's
	# replica (both answer MOVED), show the holder's acquired event first.
	bg_start text "$RLOCK" -u "$(other_url deploy)" log -f deploy
	local tpid=$BG_PID
	bg_start json "$RLOCK" -u "$(node_url "$rep")" log -f --json deploy
	local jpid=$BG_PID
	wait_until 10 has_lines text.out 1
	wait_until 10 has_lines json.out 1
	# Four deploys wait in line, each entered through another node.
	local -a ports
	mapfile -t ports < <(cluster_master_ports)
	local i
	line_up_through_nodes deploy 'echo "$PPID $RLOCK_FENCE" >> ran'
	touch go-deploy
	for i in 0 1 2 3 4; do
		bg_wait "${pids[i]}" 20
		assert_equal "$BG_STATUS" 0
	done
	# The order they ran in (rlock's pid and the fence each was given):
	# the four deploys, each once.
	local -a ran
	mapfile -t ran <ran
	assert_equal "${#ran[@]}" 4
	assert_equal "$(cut -d' ' -f1 ran | sort -n | tr '\n' ' ')" \
		"$(printf '%s\n' "${pids[@]:1}" | sort -n | tr '\n' ' ')"
	for i in 1 2 3 4; do
		pids[i]=${ran[i - 1]% *}
		fences[i]=${ran[i - 1]#* }
	done
	assert_increasing "${fences[@]}"
	# One more run, through the third master: once the followers show it,
	# they have shown everything before it.
	run -0 "$RLOCK" -u "$(node_url "${ports[2]}")" run --note "last one" deploy -- true
	wait_until 10 has_lines text.out 12
	wait_until 10 has_lines json.out 12
	assert_equal "$(event_names deploy)" "acquired released acquired released acquired released acquired released acquired released acquired released"
	# The stream, as the followers saw it: once each, in order.
	log_matches_stream "$(cat json.out)" "$(events deploy)"
	local -a t
	mapfile -t t <text.out
	assert_equal "${#t[@]}" 12
	for i in 0 1 2 3 4; do
		log_line_matches "${t[2 * i]}" acquired "${pids[i]}" "${fences[i]}"
		log_line_matches "${t[2 * i + 1]}" released "${pids[i]}" "${fences[i]}"
		assert_regex "${t[2 * i + 1]}" '  held [^ ]+  exit 0( |$)'
	done
	# The waiters' grants say how long they waited.
	for i in 1 2 3 4; do
		assert_regex "${t[2 * i]}" '  waited [^ ]+  sh -c '
	done
	assert_regex "${t[10]}" ' acquired .*  note: last one$'
	assert_regex "${t[11]}" ' released .*  exit 0( |$)'
	stop_followers "$tpid" "$jpid" 12
}

@test "log, last and status through a master that does not serve the slot: the history is in the lock's slot, on its owner only" {
	export USER=tester
	local k owner url p host
	host=$(uname -n)
	k=$(key hist)
	assert_equal "$(cluster_slot "$(logkey hist)")" "$(cluster_slot "$k")"
	owner=$(cluster_owner_port "$k")
	url=$(other_url hist)
	run -0 "$RLOCK" -u "$url" run hist -- true
	run -3 "$RLOCK" -u "$url" run --note second hist -- sh -c 'exit 3'
	# Written by the owner; every other master sends the reader there.
	for p in $(cluster_master_ports); do
		if [[ $p == "$owner" ]]; then
			assert_equal "$(ccli "$p" TYPE "$(logkey hist)")" stream
		else
			assert_equal "$(ccli "$p" TYPE "$(logkey hist)")" "MOVED $(cluster_slot "$k") 127.0.0.1:$owner"
		fi
	done
	assert_equal "$(event_names hist)" "acquired released acquired released"
	run -0 --separate-stderr "$RLOCK" -u "$url" log hist
	assert_equal "$stderr" ""
	assert_equal "${#lines[@]}" 4
	assert_regex "${lines[1]}" ' released .*  exit 0( |$)'
	assert_regex "${lines[2]}" ' acquired .*  note: second$'
	assert_regex "${lines[3]}" ' released .*  exit 3( |$)'
	run -0 --separate-stderr "$RLOCK" -u "$url" log --json -n 3 hist
	log_matches_stream "$output" "$(events hist | python3 -c 'import json, sys; print(json.dumps(json.load(sys.stdin)[-3:]))')"
	run -0 --separate-stderr "$RLOCK" -u "$url" last hist
	assert_equal "$stderr" ""
	assert_regex "$output" "^hist: last run ended [^ ]+ ago on $host \\(tester pid [0-9]+\\): exit 3 after [^ ]+$"
	# The first run, a success, is within the hour.
	run -0 --separate-stderr "$RLOCK" -u "$url" last --max-age 1h hist
	assert_output ""
	run -1 --separate-stderr "$RLOCK" -u "$url" last --max-age 1h hist never
	assert_regex "$output" "^never: no successful run within 1h(0m)?: last success never; never ran$"
	run -1 --separate-stderr "$RLOCK" -u "$url" status hist
	assert_line --regexp "^ *last: [^ ]+ ago on $host, exit 3 after [^ ]+$"
	# Locks on the three masters in one call, through one node: each read
	# where it lives.
	local -a names
	read -r -a names <<<"$(one_per_master ok)"
	for p in "${names[@]}"; do
		run -0 "$RLOCK" -u "$url" run "$p" -- true
	done
	run -0 --separate-stderr "$RLOCK" -u "$url" last --max-age 1h "${names[@]}"
	assert_output ""
	assert_equal "$stderr" ""
	run -1 --separate-stderr "$RLOCK" -u "$url" last --json --max-age 1h "${names[@]}" hist never
	assert_equal "${#lines[@]}" 5
	for p in 0 1 2; do
		json_check "${lines[p]}" 'd["lock"] == a[0] and d["stale"] is False' \
			'd["last"]["id"] == a[1] and d["last"]["exit"] == 0' -- "${names[p]}" \
			"$(ccli "$(cluster_owner_port "$(key "${names[p]}")")" XREVRANGE "$(logkey "${names[p]}")" + - COUNT 1 | head -n 1)"
	done
	json_check "${lines[3]}" 'd["lock"] == "hist" and d["stale"] is False' \
		'd["last"]["exit"] == 3 and d["last"]["note"] == "second" and d["last_success"]["exit"] == 0'
	json_check "${lines[4]}" 'd == {"lock": "never", "last": None, "last_success": None, "stale": True}'
}

@test "log -f follows the lock's slot to another master, then through that master's failover: each new event printed once" {
	local k slot from to rep
	k=$(key mig)
	slot=$(cluster_slot "$k")
	from=$(cluster_owner_port "$k")
	to=$(cluster_other_port "$k")
	run -0 "$RLOCK" -u "$(node_url "$from")" run mig -- true
	bg_start f "$RLOCK" -u "$(node_url "$from")" log -f --json mig
	local fpid=$BG_PID
	wait_until 10 has_lines f.out 2
	# The slot moves with its stream; the follower polls through the move
	# (ASK, then MOVED) and the next run is written on the new owner.
	cluster_migrate_start "$slot" "$from" "$to"
	cluster_migrate_keys "$slot" "$from" "$to"
	assert_equal "$(ccli "$from" XLEN "$(logkey mig)")" "ASK $slot 127.0.0.1:$to"
	cluster_migrate_finish "$slot" "$to"
	assert_equal "$(cluster_owner_port "$k")" "$to"
	run -0 "$RLOCK" -u "$(node_url "$from")" run mig -- true
	wait_until 10 has_lines f.out 4
	assert_equal "$(ccli "$to" XLEN "$(logkey mig)")" 4
	# The new owner fails over to its replica: written there next.
	rep=$(cluster_replica_port "$to")
	[[ -n $rep ]] || fail "no replica of $to"
	cluster_failover "$rep"
	assert_equal "$(cluster_owner_port "$k")" "$rep"
	run -0 "$RLOCK" -u "$(node_url "$from")" run --note "after failover" mig -- true
	wait_until 10 has_lines f.out 6
	run -0 "$RLOCK" -u "$(node_url "$to")" run --note "last one" mig -- true
	wait_until 10 has_lines f.out 8
	assert_equal "$(ccli "$rep" XLEN "$(logkey mig)")" 8
	log_matches_stream "$(cat f.out)" "$(events mig)"
	json_check "$(sed -n 5p f.out)" 'd["event"] == "acquired" and d["note"] == "after failover"'
	pid_alive "$fpid"
	kill -INT "$fpid"
	bg_wait "$fpid" 5
	assert_equal "$BG_STATUS" 0
	assert_equal "$(n_lines f.out)" 8
	assert_equal "$(bg_err f)" ""
}

# ---- failover and bench -------------------------------------------------------

# same_owner_name NAME: another lock name served by the same master.
same_owner_name() {
	local want n=0
	want=$(cluster_owner_port "$(key "$1")")
	while [[ $(cluster_owner_port "$(key "$1-$n")") != "$want" ]]; do
		n=$((n + 1))
	done
	echo "$1-$n"
}

@test "failover of a master under two runs: with --wait-replicas 1 the lock stays (exit 0); without, exit 0 with the key or 76 with the command stopped" {
	local k old rep t0 outcome= fn kn
	k=$(key fw)
	old=$(cluster_owner_port "$k")
	rep=$(cluster_replica_port "$old")
	[[ -n $rep ]] || fail "no replica of $old"
	fn=$(same_owner_name fw)
	kn=$(key "$fn")
	start_holder "$(node_url "$old")" fw -t 3s --wait-replicas 1
	local wfence=$FENCE wtoken=$TOKEN wpid=$HOLDER_PID
	start_holder "$(node_url "$old")" "$fn" -t 3s
	local nfence=$FENCE ntoken=$TOKEN npid=$HOLDER_PID nchild=$CHILD
	cluster_failover "$rep"
	assert_equal "$(cluster_owner_port "$k")" "$rep"
	t0=$(now_ms)
	# Past the 3s leases: a key still there was renewed on the new master.
	while (($(elapsed_since "$t0") < 3500)); do
		pid_alive "$wpid" || fail "rlock --wait-replicas 1 exited: $(bg_err holder-fw)"
		assert_equal "$(ccli "$rep" GET "$k")" "$wtoken"
		if pid_gone "$npid"; then
			outcome=exited
		elif (($(elapsed_since "$t0") > 3000)) && pid_alive "$nchild"; then
			[[ $(ccli "$rep" GET "$kn") == "$ntoken" ]] ||
				fail "$fn's command runs but $rep has '$(ccli "$rep" GET "$kn")' for it"
		fi
		sleep 0.25
	done
	assert_equal "$(grant_fence_on "$rep" fw)" "$wfence"
	touch go-fw "go-$fn"
	bg_wait "$wpid" 10
	assert_equal "$BG_STATUS" 0
	[[ -e done-fw ]]
	assert_equal "$(ccli "$rep" EXISTS "$k")" 0
	bg_wait "$npid" 10
	if [[ $outcome == exited || $BG_STATUS != 0 ]]; then
		assert_equal "$BG_STATUS" 76
		wait_until 5 pid_gone "$nchild"
		[[ ! -e done-$fn ]] || fail "$fn's command finished normally but rlock says lost"
	else
		assert_equal "$BG_STATUS" 0
		[[ -e done-$fn ]]
		assert_equal "$(grant_fence_on "$rep" "$fn")" "$nfence"
	fi
	assert_equal "$(ccli "$rep" EXISTS "$kn")" 0
}

@test "doctor through one node: the cluster's state, then every master probed, nothing left behind" {
	local p
	run -1 --separate-stderr "$RLOCK" -u "$(node_url "$C1_PORT")" doctor --json
	json_check "$output" \
		'any(c["check"] == "cluster" and c["level"] == "ok" and c["value"] == "ok" for c in d)' \
		'len({c["server"] for c in d if c["check"] == "role" and c["level"] == "ok"}) == 3' \
		'len({c["server"] for c in d if c["check"] == "cleanup" and c["level"] == "ok"}) == 3' \
		'not any(c["level"] == "fail" for c in d)'
	for p in $CLUSTER_NODES_LIST; do
		[[ -z $(rcli "$p" --scan --pattern "$RLOCK_PREFIX*") ]]
	done
}

# masters_replicated: every master has its replica online.
masters_replicated() {
	local p
	for p in $(cluster_master_ports); do
		[[ $(ccli "$p" INFO replication | tr -d '\r') == *state=online* ]] || return 1
	done
}

@test "doctor through one node: each master's failover window from cluster-node-timeout 1000ms, and --wait-replicas 1 with its one replica warned" {
	local msg
	# Earlier tests fail masters over: their replicas back online first.
	ha_wait 20 masters_replicated
	run -1 --separate-stderr "$RLOCK" -u "$(node_url "$C1_PORT")" doctor --json
	# Every master: one replica (CLUSTER NODES), a window of 1s + 2s.
	json_check "$output" \
		'len([c for c in d if c["check"] == "failover"]) == 3' \
		'all(c["level"] == "warn" and c["value"] == 3000 for c in d if c["check"] == "failover")' \
		'all({k: v for k, v in c["figures"].items() if k != "dataset_bytes"} == {"window_ms": 3000, "ttl_ms": 5000, "wait_ms": 3000, "detect_ms": 1000, "retry_ms": None, "replicas": 1, "wait1_window_ms": None, "wait1_ttl_ms": None, "resync_ms": 2000, "min_replicas": 0, "sentinel_replicas": None} for c in d if c["check"] == "failover")'
	msg=$(python3 -c '
import json, re, sys
for c in json.loads(sys.argv[1]):
    if c["check"] == "failover":
        print(re.sub(r", [0-9.]+[kMG]?B of data", ", NkB of data", c["message"])); break
' "$output")
	assert_equal "$msg" "failover window ~3s: cluster-node-timeout 1000ms, ~2s for the best replica's election delay and the vote. Hold with -t 5s or more (renewals come every TTL/3), wait with -w 3s plus the hold. --wait-replicas 1 cannot ride it out: the new master has no replica, so no grant or renewal counts until the old master is back and fully resynced (~2s once it is back: 1s to take it back as a replica, diskless delay 0s, NkB of data at 50MB/s), none at all if it never returns; add a replica. A replica cut off for over 20s (node-timeout x validity-factor 10, + 10s) is never promoted."
}

@test "bench against a seed node: no errors, no double holds, nothing left behind" {
	local seed p
	seed=$(node_url "$(cluster_master_ports | head -n 1)")
	run -0 --separate-stderr "$RLOCK" -u "$seed" bench -c 20 -k 20 -d 1s --json
	json_check "$output" \
		'd["clients"] == 20 and d["keys"] == 20' \
		'd["cycles"] > 0' \
		'd["errors"]["total"] == 0' \
		'd["violations"]["total"] == 0'
	for p in $(cluster_master_ports); do
		assert_equal "$(ccli "$p" --scan --pattern "${RLOCK_PREFIX}*")" ""
	done
}

@test "a slot's master killed while its replica missed the grant: the holder follows the cluster's map to the promoted replica and stops its command within seconds (76)" {
	local k old rep name t0
	k=$(key cw)
	old=$(cluster_owner_port "$k")
	rep=$(cluster_replica_port "$old")
	[[ -n $rep ]] || fail "no replica of $old"
	name=$(cluster_node_name "$old")
	# The replica misses the grant, then its master dies: promoted, it
	# has no lock.  With -t 60s the holder's next renewal would come 20s
	# later.  Frozen, and its link cut, the replica cannot catch up.
	kill -STOP "$(server_pid "$(cluster_node_name "$rep")")"
	wait_until 5 pid_stopped "$(server_pid "$(cluster_node_name "$rep")")"
	ccli "$old" CLIENT KILL TYPE replica >/dev/null
	wait_until 5 eval '[[ $(ccli "$old" INFO replication | tr -d "\r") == *connected_slaves:0* ]]'
	start_holder "$(node_url "$old")" cw -t 60s
	kill -KILL "$(server_pid "$name")"
	wait_until 5 pid_gone "$(server_pid "$name")"
	kill -CONT "$(server_pid "$(cluster_node_name "$rep")")"
	t0=$(now_ms)
	assert_equal "$(ccli "$rep" CLUSTER FAILOVER TAKEOVER)" OK
	wait_until 10 eval '[[ $(ccli "$rep" INFO replication | tr -d "\r") == *role:master* ]]'
	wait_until 10 pid_gone "$HOLDER_PID" ||
		fail "rlock run still runs $(elapsed_since "$t0")ms after its master died"
	bg_wait "$HOLDER_PID" 1
	assert_equal "$BG_STATUS" 76
	wait_until 5 pid_gone "$CHILD"
	[[ ! -e done-cw ]]
	run bg_err holder-cw
	assert_output --partial "cw: lock lost: the token no longer holds it; command stopped"
	assert_equal "$(ccli "$rep" EXISTS "$k")" 0
	# The old master comes back empty, as the new one's replica.
	restart_redis "$name"
	ha_wait 20 eval "[[ \$(cluster_replica_port '$rep') == $(_rl_port_of "$name") ]]"
	ha_wait 20 cluster_stable
}

# ---- several locks at once (--with) -----------------------------------------

@test "--with through a master that does not serve the slot: names with one hash tag are taken together on the slot's owner" {
	local url token
	url=$(other_url "{dep}db")
	run -0 "$RLOCK" -u "$url" run -n "{dep}db" --with "{dep}cache" -- sh -c 'echo "$RLOCK_LOCKS $RLOCK_NAME_1"'
	assert_output "2 {dep}cache"
	clock_free "{dep}db"
	clock_free "{dep}cache"
	run -0 --separate-stderr "$RLOCK" -u "$url" acquire "{dep}db" --with "{dep}cache"
	token=$output
	assert_equal "$(cholder "{dep}db")" "$token"
	assert_equal "$(cholder "{dep}cache")" "$token"
	# A set waits for a lock of it held: -w runs out, nothing taken.
	run -75 "$RLOCK" -u "$(owner_url "{dep}db")" run -w 300ms "{dep}queue" --with "{dep}cache" -- true
	clock_free "{dep}queue"
	run -0 "$RLOCK" -u "$(owner_url "{dep}db")" release "{dep}cache" "$token"
	clock_free "{dep}db"
	clock_free "{dep}cache"
}

@test "--with on a cluster with names in different slots is a usage error naming the fix, never CROSSSLOT" {
	local seed
	seed=$(node_url "$(cluster_master_ports | head -n 1)")
	run -64 --separate-stderr "$RLOCK" -u "$seed" run a --with b -- touch ran
	assert_stderr "rlock: run: --with on a Redis Cluster: the locks' keys are in different slots; give the names one hash tag, e.g. '{deploy}db' and '{deploy}cache'"
	[[ ! -e ran ]]
	run -64 --separate-stderr "$RLOCK" -u "$seed" acquire a --with b
	assert_stderr --partial "give the names one hash tag"
	assert_equal "$output" ""
	clock_free a
	clock_free b
}
