# history_helper.bash - reading a lock's history (the stream P{NAME}:log)
# for the suites that check it on Cluster and Sentinel.  Load it after
# test_helper.  The suite says how to reach the stream with log_cli, a
# function that runs redis-cli ARGS... against the server holding NAME's
# keys (the slot's owner, the current master):
#
#	log_cli NAME ARGS...
#
#	logkey NAME		the key of lock NAME's history
#	events NAME		its stream as XRANGE gives it, as a JSON list of
#				objects: the entry's fields, "_id" its ID
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

# logkey NAME
logkey() {
	echo "$(key "$1"):log"
}

# events NAME: [] when there is no stream.
events() {
	log_cli "$1" --json XRANGE "$(logkey "$1")" - + | python3 -c '
import json, sys
out = []
for eid, kv in json.load(sys.stdin) or []:
    e = dict(zip(kv[0::2], kv[1::2]))
    e["_id"] = eid
    out.append(e)
print(json.dumps(out))'
}

event_names() {
	events "$1" | python3 -c 'import json, sys; print(" ".join(e["event"] for e in json.load(sys.stdin)))'
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
for j, s in zip(lines, stream):
    want = {
        "event": s["event"], "id": s["_id"], "time_ms": int(s["_id"].split("-")[0]),
        "host": s["host"], "user": s["user"], "kind": s["kind"], "token": s["token"],
        "command": s["command"], "pid": num(s["pid"]), "fence": num(s["fence"]),
        "waited_ms": num(s["waited"]), "held_ms": num(s["held"]), "exit": num(s["exit"]),
        "signal": s["signal"] or None, "reason": s["reason"] or None, "note": s["note"] or None,
    }
    for k, v in want.items():
        if k not in j or j[k] != v or type(j[k]) != type(v):
            sys.exit("%s: %r, the stream says %r\n%s\n%s" % (k, j.get(k), v, j, s))
' "$1" "$2"
}

# log_line_matches LINE EVENT PID FENCE: "DATE TIME  EVENT  USER@HOST pid
# PID  fence FENCE..." with the columns of man/rlock.1 (LOCK HISTORY).
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
