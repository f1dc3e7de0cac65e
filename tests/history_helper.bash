# history_helper.bash - reading a lock's history (the stream P{NAME}:log)
# for the suites that check it (log, cluster, sentinel).  Load it after
# test_helper.  The suite says how to reach the stream with log_cli, a
# function that runs redis-cli ARGS... against the server holding NAME's
# keys (the slot's owner, the current master):
#
#	log_cli NAME ARGS...
#
#	logkey NAME		the key of lock NAME's history
#	events NAME [SERVER]	its stream as XRANGE gives it (from SERVER,
#				a test_helper server name, when given), as a
#				JSON list of objects: the entry's fields ("" for
#				a field rlock knows that the entry does not
#				have; a release's holder and kind from its
#				grant, the acquired entry of its token, as rlock
#				joins them), "_id" its ID, "_fields"
#				the names of the fields it has, in their order
#				(["a1"] or ["r1"] for a packed grant or
#				release), and "_has" those it stands for
#				(test_helper's entry_fields)
#	event_names NAME	the events, space-separated
#	event_field NAME FIELD	that field of every entry, one a line
#	log_matches_stream JSONL STREAM
#				each line of `rlock log --json` is the entry of
#				STREAM (events' output) at the same place
#	log_line_matches LINE EVENT PID FENCE
#				LINE is an `rlock log` line of EVENT by
#				$USER@host pid PID with fence FENCE (the man
#				page's format)
#	n_lines FILE / has_lines FILE N
#	stop_followers TPID JPID N
#				stop the followers `log -f` (bg_start'ed as
#				text, pid TPID) and `log -f --json` (json,
#				JPID) with SIGINT and SIGTERM: each exits 0,
#				silent on stderr, having printed N lines
#	newest_served NPID	the --supersede waiter NPID runs after the
#				holder of sup, with a higher fence (wfence)
#	served_by_priority LOW1 LOW2 HIGH -- RLOCK_OPTION...
#				the --priority waiter HIGH is shown next and
#				served before LOW1 and LOW2 (cluster, sentinel)

# logkey NAME
logkey() {
	echo "$(key "$1"):log"
}

# The fields rlock writes, in their order (an entry has those it knows).
HIST_FIELDS='["event", "host", "user", "pid", "kind", "fence", "token", "waited", "since", "held", "exit", "signal", "reason", "command", "note", "slot"]'

