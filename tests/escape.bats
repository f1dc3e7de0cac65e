#!/usr/bin/env bats
# escape.bats - text rlock did not write reaches the user only escaped
# (issue 32, STYLE 17b): holders' hosts, users, notes and commands, lock
# names listed by SCAN, a semaphore's token prefixes, history entries and a
# server's error text, written here with redis-cli at rlock's own keys (or
# sent by a hostile RESP server), hold terminal escapes (an OSC that
# retitles the terminal, a clear screen), a C1 CSI, a 0xff and a UTF-8
# character cut short.  On a terminal they come out as \xNN (a backslash
# as \\); in JSON as valid UTF-8, each byte that is no UTF-8 as U+FFFD; in
# Prometheus label values as valid UTF-8 with \\, \" and \n.  A name in
# valid UTF-8 (José, 日本) shows as it is.

bats_require_minimum_version 1.5.0
load test_helper
load history_helper
load hostile_helper

setup() {
	rl_setup
	as_tester
}

teardown() {
	stop_all_hostile
	rl_teardown
}

log_cli() {
	rcli R "${@:2}"
}

# The hostile bytes: an OSC that retitles the terminal, a clear screen, a
# C1 CSI, a byte that is never UTF-8, a character cut short.
OSC=$'\e]0;owned\a'
CLS=$'\e[2J'
CSI=$'\xc2\x9b'
FF=$'\xff'
CUT=$'\xe6\x97'
# The same as rlock_vis shows them.
V_OSC='\x1b]0;owned\x07'
V_CLS='\x1b[2J'
V_CSI='\xc2\x9b'
V_FF='\xff'
V_CUT='\xe6\x97'

# capture ID COMMAND...: stdout and stderr of COMMAND into ID.out and
# ID.err, byte for byte; STATUS its exit status.
capture() {
	local id=$1
	shift
	STATUS=0
	"$@" >"$id.out" 2>"$id.err" 3>&- || STATUS=$?
}

# clean FILE...: each FILE is valid UTF-8 with no control character but
# the newline: no ESC, BEL, DEL, C1 (U+0080..U+009F) or bidi control.
clean() {
	python3 -c '
import sys
for path in sys.argv[1:]:
    b = open(path, "rb").read()
    try:
        t = b.decode("utf-8")
    except UnicodeDecodeError as e:
        sys.exit("%s: not UTF-8: %s: %r" % (path, e, b))
    bad = [c for c in t if (ord(c) < 0x20 and c != "\n") or
           0x7f <= ord(c) <= 0x9f or 0x202a <= ord(c) <= 0x202e]
    if bad:
        sys.exit("%s: raw %r in %r" % (path, bad, t))
' "$@"
}

# jsonl FILE: every line of FILE is a JSON document; prints them as one
# JSON list.
jsonl() {
	python3 -c '
import json, sys
print(json.dumps([json.loads(l) for l in open(sys.argv[1], "rb")]))' "$1"
}

# has FILE TEXT: FILE holds TEXT (bytes, as fixed strings).
has() {
	grep -qF -- "$2" "$1" || fail "no '$2' in $1: $(cat -v "$1")"
}

# hostile_owner NAME HOST USER NOTE COMMAND: rewrite the holder record of
# exclusive lock NAME (held), the record of its grant (grant_record: its
# history entry, or P{NAME}:grant; "2\nID\nFENCE\nHOLD\nKIND\nWAITED\n
# TOKEN8\nPID\nHOST\nUSER\nNOTE\nCOMMAND"), with these fields, its id,
# fence, hold, kind, token and pid kept, written to P{NAME}:grant (with the
# entry's id, which makes it the record).
hostile_owner() {
	local rec
	local -a f
	rec=$(grant_record "$1")
	mapfile -t f <<<"$rec"
	[[ ${f[0]} == 2 ]] || fail "no grant record for $1: '$rec'"
	rec=$(printf '%s\n' "${f[@]:0:8}" "$2" "$3" "$4" "$5")
	rcli R SET "$(key "$1"):grant" "$rec" >/dev/null
}

