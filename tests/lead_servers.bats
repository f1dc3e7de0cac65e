#!/usr/bin/env bats
# lead_servers.bats - rlock lead on several independent masters (three
# redis-servers, a quorum of two), over TLS, and as docs/servers.md's
# least-privilege ACL user (the guide's rule, read from the page as
# acl.bats reads it): exactly one command runs among three candidates, and
# SIGTERM to the leader hands the lead on within a second, never before the
# old command ended.  A step-down (--health) is recorded as the ACL user
# too.  The servers are started once for the file.

bats_require_minimum_version 1.5.0
load test_helper
load tls_helper
load lead_helper

setup_file() {
	local m
	for m in M1 M2 M3; do
		start_redis "$m" || return 1
	done
	# A test stops a master.
	disown_servers M1 M2 M3
	tls_make_certs
	start_redis_tls T || return 1
	start_redis A || return 1
}

teardown_file() {
	rl_teardown_file
}

setup() {
	rl_setup
	lead_setup
	U3=(-u "$M1_URL" -u "$M2_URL" -u "$M3_URL")
	UT=(--cacert "$CERTS/ca.crt" -u "$T_URL")
}

# A test that stops a master leaves it to this.
teardown() {
	rl_teardown
	unset SRV
	servers_up M1 M2 M3
}

# ---- several masters ------------------------------------------------------

@test "lead on three masters: of three candidates exactly one runs its command, held on every master" {
	SRV=M1
	one_of_three "${U3[@]}"
	local tok
	tok=$(holder L M1)
	[[ -n $tok ]]
	held_by L "$tok" M2
	held_by L "$tok" M3
}

@test "lead on three masters: SIGTERM to the leader, another starts within 1s and never before the old one ended" {
	SRV=M1
	# Several masters keep no line: either waiting candidate may lead.
	NOLINE=1 term_hands_on "${U3[@]}"
}

@test "lead on three masters: one master down, the leader goes on (a quorum of two); SIGTERM still hands the lead on" {
	SRV=M2
	candidates 2 "${U3[@]}" -t 3s
	stop_redis M1
	local t0
	t0=$(now_ms)
	# Past a lease: renewed on the two left.
	wait_until 10 eval '(( $(now_ms) - t0 >= 3500 ))'
	assert_equal "$(starts)" 1
	assert_equal "$(running)" 1
	kill -TERM "${PID[1]}"
	wait_until 5 starts_are 2
	(($(awk '$1 == "start" && ++k == 2 { print $3 }' "$EVENTS") > $(field end 1 3)))
	bg_wait "${PID[1]}" 5
	assert_equal "$BG_STATUS" 0
}

# ---- TLS ----------------------------------------------------------------------

@test "lead over TLS: of three candidates exactly one runs its command" {
	SRV=T
	one_of_three "${UT[@]}"
	tlock_held L
}

@test "lead over TLS: SIGTERM to the leader, the next starts within 1s and never before the old one ended" {
	SRV=T
	term_hands_on "${UT[@]}"
}

# ---- the least-privilege ACL user -------------------------------------------

# acl_user: user app on server A with docs/servers.md's minimal rule (the
# line that has -@all), for this test's prefix; UA its URL.
acl_user() {
	local line
	line=$(grep -E '^ACL SETUSER app on >secret ' "$REPO_DIR/docs/servers.md" | grep -F -- -@all | head -n 1)
	[[ -n $line ]] || fail "docs/servers.md has no minimal ACL SETUSER line"
	line=${line//rlock:/$RLOCK_PREFIX}
	set -f
	read -r -a rule <<<"$line"
	set +f
	rcli A "${rule[@]}" >/dev/null
	UA=(-u "redis://app:secret@127.0.0.1:$A_PORT")
	SRV=A
}

@test "lead as the least-privilege ACL user: of three candidates exactly one runs its command" {
	acl_user
	one_of_three "${UA[@]}"
	run -0 --separate-stderr "$RLOCK" "${UA[@]}" last --prometheus L
	assert_line --regexp "^rlock_leader_info\\{lock=\"L\",.*,pid=\"${PID[1]}\"\\} 1\$"
}

@test "lead as the least-privilege ACL user: SIGTERM to the leader, the next starts within 1s and never before the old one ended; no warning" {
	acl_user
	term_hands_on "${UA[@]}"
	run cat c1.err c2.err c3.err
	refute_output --partial warning
	refute_output --partial refused
}

@test "lead as the least-privilege ACL user: a --health step-down is recorded with its reason, and the next leads" {
	acl_user
	: >ok1
	bg_start c1 "$RLOCK" "${UA[@]}" lead -t 10s --health 'test -e ok1' --health-every 100ms --health-fails 1 L -- "$CAND" 1
	wait_until 10 starts_are 1
	bg_start c2 "$RLOCK" "${UA[@]}" lead -t 10s L -- "$CAND" 2
	wait_until 10 in_line 1
	rm ok1
	wait_until 5 starts_are 2
	run -0 --separate-stderr "$RLOCK" "${UA[@]}" log L
	assert_line --index 1 --regexp '  stepped-down  .*\(--health failed 1 times in a row\)$'
	assert_equal "$stderr" ""
}
