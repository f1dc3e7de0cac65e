#!/usr/bin/env bats
# semaphore.bats - --limit N (issue 9): up to N holders of one name, each
# with its own token, fence and lease, which release, extend and --min-hold
# treat as they treat an exclusive holder's; users who disagree on N are
# told so.

bats_require_minimum_version 1.5.0
load test_helper

# hmeta NAME: the key of the holders' metadata and limit.
hmeta() {
	echo "$(key "$1"):holders:meta"
}

# score NAME TOKEN: when TOKEN's place ends (server ms), empty if it has
# none.
score() {
	rcli R ZSCORE "$(key "$1"):holders" "$2"
}

# holder_since NAME TOKEN: when TOKEN took its place (server ms).
holder_since() {
	rcli R HGET "$(hmeta "$1")" "$2" | sed -n 2p
}

# place_lapsed NAME TOKEN: TOKEN's place has ended by the server's clock.
place_lapsed() {
	local s
	s=$(score "$1" "$2")
	[[ -z $s ]] || ((s <= $(server_ms)))
}

@test "--limit 3: never more than 3 holders at once, and 3 do hold together" {
	local i pid pids=() c t0 t1
	c="${RLOCK_PREFIX}count"
	t0=$(server_us)
	for ((i = 0; i < 8; i++)); do
		bg_start "s$i" "$RLOCK" run -l 3 -w 60s sem -- sh -c "
			redis-cli -p \$R_PORT INCR '$c' >> seen
			echo \$RLOCK_FENCE >> fences
			$(gate "$BATS_TEST_TMPDIR/go")
			redis-cli -p \$R_PORT DECR '$c' > /dev/null"
		pids+=("$BG_PID")
	done
	# Three hold, the other five wait their turn.
	wait_until 30 eval '[[ $(rcli R GET "$c") == 3 ]]'
	holders_is sem 3
	wait_until 30 line_is sem 5
	assert_equal "$(rcli R HGET "$(hmeta sem)" limit)" 3
	touch go
	for pid in "${pids[@]}"; do
		bg_wait "$pid" 60
		assert_equal "$BG_STATUS" 0
	done
	assert_equal "$(wc -l <seen)" 8
	assert_equal "$(sort -n seen | tail -n 1)" 3
	assert_equal "$(rcli R GET "$c")" 0
	t1=$(server_us)
	# Each holder had a fence of its own, from the server's clock then,
	# and the newest grant in the history has the last one.
	assert_equal "$(wc -l <fences)" 8
	assert_equal "$(sort -n fences | uniq | wc -l)" 8
	assert_increasing "$t0" $(sort -n fences) "$((t1 + 1))"
	assert_equal "$(last_grant sem fence)" "$(sort -n fences | tail -n 1)"
	assert_equal "$(rcli R EXISTS "$(key sem):holders" "$(hmeta sem)" "$(key sem):line")" 0
	lock_free sem
}

@test "a caller who disagrees on the kind or the limit gets exit 64 and changes nothing" {
	local t msg t0 el f
	t=$("$RLOCK" acquire -l 3 lim)
	f=$(rcli R HGET "$(hmeta lim)" "$t" | sed -n 1p)
	assert_fence "$f"
	msg="every user of a name must ask for the same kind and --limit"
	run -64 --separate-stderr "$RLOCK" run -l 2 lim -- touch ran
	assert_stderr "rlock: run: lim: is a semaphore of 3 holders (--limit 3), not a semaphore of 2 (--limit 2): $msg"
	# Told at once, not after the wait it asked for.
	t0=$(now_ms)
	run -64 --separate-stderr "$RLOCK" run -l 4 -w 20s lim -- touch ran
	el=$(($(now_ms) - t0))
	assert_stderr "rlock: run: lim: is a semaphore of 3 holders (--limit 3), not a semaphore of 4 (--limit 4): $msg"
	((el < 10000)) || fail "refused after ${el}ms"
	run -64 --separate-stderr "$RLOCK" acquire lim
	assert_stderr "rlock: acquire: lim: is a semaphore of 3 holders (--limit 3), not an exclusive lock: $msg"
	assert_output ""
	run -64 --separate-stderr "$RLOCK" acquire -x -n lim
	assert_stderr "rlock: acquire: lim: is a semaphore of 3 holders (--limit 3), not an exclusive lock: $msg"
	run -64 --separate-stderr "$RLOCK" acquire -s -w 5s lim
	assert_stderr "rlock: acquire: lim: is a semaphore of 3 holders (--limit 3), not a shared lock (-s): $msg"
	[[ ! -e ran ]]
	# Nothing written: one holder, the same limit, no fence taken, no
	# place in line.
	holders_is lim 1
	[[ -n $(score lim "$t") ]]
	assert_equal "$(rcli R HGET "$(hmeta lim)" limit)" 3
	assert_equal "$(last_grant lim fence)" "$f"
	assert_equal "$(hist_count lim acquired)" 1
	assert_equal "$(rcli R EXISTS "$(key lim)" "$(key lim):line")" 0
	# The same limit is welcome.
	run -0 "$RLOCK" run -l 3 lim -- true

	# And the other way round: a semaphore caller against an exclusive
	# holder.
	t=$("$RLOCK" acquire ex)
	run -64 --separate-stderr "$RLOCK" run -l 3 ex -- touch ran
	assert_stderr "rlock: run: ex: is held as an exclusive lock, not a semaphore of 3 (--limit 3): $msg"
	[[ ! -e ran ]]
	held_by ex "$t"
	assert_equal "$(rcli R EXISTS "$(key ex):holders" "$(key ex):line")" 0
}

