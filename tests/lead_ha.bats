#!/usr/bin/env bats
# lead_ha.bats - rlock lead through Redis Sentinel and on Redis Cluster:
# exactly one command runs among three candidates, SIGTERM to the leader
# hands the lead on within a second, and a Sentinel failover while leading
# leaves the leader in its term (its token on the new master) or stops its
# command before another leads, never two commands once a lease has passed.
# The topologies are started once for the file (ha_helper): a master, its
# replica and three sentinels; a cluster of three masters.  The candidates
# reach the cluster through a node that does not serve the lock's slot.

bats_require_minimum_version 1.5.0
load test_helper
load ha_helper
load lead_helper

setup_file() {
	start_sentinel_topology || return 1
	start_cluster || return 1
}

teardown_file() {
	rl_teardown_file
}

setup() {
	rl_setup
	lead_setup
	SU=(-u "$SENTINEL_URL")
}

teardown() {
	rl_teardown
	sentinels_up
}

# in_line N: N candidates wait for L, on the master now (Sentinel) or on
# the slot's owner (Cluster: CU set).
in_line() {
	if [[ -n ${CU:-} ]]; then
		chas_waiters L "$1"
	else
		has_waiters L "$1" "$(ha_master)"
	fi
}

# A cluster node that does not serve L's slot: every request is redirected.
cluster_seed() {
	CU=(-u "redis://127.0.0.1:$(cluster_other_port "$(key L)")")
}

# ---- Sentinel ---------------------------------------------------------------

@test "lead through the sentinels: of three candidates exactly one runs its command" {
	one_of_three "${SU[@]}"
	lock_held L "$(ha_master)"
}

@test "lead through the sentinels: SIGTERM to the leader, the next starts within 1s and never before the old one ended" {
	term_hands_on "${SU[@]}"
}

@test "lead through the sentinels: a failover while leading keeps the term or stops the command before another leads; one command, the holder's, once a lease has passed" {
	candidates 2 "${SU[@]}" -t 3s --wait-replicas 1
	local new t0 who
	sentinel_failover
	new=$(ha_master)
	t0=$(now_ms)
	# Once a lease has passed since the failover, at most one command
	# runs (before, an acquisition not yet replicated could be lost with
	# the old master: the fence tells the two apart).
	while (($(now_ms) - t0 < 6000)); do
		if (($(now_ms) - t0 > 3500)); then
			(($(running) <= 1)) || fail "two commands run: $(cat "$EVENTS")"
		fi
		sleep 0.2
	done
	wait_until 10 eval '[[ $(running) == 1 ]]'
	wait_until 10 lock_held L "$new"
	# The command that runs is the holder's on the new master.
	who=$(awk '$1 == "start" { id = $2 } END { print id }' "$EVENTS")
	run -0 --separate-stderr "$RLOCK" "${SU[@]}" status --json L
	json_check "$output" 'd["locks"][0]["pid"] == int(a[0])' -- "${PID[who]}"
	if grep -q '^end 1 ' "$EVENTS"; then
		# Stopped: whoever leads next started after it ended.
		(($(awk '$1 == "start" && ++k == 2 { print $3 }' "$EVENTS") > $(field end 1 3)))
	else
		assert_equal "$(starts)" 1
	fi
	# Candidates never exit on a loss.
	pid_alive "${PID[1]}"
	pid_alive "${PID[2]}"
}

# ---- Cluster ----------------------------------------------------------------

@test "lead on a cluster, through a node that does not serve the slot: of three candidates exactly one runs its command" {
	cluster_seed
	one_of_three "${CU[@]}"
	clock_held L
}

@test "lead on a cluster: SIGTERM to the leader, the next starts within 1s and never before the old one ended" {
	cluster_seed
	term_hands_on "${CU[@]}"
}
