#!/usr/bin/env bats
# with.bats - several locks at once (--with): all or none, no deadlock
# between sets that share names, each line first come first served, one
# lease for the set.

bats_require_minimum_version 1.5.0
load test_helper

@test "with: a set waits while one of its locks is held, holding none of them meanwhile" {
	bg_start h "$RLOCK" run wb -- sh -c "$(gate "$BATS_TEST_TMPDIR/go")"
	wait_until 5 lock_held wb
	bg_start m "$RLOCK" run -w 30s wa --with wb -- sh -c 'echo "$RLOCK_LOCKS $RLOCK_NAME_0 $RLOCK_NAME_1 ${RLOCK_SLOT-none}" > started'
	wait_until 5 line_is wa 1
	wait_until 5 line_is wb 1
	# In both lines, and holding neither lock.
	lock_free wa
	[[ ! -e started ]]
	touch go
	bg_wait "$BG_PID" 30
	assert_equal "$BG_STATUS" 0
	assert_equal "$(cat started)" "2 wa wb none"
	lock_free wa
	lock_free wb
	line_is wa 0
	line_is wb 0
}

@test "with: 20 pairs of sets in both orders all finish, never two holders of one name" {
	local pids=() i pid
	for ((i = 0; i < 20; i++)); do
		bg_start "p$i" "$RLOCK" run -w 60s da --with db -- sh -c \
			'echo "s $RLOCK_NAME_0 $RLOCK_FENCE_0 $RLOCK_NAME_1 $RLOCK_FENCE_1" >> log; echo "e $RLOCK_NAME_0 $RLOCK_NAME_1" >> log'
		pids+=("$BG_PID")
		bg_start "q$i" "$RLOCK" run -w 60s db --with da -- sh -c \
			'echo "s $RLOCK_NAME_0 $RLOCK_FENCE_0 $RLOCK_NAME_1 $RLOCK_FENCE_1" >> log; echo "e $RLOCK_NAME_0 $RLOCK_NAME_1" >> log'
		pids+=("$BG_PID")
	done
	for pid in "${pids[@]}"; do
		bg_wait "$pid" 90
		assert_equal "$BG_STATUS" 0
	done
	assert_equal "$(grep -c '^s ' log)" 40
	# Replay the log: a start finds none of its names held, and each
	# name's fences increase.
	run python3 -c '
import sys
held, last = set(), {}
for line in open("log"):
    f = line.split()
    if f[0] == "s":
        for n, v in ((f[1], int(f[2])), (f[3], int(f[4]))):
            assert n not in held, "overlap on " + n
            assert v > last.get(n, 0), "fence of %s went back" % n
            held.add(n); last[n] = v
    else:
        held.discard(f[1]); held.discard(f[2])
print("ok")'
	assert_success
	assert_output ok
	lock_free da
	lock_free db
}

@test "with: a set waiting in line is not overtaken by a single waiter that came after it" {
	bg_start h "$RLOCK" run ob -- sh -c "$(gate "$BATS_TEST_TMPDIR/go")"
	wait_until 5 lock_held ob
	bg_start m "$RLOCK" run -w 30s oa --with ob -- sh -c 'echo set >> order'
	local m=$BG_PID
	wait_until 5 line_is oa 1
	bg_start s "$RLOCK" run -w 30s oa -- sh -c 'echo single >> order'
	local s=$BG_PID
	wait_until 5 line_is oa 2
	# oa is free, but the set is first in its line: no barging, -n or not.
	lock_free oa
	[[ ! -e order ]]
	run -75 "$RLOCK" run -n oa --with oc -- true
	assert_output "rlock: run: oa, oc: not all free, or others in line come first"
	lock_free oc
	touch go
	bg_wait "$m" 30
	assert_equal "$BG_STATUS" 0
	bg_wait "$s" 30
	assert_equal "$BG_STATUS" 0
	assert_equal "$(cat order)" "$(printf 'set\nsingle')"
}