# py_str BYTES: the text a JSON value holds for BYTES, each byte that is
# no UTF-8 as U+FFFD (python's errors="replace" would make one of a
# character cut short).
py_str() {
	python3 -c '
import sys
b = sys.argv[1].encode("utf-8", "surrogateescape")
print("".join("\ufffd" if 0xdc80 <= ord(c) <= 0xdcff else c
              for c in b.decode("utf-8", "surrogateescape")))' "$1"
}

@test "a holder's hostile host, user, note and command reach status escaped" {
	"$RLOCK" acquire ex >/dev/null
	hostile_owner ex "h$OSC$FF" "u$CSI" "n$CLS$CUT" "cmd $FF$OSC"
	capture st "$RLOCK" status ex
	assert_equal "$STATUS" 0
	clean st.out st.err
	has st.out "u$V_CSI@h$V_OSC$V_FF:"
	has st.out "cmd $V_FF$V_OSC"
	has st.out "note: n$V_CLS$V_CUT"
	capture js "$RLOCK" status --json ex
	assert_equal "$STATUS" 0
	clean js.out js.err
	json_check "$(jsonl js.out)" \
		'd[0]["locks"][0]["host"] == "h\x1b]0;owned\x07\ufffd"' \
		'd[0]["locks"][0]["user"] == "u\x9b"' \
		'd[0]["locks"][0]["note"] == "n\x1b[2J\ufffd\ufffd"' \
		'd[0]["locks"][0]["command"] == "cmd \ufffd\x1b]0;owned\x07"' \
		'd[0]["locks"][0]["holders"][0]["host"] == d[0]["locks"][0]["host"]'
}

@test "the holder of a lock in status's listing keeps the table's columns" {
	"$RLOCK" acquire ex >/dev/null
	hostile_owner ex "$CLS" u "" "c$OSC"
	capture ls "$RLOCK" status
	assert_equal "$STATUS" 0
	clean ls.out ls.err
	# The command starts under COMMAND, as for any holder that fits
	# its column.
	local head row
	head=$(sed -n 1p ls.out)
	row=$(sed -n 2p ls.out)
	assert_regex "$row" '^ex +held .*  u@\\x1b\[2J:[0-9]+ +c\\x1b\]0;owned\\x07$'
	head=${head%%COMMAND*}
	assert_equal "${row:${#head}}" "c$V_OSC"
}

@test "lock names another client wrote reach status's listing escaped, and José as it is" {
	# No C0 control: a name holding one stops the listing (see the
	# report of issue 32); C1, 0xff and a character cut short are
	# names rlock accepts.
	rcli R SET "$(key "n$CSI$FF$CUT")" foreign NX PX 30000 >/dev/null
	rcli R SET "$(key "José")" foreign NX PX 30000 >/dev/null
	rcli R SET "$(key "日本")" foreign NX PX 30000 >/dev/null
	capture ls "$RLOCK" status
	assert_equal "$STATUS" 0
	clean ls.out ls.err
	has ls.out "n$V_CSI$V_FF$V_CUT "
	# Valid UTF-8 as it is, and the columns aligned by characters.
	run -0 grep -E "^José {17}held " ls.out
	run -0 grep -E "^日本 {19}held " ls.out
	capture js "$RLOCK" status --json
	assert_equal "$STATUS" 0
	clean js.out js.err
	json_check "$(jsonl js.out)" \
		'sorted(l["name"] for l in d[0]["locks"]) == sorted(a)' \
		-- "$(py_str "n$CSI$FF$CUT")" "José" "日本"
	json_check "$(jsonl js.out)" \
		'any(l["name"] == "n\x9b\ufffd\ufffd\ufffd" for l in d[0]["locks"])'
}

