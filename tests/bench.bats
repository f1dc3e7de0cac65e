#!/usr/bin/env bats
# bench.bats - rlock bench: short workloads against a private server, the
# JSON schema, mutual exclusion under contention, usage errors, and a
# server that goes away or stops answering mid-run.

bats_require_minimum_version 1.5.0
load test_helper
load hostile_helper

teardown() {
	stop_all_hostile
	rl_teardown
}

# info_bulk TEXT: TEXT (with \r\n escapes) as a RESP bulk string, escaped
# as a hostile server's rule.
info_bulk() {
	local n
	n=$(printf '%b' "$1" | wc -c)
	printf '$%d\\r\\n%s\\r\\n' "$n" "$1"
}

# no_bench_keys [SERVER]: no key of the run is left behind on SERVER (R):
# the fence counters never expire, nor the wake-up lists for 30s.
no_bench_keys() {
	[[ -z $(rcli "${1:-R}" --scan --pattern "${RLOCK_PREFIX}*") ]]
}

# clients_info SERVER FIELD: FIELD of SERVER's INFO clients.
clients_info() {
	rcli "$1" INFO clients | tr -d '\r' | sed -n "s/^$2://p"
}

# Some client of SERVER is blocked (BLPOP).
blocked() { (($(clients_info "$1" blocked_clients) > 0)); }

@test "bench --json has the documented fields and no violations" {
	run -0 --separate-stderr "$RLOCK" bench -c 4 -n 200 --json
	assert_equal "$stderr" ""
	json_check "$output" \
		'd["server"] == "127.0.0.1:%s" % __import__("os").environ["R_PORT"]' \
		'd["clients"] == 4 and d["keys"] == 4' \
		'd["ttl_ms"] == 10000 and d["hold_ms"] == 0 and d["gap_ms"] == 0' \
		'd["mode"] == "cycles" and d["target_cycles"] == 200' \
		'd["duration_ms"] is None' \
		'd["cycles"] == 200 and d["attempts"] == 200 and d["busy"] == 0' \
		'd["elapsed_s"] > 0 and d["cycles_per_s"] > 0' \
		'd["ping"]["round_trips"] > 0 and d["ping"]["per_s"] > 0' \
		'd["efficiency"] > 0' \
		'set(d["latency_us"]) == {"acquire", "release", "wait", "handoff", "ping"}' \
		'all(set(v) == {"count", "p50", "p90", "p99", "p999", "max", "mean"} for v in d["latency_us"].values())' \
		'd["latency_us"]["acquire"]["count"] == 200' \
		'd["latency_us"]["release"]["count"] == 200' \
		'd["latency_us"]["handoff"]["count"] == 0' \
		'all(v["p50"] <= v["p90"] <= v["p99"] <= v["p999"] <= v["max"] for v in d["latency_us"].values())' \
		'd["longest_wait_us"] > 0' \
		'd["errors"]["total"] == 0' \
		'set(d["errors"]) == {"total", "connection", "timeout", "oom", "readonly", "loading", "busy_script", "wrongtype", "other", "unexpected"}' \
		'd["violations"] == {"total": 0, "overlap": 0, "not_ours": 0, "fence": 0}' \
		'd["cpu_s"]["bench"] >= 0 and d["cpu_s"]["server"] >= 0' \
		'd["canceled"] is False' \
		'isinstance(d["setup_ms"], int) and isinstance(d["wakeups"], int)' \
		'isinstance(d["timer_wakeups"], int) and isinstance(d["noscript"], int)' \
		'd["wakeups"] == 0 and d["timer_wakeups"] == 0 and d["batons"] == 0' \
		'isinstance(d["reacquired"], int) and isinstance(d["abandoned"], int)'
	no_bench_keys
}

@test "bench prints a human report with rate, latencies and violations" {
	run -0 --separate-stderr "$RLOCK" bench -c 2 -n 100
	assert_equal "$stderr" ""
	assert_line --regexp '^rlock bench: 127\.0\.0\.1:[0-9]+, 2 clients, 2 locks \(no contention\), ttl 10s, hold 0, 100 cycles$'
	assert_line --regexp '^  cycles +100 in [0-9.]+s = [0-9]+ cycles/s$'
	assert_line --regexp '^  PING +[0-9]+ in [0-9.]+s = [0-9]+ round trips/s; efficiency [0-9]+% '
	assert_line --regexp '^  acquire +[0-9.]+(us|ms|s) '
	assert_line --regexp '^  release +[0-9.]+(us|ms|s) '
	assert_line '  errors       0'
	assert_line '  violations   0'
}