@test "with: -n on a set with one lock held fails at once with the conflict status, naming that lock's holder, and takes nothing" {
	"$RLOCK" acquire --label holder-of-nb nb >/dev/null
	run -75 "$RLOCK" run -n na --with nb -- true
	assert_output --regexp "^rlock: run: nb: held by .* \(holder-of-nb\)$"
	run -75 "$RLOCK" -q run -n na --with nb -- true
	assert_output ""
	# Each lock's history says the set gave up, and why.
	run -0 "$RLOCK" log --json na
	json_check "$(head -n 1 <<<"$output")" 'd["event"] == "skipped" and d["reason"].startswith("nb held by ")'
	run -0 "$RLOCK" log --json nb
	json_check "$(sed -n 2p <<<"$output")" 'd["event"] == "skipped" and d["reason"].startswith("nb held by ")' 
	lock_free na
	line_is na 0
	line_is nb 0
}

@test "with: a holder killed with SIGKILL frees every lock of its set when the lease ends" {
	bg_start h "$RLOCK" run -t 1s ka --with kb -- sleep 30
	wait_until 5 lock_held ka
	lock_held kb
	kill -KILL "$BG_PID"
	wait_until 5 lock_free ka
	wait_until 5 lock_free kb
	run -0 "$RLOCK" run -n ka --with kb -- true
}

@test "with: renewals keep every lock of the set past its ttl" {
	run -0 "$RLOCK" run -t 1s ra --with rb --with rc -- sh -c 'sleep 2.5; "$RLOCK" -q status ra rb rc'
	lock_free ra
	lock_free rb
	lock_free rc
}

@test "with: acquire prints the token, release with it frees the whole set, from any of its names" {
	local t
	t=$("$RLOCK" acquire xa --with xb --with xc)
	held_by xa "$t"
	held_by xb "$t"
	held_by xc "$t"
	assert_equal "$(rcli R GET "$(key xb):with" | head -n 2)" "$(printf '%s\nxa' "$t")"
	run -0 "$RLOCK" release xb "$t"
	lock_free xa
	lock_free xb
	lock_free xc
	run -76 "$RLOCK" release xa "$t"
}

@test "with: acquire --json and --format env give every lock's fence" {
	run -0 "$RLOCK" acquire ja --with jb --json
	json_check "$output"
	run python3 -c 'import json,sys; d=json.loads(sys.argv[1]); print([l["name"] for l in d["locks"]], d["locks"][0]["fence"] == d["fence"], "slot" in d)' "$output"
	# A set of exclusive locks has no semaphore's slot.
	assert_output "['ja', 'jb'] True False"
	run -0 "$RLOCK" acquire ea --with eb --format env
	[[ $output != *RLOCK_SLOT* ]] || fail "a set given a slot: $output"
	eval "$output"
	assert_equal "$RLOCK_LOCKS $RLOCK_NAME_0 $RLOCK_NAME_1" "2 ea eb"
	assert_equal "$RLOCK_FENCE_0" "$RLOCK_FENCE"
	[[ $RLOCK_FENCE_1 =~ ^[1-9][0-9]*$ ]]
}

@test "with: a nested run on any lock of the set is re-entrant; on part of a set it is refused" {
	run -0 "$RLOCK" run -n na2 --with nb2 -- sh -c '"$RLOCK" run -n nb2 -- echo inner && "$RLOCK" run -n na2 --with nb2 -- echo both'
	assert_output "$(printf 'inner\nboth')"
	run -64 "$RLOCK" run -n pa -- "$RLOCK" run -n pa --with pb -- true
	assert_output "rlock: run: pa: this process tree holds 1 of the 2 locks asked for; a run asking for them all inside that hold would wait for its own ancestor"
}

@test "with: the grant's history entry of each lock names the others" {
	run -0 "$RLOCK" run ha --with hb --with hc -- true
	run -0 rcli R XRANGE "$(key hb):log" - +
	assert_output --partial "$(printf 'true\nwith\nha\nhc\n')"
}