@test "a semaphore holder's hostile token prefix reaches status escaped" {
	local t
	t=$("$RLOCK" acquire --limit 3 sem)
	local hk="$(key sem):holders" mk="$(key sem):holders:meta"
	local bad="$OSC${CSI}0123456789abcdef0123" rec
	rec=$(rcli R HGET "$mk" "$t")
	rcli R ZADD "$hk" "$(rcli R ZSCORE "$hk" "$t")" "$bad" >/dev/null
	rcli R HSET "$mk" "$bad" "$rec" >/dev/null
	capture st "$RLOCK" status sem
	assert_equal "$STATUS" 0
	clean st.out st.err
	# The first 8 bytes, the token prefix status shows (and no slot:
	# the hostile holder has none, issue 35).
	has st.out "    ${V_OSC:0:11} slot -     fence"
	capture js "$RLOCK" status --json sem
	assert_equal "$STATUS" 0
	clean js.out js.err
	json_check "$(jsonl js.out)" \
		'sorted(h["token_prefix"] for h in d[0]["locks"][0]["holders"]) == sorted(["\x1b]0;owne", a[0][:8]])' \
		-- "$t"
}

@test "hostile history entries reach log, last and their --json escaped" {
	local t
	t=$(($(server_ms) - 5000))
	rcli R XADD "$(logkey h)" "$t-0" event acquired host "h$OSC$FF" \
		user "u$CSI" pid 4242 kind x fence $((t * 1000)) token "0b$CLS" \
		waited 0 command "c$OSC$CUT" note "n$CLS" >/dev/null
	rcli R XADD "$(logkey h)" "$((t + 1000))-0" event lost host "h$OSC$FF" \
		user "u$CSI" pid 4242 kind x fence $((t * 1000)) token "0b$CLS" \
		held 1000 reason "r$OSC$FF" signal "S$CLS" command "c$OSC$CUT" \
		note "n$CLS" >/dev/null
	capture log "$RLOCK" log h
	assert_equal "$STATUS" 0
	clean log.out log.err
	has log.out "u$V_CSI@h$V_OSC$V_FF pid 4242"
	has log.out "c$V_OSC$V_CUT"
	has log.out "note: n$V_CLS"
	has log.out "(r$V_OSC$V_FF)"
	capture logj "$RLOCK" log --json h
	assert_equal "$STATUS" 0
	clean logj.out logj.err
	json_check "$(jsonl logj.out)" \
		'len(d) == 2' \
		'all(e["host"] == "h\x1b]0;owned\x07\ufffd" for e in d)' \
		'all(e["command"] == "c\x1b]0;owned\x07\ufffd\ufffd" for e in d)' \
		'd[1]["reason"] == "r\x1b]0;owned\x07\ufffd"' \
		'd[1]["signal"] is None' \
		'all(e["token"] == "" for e in d)' \
		'all(e["unreadable"] == "token \x270b\x1b[2J\x27" for e in d)'
	capture last "$RLOCK" last h
	clean last.out last.err
	has last.out "on h$V_OSC$V_FF (u$V_CSI pid 4242)"
	has last.out "lost (r$V_OSC$V_FF)"
	capture lastj "$RLOCK" last --json h
	clean lastj.out lastj.err
	json_check "$(jsonl lastj.out)" \
		'd[0]["last"]["user"] == "u\x9b"'
	capture prom "$RLOCK" last --prometheus h
	assert_equal "$STATUS" 0
	clean prom.out prom.err
	has prom.out 'rlock_last_run_exit_code{lock="h"} 76'
}