@test "--limit 1 is the exclusive lock" {
	local t
	t=$("$RLOCK" acquire -l 1 one)
	held_by one "$t"
	run -75 "$RLOCK" acquire -n one
	run -75 "$RLOCK" acquire -n -l 1 one
	"$RLOCK" release one "$t"
	t=$("$RLOCK" acquire one)
	run -75 "$RLOCK" acquire -n -l 1 one
	assert_equal "$(rcli R EXISTS "$(key one):holders")" 0
}

@test "each holder has its own fence, distinct and increasing" {
	local i f=() t=() env
	for ((i = 0; i < 3; i++)); do
		env=$("$RLOCK" acquire --format env -l 3 fen)
		t[i]=$(eval "$env"; echo "$RLOCK_TOKEN")
		f[i]=$(eval "$env"; echo "$RLOCK_FENCE")
		# The holder's metadata starts with its fence.
		assert_equal "$(rcli R HGET "$(hmeta fen)" "${t[i]}" | sed -n 1p)" "${f[i]}"
	done
	assert_increasing "${f[@]}"
	# A place given back and taken again: the next fence, not an old one.
	"$RLOCK" release fen "${t[1]}"
	run -0 "$RLOCK" run -l 3 fen -- sh -c 'echo "$RLOCK_FENCE"'
	f[3]=$output
	run -0 "$RLOCK" run -l 3 fen -- sh -c 'echo "$RLOCK_FENCE"'
	f[4]=$output
	assert_increasing "${f[@]}"
	assert_equal "$(last_grant fen fence)" "${f[4]}"
	# A holder keeps the fence it was given.
	assert_equal "$(rcli R HGET "$(hmeta fen)" "${t[2]}" | sed -n 1p)" "${f[2]}"
}

@test "release and extend work on a semaphore holder's token" {
	local t t2 s p bogus=0123456789abcdef0123456789abcdef
	t=$("$RLOCK" acquire -l 3 -t 10s rel)
	t2=$("$RLOCK" acquire -l 3 -t 30s rel)
	local f1 f2
	f1=$(rcli R HGET "$(hmeta rel)" "$t" | sed -n 1p)
	f2=$(rcli R HGET "$(hmeta rel)" "$t2" | sed -n 1p)
	assert_increasing "$f1" "$f2"
	s=$(score rel "$t")
	(((s - $(server_ms)) <= 10000)) || fail "lease of $((s - $(server_ms)))ms"
	run -0 --separate-stderr "$RLOCK" extend -t 60s rel "$t"
	assert_output ""
	assert_equal "$stderr" ""
	s=$(score rel "$t")
	(((s - $(server_ms)) > 50000 && (s - $(server_ms)) <= 60000)) ||
		fail "extended to $((s - $(server_ms)))ms"
	# Both keys live as long as the longest lease.
	p=$(rcli R PTTL "$(key rel):holders")
	((p > 50000)) || fail "PTTL of the holders: $p"
	p=$(rcli R PTTL "$(hmeta rel)")
	((p > 50000)) || fail "PTTL of their metadata: $p"
	# Another token, or one that is not a holder's, is refused.
	run -76 --separate-stderr "$RLOCK" extend rel "$bogus"
	assert_stderr "rlock: extend: rel: token does not hold the lock"
	run -76 --separate-stderr "$RLOCK" release rel "$bogus"
	assert_stderr "rlock: release: rel: token does not hold the lock"
	holders_is rel 2

	run -0 --separate-stderr "$RLOCK" release rel "$t"
	assert_equal "$stderr" ""
	assert_equal "$(score rel "$t")" ""
	assert_equal "$(rcli R HEXISTS "$(hmeta rel)" "$t")" 0
	holders_is rel 1
	[[ -n $(score rel "$t2") ]]
	run -76 --separate-stderr "$RLOCK" release rel "$t"
	assert_stderr "rlock: release: rel: token does not hold the lock"
	run -76 --separate-stderr "$RLOCK" extend rel "$t"
	assert_stderr "rlock: extend: rel: token does not hold the lock"
	assert_equal "$(score rel "$t")" ""

	RLOCK_TOKEN=$t2 run -0 "$RLOCK" release rel
	assert_equal "$(rcli R EXISTS "$(key rel):holders" "$(hmeta rel)")" 0
	# The newest grant in the history has the last fence: release and
	# extend took none.
	assert_equal "$(last_grant rel fence)" "$f2"
}

