#!/usr/bin/env bats
# shared.bats - -s/--shared (issue 9): any number of shared holders at
# once, none while an exclusive one holds; a writer waits for every reader
# and is not starved by readers who keep arriving; shared and semaphore
# users of one name are told they disagree.

bats_require_minimum_version 1.5.0
load test_helper

# hmeta NAME: the key of the holders' metadata.
hmeta() {
	echo "$(key "$1"):holders:meta"
}

# lease_of NAME MEMBER: when MEMBER's place in line lapses (server ms).
lease_of() {
	rcli R ZSCORE "$(key "$1"):line:lease" "$2"
}

# renewed NAME MEMBER SCORE: MEMBER has run the acquire script (and
# renewed its place) since its lease was SCORE.
renewed() {
	local s
	s=$(lease_of "$1" "$2")
	[[ -n $s && $s != "$3" ]]
}

@test "shared holders hold together" {
	local i pid pids=() c t0 t1
	c="${RLOCK_PREFIX}count"
	t0=$(server_us)
	for ((i = 0; i < 3; i++)); do
		bg_start "r$i" "$RLOCK" run -s -w 30s rd -- sh -c "
			redis-cli -p \$R_PORT INCR '$c' > /dev/null
			echo \$RLOCK_FENCE >> fences
			$(gate "$BATS_TEST_TMPDIR/go")
			redis-cli -p \$R_PORT DECR '$c' > /dev/null"
		pids+=("$BG_PID")
	done
	wait_until 20 eval '[[ $(rcli R GET "$c") == 3 ]]'
	holders_is rd 3
	line_is rd 0
	lock_free rd
	assert_equal "$(rcli R HGET "$(hmeta rd)" limit)" s
	run -0 "$RLOCK" status rd
	assert_line "  shared: 3 holders"
	touch go
	for pid in "${pids[@]}"; do
		bg_wait "$pid" 15
		assert_equal "$BG_STATUS" 0
	done
	t1=$(server_us)
	# A fence each, from the server's clock then: the ids of their three
	# history entries.
	assert_equal "$(wc -l <fences)" 3
	assert_equal "$(sort -n fences | uniq | wc -l)" 3
	assert_increasing "$t0" $(sort -n fences) "$((t1 + 1))"
	assert_equal "$(hist_count rd acquired)" 3
	assert_equal "$(last_grant rd fence)" "$(sort -n fences | tail -n 1)"
	assert_equal "$(rcli R EXISTS "$(key rd):holders" "$(hmeta rd)")" 0
}

@test "an exclusive caller waits for every shared holder" {
	local t1 t2 x m s
	t1=$("$RLOCK" acquire -s -t 30s rw)
	t2=$("$RLOCK" acquire -s -t 30s rw)
	bg_start x "$RLOCK" run -x -w 60s rw -- sh -c "touch xran; $(gate "$BATS_TEST_TMPDIR/go")"
	x=$BG_PID
	wait_until 10 line_is rw 1
	m=$(line_members rw)
	[[ $m == x:* ]]
	"$RLOCK" release rw "$t1"
	# The writer has looked again since the first reader left: still out.
	s=$(lease_of rw "$m")
	wait_until 5 renewed rw "$m" "$s"
	[[ ! -e xran ]]
	lock_free rw
	holders_is rw 1
	line_is rw 1
	"$RLOCK" release rw "$t2"
	wait_until 10 eval '[[ $(meta rw pid) == "$x" ]]'
	wait_until 5 test -e xran
	assert_equal "$(rcli R EXISTS "$(key rw):holders")" 0
	touch go
	bg_wait "$x" 10
	assert_equal "$BG_STATUS" 0
}

@test "-n: shared refused while an exclusive holds, exclusive refused while shared hold" {
	local t host pid
	t=$("$RLOCK" acquire ex)
	host=$(meta ex host)
	pid=$(meta ex pid)
	run -75 --separate-stderr "$RLOCK" run -s -n ex -- touch ran
	assert_stderr "rlock: run: ex: held by $host pid $pid (rlock acquire)"
	run -75 --separate-stderr "$RLOCK" acquire -s -n ex
	assert_output ""
	held_by ex "$t"
	assert_equal "$(rcli R EXISTS "$(key ex):holders")" 0

	t=$("$RLOCK" acquire -s --label reader sh)
	pid=$(rcli R HGET "$(hmeta sh)" "$t" | sed -n 4p)
	host=$(rcli R HGET "$(hmeta sh)" "$t" | sed -n 5p)
	run -75 --separate-stderr "$RLOCK" run -x -n sh -- touch ran
	assert_stderr "rlock: run: sh: held by $host pid $pid (reader)"
	run -75 --separate-stderr "$RLOCK" acquire -n sh
	assert_output ""
	run -75 "$RLOCK" run -w 0 sh -- touch ran
	[[ ! -e ran ]]
	lock_free sh
	holders_is sh 1
	# Another reader is welcome at once.
	run -0 "$RLOCK" run -s -n sh -- touch sran
	[[ -e sran ]]
	holders_is sh 1
}