@test "with: usage errors exit 64 with one line" {
	run -64 "$RLOCK" run ua --with '' -- true
	assert_line -n 0 "rlock: run: invalid --with '': empty lock name"
	run -64 "$RLOCK" run ua --with ub --with ub -- true
	assert_line -n 0 "rlock: run: invalid --with 'ub': named twice"
	run -64 "$RLOCK" run ua --with ua -- true
	assert_line -n 0 "rlock: run: invalid --with 'ua': it is the lock NAME"
	run -64 "$RLOCK" run -s ua --with ub -- true
	assert_line -n 0 "rlock: run: --with cannot be combined with --shared: it takes exclusive locks only"
	run -64 "$RLOCK" run -l 3 ua --with ub -- true
	assert_line -n 0 "rlock: run: --with cannot be combined with --limit: it takes exclusive locks only"
	run -64 "$RLOCK" run --once-per 1h ua --with ub -- true
	assert_line -n 0 "rlock: run: --with cannot be combined with --once-per: it takes exclusive locks only"
	run -64 "$RLOCK" acquire --supersede ua --with ub
	assert_line -n 0 "rlock: acquire: --with cannot be combined with --supersede: it takes exclusive locks only"
	run -64 "$RLOCK" acquire ua --with ub --priority 3
	assert_line -n 0 "rlock: acquire: --with cannot be combined with --priority: it takes exclusive locks only"
	run -64 "$RLOCK" run --pool ua --with ub -- true
	assert_line -n 0 "rlock: run: --with cannot be combined with --pool: it takes exclusive locks only"
	lock_free ua
	lock_free ub
}

@test "with: status shows, on each lock of a set, the others held with it (table and JSON)" {
	local t
	t=$("$RLOCK" acquire sa --with sb --with sc)
	run -0 "$RLOCK" status sb
	assert_line -n 2 "  with: sa, sc"
	run -0 "$RLOCK" status --json sa sc
	json_check "$output" 'd["locks"][0]["with"] == ["sb", "sc"] and d["locks"][1]["with"] == ["sa", "sb"]'
	run -0 "$RLOCK" release sa "$t"
	run -1 "$RLOCK" status --json sa
	json_check "$output" 'd["locks"][0]["with"] is None'
	# A lone holder has none.
	t=$("$RLOCK" acquire sa)
	run -0 "$RLOCK" status --json sa
	json_check "$output" 'd["locks"][0]["with"] is None'
}

@test "with: log shows a set's grant with the others, in text and JSON" {
	run -0 "$RLOCK" run la --with lb -- true
	run -0 "$RLOCK" log lb
	assert_line -n 0 --regexp '  acquired  .*  true  with la$'
	run -0 "$RLOCK" log --json la
	json_check "$(head -n 1 <<<"$output")" 'd["event"] == "acquired" and d["with"] == ["lb"]'
	json_check "$(tail -n 1 <<<"$output")" 'd["event"] == "released" and "with" not in d'
}