@test "last --prometheus gives hostile lock names as valid label values" {
	local name="p$FF\"q\\$CUT" shown="p$CSI"
	"$RLOCK" run "$name" -- true
	"$RLOCK" run "$shown" -- true
	"$RLOCK" run "José" -- true
	capture prom "$RLOCK" last --prometheus "$name" "$shown" José
	assert_equal "$STATUS" 0
	clean prom.out prom.err
	has prom.out "rlock_last_run_exit_code{lock=\"p"$'\xef\xbf\xbd'"\\\"q\\\\"$'\xef\xbf\xbd\xef\xbf\xbd'"\"} 0"
	has prom.out "rlock_last_run_exit_code{lock=\"p"$'\xef\xbf\xbd'"\"} 0"
	has prom.out 'rlock_last_run_exit_code{lock="José"} 0'
	# Every sample line is NAME{lock="VALUE"} NUMBER, VALUE with only
	# the format's escapes.
	python3 -c '
import re, sys
for l in open(sys.argv[1], encoding="utf-8"):
    if l.startswith("#"):
        continue
    assert re.fullmatch(r"[a-z_]+\{lock=\"([^\"\\\n]|\\[\\\"n])*\"\} [0-9.]+\n", l), l
' prom.out
	capture last "$RLOCK" last "$name" "$shown" José
	clean last.out last.err
	has last.out "p$V_FF\"q\\\\$V_CUT: last run ended"
	has last.out "José: last run ended"
	capture lastj "$RLOCK" last --json "$name" "$shown" José
	clean lastj.out lastj.err
	json_check "$(jsonl lastj.out)" \
		'[x["lock"] for x in d] == ["p\ufffd\"q\\\ufffd\ufffd", "p\x9b", "José"]'
}

@test "a valid UTF-8 name, holder and note show as they are" {
	USER=josé "$RLOCK" acquire --note "für 日本" José >/dev/null
	capture st "$RLOCK" status José
	assert_equal "$STATUS" 0
	clean st.out st.err
	has st.out "José "
	has st.out "josé@"
	has st.out "note: für 日本"
	run -1 grep -F '\x' st.out
}

@test "a server's error text to a lock command reaches stderr escaped" {
	start_hostile H 'acquire -ERR \x1b]0;owned\x07\x1b[2J\xc2\x9b\xff\r\n'
	capture acq "$RLOCK" -u "$H_URL" acquire -n x
	((STATUS != 0)) || fail "acquire exited 0"
	clean acq.out acq.err
	has acq.err "$V_OSC$V_CLS$V_CSI$V_FF"
	run -0 wc -l <acq.err
	assert_output 1
	capture run "$RLOCK" -u "$H_URL" run -n x -- true
	((STATUS != 0)) || fail "run exited 0"
	clean run.out run.err
	has run.err "$V_OSC$V_CLS$V_CSI$V_FF"
}

@test "a hostile MOVED host reaches stderr escaped" {
	start_hostile H 'acquire -MOVED 1 h\x1b]0;owned\x07\xff:6379\r\n'
	capture acq "$RLOCK" -u "$H_URL" --connect-timeout 1s acquire -n x
	((STATUS != 0)) || fail "acquire exited 0"
	clean acq.out acq.err
	run -0 wc -l <acq.err
	assert_output 1
}

@test "the live wait line escapes the holder on a terminal" {
	"$RLOCK" acquire ex >/dev/null
	hostile_owner ex "h$OSC$FF" "u$CSI" "" "c$CLS"
	local rc=0
	timeout 20 script -qec "'$RLOCK' run -w 1500ms ex -- true" /dev/null \
		</dev/null >tty.out 2>&1 3>&- || rc=$?
	has tty.out "held by h$V_OSC$V_FF pid"
	has tty.out "(c$V_CLS)"
	# rlock's own line control (\r, ESC [K) and nothing of the holder's.
	python3 -c '
import sys
b = open(sys.argv[1], "rb").read()
t = b.decode("utf-8")
rest = t.replace("\x1b[K", "").replace("\r", "").replace("\n", "")
bad = [c for c in rest if ord(c) < 0x20 or 0x7f <= ord(c) <= 0x9f]
sys.exit("raw %r in %r" % (bad, t) if bad else 0)' tty.out
}

@test "the progress line escapes the holder and its note in a CI log" {
	"$RLOCK" acquire -t 60s ex >/dev/null
	hostile_owner ex "h$OSC$FF" "u$CSI" "n$CLS$CUT" "c$CLS"
	capture w "$RLOCK" run --progress 1s -w 2500ms ex -- true
	assert_equal "$STATUS" 75
	clean w.err
	has w.err "s for ex: held "
	has w.err " by u$V_CSI@h$V_OSC$V_FF (pid "
	has w.err ", note \"n$V_CLS$V_CUT\"), 0 ahead, no estimate"
}