@test "a reader arriving after a waiting writer queues behind it" {
	local t x r
	t=$("$RLOCK" acquire -s -t 30s q)
	bg_start x "$RLOCK" run -w 60s q -- sh -c 'echo x >> order'
	x=$BG_PID
	wait_until 10 line_is q 1
	bg_start r "$RLOCK" run -s -w 60s q -- sh -c 'echo r >> order'
	r=$BG_PID
	wait_until 10 line_is q 2
	# The lock is shared, yet the reader waits behind the writer.
	holders_is q 1
	[[ ! -e order ]]
	"$RLOCK" release q "$t"
	bg_wait "$x" 10
	assert_equal "$BG_STATUS" 0
	bg_wait "$r" 10
	assert_equal "$BG_STATUS" 0
	assert_equal "$(cat order)" "$(printf 'x\nr')"
}

@test "-s -n is refused while a writer waits, though only readers hold" {
	local t x
	t=$("$RLOCK" acquire -s -t 30s qn)
	bg_start x "$RLOCK" run -w 60s qn -- touch xran
	x=$BG_PID
	wait_until 10 line_is qn 1
	run -75 --separate-stderr "$RLOCK" run -s -n qn -- touch ran
	assert_regex "$stderr" '^rlock: run: qn: '
	run -75 --separate-stderr "$RLOCK" acquire -s -n qn
	assert_output ""
	run -75 "$RLOCK" acquire -s -w 0 qn
	[[ ! -e ran ]]
	holders_is qn 1
	"$RLOCK" release qn "$t"
	bg_wait "$x" 10
	assert_equal "$BG_STATUS" 0
	[[ -e xran ]]
}

@test "the readers waiting behind a writer are let in together when it leaves" {
	local t i pid pids=() x2 c
	c="${RLOCK_PREFIX}count"
	t=$("$RLOCK" acquire -t 30s grp)
	for ((i = 1; i <= 3; i++)); do
		bg_start "r$i" "$RLOCK" run -s -w 60s grp -- sh -c "
			redis-cli -p \$R_PORT INCR '$c' > /dev/null
			$(gate "$BATS_TEST_TMPDIR/go")
			redis-cli -p \$R_PORT DECR '$c' > /dev/null"
		pids+=("$BG_PID")
		wait_until 10 line_is grp "$i"
	done
	bg_start x2 "$RLOCK" run -w 60s grp -- touch x2ran
	x2=$BG_PID
	wait_until 10 line_is grp 4
	"$RLOCK" release grp "$t"
	wait_until 10 eval '[[ $(rcli R GET "$c") == 3 ]]'
	holders_is grp 3
	line_is grp 1
	[[ ! -e x2ran ]]
	touch go
	for pid in "${pids[@]}" "$x2"; do
		bg_wait "$pid" 15
		assert_equal "$BG_STATUS" 0
	done
	[[ -e x2ran ]]
}

@test "a writer is not starved by readers who keep arriving" {
	local gen w t0 el
	# A reader every ~100ms, each holding ~500ms: never a moment without
	# one, until told to stop.  Those that arrive once the writer has a
	# place in line (the generator looks before starting each) are
	# marked late.
	cat >reader <<'EOF'
#!/bin/sh
echo "arrive r$1 $2" >> log
"$RLOCK" run -s -w 60s rw -- sh -c "echo start r$1 >> log; sleep 0.5; echo end r$1 >> log"
echo $? >> rstatus
EOF
	cat >readers <<'EOF'
#!/bin/bash
i=0
while [[ ! -e stop ]] && ((i < 300)); do
	i=$((i + 1))
	when=early
	redis-cli -p "$R_PORT" ZRANGE "$RLOCK_PREFIX{rw}:line" 0 -1 | grep -q '^x:' && when=late
	./reader "$i" "$when" &
	sleep 0.1
done
wait
EOF
	chmod +x reader readers
	bg_start gen ./readers
	gen=$BG_PID
	wait_until 20 eval '(($(nholders rw) >= 2))'
	t0=$(now_ms)
	bg_start w "$RLOCK" run -x -w 60s rw -- sh -c 'echo "start W" >> log; sleep 0.3; echo "end W" >> log'
	w=$BG_PID
	bg_wait "$w" 30
	el=$(($(now_ms) - t0))
	assert_equal "$BG_STATUS" 0
	touch stop
	bg_wait "$gen" 60
	assert_equal "$BG_STATUS" 0
	assert_equal "$(sort -u rstatus)" 0
	((el < 15000)) || fail "the writer got in after ${el}ms"
	# No reader inside while the writer held it, and every reader that
	# arrived once it waited started after it ended.
	run awk '
		/^start W$/ { held = 1; if (inside > 0) print inside " readers inside at start W"; next }
		/^end W$/ { held = 0; done = 1; next }
		/^arrive .* late$/ { if (!done) { late[$2] = 1; nlate++ } next }
		/^start r/ {
			inside++
			if (held) print "reader " $2 " started while W held"
			if (late[$2] && !done) print "reader " $2 " arrived after W but started before it ended"
			next
		}
		/^end r/ { inside--; next }
		END {
			if (!done) print "W never ran"
			if (nlate == 0) print "no reader arrived while W waited"
		}' log
	assert_output ""
}

