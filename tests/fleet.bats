#!/usr/bin/env bats
# fleet.bats - a fleet's worth on one Redis (issue 46): a server that takes
# no more clients (maxclients) is a wait, not a failure.  Every kind waits
# through it within -w, says so on its progress line, and runs once a
# client leaves; -w that runs out first exits 69 naming maxclients; -n
# tries within the I/O timeout, as through a failover.  The server F is
# filled by a process of the test's own that holds every free connection
# until told to let go.

bats_require_minimum_version 1.5.0
load test_helper

setup_file() {
	rl_setup_file
	start_redis F --maxclients 24
}

teardown_file() { rl_teardown_file; }
setup() {
	rl_setup
	export RLOCK_URL=$F_URL
}
teardown() {
	[[ -e hog.pid ]] && kill "$(cat hog.pid)" 2>/dev/null
	rl_teardown
}

# fill [LEAVE]: hold connections to F until it refuses one ("max number
# of clients reached"), then let LEAVE of them go (default 0), and hold the
# rest until the file "release" exists.  Returns once that is done.
fill() {
	python3 - "$F_PORT" "${1:-0}" <<'PY' >hog.out 2>&1 &
import os, socket, sys, time
port, leave = int(sys.argv[1]), int(sys.argv[2])
held = []
while True:
    s = socket.create_connection(('127.0.0.1', port))
    s.sendall(b'PING\r\n')
    reply = s.recv(200)
    if reply.startswith(b'+PONG'):
        held.append(s)
        continue
    s.close()
    break
for s in held[:leave]:
    s.close()
del held[:leave]
if leave:
    # Until the server has heard the closes: a connection of our own, in
    # the room they made, is let in and counts the rest (at most 5 s).
    end = time.monotonic() + 5
    while time.monotonic() < end:
        try:
            c = socket.create_connection(('127.0.0.1', port))
            c.sendall(b'INFO clients\r\n')
            text = c.recv(4096).decode()
            c.close()
        except OSError:
            text = ''
        m = [int(l.split(':')[1]) for l in text.split('\r\n')
             if l.startswith('connected_clients:')]
        if m and m[0] <= len(held) + 1:
            break
        time.sleep(0.02)
open('full', 'w').write('%d\n' % len(held))
while not os.path.exists('release'):
    time.sleep(0.02)
PY
	echo $! >hog.pid
	wait_until 10 file_nonempty full
}

# let_go: the filler closes its connections and exits.
let_go() {
	touch release
	wait_until 10 pid_gone "$(cat hog.pid)"
	rm -f hog.pid
}

@test "fleet: a run through a full server waits, says why on its progress line, and runs once a client leaves" {
	fill
	bg_start w "$RLOCK" run -w 30s --progress 1s full1 -- sh -c 'echo ran >ran'
	local pid=$BG_PID
	wait_until 10 grep -q 'the server takes no more clients (maxclients reached)' w.err
	[[ ! -e ran ]]
	let_go
	bg_wait "$pid" 10
	assert_equal "$BG_STATUS" 0
	assert_equal "$(cat ran)" ran
	run -0 grep -c "rlock: run: waiting [^ ]* for full1: trying again: 127.0.0.1:$F_PORT: the server takes no more clients (maxclients reached)" w.err
	lock_free full1
}

@test "fleet: every kind waits through a full server: acquire, a semaphore's place, a shared hold and a set" {
	fill
	bg_start a "$RLOCK" acquire -w 30s --progress 1s fk1
	local pa=$BG_PID
	bg_start l "$RLOCK" run -w 30s --progress 1s -l 2 fk2 -- true
	local pl=$BG_PID
	bg_start s "$RLOCK" run -w 30s --progress 1s -s fk3 -- true
	local ps=$BG_PID
	bg_start x "$RLOCK" run -w 30s --progress 1s fk4 --with fk5 -- true
	local px=$BG_PID
	# Each was refused, and says so.
	for id in a l s x; do
		wait_until 10 grep -q 'takes no more clients' "$id.err"
	done
	let_go
	bg_wait "$pa" 10
	assert_equal "$BG_STATUS" 0
	held_by fk1 "$(bg_out a)" F
	for p in "$pl" "$ps" "$px"; do
		bg_wait "$p" 10
		assert_equal "$BG_STATUS" 0
	done
	run -0 "$RLOCK" release fk1 "$(bg_out a)"
}

@test "fleet: a -w that runs out while the server is full exits 69 naming maxclients; -n tries within the I/O timeout" {
	fill
	run -69 --separate-stderr "$RLOCK" run -w 1s full2 -- touch ran
	assert_equal "$stderr" "rlock: run: 127.0.0.1:$F_PORT: the server takes no more clients (maxclients reached)"
	run -69 --separate-stderr "$RLOCK" --io-timeout 300ms run -n full2 -- touch ran
	assert_equal "$stderr" "rlock: run: 127.0.0.1:$F_PORT: the server takes no more clients (maxclients reached)"
	[[ ! -e ran ]]
	let_go
	run -0 "$RLOCK" run -n full2 -- touch ran
	[[ -e ran ]]
}

