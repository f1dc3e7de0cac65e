#!/usr/bin/env bats
# slots.bats - the slots of a semaphore (issue 35): -l N gives each holder
# the lowest slot 0..N-1 no live holder has, recorded with it on the
# server (P{N}:holders:meta, field '#TOKEN'), exported as RLOCK_SLOT,
# printed by acquire, shown by status and kept in the grant's history
# entry; a slot comes back when its holder releases or its lease ends.

bats_require_minimum_version 1.5.0
load test_helper

hmeta() {
	echo "$(key "$1"):holders:meta"
}

# slot_of NAME TOKEN: TOKEN's slot as the server keeps it ('' none).
slot_of() {
	rcli R HGET "$(hmeta "$1")" "#$2"
}

# score NAME TOKEN: when TOKEN's place ends (server ms), '' none.
score() {
	rcli R ZSCORE "$(key "$1"):holders" "$2"
}

# acq NAME ARGS...: acquire with --format env; sets TOK and SLOT.
acq() {
	local env
	env=$("$RLOCK" acquire --format env "${@:2}" "$1") || return 1
	TOK=$(eval "$env"; echo "$RLOCK_TOKEN")
	SLOT=$(eval "$env"; echo "${RLOCK_SLOT-none}")
}

@test "-l 3 and 10 jobs at once: each told a slot in 0..2, never two live holders on one slot" {
	local i pid pids=() c
	c="${RLOCK_PREFIX}busy:"
	for ((i = 0; i < 10; i++)); do
		# INCR says how many hold this slot now: 1, or a collision.
		bg_start "j$i" "$RLOCK" run -l 3 -w 60s pool3 -- sh -c "
			n=\$(redis-cli -p \$R_PORT INCR '$c'\$RLOCK_SLOT)
			echo \"start \$RLOCK_SLOT \$n \$(date +%s%N)\" >> log
			echo \$RLOCK_SLOT >> held.$i
			$(gate "$BATS_TEST_TMPDIR/go")
			echo \"end \$RLOCK_SLOT \$(date +%s%N)\" >> log
			redis-cli -p \$R_PORT DECR '$c'\$RLOCK_SLOT > /dev/null"
		pids+=("$BG_PID")
	done
	# The first three hold together, on the three slots.
	wait_until 30 eval '[[ $(cat held.* 2>/dev/null | wc -l) == 3 ]]'
	assert_equal "$(cat held.* | sort | tr '\n' ' ')" "0 1 2 "
	wait_until 30 line_is pool3 7
	touch go
	for pid in "${pids[@]}"; do
		bg_wait "$pid" 60
		assert_equal "$BG_STATUS" 0
	done
	assert_equal "$(grep -c '^start ' log)" 10
	assert_equal "$(grep -c '^end ' log)" 10
	# Nobody found another on its slot, every slot was in 0..2.
	run -0 awk '$1 == "start" && ($3 != 1 || $2 !~ /^[012]$/)' log
	assert_output ""
	# By the times written: on each slot, one start, one end, in turn.
	run -0 python3 -c '
import sys
ev = sorted((int(l.split()[-1]), l.split()[0], l.split()[1]) for l in open("log"))
held = {}
for t, what, s in ev:
    if what == "start":
        assert s not in held, "slot %s taken twice" % s
        held[s] = t
    else:
        assert s in held, "slot %s ended, never started" % s
        del held[s]
assert not held
'
	for ((i = 0; i < 3; i++)); do
		assert_equal "$(rcli R GET "${c}$i")" 0
	done
	lock_free pool3
	assert_equal "$(rcli R EXISTS "$(key pool3):holders" "$(hmeta pool3)")" 0
}

@test "the lowest free slot: a released slot is the next one given" {
	local t=() i
	for i in 0 1 2; do
		acq rel -l 3
		assert_equal "$SLOT" "$i"
		t[i]=$TOK
		assert_equal "$(slot_of rel "$TOK")" "$i"
	done
	run -75 "$RLOCK" acquire -n -l 3 rel
	"$RLOCK" release rel "${t[1]}"
	# Its slot goes with it.
	assert_equal "$(rcli R HEXISTS "$(hmeta rel)" "#${t[1]}")" 0
	run -0 "$RLOCK" run -l 3 rel -- sh -c 'echo "$RLOCK_SLOT"'
	assert_output 1
	"$RLOCK" release rel "${t[0]}"
	"$RLOCK" release rel "${t[2]}"
	acq rel -l 3
	assert_equal "$SLOT" 0
	acq rel -l 3
	assert_equal "$SLOT" 1
}