@test "waiters of a semaphore are let in as places free, in the order they came" {
	local t=() i pid pids=()
	for ((i = 0; i < 3; i++)); do
		t[i]=$("$RLOCK" acquire -l 3 -t 30s fr)
	done
	for ((i = 1; i <= 3; i++)); do
		bg_start "w$i" "$RLOCK" run -l 3 -w 60s fr -- sh -c "echo w$i >> order; $(gate "$BATS_TEST_TMPDIR/go")"
		pids+=("$BG_PID")
		wait_until 10 line_is fr "$i"
	done
	# Two places free: the first two waiters, and only they, get in
	# (both are let in at once, so their commands start in either
	# order).
	"$RLOCK" release fr "${t[0]}"
	"$RLOCK" release fr "${t[1]}"
	wait_until 10 eval '[[ $(cat order 2>/dev/null | wc -l) == 2 ]]'
	assert_equal "$(sort order)" "$(printf 'w1\nw2')"
	holders_is fr 3
	line_is fr 1
	"$RLOCK" release fr "${t[2]}"
	wait_until 10 file_has order w3
	holders_is fr 3
	line_is fr 0
	touch go
	for pid in "${pids[@]}"; do
		bg_wait "$pid" 10
		assert_equal "$BG_STATUS" 0
	done
	assert_equal "$(sort order)" "$(printf 'w1\nw2\nw3')"
	assert_equal "$(tail -n 1 order)" w3
}

@test "-n is refused while someone waits in line, even when a place is free for a moment" {
	local t t2 w m
	t=$("$RLOCK" acquire -l 2 -t 30s nb)
	t2=$("$RLOCK" acquire -l 2 -t 30s nb)
	bg_start w "$RLOCK" run -l 2 -w 30s nb -- touch wran
	w=$BG_PID
	wait_until 10 line_is nb 1
	m=$(line_members nb)
	[[ $m == 2:* ]]
	# Stopped, the waiter cannot take the place the release frees, and
	# keeps its place in line (its lease pushed a minute away, so that
	# a loaded machine cannot let it lapse meanwhile).
	kill -STOP "$w"
	wait_until 5 pid_stopped "$w"
	rcli R ZADD "$(key nb):line:lease" XX $(($(server_ms) + 60000)) "$m" >/dev/null
	"$RLOCK" release nb "$t"
	holders_is nb 1
	run -75 --separate-stderr "$RLOCK" acquire -n -l 2 nb
	assert_output ""
	assert_regex "$stderr" '^rlock: acquire: nb: '
	run -75 "$RLOCK" run -n -l 2 nb -- touch nran
	[[ ! -e nran ]]
	holders_is nb 1
	kill -CONT "$w"
	bg_wait "$w" 10
	assert_equal "$BG_STATUS" 0
	[[ -e wran ]]
}

@test "acquire --renew keeps a semaphore place alive until its release" {
	local t s0 s
	bg_start sleeper sleep 30
	t=$(timeout 10 "$RLOCK" acquire -l 2 --renew --pid "$BG_PID" -t 2s rn >renew.out; cat renew.out)
	assert_regex "$t" '^[0-9a-f]{32}$'
	s0=$(score rn "$t")
	# Long after the first lease would have ended, the place is held.
	wait_until 10 eval '(($(server_ms) > s0 + 1000))'
	s=$(score rn "$t")
	((s > $(server_ms))) || fail "the place was not renewed"
	[[ -n $(rlock_pids) ]] || fail "no renewer process"
	run -0 "$RLOCK" release rn "$t"
	assert_equal "$(rcli R EXISTS "$(key rn):holders")" 0
	wait_until 5 no_rlock_pids
}