@test "bench with one lock for all clients: contention, hand-off, no violation" {
	run -0 --separate-stderr "$RLOCK" bench -c 8 -k 1 -n 400 --gap 1ms --json
	json_check "$output" \
		'd["keys"] == 1 and d["cycles"] == 400' \
		'd["busy"] > 0 and d["attempts"] + d["batons"] == 400 + d["busy"]' \
		'd["wakeups"] > 0 and d["batons"] > 0 and d["batons"] <= d["wakeups"]' \
		'd["latency_us"]["handoff"]["count"] > 0' \
		'd["latency_us"]["wait"]["max"] >= d["latency_us"]["acquire"]["p50"]' \
		'd["errors"]["total"] == 0' \
		'd["violations"]["total"] == 0'
	no_bench_keys
}

@test "a contended bench waits on one connection per client, popping its wake-ups (issue 46)" {
	start_redis W
	bg_start bench "$RLOCK" -u "$W_URL" bench -c 20 -k 2 -d 3s --hold 5ms --no-ping --json
	# A waiter blocked in its BLPOP: the lock phase, every connection open.
	wait_until 10 blocked W
	# 20 clients and this redis-cli.
	assert_equal "$(clients_info W connected_clients)" 21
	bg_wait "$BG_PID" 20
	assert_equal "$BG_STATUS" 0
	json_check "$(bg_out bench)" \
		'd["clients"] == 20 and d["keys"] == 2 and d["cycles"] > 0' \
		'd["busy"] > 0 and d["wakeups"] > 0 and d["batons"] > 0' \
		'd["latency_us"]["handoff"]["count"] > 0' \
		'd["errors"]["total"] == 0 and d["violations"]["total"] == 0'
	assert_equal "$(bg_err bench)" ""
	no_bench_keys W
}

@test "bench semaphores and shared locks: waiters woken from their lists, no baton" {
	run -0 --separate-stderr "$RLOCK" bench -c 12 -k 2 -l 2 -n 600 --hold 1ms --no-ping --json
	json_check "$output" \
		'd["cycles"] == 600 and d["busy"] > 0 and d["wakeups"] > 0' \
		'd["batons"] == 0 and d["attempts"] == 600 + d["busy"]' \
		'd["errors"]["total"] == 0 and d["violations"]["total"] == 0'
	no_bench_keys
	run -0 --separate-stderr "$RLOCK" bench -c 6 -k 2 -s -n 300 --no-ping --json
	json_check "$output" \
		'd["cycles"] == 300 and d["batons"] == 0' \
		'd["errors"]["total"] == 0 and d["violations"]["total"] == 0'
	no_bench_keys
}

@test "bench holds each lock for --hold and runs for --duration" {
	run -0 --separate-stderr "$RLOCK" bench -c 3 -k 1 -d 400ms --hold 20ms --no-ping --json
	json_check "$output" \
		'd["mode"] == "duration" and d["duration_ms"] == 400' \
		'd["target_cycles"] is None and d["hold_ms"] == 20' \
		'd["ping"] is None and d["efficiency"] is None' \
		'd["latency_us"]["ping"] is None' \
		'd["elapsed_s"] >= 0.4 and d["elapsed_s"] < 5' \
		'1 <= d["cycles"] <= 21' \
		'd["violations"]["total"] == 0'
	no_bench_keys
}

@test "bench drives a thousand clients without errors" {
	run -0 --separate-stderr "$RLOCK" bench -c 1000 -k 100 -n 3000 --json
	json_check "$output" \
		'd["clients"] == 1000 and d["keys"] == 100 and d["cycles"] == 3000' \
		'd["errors"]["total"] == 0 and d["violations"]["total"] == 0'
	no_bench_keys
}

@test "bench works over a unix socket" {
	start_redis_unix U
	run -0 --separate-stderr "$RLOCK" -u "$U_URL" bench -c 3 -k 1 -n 50 --json
	json_check "$output" 'd["cycles"] == 50 and d["violations"]["total"] == 0'
}

@test "bench --help lists its options and exits 0" {
	run -0 "$RLOCK" bench --help
	assert_line --partial '-c, --clients C'
	assert_line --partial '-k, --keys K'
	assert_line --partial '-n, --cycles N'
	assert_line --partial '-d, --duration DUR'
	assert_line --partial '-t, --ttl DUR'
	assert_line --partial '--hold DUR'
	assert_line --partial '--gap DUR'
	assert_line --partial '--no-ping'
}