@test "release, extend and acquire --renew work on a shared token" {
	local t t2 s s0
	t=$("$RLOCK" acquire -s -t 10s tk)
	t2=$("$RLOCK" acquire -s -t 10s tk)
	run -0 --separate-stderr "$RLOCK" extend -t 60s tk "$t"
	assert_equal "$stderr" ""
	s=$(rcli R ZSCORE "$(key tk):holders" "$t")
	(((s - $(server_ms)) > 50000)) || fail "extended to $((s - $(server_ms)))ms"
	run -0 "$RLOCK" release tk "$t"
	assert_equal "$(rcli R ZSCORE "$(key tk):holders" "$t")" ""
	holders_is tk 1
	run -76 --separate-stderr "$RLOCK" release tk "$t"
	assert_stderr "rlock: release: tk: token does not hold the lock"
	run -76 --separate-stderr "$RLOCK" extend tk "$t"
	assert_stderr "rlock: extend: tk: token does not hold the lock"
	run -0 "$RLOCK" release tk "$t2"
	assert_equal "$(rcli R EXISTS "$(key tk):holders" "$(hmeta tk)")" 0

	bg_start sleeper sleep 30
	t=$(timeout 10 "$RLOCK" acquire -s --renew --pid "$BG_PID" -t 2s tk >renew.out; cat renew.out)
	s0=$(rcli R ZSCORE "$(key tk):holders" "$t")
	# Long after the first lease would have ended, it is held.
	wait_until 10 eval '(($(server_ms) > s0 + 1000))'
	s=$(rcli R ZSCORE "$(key tk):holders" "$t")
	((s > $(server_ms))) || fail "the shared lease was not renewed"
	# The renewer gives it up when the process it watches ends.
	kill -TERM "$BG_PID"
	wait_until 10 eval '[[ $(rcli R EXISTS "$(key tk):holders") == 0 ]]'
	wait_until 5 no_rlock_pids
}

@test "shared and semaphore users of one name are told they disagree" {
	local t msg f1 f2
	msg="every user of a name must ask for the same kind and --limit"
	t=$("$RLOCK" acquire -s cs)
	f1=$(rcli R HGET "$(hmeta cs)" "$t" | sed -n 1p)
	run -64 --separate-stderr "$RLOCK" run -l 3 cs -- touch ran
	assert_stderr "rlock: run: cs: is held shared (-s), not a semaphore of 3 (--limit 3): $msg"
	run -64 --separate-stderr "$RLOCK" acquire -l 2 -w 10s cs
	assert_stderr "rlock: acquire: cs: is held shared (-s), not a semaphore of 2 (--limit 2): $msg"
	assert_output ""
	assert_equal "$(rcli R HGET "$(hmeta cs)" limit)" s
	holders_is cs 1
	"$RLOCK" release cs "$t"

	t=$("$RLOCK" acquire -l 3 cs)
	f2=$(rcli R HGET "$(hmeta cs)" "$t" | sed -n 1p)
	assert_increasing "$f1" "$f2"
	run -64 --separate-stderr "$RLOCK" run -s cs -- touch ran
	assert_stderr "rlock: run: cs: is a semaphore of 3 holders (--limit 3), not a shared lock (-s): $msg"
	run -64 --separate-stderr "$RLOCK" run -s -w 10s cs -- touch ran
	assert_stderr "rlock: run: cs: is a semaphore of 3 holders (--limit 3), not a shared lock (-s): $msg"
	[[ ! -e ran ]]
	assert_equal "$(rcli R HGET "$(hmeta cs)" limit)" 3
	holders_is cs 1
	assert_equal "$(rcli R EXISTS "$(key cs):line")" 0
	# Two grants; the refused callers took no fence (no grant entry).
	assert_equal "$(hist_count cs acquired)" 2
	assert_equal "$(last_grant cs fence)" "$f2"
}

