#!/usr/bin/env bats
# safety.bats - the short versions of the randomized safety checker
# (tests/stress/safety.sh; `make stress` runs the long one) and of the
# flash-sale oversell example (examples/seckill.sh).  Both start their own
# servers.

bats_require_minimum_version 1.5.0
load test_helper

# No shared server: each script brings its own.
setup_file() { :; }
teardown_file() { :; }

@test "safety checker, 20s of chaos: every overlap and stale write belongs to a holder reported lost" {
	run -0 "$REPO_DIR/tests/stress/safety.sh" --duration 20 --workers 4 --quiet
	assert_line --regexp '^critical sections +[1-9][0-9]*$'
	assert_line --regexp '^fence repeats +0$'
	assert_line --partial 'OK: every overlap and every stale write'
}

@test "seckill: 200 buyers, 20 items, one lock: exactly 20 sold, stock never negative" {
	run -0 "$REPO_DIR/examples/seckill.sh" --buyers 200 --items 20
	assert_line --regexp '^buyers 200, items 20, one rlock: sold 20, stock left 0, lowest stock after a sale 0, distinct units sold 20, failed buyers 0, [0-9]+ms$'
	assert_line 'ok: exactly 20 sold, the stock never went negative'
}