# events NAME [SERVER]: [] when there is no stream.
events() {
	local out
	if (($# > 1)); then
		out=$(rcli "$2" --json XRANGE "$(logkey "$1")" - +)
	else
		out=$(log_cli "$1" --json XRANGE "$(logkey "$1")" - +)
	fi
	python3 -c "$_RL_UNPACK_PY"'
out, grants = [], {}
for eid, kv in json.loads(sys.argv[1] or "[]") or []:
    e = dict((f, "") for f in json.loads(sys.argv[2]))
    # A packed grant or release (entry_fields) in the fields it stands for.
    ukv = unpack(eid, kv)
    e.update(zip(ukv[0::2], ukv[1::2]))
    e["_id"] = eid
    e["_fields"] = kv[0::2]
    e["_has"] = ukv[0::2]
    if e["event"] == "acquired":
        # A grant leaves out what is the common case.
        if "kind" not in e["_has"]:
            e["kind"] = "x"
        if "waited" not in e["_has"]:
            e["waited"] = "0"
        grants[e["token"]] = e
    elif e["event"] in ("released", "abandoned") and e["token"] in grants:
        g = grants[e["token"]]
        for f in ("host", "user", "pid", "kind", "fence"):
            e[f] = e[f] or g[f]
        # When it began is the id of its grant.
        if "since" not in e["_has"] and "held" not in e["_has"]:
            e["since"] = g["_id"].split("-")[0]
    out.append(e)
print(json.dumps(out))' "$out" "$HIST_FIELDS"
}

event_names() {
	events "$@" | python3 -c 'import json, sys; print(" ".join(e["event"] for e in json.load(sys.stdin)))'
}

event_field() {
	events "$1" | python3 -c 'import json, sys; [print(e[sys.argv[1]]) for e in json.load(sys.stdin)]' "$2"
}

log_matches_stream() {
	python3 -c '
import json, sys
lines = [json.loads(l) for l in sys.argv[1].splitlines()]
stream = json.loads(sys.argv[2])
if len(lines) != len(stream):
    sys.exit("%d lines, %d entries\n%s\n%s" % (len(lines), len(stream), sys.argv[1], sys.argv[2]))
def num(v):
    return int(v) if v != "" else None
def held(s):
    if s["held"] != "" or s["since"] == "":
        return num(s["held"])
    return max(0, int(s["_id"].split("-")[0]) - int(s["since"]))
# A release names its grant by the token; rlock joins the two.
grants = dict((s["token"], s) for s in stream if s["event"] == "acquired")
for j, s in zip(lines, stream):
    if s["event"] == "released" and s["host"] == "" and s["token"] in grants:
        g = grants[s["token"]]
        for f in ("host", "user", "pid", "kind", "fence"):
            s[f] = s[f] or g[f]
    want = {
        "event": s["event"], "id": s["_id"], "time_ms": int(s["_id"].split("-")[0]),
        "host": s["host"], "user": s["user"], "kind": s["kind"], "token": s["token"],
        "command": s["command"], "pid": num(s["pid"]), "fence": num(s["fence"]),
        "waited_ms": num(s["waited"]), "held_ms": held(s), "exit": num(s["exit"]),
        "signal": s["signal"] or None, "reason": s["reason"] or None, "note": s["note"] or None,
    }
    for k, v in want.items():
        if k not in j or j[k] != v or type(j[k]) != type(v):
            sys.exit("%s: %r, the stream says %r\n%s\n%s" % (k, j.get(k), v, j, s))
' "$1" "$2"
}

# log_line_matches LINE EVENT PID FENCE: "DATE TIME  EVENT  USER@HOST pid
# PID  fence FENCE..." with the columns of man/rlock-log.1 (DESCRIPTION).
log_line_matches() {
	local re
	re="^[0-9]{4}-[0-9]{2}-[0-9]{2} [0-9]{2}:[0-9]{2}:[0-9]{2}  $(printf '%-8s' "$2")  $USER@$(uname -n) pid $3  fence $4( |\$)"
	[[ $1 =~ $re ]] || {
		fail "not an '$2' line of pid $3, fence $4: '$1'"
		return 1
	}
}

# n_lines FILE: its number of lines (0 when missing).
n_lines() {
	if [[ -f $1 ]]; then wc -l <"$1"; else echo 0; fi
}

has_lines() {
	(($(n_lines "$1") >= $2))
}

stop_followers() {
	local tpid=$1 jpid=$2 n=$3
	pid_alive "$tpid"
	pid_alive "$jpid"
	kill -INT "$tpid"
	kill -TERM "$jpid"
	bg_wait "$tpid" 5
	assert_equal "$BG_STATUS" 0
	bg_wait "$jpid" 5
	assert_equal "$BG_STATUS" 0
	assert_equal "$(n_lines text.out) $(n_lines json.out)" "$n $n"
	assert_equal "$(bg_err text)$(bg_err json)" ""
}

# as_tester: who rlock records in these tests: $USER (tester) and the
# host's name, as HOST and ME (tester@HOST).
as_tester() {
	export USER=tester
	HOST=$(uname -n)
	ME=tester@$HOST
}

# served_by_priority LOW1 LOW2 HIGH -- RLOCK_OPTION...: lock prio's holder
# (HOLDER_PID, gated on go-prio) has three waiters in line, low1 and low2
# and then HIGH, which asked with --priority 10 --label hotfix; each
# appends its name to the file order.  rlock status through RLOCK_OPTION
# shows HIGH next, in text and in JSON; nobody ran yet; once the holder
# goes, all four exit 0 and the waiters ran high, low1, low2.
served_by_priority() {
	local -a pids=("$1" "$2" "$3")
	local n
	shift 4
	run -0 --separate-stderr "$RLOCK" "$@" status prio
	assert_line --regexp "^  next: tester@$(uname -n):${pids[2]}, waiting [0-9.]+m?s, priority 10  hotfix$"
	run -0 --separate-stderr "$RLOCK" "$@" status --json prio
	json_check "$output" 'd["locks"][0]["waiters"] == 3' \
		'd["locks"][0]["next"]["pid"] == int(a[0]) and d["locks"][0]["next"]["priority"] == 10' -- "${pids[2]}"
	[[ ! -e order ]]
	touch go-prio
	for n in 0 1 2; do
		bg_wait "${pids[n]}" 15
		assert_equal "$BG_STATUS" 0
	done
	bg_wait "$HOLDER_PID" 5
	assert_equal "$BG_STATUS" 0
	assert_equal "$(tr '\n' ' ' <order)" "high low1 low2 "
}

# newest_served NPID: lock sup's holder (HOLDER_PID, gated on go-sup, its
# fence in FENCE) has the --supersede waiter NPID in line, whose command
# writes its fence to new-ran.  It has not run yet; once the holder goes,
# both exit 0 and it ran with a fence above the holder's, which is left in
# the caller's wfence.
newest_served() {
	[[ ! -e new-ran ]]
	touch go-sup
	bg_wait "$HOLDER_PID" 10
	assert_equal "$BG_STATUS" 0
	bg_wait "$1" 10
	assert_equal "$BG_STATUS" 0
	wfence=$(cat new-ran)
	assert_increasing "$FENCE" "$wfence"
}