@test "with: losing one lock of the set while the command runs is losing the run (76)" {
	bg_start h "$RLOCK" run -t 1500ms ma --with mb -- sh -c "$(gate "$BATS_TEST_TMPDIR/go"); sleep 5"
	wait_until 5 lock_held mb
	rcli R DEL "$(key mb)" >/dev/null
	bg_wait "$BG_PID" 15
	assert_equal "$BG_STATUS" 76
	lock_free ma
	lock_free mb
	# The loss is in each lock's history, with that lock's fence.
	local n f
	for n in ma mb; do
		f=$("$RLOCK" log --json "$n" | python3 -c 'import json,sys
e=[json.loads(l) for l in sys.stdin]
g=[x["fence"] for x in e if x["event"]=="acquired"]
l=[x["fence"] for x in e if x["event"]=="lost"]
print(len(l), l[-1] == g[-1] if l and g else "")')
		assert_equal "$f" "1 True"
	done
}

@test "with: a set that gives up its wait (a signal, -w running out) leaves every line at once" {
	"$RLOCK" acquire cb >/dev/null
	bg_start m "$RLOCK" run -w 60s ca --with cb -- touch ran
	wait_until 5 line_is cb 1
	line_is ca 1
	kill -TERM "$BG_PID"
	bg_wait "$BG_PID" 5
	assert_equal "$BG_STATUS" 143
	line_is ca 0
	line_is cb 0
	run -75 "$RLOCK" run -w 500ms ca --with cb -- touch ran
	line_is ca 0
	line_is cb 0
	lock_free ca
	[[ ! -e ran ]]
}

@test "with: a single waiter that came before the set is served first, then the set" {
	bg_start h "$RLOCK" run fb -- sh -c "$(gate "$BATS_TEST_TMPDIR/go")"
	wait_until 5 lock_held fb
	bg_start s "$RLOCK" run -w 30s fb -- sh -c 'echo single >> order'
	local s=$BG_PID
	wait_until 5 line_is fb 1
	bg_start m "$RLOCK" run -w 30s fa --with fb -- sh -c 'echo set >> order'
	local m=$BG_PID
	wait_until 5 line_is fb 2
	# fa is free and its line empty but for the set: it still waits for fb.
	line_is fa 1
	lock_free fa
	touch go
	bg_wait "$s" 30
	assert_equal "$BG_STATUS" 0
	bg_wait "$m" 30
	assert_equal "$BG_STATUS" 0
	assert_equal "$(cat order)" "$(printf 'single\nset')"
}

@test "with: a set waiting is woken by the release of the lock it waits for, not by its lease's end" {
	local t t0
	t=$("$RLOCK" acquire -t 60s wb2)
	bg_start m "$RLOCK" run -w 30s wa2 --with wb2 -- touch ran
	wait_until 5 line_is wb2 1
	t0=$(now_ms)
	"$RLOCK" release wb2 "$t"
	wait_until 5 test -e ran
	(($(now_ms) - t0 < 2000))
	bg_wait "$BG_PID" 5
	assert_equal "$BG_STATUS" 0
}

@test "with: extend with the token from any name of the set extends every lock; last reads each lock's run" {
	local t p
	t=$("$RLOCK" acquire -t 5s ya --with yb)
	run -0 "$RLOCK" extend -t 60s yb "$t"
	for n in ya yb; do
		p=$(pttl "$n")
		((p > 5000 && p <= 60000)) || fail "pttl of $n after extend: $p"
	done
	run -0 "$RLOCK" release --status 0 ya "$t"
	run -76 "$RLOCK" extend ya "$t"
	run -0 "$RLOCK" run za2 --with zb2 -- true
	run -0 "$RLOCK" last --max-age 1m za2 zb2
}

# lost_fences NAME: "N F" for lock NAME's history: how many losses it
# records, and the fence of the last.
lost_fences() {
	"$RLOCK" log --json "$1" | python3 -c 'import json,sys
l=[x.get("fence") for x in map(json.loads, sys.stdin) if x["event"]=="lost"]
print(len(l), l[-1] if l else "")'
}

# renewed_set_lost DEL...: a set na nb nc taken by acquire --renew --json
# (-t 1500ms: a renewal every 500ms), the keys of DEL deleted behind its
# back; once the renewer saw it, each lock's history holds one loss, with
# that lock's fence.
renewed_set_lost() {
	local spid n i fences
	bg_start follow sleep 60
	spid=$BG_PID
	run -0 --separate-stderr "$RLOCK" acquire --renew --pid "$spid" \
		-t 1500ms --json na --with nb --with nc
	fences=$(python3 -c 'import json,sys
print(" ".join(str(l["fence"]) for l in json.loads(sys.argv[1])["locks"]))' "$output")
	for n in "$@"; do
		rcli R DEL "$(key "$n")" >/dev/null
	done
	# The renewer records the loss lock by lock: the last is nc's.
	wait_until 10 eval '[[ $(lost_fences nc) == 1\ * ]]'
	i=0
	for n in na nb nc; do
		i=$((i + 1))
		assert_equal "$(lost_fences "$n")" "1 $(cut -d ' ' -f "$i" <<<"$fences")"
	done
	kill "$spid"
}

@test "with: a set's loss in every history: acquire --with --renew's renewer records it in each lock's log, with its fence (one lock deleted)" {
	renewed_set_lost nb
}

@test "with: a set's loss in every history: acquire --with --renew's renewer records it in each lock's log, with its fence (every lock deleted)" {
	renewed_set_lost na nb nc
}

# ---- the baton: a release grants the next in line ---------------------------

# set_waits NAME...: a run of the set NAME... (-t 30s) waits in line; its
# command writes its token and fences to set.got.  Sets SET_PID and
# SET_MEMBER, its place ("x:ID"), once the release would find in every line
# what it needs to grant it the set.
set_waits() {
	local n first=$1
	local -a args=("$1")
	for n in "${@:2}"; do args+=(--with "$n"); done
	bg_start set "$RLOCK" run -t 30s -w 60s "${args[@]}" -- \
		sh -c 'echo "$RLOCK_TOKEN $RLOCK_FENCE_0 $RLOCK_FENCE_1" >set.got'
	SET_PID=$BG_PID
	wait_until 10 eval '[[ $(line_members "$first") == *x:* ]]'
	SET_MEMBER=$(line_members "$first" | tail -n 1)
	for n in "$@"; do
		wait_until 5 eval '[[ $(rcli R HEXISTS "$(key "$n"):line:who" "&$SET_MEMBER") == 1 ]]'
	done
}

# stop_pid PID: SIGSTOP, until it is stopped: only a release can grant it
# anything now.
stop_pid() {
	kill -STOP "$1"
	wait_until 5 pid_stopped "$1"
}

# set_granted A B: the stopped set waiter SET_PID holds A and B by the
# release's grant: one token, its pid in both records, the set's record,
# a first lease within the short baton lease of a 30s TTL (1.5s + 3.002s),
# its places and what it left for the release gone.  Then it runs,
# continued, with the fences of that grant.
set_granted() {
	local a=$1 b=$2 tok n p f0 f1 gtok g0 g1
	tok=$(holder "$a")
	[[ -n $tok ]] || fail "$a is free: the release granted nothing"
	held_by "$b" "$tok"
	for n in "$a" "$b"; do
		assert_equal "$(meta "$n" pid)" "$SET_PID"
		p=$(pttl "$n")
		((p > 0 && p <= 4502)) || fail "the first lease of $n: pttl $p"
		assert_equal "$(rcli R ZSCORE "$(key "$n"):line" "$SET_MEMBER")" ""
		assert_equal "$(rcli R HEXISTS "$(key "$n"):line:who" "&$SET_MEMBER")" 0
	done
	f0=$(meta "$a" fence)
	f1=$(meta "$b" fence)
	assert_equal "$(rcli R GET "$(key "$b"):with")" "$(printf '%s\n%s\n%s\n%s\n%s' "$tok" "$a" "$f0" "$b" "$f1")"
	kill -CONT "$SET_PID"
	bg_wait "$SET_PID" 10
	assert_equal "$BG_STATUS" 0
	read -r gtok g0 g1 <set.got
	assert_equal "$gtok $g0 $g1" "$tok $f0 $f1"
	lock_free "$a"
	lock_free "$b"
}

@test "with: a single lock's release grants the set waiting next the whole set, in the release itself (the baton)" {
	local t
	t=$("$RLOCK" acquire -t 30s ba)
	set_waits ba bb
	stop_pid "$SET_PID"
	run -0 "$RLOCK" release ba "$t"
	set_granted ba bb
}

@test "with: a set's release grants the set waiting next the whole set, in the release itself (the baton)" {
	local t
	t=$("$RLOCK" acquire -t 30s ea --with eb)
	set_waits eb ea
	stop_pid "$SET_PID"
	run -0 "$RLOCK" release ea "$t"
	set_granted eb ea
}

@test "with: a set's release grants the single run waiting next, in the release itself (the baton)" {
	local t m f
	t=$("$RLOCK" acquire -t 30s ga --with gb)
	bg_start single "$RLOCK" run -t 30s -w 60s gb -- sh -c 'echo "$RLOCK_FENCE" >single.got'
	local spid=$BG_PID
	wait_until 10 line_is gb 1
	m=$(line_members gb)
	stop_pid "$spid"
	run -0 "$RLOCK" release ga "$t"
	lock_free ga
	assert_equal "$(meta gb pid)" "$spid"
	p=$(pttl gb)
	((p > 0 && p <= 4502)) || fail "the first lease: pttl $p"
	line_is gb 0
	assert_equal "$(rcli R HEXISTS "$(key gb):line:who" "^$m")" 0
	f=$(meta gb fence)
	kill -CONT "$spid"
	bg_wait "$spid" 10
	assert_equal "$BG_STATUS" 0
	(($(cat single.got) >= f)) || fail "fence $(cat single.got) below the grant's $f"
	lock_free gb
}

@test "with: the baton keeps each line's order: a set first in line is granted only once all its locks are free, and the single waiter behind it waits" {
	local t1 t2 wpid
	t1=$("$RLOCK" acquire -t 30s ha)
	t2=$("$RLOCK" acquire -t 30s hb)
	set_waits ha hb
	bg_start single "$RLOCK" run -t 30s -w 60s ha -- sh -c 'echo single >>order'
	wpid=$BG_PID
	wait_until 10 line_is ha 2
	# ha freed: the set heads its line but hb is held, and the single
	# waiter is behind the set: nobody is granted ha.
	run -0 "$RLOCK" release ha "$t1"
	lock_free ha
	line_is ha 2
	line_is hb 1
	held_by hb "$t2"
	# hb freed: its release grants the set both, ha included.
	stop_pid "$SET_PID"
	run -0 "$RLOCK" release hb "$t2"
	set_granted ha hb
	# The set's release then hands ha to the single waiter.
	bg_wait "$wpid" 10
	assert_equal "$BG_STATUS" 0
	assert_equal "$(cat order)" single
	lock_free ha
}

@test "with: the baton keeps priority: a single --priority waiter that came after a waiting set is handed the lock first, then the set its whole set" {
	local t ppid
	t=$("$RLOCK" acquire -t 30s ia --with ib)
	bg_start set "$RLOCK" run -t 30s -w 60s ia --with ib -- sh -c 'echo set >>order'
	SET_PID=$BG_PID
	wait_until 10 line_is ia 1
	bg_start prio "$RLOCK" run -t 30s -w 60s --priority 10 ia -- sh -c "echo prio >>order; $(gate "$BATS_TEST_TMPDIR/go")"
	ppid=$BG_PID
	wait_until 10 line_is ia 2
	# The --priority waiter is first in ia's line, the set first in ib's.
	[[ $(line_members ia | head -n 1) != "$(line_members ib)" ]]
	run -0 "$RLOCK" release ib "$t"
	# ia went to the --priority waiter, and the set does not hold ib
	# without ia.
	wait_until 10 file_has order prio
	assert_equal "$(meta ia pid)" "$ppid"
	lock_free ib
	touch go
	bg_wait "$ppid" 10
	assert_equal "$BG_STATUS" 0
	bg_wait "$SET_PID" 10
	assert_equal "$BG_STATUS" 0
	assert_equal "$(cat order)" "$(printf 'prio\nset')"
	lock_free ia
	lock_free ib
}