@test "bench usage errors exit 64" {
	run -64 --separate-stderr "$RLOCK" bench -c 0
	assert_usage bench "rlock: bench: invalid --clients '0': must be 1..100000"
	run -64 --separate-stderr "$RLOCK" bench -c abc
	assert_usage bench "rlock: bench: invalid --clients 'abc': not a number"
	run -64 --separate-stderr "$RLOCK" bench -c 2 -k 3
	assert_usage bench "rlock: bench: invalid --keys '3': must not exceed --clients (2)"
	run -64 --separate-stderr "$RLOCK" bench -n -5
	assert_usage bench "rlock: bench: invalid --cycles '-5': not a number"
	run -64 --separate-stderr "$RLOCK" bench -d 0
	assert_usage bench "rlock: bench: invalid --duration '0': must be more than zero"
	run -64 --separate-stderr "$RLOCK" bench -t 5ms
	assert_usage bench "rlock: bench: invalid --ttl '5ms': must be between 10ms and 30d"
	run -64 --separate-stderr "$RLOCK" bench -t 1s --hold 1s
	assert_usage bench "rlock: bench: invalid --hold: must be shorter than --ttl (bench does not renew)"
	run -64 --separate-stderr "$RLOCK" bench --hold x
	assert_usage bench "rlock: bench: invalid --hold 'x': not a duration (e.g. 500ms, 30s, 1.5m, 1h30m, 2d)"
	run -64 --separate-stderr "$RLOCK" bench --frobnicate
	assert_usage bench "rlock: bench: unknown option '--frobnicate'"
	run -64 --separate-stderr "$RLOCK" bench -c
	assert_usage bench "rlock: bench: option '-c' requires a value"
	run -64 --separate-stderr "$RLOCK" bench extra
	assert_usage bench "rlock: bench: unexpected argument 'extra'"
	run -64 --separate-stderr "$RLOCK" -u "$R_URL" -u "$R_URL" -u "$R_URL" bench -n 1
	assert_usage bench "rlock: bench: bench drives one server: give one --url"
}

@test "bench against no server exits 69" {
	run -69 --separate-stderr "$RLOCK" -u redis://127.0.0.1:1 bench -n 10
	assert_equal "$stderr" "rlock: bench: cannot connect to 127.0.0.1:1: Connection refused"
	assert_equal "$output" ""
}

@test "a server killed mid-bench ends it with 69 and one line, no hang" {
	start_redis K
	bg_start bench timeout 30 "$RLOCK" -u "$K_URL" bench -c 20 -k 2 -d 20s --no-ping
	sleep 0.5
	kill -KILL "$K_PID"
	bg_wait "$BG_PID" 10
	assert_equal "$BG_STATUS" 69
	run bg_err bench
	assert_output --regexp "^rlock: bench: 127\.0\.0\.1:$K_PORT: (connection closed by server|connection lost: .*)\$"
	run bg_out bench
	assert_output ""
}

@test "a server that stops answering mid-bench ends it after --io-timeout" {
	start_redis S
	bg_start bench timeout 30 "$RLOCK" -u "$S_URL" --io-timeout 300ms bench -c 10 -d 20s --no-ping
	sleep 0.5
	kill -STOP "$S_PID"
	bg_wait "$BG_PID" 10
	kill -CONT "$S_PID"
	assert_equal "$BG_STATUS" 69
	run bg_err bench
	assert_output "rlock: bench: 127.0.0.1:$S_PORT: no reply within 300ms"
}

@test "SIGINT ends a bench early: locks released, report printed, exit 130" {
	bg_start bench "$RLOCK" bench -c 4 -k 1 -d 20s --hold 5ms --no-ping
	sleep 0.5
	kill -INT "$BG_PID"
	bg_wait "$BG_PID" 10
	assert_equal "$BG_STATUS" 130
	run bg_out bench
	assert_line --regexp '^  cycles +[0-9]+ in [0-9.]+s = [0-9]+ cycles/s \(canceled\)$'
	assert_line '  violations   0'
	no_bench_keys
}

# del_lock_keys: delete the lock keys (not the records of the grants, the
# histories whose ids are the fences, nor the fence counters) of the
# running bench, as a careless "release --force" would.
del_lock_keys() {
	local k n=0
	for k in $(rcli R --scan --pattern "${RLOCK_PREFIX}{bench-*}"); do
		[[ $k == *:owner || $k == *:fence || $k == *:grant || $k == *:log ||
			$k == *:log:last ]] && continue
		rcli R DEL "$k" >/dev/null
		n=$((n + 1))
	done
	((n > 0))
}

