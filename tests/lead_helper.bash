# lead_helper.bash - candidates of rlock lead and what their commands say,
# for the suites that run them (lead, lead_ha, lead_servers).  Load it
# after test_helper and call lead_setup from setup.
#
# Each candidate runs $CAND ID: it writes "start ID US FENCE PID" to
# $EVENTS when it starts and "end ID US" when SIGTERM ends it (US: the wall
# clock in µs), and "hup ID" for each SIGHUP.
#
#	candidates N [OPTIONS...]	N candidates for lock L, 1..N, each in
#					line before the next starts; PID[i] is
#					rlock's pid.  in_line N says N wait
#					for L on server ${SRV:-R}; a suite may
#					define its own after loading this.
#	starts, running, starts_are N, field EVENT ID N, nth_start N
#	one_of_three OPTIONS...		three candidates, exactly one command
#					runs, the first's, through renewals;
#					status (with OPTIONS: the servers')
#					names its candidate as the holder
#	term_hands_on OPTIONS...	SIGTERM to the leader: the next in line
#					(NOLINE set: another) starts within 1s,
#					never before the old one ended

lead_setup() {
	export EVENTS=$BATS_TEST_TMPDIR/events
	CAND=$BATS_TEST_TMPDIR/cand
	cat >"$CAND" <<-'EOF'
		#!/bin/bash
		id=$1
		trap 'echo "end $id ${EPOCHREALTIME/[.,]/}" >>"$EVENTS"; exit 0' TERM
		trap 'echo "hup $id" >>"$EVENTS"' HUP
		echo "start $id ${EPOCHREALTIME/[.,]/} $RLOCK_FENCE $$" >>"$EVENTS"
		while :; do
			sleep 1 &
			wait $!
		done
	EOF
	chmod +x "$CAND"
	: >"$EVENTS"
}

# starts: how many commands have started.  running: started less ended.
starts() { grep -c '^start ' "$EVENTS" || true; }
running() { echo $(($(starts) - $(grep -c '^end ' "$EVENTS" || true))); }
starts_are() { [[ $(starts) == "$1" ]]; }
# field EVENT ID N: field N (1-based) of the line "EVENT ID ...".
field() { awk -v e="$1" -v i="$2" -v n="$3" '$1 == e && $2 == i { print $n; exit }' "$EVENTS"; }
# nth_start N: the id of the Nth command started.
nth_start() { awk -v n="$1" '$1 == "start" && ++k == n { print $2; exit }' "$EVENTS"; }

# in_line N: N candidates wait for lock L on server ${SRV:-R}.
in_line() { has_waiters L "$1" "${SRV:-R}"; }

candidates() {
	local n=$1 i
	shift
	PID=()
	for ((i = 1; i <= n; i++)); do
		bg_start "c$i" "$RLOCK" lead "$@" L -- "$CAND" "$i"
		PID[i]=$BG_PID
		if ((i == 1)); then
			wait_until 10 starts_are 1
		else
			wait_until 10 in_line $((i - 1))
		fi
	done
}

one_of_three() {
	candidates 3 "$@" -t 3s
	assert_equal "$(nth_start 1)" 1
	# Through two renewals (TTL/3): still one command, the first's.
	local t0
	t0=$(now_ms)
	wait_until 10 eval '(( $(now_ms) - t0 >= 2500 ))'
	assert_equal "$(starts)" 1
	assert_equal "$(running)" 1
	in_line 2
	run -0 --separate-stderr "$RLOCK" "$@" status --json L
	json_check "$output" 'd["locks"][0]["pid"] == int(a[0]) and d["locks"][0]["command"] == "lead: " + a[1] + " 1"' -- "${PID[1]}" "$CAND"
}

term_hands_on() {
	candidates 3 "$@" -t 10s
	local t_kill start2 end1
	t_kill=$(now_ms)
	kill -TERM "${PID[1]}"
	wait_until 5 starts_are 2
	# The next in line; several masters keep no line: another.
	if [[ -n ${NOLINE:-} ]]; then
		[[ $(nth_start 2) != 1 ]]
	else
		assert_equal "$(nth_start 2)" 2
	fi
	end1=$(field end 1 3)
	start2=$(awk '$1 == "start" && ++k == 2 { print $3 }' "$EVENTS")
	[[ -n $end1 ]]
	((start2 > end1))
	((start2 / 1000 - t_kill < 1000))
	bg_wait "${PID[1]}" 5
	assert_equal "$BG_STATUS" 0
	assert_equal "$(running)" 1
	wait_until 5 in_line 1
}