@test "a SIGKILLed holder's slot is given again once its lease ends, not before" {
	local k tok w end since t2 s wtok
	bg_start k "$RLOCK" run -l 2 -t 2s kt -- sh -c 'echo "$RLOCK_SLOT $RLOCK_TOKEN" > tok.tmp; mv tok.tmp tok; exec sleep 60'
	k=$BG_PID
	wait_until 10 file_nonempty tok
	read -r s tok <tok
	assert_equal "$s" 0
	acq kt -l 2 -t 60s
	assert_equal "$SLOT" 1
	t2=$TOK
	bg_start w "$RLOCK" run -l 2 -w 60s kt -- sh -c \
		"echo \"\$RLOCK_SLOT \$RLOCK_TOKEN\" > w.tmp; mv w.tmp w; $(gate "$BATS_TEST_TMPDIR/go")"
	w=$BG_PID
	wait_until 10 line_is kt 1
	kill -KILL "$k"
	wait_until 5 pid_gone "$k"
	end=$(score kt "$tok")
	[[ -n $end ]] || fail "the killed holder's place is already gone"
	wait_until 10 file_nonempty w
	read -r s wtok <w
	# The dead holder's slot, to the waiter, after the lease ended.
	assert_equal "$s" 0
	since=$(rcli R HGET "$(hmeta kt)" "$wtok" | sed -n 2p)
	((since >= end)) || fail "slot 0 was given $((end - since))ms before the lease ended"
	assert_equal "$(slot_of kt "$tok")" ""
	assert_equal "$(slot_of kt "$t2")" 1
	touch go
	bg_wait "$w" 10
	assert_equal "$BG_STATUS" 0
}

@test "acquire prints the slot: --json and --format env; an exclusive or shared lock has none" {
	run -0 "$RLOCK" acquire --json -l 2 pj
	json_check "$output" "set(d) == {'name', 'key', 'token', 'fence', 'slot', 'ttl_ms'}" \
		"d['slot'] == 0"
	run -0 "$RLOCK" acquire --format env -l 2 pj
	assert_line "RLOCK_SLOT='1'; export RLOCK_SLOT"
	run -0 "$RLOCK" acquire --json px
	json_check "$output" "'slot' not in d"
	run -0 "$RLOCK" acquire --format env -s ps
	refute_output --partial RLOCK_SLOT
	run -0 "$RLOCK" run -s ps2 -- sh -c 'echo "${RLOCK_SLOT-unset}"'
	assert_output unset
	# The slot is the innermost lock's: an exclusive lock inside a
	# semaphore's command has none.
	run -0 "$RLOCK" run -l 2 po -- "$RLOCK" run pi -- sh -c 'echo "${RLOCK_SLOT-unset}"'
	assert_output unset
	run -0 --separate-stderr "$RLOCK" -v run -l 2 pv -- true
	assert_stderr_line --regexp '^rlock: run: pv: acquired \(fence [0-9]+, slot 0, ttl 30s\)$'
}

@test "status shows each holder's slot, in the table and in JSON" {
	local t=() i user host
	user=$(id -un)
	host=$(hostname)
	for i in 0 1 2; do
		acq st -l 4 --label "job-$i"
		t[i]=$TOK
	done
	"$RLOCK" release st "${t[1]}"
	run -0 --separate-stderr "$RLOCK" status st
	assert_equal "$stderr" ""
	assert_line "  semaphore: 2 of 4 places held"
	assert_line --regexp "^    ${t[0]:0:8} slot 0     fence [0-9]+ +age [^ ]+ +since [^ ]+ +ttl [^ ]+ +$user@$host:[0-9]+ +job-0\$"
	assert_line --regexp "^    ${t[2]:0:8} slot 2     fence [0-9]+ +age [^ ]+ +since [^ ]+ +ttl [^ ]+ +$user@$host:[0-9]+ +job-2\$"
	run -0 "$RLOCK" status --json st
	json_check "$output" \
		"sorted((h['token_prefix'], h['slot']) for h in d['locks'][0]['holders']) == sorted([('${t[0]:0:8}', 0), ('${t[2]:0:8}', 2)])"
	# A shared lock's holders have none.
	"$RLOCK" acquire -s sh >/dev/null
	run -0 "$RLOCK" status --json sh
	json_check "$output" "d['locks'][0]['holders'][0]['slot'] is None"
	run -0 "$RLOCK" status sh
	refute_output --partial slot
}