@test "a holder whose place is removed behind its back: run exits 76 at its next renewal" {
	local h tok cpid
	bg_start h "$RLOCK" run -l 3 -t 1500ms rm -- sh -c \
		'echo "$RLOCK_TOKEN" > tok.tmp; mv tok.tmp tok; echo $$ > cpid; exec sleep 60'
	h=$BG_PID
	wait_until 10 file_nonempty tok
	tok=$(cat tok)
	cpid=$(cat cpid)
	track_pid "$cpid"
	assert_equal "$(rcli R ZREM "$(key rm):holders" "$tok")" 1
	bg_wait "$h" 10
	assert_equal "$BG_STATUS" 76
	assert_equal "$(bg_err h)" \
		"rlock: run: rm: lock lost: the token no longer holds it; command stopped"
	wait_until 5 pid_gone "$cpid"
	assert_equal "$(score rm "$tok")" ""
}

@test "--min-hold keeps a semaphore place after its release until the hold ends" {
	local t t2 t3 s left
	t=$("$RLOCK" acquire -l 2 --min-hold 4s mh)
	t2=$("$RLOCK" acquire -l 2 mh)
	run -0 "$RLOCK" release mh "$t"
	s=$(score mh "$t")
	[[ -n $s ]] || fail "the place went with the release"
	left=$((s - $(server_ms)))
	((left > 0 && left <= 4000)) || fail "the place ends in ${left}ms"
	# Both places are still taken.
	run -75 "$RLOCK" acquire -n -l 2 mh
	holders_is mh 2
	# Then the held place frees itself, and not before its hold ended.
	wait_until 15 eval 't3=$("$RLOCK" acquire -q -n -l 2 mh)'
	(($(holder_since mh "$t3") >= s)) || fail "a place was given $((s - $(holder_since mh "$t3")))ms early"
	assert_equal "$(score mh "$t")" ""
	[[ -n $(score mh "$t2") ]]

	# run honours it as well.
	run -0 "$RLOCK" run -l 2 --min-hold 30s mh2 -- true
	holders_is mh2 1
	run -0 "$RLOCK" status --json mh2
	json_check "$output" "d['locks'][0]['kind'] == 'semaphore'" \
		"len(d['locks'][0]['holders']) == 1"
}

@test "a holder whose lease ended is not brought back by extend" {
	local t1 t2
	t2=$("$RLOCK" acquire -l 3 -t 60s ex)
	t1=$("$RLOCK" acquire -l 3 -t 300ms ex)
	wait_until 5 place_lapsed ex "$t1"
	# Ended, but nobody has swept it away yet.
	[[ -n $(score ex "$t1") ]]
	run -76 --separate-stderr "$RLOCK" extend -t 60s ex "$t1"
	assert_stderr "rlock: extend: ex: token does not hold the lock"
	assert_equal "$(score ex "$t1")" ""
	holders_is ex 1
	run -76 "$RLOCK" release ex "$t1"
	run -0 "$RLOCK" extend -t 60s ex "$t2"
}