@test "a lock taken away mid-cycle is a violation: exit 70" {
	bg_start bench "$RLOCK" bench -c 2 -d 3s --hold 200ms --no-ping --json
	wait_until 5 del_lock_keys
	bg_wait "$BG_PID" 15
	assert_equal "$BG_STATUS" 70
	run bg_err bench
	assert_output --regexp '^rlock: bench: mutual exclusion violated [0-9]+ times?$'
	json_check "$(bg_out bench)" \
		'd["violations"]["not_ours"] >= 1' \
		'd["violations"]["total"] == d["violations"]["not_ours"]'
}

# ---- replies that do not decode (issue 32 item 5) -------------------------
# A server of the tests' own (hostile_helper.bash) answers the scripts; a
# reply that does not decode is an error of the run, never a cycle.

@test "bench: a grant whose fence is 0 is no grant: unexpected replies end the run with 70 and one line" {
	start_hostile H 'PING +PONG\r\n' 'acquire *2\r\n:1\r\n:0\r\n' "release $OK_1"
	run -70 --separate-stderr timeout 20 "$RLOCK" -u "$H_URL" bench -c 10 -n 100 --no-ping --json
	assert_equal "$output" ""
	assert_equal "$stderr" "rlock: bench: 127.0.0.1:$H_PORT: unexpected reply to acquire"
	assert_equal "$(hostile_calls H release)" 0
}

@test "bench: a popped wake-up from another list is no wake-up: unexpected replies end the run with 70, no grant" {
	start_hostile H 'PING +PONG\r\n' \
		'acquire *7\r\n:0\r\n:5000\r\n:1\r\n:1\r\n:1\r\n:1\r\n$1\r\nx\r\n' \
		'blpop *2\r\n$9\r\nrlock:{x}\r\n$4\r\nwake\r\n' "release $OK_1"
	run -70 --separate-stderr timeout 20 "$RLOCK" -u "$H_URL" bench -c 20 -k 1 -n 100 --no-ping --json
	assert_equal "$output" ""
	assert_equal "$stderr" "rlock: bench: 127.0.0.1:$H_PORT: unexpected reply to BLPOP"
	assert_equal "$(hostile_calls H release)" 0
}

@test "bench: a server that refuses BLPOP: its waiters wait on their timers, as rlock does" {
	start_hostile H 'PING +PONG\r\n' \
		'acquire *7\r\n:0\r\n:5000\r\n:1\r\n:1\r\n:1\r\n:1\r\n$1\r\nx\r\n' \
		"blpop -ERR unknown command 'BLPOP'\\r\\n"
	run -0 --separate-stderr timeout 20 "$RLOCK" -u "$H_URL" bench -c 4 -k 1 -d 1s --no-ping --json
	json_check "$output" 'd["cycles"] == 0 and d["busy"] > 4' \
		'1 <= d["errors"]["total"] == d["errors"]["other"] <= 4' \
		'd["wakeups"] == 0 and d["abandoned"] == 4'
	run hostile_calls H blpop
	((output >= 1 && output <= 4))
}

@test "bench: a release answered 7 is no release: the run ends with 70, no cycle counted" {
	start_hostile H 'PING +PONG\r\n' "acquire $GRANT" 'release :7\r\n'
	run -70 --separate-stderr timeout 20 "$RLOCK" -u "$H_URL" bench -c 10 -n 100 --no-ping --json
	assert_equal "$stderr" "rlock: bench: 127.0.0.1:$H_PORT: unexpected reply to release"
}

@test "bench: INFO cpu fields that do not read are errors of the run and no server CPU figure" {
	start_hostile H 'PING +PONG\r\n' \
		"INFO $(info_bulk 'used_cpu_sys:abc\r\nused_cpu_user:0.25\r\n')" \
		'acquire *2\r\n:1\r\n:1\r\n' 'acquire *2\r\n:1\r\n:2\r\n' \
		'acquire *2\r\n:1\r\n:3\r\n' "release $OK_1"
	run -0 --separate-stderr timeout 20 "$RLOCK" -u "$H_URL" bench -c 1 -n 3 --no-ping --json
	json_check "$output" 'd["cycles"] == 3' \
		'd["errors"]["total"] == 2 and d["errors"]["unexpected"] == 2' \
		'd["cpu_s"]["server"] is None' 'd["violations"]["total"] == 0'
}
