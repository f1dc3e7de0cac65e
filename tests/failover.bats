#!/usr/bin/env bats
# failover.bats - the short version of the failover chaos harness
# (tests/stress/failover.sh; `make stress` runs the long ones): 40s of
# workers looping `rlock run` through a Sentinel set (a master, two
# replicas, three sentinels) while forced failovers, SIGKILLs, SIGSTOPs and
# restarts without persistence of the master replace or empty it, every
# critical section writing through docs/ha.md's fenced resource.  The
# harness brings its own servers; it runs once, from setup_file, and each
# test reads its summary (key=value lines).

bats_require_minimum_version 1.5.0
load test_helper

setup_file() {
	local out=$BATS_FILE_TMPDIR/failover st=0
	# Every kind of chaos: the fence survives them all, restarts without
	# persistence included.  Fast sentinel periods and no replication
	# delay: the set settles within --every, so 40s see every kind.
	"$REPO_DIR/tests/stress/failover.sh" --duration 40 --every 9 \
		--chaos failover,kill,stop,restart --sentinel-periods fast \
		--repl-delay 0 --quiet >"$out.out" 2>"$out.err" || st=$?
	echo "$st" >"$out.status"
}

teardown_file() { :; }

# summary KEY: the value of KEY in the harness's summary block.
summary() {
	sed -n "s/^$1=//p" "$BATS_FILE_TMPDIR/failover.out"
}

# show: the harness's table and complaints, for a failing test's log.
show() {
	sed -n '1,/^--- summary/p' "$BATS_FILE_TMPDIR/failover.out"
	grep '^FAIL' "$BATS_FILE_TMPDIR/failover.out" || true
	cat "$BATS_FILE_TMPDIR/failover.err"
}

@test "failover harness, 40s of Sentinel failovers and restarts: it ran, the master changed, sections ran, no stale write accepted" {
	show
	run -0 cat "$BATS_FILE_TMPDIR/failover.status"
	# 0 or 1: it ran (2 is a harness that could not).
	assert_output --regexp '^[01]$'
	assert_equal "$(summary mode)" sentinel
	assert [ "$(summary failovers)" -ge 1 ]
	assert [ "$(summary sections)" -ge 20 ]
	assert_equal "$(summary hung)" 0
	assert_equal "$(summary stale_accepted)" 0
}

@test "the fence never goes back across failover: no rightful write refused" {
	show
	assert_equal "$(summary rightful_rejected)" 0
	assert_equal "$(summary result)" ok
	run -0 cat "$BATS_FILE_TMPDIR/failover.status"
	assert_output 0
}