@test "status shows the shared holders" {
	local t1 t2 p1 p2 host user f1 f2
	t1=$("$RLOCK" acquire -s --label reader-1 ss)
	run -0 --separate-stderr "$RLOCK" status ss
	assert_line "  shared: 1 holder"
	assert_equal "${#lines[@]}" 4
	t2=$("$RLOCK" acquire -s --label reader-2 ss)
	p1=$(rcli R HGET "$(hmeta ss)" "$t1" | sed -n 4p)
	p2=$(rcli R HGET "$(hmeta ss)" "$t2" | sed -n 4p)
	host=$(rcli R HGET "$(hmeta ss)" "$t2" | sed -n 5p)
	user=$(rcli R HGET "$(hmeta ss)" "$t2" | sed -n 6p)
	f1=$(rcli R HGET "$(hmeta ss)" "$t1" | sed -n 1p)
	f2=$(rcli R HGET "$(hmeta ss)" "$t2" | sed -n 1p)
	assert_increasing "$f1" "$f2"
	run -0 --separate-stderr "$RLOCK" status ss
	# The row shows the holder whose lease ends first: reader-1.
	assert_equal "$(awk '$1 == "ss" { print $2, $3 }' <<<"$output")" "held $f1"
	assert_status_row "${lines[1]}" ss held "$f1"
	assert_line "  shared: 2 holders"
	assert_line --regexp "^    ${t1:0:8} $(printf 'fence %-16s age' "$f1") +[^ ]+ +since [^ ]+ +ttl [^ ]+ +$user@$host:$p1 +reader-1\$"
	assert_line --regexp "^    ${t2:0:8} $(printf 'fence %-16s age' "$f2") +[^ ]+ +since [^ ]+ +ttl [^ ]+ +$user@$host:$p2 +reader-2\$"
	assert_equal "${#lines[@]}" 5
	run -0 "$RLOCK" status --json ss
	json_check "$output" \
		"d['locks'][0]['held'] is True" \
		"d['locks'][0]['kind'] == 'shared'" \
		"d['locks'][0]['limit'] is None" \
		"d['locks'][0]['next'] is None" \
		"d['locks'][0]['waiters'] == 0" \
		"[(x['token_prefix'], x['fence'], x['command']) for x in d['locks'][0]['holders']] == [(a[0], int(a[2]), 'reader-1'), (a[1], int(a[3]), 'reader-2')]" \
		-- "${t1:0:8}" "${t2:0:8}" "$f1" "$f2"
	"$RLOCK" release ss "$t1"
	"$RLOCK" release ss "$t2"
	run -1 "$RLOCK" status --json ss
	json_check "$output" "d['locks'][0]['kind'] is None" "d['locks'][0]['holders'] == []"
}

# A nested run on a lock an ancestor holds runs without taking it again
# (RLOCK_HELD); an ancestor that holds it shared cannot stand for an
# exclusive hold, which another reader would share.
@test "a nested -x run under an ancestor that holds the lock shared does not run as if exclusive" {
	local t
	t=$("$RLOCK" acquire -s nest)
	run --separate-stderr "$RLOCK" run -s nest -- sh -c \
		'"$RLOCK" run -x nest -- touch inner; echo $? > inner.rc; exit $(cat inner.rc)'
	[[ ! -e inner ]] || fail "the nested -x ran its command while another reader held the lock"
	assert_equal "$status" 64
	assert_equal "$(cat inner.rc)" 64
	assert_regex "$stderr" '^rlock: run: nest: '
	holders_is nest 1
	[[ -n $(rcli R ZSCORE "$(key nest):holders" "$t") ]]
	# Shared under shared, and shared under exclusive, are held already.
	run -0 "$RLOCK" run -s nest -- sh -c '"$RLOCK" run -s nest -- touch ss'
	[[ -e ss ]]
	"$RLOCK" release nest "$t"
	run -0 "$RLOCK" run -x nest -- sh -c '"$RLOCK" run -s nest -- touch xs'
	[[ -e xs ]]
}

@test "a shared lock needs one server: with several masters -s exits 64" {
	start_redis A
	start_redis B
	run -64 --separate-stderr "$RLOCK" -u "$R_URL" -u "$A_URL" -u "$B_URL" run -s rl -- touch ran
	assert_usage run "rlock: run: shared locks and semaphores need one server (or one Sentinel or Cluster URL): on several independent masters a quorum could let in more holders than allowed"
	[[ ! -e ran ]]
	# -x is Redlock's own.
	run -0 "$RLOCK" -u "$R_URL" -u "$A_URL" -u "$B_URL" run -x rl -- touch ran
	[[ -e ran ]]
}