@test "the history keeps each grant's slot: log, log --json and last" {
	local t0 t1
	acq hi -l 2
	t0=$TOK
	acq hi -l 2
	t1=$TOK
	"$RLOCK" release hi "$t1"
	assert_equal "$(last_grant hi slot)" 1
	run -0 "$RLOCK" log --json hi
	json_check "$(sed -n 1p <<<"$output")" "d['event'] == 'acquired'" "d['slot'] == 0" \
		"d['token'] == '${t0:0:8}'"
	json_check "$(sed -n 2p <<<"$output")" "d['event'] == 'acquired'" "d['slot'] == 1"
	# The release has its grant's slot.
	json_check "$(sed -n 3p <<<"$output")" "d['event'] == 'released'" "d['slot'] == 1"
	run -0 "$RLOCK" log hi
	assert_line --index 0 --regexp "  acquired  .*  fence [0-9]+  slot 0  waited "
	assert_line --index 1 --regexp "  acquired  .*  fence [0-9]+  slot 1  waited "
	run -0 "$RLOCK" last --json hi
	json_check "$output" "d['last']['slot'] == 1"
	# An exclusive grant's entry has no slot.
	"$RLOCK" run hx -- true
	run -0 "$RLOCK" log --json hx
	json_check "$(sed -n 1p <<<"$output")" "d['slot'] is None"
	run -0 "$RLOCK" log hx
	refute_output --partial slot
}

@test "a holder of an older rlock, without a slot, counts as holding the lowest unrecorded slot" {
	local old
	acq ol -l 3
	old=$TOK
	acq ol -l 3
	assert_equal "$SLOT" 1
	# As an older rlock leaves it: a place and a record, no slot.
	rcli R HDEL "$(hmeta ol)" "#$old" >/dev/null
	acq ol -l 3
	assert_equal "$SLOT" 2
	run -75 "$RLOCK" acquire -n -l 3 ol
	run -0 --separate-stderr "$RLOCK" status ol
	assert_equal "$stderr" ""
	assert_line --regexp "^    ${old:0:8} slot -     fence "
	run -0 "$RLOCK" status --json ol
	json_check "$output" "[h['slot'] for h in d['locks'][0]['holders'] if h['token_prefix'] == '${old:0:8}'] == [None]"
	"$RLOCK" release ol "$old"
	acq ol -l 3
	assert_equal "$SLOT" 0
}

@test "a slot rlock did not write: status says so in one line, a grant is refused with exit 70, never slot 0" {
	local t v n=0
	for v in x1 -1 01 3 1e0 ' 1' 999999999 ''; do
		acq "j$n" -l 3
		t=$TOK
		rcli R HSET "$(hmeta "j$n")" "#$t" "$v" >/dev/null
		run -0 --separate-stderr "$RLOCK" status "j$n"
		assert_stderr "rlock: status: j$n: slot '$v' is not what rlock writes (another client's data): shown as unknown"
		assert_line --regexp "^    ${t:0:8} slot -     fence "
		run -0 --separate-stderr "$RLOCK" status --json "j$n"
		json_check "$output" "d['locks'][0]['holders'][0]['slot'] is None"
		run -70 --separate-stderr "$RLOCK" run -l 3 "j$n" -- touch ran
		assert_stderr "rlock: run: $(key "j$n"):holders:meta holds the slot '$v', which is not a slot rlock wrote (digits, below the limit): nothing granted"
		[[ ! -e ran ]]
		holders_is "j$n" 1
		n=$((n + 1))
	done
}

@test "a slot in the history that rlock did not write is unreadable, never slot 0" {
	local id
	acq hj -l 2
	id=$(rcli R XADD "$(hist_key hj)" '*' a1 $'2\n0\n0badc0de\n4242\noldhost\nolduser\n\njunk' slot x7)
	run -0 "$RLOCK" log --json hj
	json_check "$(tail -n 1 <<<"$output")" "d['id'] == '$id'" "d['slot'] is None" \
		"d['unreadable'] == \"slot 'x7'\""
	run -0 "$RLOCK" log hj
	assert_line --index 1 --regexp "  acquired  olduser@oldhost pid 4242  fence [0-9]+  waited 0ms  \[unreadable: slot 'x7'\]  junk\$"
}

@test "a purged or lapsed holder's slot field goes with it" {
	local t1 t2
	t1=$("$RLOCK" acquire -l 3 -t 300ms pg)
	t2=$("$RLOCK" acquire -l 3 -t 60s pg)
	wait_until 5 eval '(( $(score pg '"$t1"') <= $(server_ms) ))'
	run -76 "$RLOCK" extend pg "$t1"
	assert_equal "$(rcli R HEXISTS "$(hmeta pg)" "#$t1")" 0
	t1=$("$RLOCK" acquire -l 3 -t 300ms pg)
	assert_equal "$(slot_of pg "$t1")" 0
	wait_until 5 eval '(( $(score pg '"$t1"') <= $(server_ms) ))'
	# The next grant sweeps it, and takes its slot.
	acq pg -l 3
	assert_equal "$SLOT" 0
	assert_equal "$(rcli R HEXISTS "$(hmeta pg)" "#$t1")" 0
	"$RLOCK" release pg "$TOK"
	"$RLOCK" release pg "$t2"
	assert_equal "$(rcli R EXISTS "$(hmeta pg)")" 0
}