@test "fleet: doctor states the rlocks a server's maxclients leaves room for, and warns when a tenth or less is free" {
	run -1 --separate-stderr "$RLOCK" --json doctor
	json_check "$output" \
		'[c["level"] for c in d if c["check"] == "clients"] == ["ok"]' \
		'[c["value"] for c in d if c["check"] == "clients"][0] in range(19, 24)'
	run -1 --separate-stderr "$RLOCK" doctor
	[[ $(tr -s ' \n' ' ' <<<"$output") =~ \ ok\ clients\ ([0-9]+)\ of\ maxclients\ 24\ in\ use:\ room\ for\ ([0-9]+)\ waiting\ or\ holding\ rlocks\ \(1\ connection\ each\) ]] ||
		fail "no clients line: $output"
	assert_equal "${BASH_REMATCH[2]}" $((24 - BASH_REMATCH[1]))
	# (exit 1 above: a server without AOF warns of its persistence.)
	# Three connections free, one of them doctor's: two is under a tenth.
	fill 3
	run -1 --separate-stderr "$RLOCK" --json doctor
	let_go
	json_check "$output" \
		'[c["level"] for c in d if c["check"] == "clients"] == ["warn"]' \
		'[c["message"] for c in d if c["check"] == "clients"][0].endswith("; more wait for a free connection: raise maxclients")'
}

@test "fleet: a server too busy to answer within the I/O timeout is a wait within -w, not a failure; a -w that runs out first exits 69 saying so" {
	# CLIENT PAUSE: the server takes connections and answers nothing, as
	# one swamped by a herd's TLS handshakes.
	rcli F CLIENT PAUSE 2500 ALL >/dev/null
	run -0 --separate-stderr "$RLOCK" --io-timeout 300ms run -w 20s busy -- sh -c 'echo ran >busy.ran'
	assert_equal "$stderr" ""
	[[ $(cat busy.ran) == ran ]]
	lock_free busy F
	rcli F CLIENT PAUSE 5000 ALL >/dev/null
	run -69 --separate-stderr "$RLOCK" --io-timeout 300ms run -w 1s busy2 -- touch busy2.ran
	[[ ! -e busy2.ran ]]
	assert_regex "$stderr" "^rlock: run: 127\.0\.0\.1:$F_PORT: no reply within 300ms"
	assert_equal "${#stderr_lines[@]}" 1
	rcli F CLIENT UNPAUSE >/dev/null
	lock_free busy2 F
}

# herd N NAME ARGS...: N rlock runs of NAME started at once against F,
# each with ARGS before NAME; waits for all, and prints each exit status,
# sorted and counted ("0:19 75:1").
herd() {
	local n=$1 name=$2 i st
	shift 2
	local -a pids=()
	declare -A count=()
	for ((i = 0; i < n; i++)); do
		"$RLOCK" run -q "$@" "$name" -- sh -c "echo $i >>$name.ran" </dev/null >/dev/null 2>>"$name.err" &
		pids+=($!)
	done
	for i in "${pids[@]}"; do
		wait "$i"
		st=$?
		count[$st]=$((${count[$st]:-0} + 1))
	done
	for st in $(printf '%s\n' "${!count[@]}" | sort -n); do
		printf '%s:%s ' "$st" "${count[$st]}"
	done
}

rejected() {
	rcli F INFO stats | tr -d '\r' | sed -n 's/^rejected_connections://p'
}

@test "fleet: a herd of 20 waiters on a server with maxclients 24 holds one connection each: none refused, each runs once in turn" {
	local r0
	r0=$(rejected)
	assert_equal "$(herd 20 fh -w 60s)" "0:20 "
	assert_equal "$(rejected)" "$r0"
	assert_equal "$(sort -n fh.ran | tr '\n' ' ')" "$(seq 0 19 | tr '\n' ' ')"
	[[ ! -s fh.err ]] || fail "stderr: $(head -3 fh.err)"
	lock_free fh F
	line_is fh 0 F
}

@test "fleet: a herd of 20 cron runs --once-per on a server with maxclients 24: one runs, the others find the period done, none refused" {
	local r0
	r0=$(rejected)
	assert_equal "$(herd 20 fo -w 60s --once-per 1d)" "0:1 75:19 "
	assert_equal "$(rejected)" "$r0"
	assert_equal "$(wc -l <fo.ran)" 1
	lock_free fo F
	line_is fo 0 F
}

@test "fleet: a connect that times out (a listen queue full) is a wait within -w; one refused fails at once" {
	# A listener that never accepts, its queue full: connects time out.
	cat >q.py <<'PY'
import os, socket, time
s = socket.socket()
s.bind(('127.0.0.1', 0))
s.listen(0)
held = []
for _ in range(8):
    c = socket.socket()
    c.setblocking(False)
    c.connect_ex(s.getsockname())
    held.append(c)
print(s.getsockname()[1], os.getpid(), flush=True)
time.sleep(60)
PY
	python3 q.py >q.port &
	local port qpid t0 el
	wait_until 5 test -s q.port
	read -r port qpid <q.port
	t0=$(now_ms)
	run -69 --separate-stderr "$RLOCK" -u "redis://127.0.0.1:$port" --connect-timeout 200ms run -w 2s cq -- touch cq.ran
	el=$(($(now_ms) - t0))
	[[ ! -e cq.ran ]]
	assert_equal "$stderr" "rlock: run: cannot connect to 127.0.0.1:$port: timed out"
	((el >= 2000)) || fail "gave up after ${el}ms, within its -w of 2s"
	# Without -w it does not wait.
	t0=$(now_ms)
	run -69 --separate-stderr "$RLOCK" -u "redis://127.0.0.1:$port" --connect-timeout 200ms run cq -- touch cq.ran
	el=$(($(now_ms) - t0))
	((el < 2000)) || fail "waited ${el}ms without -w"
	# (Its own pid: python3 may be a wrapper that forks it.)
	kill "$qpid"
	wait_until 5 eval '! kill -0 "$qpid" 2>/dev/null'
	# Refused (nothing listens): at once, even with -w.
	t0=$(now_ms)
	run -69 --separate-stderr "$RLOCK" -u "redis://127.0.0.1:$port" run -w 5s cq -- touch cq.ran
	el=$(($(now_ms) - t0))
	((el < 2000)) || fail "waited ${el}ms on a refused connect: $stderr"
	assert_regex "$stderr" "Connection refused"
}