@test "status lists every holder of a semaphore, and who is next" {
	local i pids=() w host user meta
	for ((i = 1; i <= 3; i++)); do
		bg_start "h$i" "$RLOCK" run -l 3 --label "job-$i" st -- sh -c "$(gate "$BATS_TEST_TMPDIR/go")"
		pids+=("$BG_PID")
		wait_until 10 holders_is st "$i"
	done
	bg_start w "$RLOCK" run -l 3 -w 60s --label waiter st -- true
	w=$BG_PID
	wait_until 10 line_is st 1
	meta=$(rcli R HGET "$(hmeta st)" "$(rcli R ZRANGE "$(key st):holders" 0 0)")
	host=$(sed -n 5p <<<"$meta")
	user=$(sed -n 6p <<<"$meta")
	# Each job's fence and token, from its holder's metadata ("fence\n
	# since\nhold_until\npid\nhost\nuser\nnote\ncommand").
	local tok m fen=() toks=()
	for tok in $(rcli R ZRANGE "$(key st):holders" 0 -1); do
		m=$(rcli R HGET "$(hmeta st)" "$tok")
		i=$(sed -n 8p <<<"$m")
		i=${i#job-}
		fen[i]=$(sed -n 1p <<<"$m")
		toks[i]=$tok
	done
	# They came in turn: their fences increase in that order.
	assert_increasing "${fen[1]}" "${fen[2]}" "${fen[3]}"

	run -0 --separate-stderr "$RLOCK" status st
	# The row shows the holder whose lease ends first: the first one.
	assert_equal "$(awk '$1 == "st" { print $2, $3, $7 }' <<<"$output")" "held $(sed -n 1p <<<"$meta") 1"
	assert_status_row "${lines[1]}" st held "$(sed -n 1p <<<"$meta")"
	assert_line "  semaphore: 3 of 3 places held"
	for ((i = 1; i <= 3; i++)); do
		# Each with its slot (issue 35): the three slots, in turn.
		assert_line --regexp "^    ${toks[i]:0:8} slot $((i - 1))     $(printf 'fence %-16s age' "${fen[i]}") +[^ ]+ +since [^ ]+ +ttl [^ ]+ +$user@$host:${pids[i - 1]} +job-$i\$"
	done
	assert_line --regexp "^  next: $user@$host:$w, waiting [^ ]+  waiter\$"
	assert_equal "${#lines[@]}" 7
	# Listed without a name too (it has no string key).
	run -0 "$RLOCK" status
	assert_line --regexp '^st +held '

	run -0 "$RLOCK" status --json st
	json_check "$output" \
		"d['locks'][0]['kind'] == 'semaphore'" \
		"d['locks'][0]['limit'] == 3" \
		"d['locks'][0]['held'] is True" \
		"d['locks'][0]['waiters'] == 1" \
		"sorted(x['pid'] for x in d['locks'][0]['holders']) == sorted(map(int, a[:3]))" \
		"sorted(x['fence'] for x in d['locks'][0]['holders']) == [int(a[4]), int(a[5]), int(a[6])]" \
		"sorted(x['command'] for x in d['locks'][0]['holders']) == ['job-1', 'job-2', 'job-3']" \
		"all(len(x['token_prefix']) == 8 and 0 < x['ttl_ms'] <= 30000 and x['age_ms'] >= 0 for x in d['locks'][0]['holders'])" \
		"d['locks'][0]['next']['kind'] == 'semaphore'" \
		"d['locks'][0]['next']['pid'] == int(a[3])" \
		"d['locks'][0]['next']['command'] == 'waiter'" \
		-- "${pids[@]}" "$w" "${fen[1]}" "${fen[2]}" "${fen[3]}"
	touch go
	for i in "${pids[@]}" "$w"; do
		bg_wait "$i" 15
		assert_equal "$BG_STATUS" 0
	done
}

@test "a SIGKILLed holder's place frees when its lease ends, not before" {
	local k t2 tok w wtok end since
	bg_start k "$RLOCK" run -l 2 -t 2s kt -- sh -c 'echo "$RLOCK_TOKEN" > tok.tmp; mv tok.tmp tok; exec sleep 60'
	k=$BG_PID
	wait_until 10 file_nonempty tok
	tok=$(cat tok)
	t2=$("$RLOCK" acquire -l 2 -t 60s kt)
	bg_start w "$RLOCK" run -l 2 -w 60s kt -- sh -c \
		"echo \"\$RLOCK_TOKEN\" > wtok.tmp; mv wtok.tmp wtok; $(gate "$BATS_TEST_TMPDIR/go")"
	w=$BG_PID
	wait_until 10 line_is kt 1
	kill -KILL "$k"
	wait_until 5 pid_gone "$k"
	# No renewal can come after this.
	end=$(score kt "$tok")
	[[ -n $end ]] || fail "the killed holder's place is already gone"
	wait_until 10 file_nonempty wtok
	wtok=$(cat wtok)
	since=$(holder_since kt "$wtok")
	((since >= end)) || fail "the place was given $((end - since))ms before the lease ended"
	(((since - end) < 2000)) || fail "the place was given $((since - end))ms after the lease ended"
	assert_equal "$(score kt "$tok")" ""
	holders_is kt 2
	touch go
	bg_wait "$w" 10
	assert_equal "$BG_STATUS" 0
}

@test "a nested run that disagrees on the limit with its ancestor's hold exits 64" {
	run "$RLOCK" run -l 3 nest -- sh -c \
		'"$RLOCK" run -l 2 nest -- touch inner; echo $? > inner.rc; exit $(cat inner.rc)'
	[[ ! -e inner ]] || fail "the nested --limit 2 ran its command under a semaphore of 3"
	assert_equal "$status" 64
	assert_equal "$(cat inner.rc)" 64
	run -0 "$RLOCK" run -l 3 nest -- sh -c '"$RLOCK" run -l 3 nest -- touch same'
	[[ -e same ]]
}

@test "usage: a limit that is not a number of holders, or with -s/-x, exits 64" {
	local cmd
	for cmd in run acquire; do
		local -a tail=()
		[[ $cmd == run ]] && tail=(-- true)
		run -64 --separate-stderr "$RLOCK" "$cmd" -l 0 u "${tail[@]}"
		assert_usage "$cmd" "rlock: $cmd: invalid --limit '0': must be 1..100000"
		run -64 --separate-stderr "$RLOCK" "$cmd" -l 3 -s u "${tail[@]}"
		assert_usage "$cmd" "rlock: $cmd: --shared and --limit 3 cannot be combined: a semaphore's holders are neither shared nor exclusive"
		run -64 --separate-stderr "$RLOCK" "$cmd" -s -l 2 u "${tail[@]}"
		assert_usage "$cmd" "rlock: $cmd: --shared and --limit 2 cannot be combined: a semaphore's holders are neither shared nor exclusive"
		run -64 --separate-stderr "$RLOCK" "$cmd" -x -l 2 u "${tail[@]}"
		assert_usage "$cmd" "rlock: $cmd: --exclusive and --limit 2 cannot be combined: a semaphore's holders are neither shared nor exclusive"
		run -64 --separate-stderr "$RLOCK" "$cmd" --limit 2 --exclusive u "${tail[@]}"
		assert_usage "$cmd" "rlock: $cmd: --exclusive and --limit 2 cannot be combined: a semaphore's holders are neither shared nor exclusive"
	done
	assert_equal "$(rcli R KEYS "${RLOCK_PREFIX}*")" ""
}

# The range given must be the one accepted: 0 is refused.
@test "usage: a malformed or too large --limit names the range 1..100000" {
	local cmd arg
	for cmd in run acquire; do
		local -a tail=()
		[[ $cmd == run ]] && tail=(-- true)
		for arg in x -1 100001 ' 3' 3x; do
			run -64 --separate-stderr "$RLOCK" "$cmd" -l "$arg" u "${tail[@]}"
			assert_usage "$cmd" "rlock: $cmd: invalid --limit '$arg': must be 1..100000"
		done
	done
	run -0 "$RLOCK" run -l 100000 u -- true
	assert_equal "$(rcli R KEYS "${RLOCK_PREFIX}{u}:holders*")" ""
}

@test "a semaphore needs one server: with several masters --limit exits 64" {
	start_redis A
	start_redis B
	run -64 --separate-stderr "$RLOCK" -u "$R_URL" -u "$A_URL" -u "$B_URL" run -l 3 rl -- touch ran
	assert_usage run "rlock: run: shared locks and semaphores need one server (or one Sentinel or Cluster URL): on several independent masters a quorum could let in more holders than allowed"
	run -64 --separate-stderr "$RLOCK" -u "$R_URL" -u "$A_URL" -u "$B_URL" acquire -l 2 rl
	assert_usage acquire "rlock: acquire: shared locks and semaphores need one server (or one Sentinel or Cluster URL): on several independent masters a quorum could let in more holders than allowed"
	[[ ! -e ran ]]
	local s
	for s in R A B; do
		assert_equal "$(rcli "$s" KEYS "${RLOCK_PREFIX}*")" ""
	done
	# --limit 1 is the exclusive lock, Redlock's own.
	run -0 "$RLOCK" -u "$R_URL" -u "$A_URL" -u "$B_URL" run -l 1 rl -- touch one
	[[ -e one ]]
	# Left: the history and the record of the last runs (and the counter
	# where the fence was raised to the one handed out); no lock key, no
	# record of the grant (it goes with the lock).
	for s in R A B; do
		assert_equal "$(rcli "$s" KEYS "${RLOCK_PREFIX}*" | grep -vxF -e "$(key rl):fence" -e "$(key rl):grant" | sort)" "$(key rl):log
$(key rl):log:last"
		assert_fence "$(meta rl fence "$s")"
	done
}
