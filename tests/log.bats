#!/usr/bin/env bats
# log.bats - the lock's history (issue 19): what run, acquire, release and
# release --force record in the stream P{NAME}:log (acquired, released,
# skipped, forced, lost, with the 14 fields in their order), --note and
# RLOCK_NOTE, --no-log and RLOCK_LOG=off, RLOCK_LOG_MAX and RLOCK_LOG_DAYS;
# then reading it: rlock log (-n, --since, --json, -f), rlock last (text,
# --max-age, --json, --prometheus), and what status shows of it.  Every
# check reads the stream itself with redis-cli (XRANGE) as well as through
# rlock.  Old events, when a test needs them, are appended by hand with an
# explicit ID in the past, as rlock would have written them.

bats_require_minimum_version 1.5.0
load test_helper
load history_helper

setup() {
	rl_setup
	as_tester
}

# The fields of a grant and of a release: each is packed in one field
# (lib/scripts/entry.lua), "a1" with "KIND\nWAITED\nTOKEN8\nPID\nHOST\n
# USER\nNOTE\nCOMMAND" (the fence is the entry id's), "r1" with "TOKEN8\n
# EXIT\nSIGNAL"; events (history_helper) unpacks them into the fields they
# stand for.  A release names its grant by the token (who, the kind, the
# fence and when it began are there).
ACQ_FIELDS='["a1"]'
REL_FIELDS='["r1"]'
ACQ_HAS='["event", "host", "user", "pid", "kind", "fence", "token", "waited", "command", "note"]'
REL_HAS='["event", "token", "exit", "signal"]'

# What rlock log --json and last --json have for every event.
LOG_KEYS='{"event", "time_ms", "id", "host", "user", "pid", "kind", "fence", "token", "waited_ms", "held_ms", "exit", "signal", "reason", "command", "note"}'

# log_cli NAME ARGS...: redis-cli against the one server.
log_cli() {
	rcli R "${@:2}"
}

# no_history NAME: lock NAME has no stream at all.
no_history() {
	[[ $(rcli R EXISTS "$(logkey "$1")") == 0 ]]
}

# empty_history NAME: lock NAME's stream is there (its grants took their
# fences from its ids) and has no entry.
empty_history() {
	assert_equal "$(rcli R TYPE "$(logkey "$1")")" stream
	assert_equal "$(rcli R XLEN "$(logkey "$1")")" 0
}

# old_event NAME AGO_MS EVENT [FIELD VALUE...]: append to lock NAME's stream
# an entry whose ID is AGO_MS before the server's clock, with the 14 fields
# rlock writes (FIELD VALUE pairs override the defaults: host oldhost, user
# olduser, pid 4242, kind x, a fence from that time, token 0badc0de).  An
# ID must be above the stream's last: call it oldest first, before any run.
old_event() {
	local name=$1 ago=$2 ev=$3 t
	shift 3
	t=$(($(server_ms) - ago))
	local -A f=([host]=oldhost [user]=olduser [pid]=4242 [kind]=x
		[fence]=$((t * 1000)) [token]=0badc0de [waited]= [held]= [exit]=
		[signal]= [reason]= [command]= [note]=)
	while (($# >= 2)); do
		f[$1]=$2
		shift 2
	done
	rcli R XADD "$(logkey "$name")" "$t-0" event "$ev" host "${f[host]}" \
		user "${f[user]}" pid "${f[pid]}" kind "${f[kind]}" fence "${f[fence]}" \
		token "${f[token]}" waited "${f[waited]}" held "${f[held]}" \
		exit "${f[exit]}" signal "${f[signal]}" reason "${f[reason]}" \
		command "${f[command]}" note "${f[note]}" >/dev/null
}

# old_run NAME AGO_MS HELD_MS EXIT: an acquired and a released entry, the
# release AGO_MS ago after HELD_MS held, exit status EXIT ('' unknown).
old_run() {
	local name=$1 ago=$2 held=$3 ex=$4
	old_event "$name" $((ago + held)) acquired waited 0 command nightly.sh
	old_event "$name" "$ago" released held "$held" exit "$ex"
}

# prom_check TEXT EXPR... [-- ARG...]: TEXT in the textfile collector's
# format (every line a comment or NAME{lock="L"} VALUE); each python EXPR
# holds over s (samples: {(NAME, LOCK): "VALUE"}), help and typ ({NAME:
# text}), and a (the ARGs).
prom_check() {
	local text=$1
	shift
	python3 -c '
import json, re, sys
text = sys.argv[1]
rest = sys.argv[2:]
i = rest.index("--") if "--" in rest else len(rest)
exprs, a = rest[:i], rest[i + 1:]
s, help, typ = {}, {}, {}
for line in text.splitlines():
    m = re.match(r"^# HELP (\w+) (.+)$", line)
    if m:
        help[m.group(1)] = m.group(2); continue
    m = re.match(r"^# TYPE (\w+) (\w+)$", line)
    if m:
        typ[m.group(1)] = m.group(2); continue
    m = re.match(r"^(\w+)\{lock=\"((?:[^\"\\]|\\.)*)\"\} (\S+)$", line)
    if not m:
        sys.exit("not a sample nor a HELP or TYPE line: %r\n%s" % (line, text))
    lock = re.sub(r"\\(.)", lambda x: "\n" if x.group(1) == "n" else x.group(1), m.group(2))
    if (m.group(1), lock) in s:
        sys.exit("two samples of %s for %r" % (m.group(1), lock))
    float(m.group(3))
    s[(m.group(1), lock)] = m.group(3)
for expr in exprs:
    if not eval(expr):
        sys.exit("false: %s\nargs: %s\ntext:\n%s" % (expr, a, text))
' "$text" "$@"
}

# secs3 MS: MS as seconds with three decimals (1700000000123 -> 1700000000.123).
secs3() {
	printf '%d.%03d' $(($1 / 1000)) $(($1 % 1000))
}

# id_ms ID: the time part of a stream ID.
id_ms() {
	echo "${1%%-*}"
}

# has_note_line TEXT: a line of $output is "note: TEXT" (indented or not).
has_note_line() {
	local l
	for l in "${lines[@]}"; do
		[[ ${l#"${l%%[! ]*}"} == "note: $1" ]] && return 0
	done
	fail "no line 'note: $1' in: $output"
}

# read_calls: the server's count of the commands a history reader may use.
read_calls() {
	rcli R INFO commandstats | tr -d '\r' | awk -F'[:=,]' '
	$1 ~ /^cmdstat_(xrange|xrevrange|xread|evalsha|eval)$/ { n += $3 }
	END { print n + 0 }'
}

# ---- recording ------------------------------------------------------------

@test "run, exit 0: acquired then released, each with its fields in order, the holder's pid, fence and token, ID times from the server" {
	local t0 t1
	t0=$(server_ms)
	run -0 --separate-stderr "$RLOCK" run job -- sh -c 'echo "$PPID $RLOCK_FENCE $RLOCK_TOKEN"'
	t1=$(server_ms)
	assert_equal "$stderr" ""
	local rpid fence token
	read -r rpid fence token <<<"$output"
	assert_fence "$fence"
	assert_equal "$(event_names job)" "acquired released"
	json_check "$(events job)" \
		"d[0]['_fields'] == $ACQ_FIELDS and d[1]['_fields'] == $REL_FIELDS" \
		"d[0]['_has'] == $ACQ_HAS and d[1]['_has'] == $REL_HAS" \
		'int(d[0]["fence"]) == (int(d[0]["_id"].split("-")[0]) + 1) * 1000 + int(d[0]["_id"].split("-")[1])' \
		'all(int(a[0]) <= int(e["_id"].split("-")[0]) <= int(a[1]) for e in d)' \
		'int(d[0]["_id"].split("-")[0]) <= int(d[1]["_id"].split("-")[0])' \
		'd[0]["host"] == a[2] and d[0]["user"] == "tester" and d[0]["kind"] == "x"' \
		'd[0]["pid"] == a[3] and d[0]["fence"] == a[4]' \
		'all(e["token"] == a[5][:8] for e in d)' \
		'd[0]["waited"].isdigit() and int(d[0]["waited"]) < 2000 and d[0]["held"] == ""' \
		'd[0]["exit"] == "" and d[0]["signal"] == "" and d[0]["reason"] == ""' \
		'd[0]["command"].startswith("sh -c ") and d[0]["note"] == ""' \
		'abs(int(d[1]["since"]) - int(d[0]["_id"].split("-")[0])) <= 2 and d[1]["held"] == ""' \
		'd[1]["exit"] == "0" and d[1]["signal"] == "" and d[1]["reason"] == ""' \
		'd[1]["waited"] == ""' \
		-- "$t0" "$t1" "$HOST" "$rpid" "$fence" "$token"
	# The stream is in the lock's hash slot: under its hash tag.
	assert_equal "$(rcli R TYPE "$(key job):log")" stream
	# The release names its grant by the token: log joins the two.
	run -0 --separate-stderr "$RLOCK" log --json job
	json_check "$(sed -n 2p <<<"$output")" \
		'd["host"] == a[0] and d["user"] == "tester" and d["pid"] == int(a[1])' \
		'd["fence"] == int(a[2]) and d["kind"] == "x" and d["exit"] == 0' \
		'd["held_ms"] is not None and d["held_ms"] >= 0' \
		-- "$HOST" "$rpid" "$fence"
}

@test "a release's holder comes from its grant, also when the grant is further back than -n, --since or log -f's start" {
	local t i
	t=$("$RLOCK" acquire -t 60s job)
	# Seventy skips between the grant and its release.
	for ((i = 0; i < 70; i++)); do
		rcli R XADD "$(logkey job)" '*' event skipped host other user u pid 1 \
			kind x token 0badc0de waited 0 reason r >/dev/null
	done
	bg_start f "$RLOCK" log -f --json -n 1 job
	local fpid=$BG_PID
	wait_until 5 has_lines f.out 1
	"$RLOCK" release --status 0 job "$t"
	wait_until 5 has_lines f.out 2
	kill -INT "$fpid"
	bg_wait "$fpid" 5
	assert_equal "$BG_STATUS" 0
	json_check "$(sed -n 2p f.out)" \
		'd["event"] == "released" and d["host"] == a[0] and d["user"] == "tester"' \
		'd["fence"] is not None and d["kind"] == "x" and d["held_ms"] >= 0' -- "$HOST"
	run -0 --separate-stderr "$RLOCK" log -n 1 job
	assert_regex "$output" "^[0-9 :-]+  released  tester@$HOST pid [0-9]+  fence [0-9]+  held [^ ]+  exit 0$"
	run -0 --separate-stderr "$RLOCK" log --since 1m -n 1 job
	assert_regex "$output" " released  tester@$HOST pid "
	run -0 --separate-stderr "$RLOCK" last job
	assert_regex "$output" "^job: last run ended [^ ]+ ago on $HOST \\(tester pid [0-9]+\\): exit 0 after [^ ]+$"
	run -1 --separate-stderr "$RLOCK" status job
	assert_line --regexp "^  last: [^ ]+ ago on $HOST, exit 0 after [^ ]+$"
}

@test "run whose command exits 3: released with exit 3" {
	run -3 "$RLOCK" run job -- sh -c 'exit 3'
	assert_equal "$(event_names job)" "acquired released"
	json_check "$(events job)" 'd[1]["exit"] == "3" and d[1]["signal"] == ""'
}

@test "run whose command is killed by a signal: released with 128+N and the signal's name" {
	run -143 "$RLOCK" run job -- sh -c 'kill -TERM $$'
	run -137 "$RLOCK" run job -- sh -c 'kill -KILL $$'
	assert_equal "$(event_names job)" "acquired released acquired released"
	json_check "$(events job)" \
		'd[1]["exit"] == "143" and d[1]["signal"] == "TERM"' \
		'd[3]["exit"] == "137" and d[3]["signal"] == "KILL"'
	run -0 --separate-stderr "$RLOCK" log job
	assert_equal "${#lines[@]}" 4
	assert_regex "${lines[1]}" ' released .*exit 143.*signal TERM'
	assert_regex "${lines[3]}" ' released .*exit 137.*signal KILL'
}

@test "acquire then release --status 4 records exit 4; release without --status records an unknown exit" {
	local t f
	t=$("$RLOCK" acquire job)
	f=$(meta job fence)
	"$RLOCK" release --status 4 job "$t"
	t=$("$RLOCK" acquire job)
	"$RLOCK" release job "$t"
	assert_equal "$(event_names job)" "acquired released acquired released"
	json_check "$(events job)" \
		'd[0]["fence"] == a[0] and d[1]["fence"] == a[0]' \
		'd[1]["exit"] == "4" and d[1]["since"].isdigit()' \
		'd[3]["exit"] == "" and d[3]["signal"] == ""' \
		'd[2]["token"] == a[1][:8] and d[3]["token"] == a[1][:8]' \
		'all(e["host"] == a[2] and e["user"] == "tester" for e in d)' \
		-- "$f" "$t" "$HOST"
	run -0 --separate-stderr "$RLOCK" log --json job
	json_check "$(sed -n 2p <<<"$output")" 'd["exit"] == 4'
	json_check "$(sed -n 4p <<<"$output")" 'd["exit"] is None'
	run -0 --separate-stderr "$RLOCK" log job
	assert_regex "${lines[1]}" ' released .*exit 4( |$)'
	assert_regex "${lines[3]}" ' released .*exit \?( |$)'
}

@test "release --status: N is 0..255, and --force takes none (64)" {
	local t
	t=$("$RLOCK" acquire job)
	for bad in 256 -1 x 1.5 ''; do
		run -64 --separate-stderr "$RLOCK" release --status "$bad" job "$t"
		assert_try release
	done
	run -64 --separate-stderr "$RLOCK" release --force --status 0 job
	assert_try release
	lock_held job
	run -0 "$RLOCK" release --status 255 job "$t"
	json_check "$(events job)" 'd[-1]["event"] == "released" and d[-1]["exit"] == "255"'
}

@test "-n on a held lock records skipped, naming the holder" {
	local t hp
	t=$("$RLOCK" acquire -t 30s job)
	hp=$(meta job pid)
	run -75 "$RLOCK" run -n job -- touch ran
	[[ ! -e ran ]]
	run -75 "$RLOCK" acquire -n job
	assert_equal "$(event_names job)" "acquired skipped skipped"
	json_check "$(events job)" \
		'all(e["reason"] == "held by %s pid %s" % (a[0], a[1]) for e in d[1:])' \
		'all(e["user"] == "tester" and e["host"] == a[2] for e in d[1:])' \
		-- "$ME" "$hp" "$HOST"
	held_by job "$t"
}

@test "-w that runs out records skipped: timed out, and who held it" {
	local t hp
	t=$("$RLOCK" acquire -t 30s job)
	hp=$(meta job pid)
	run -75 "$RLOCK" run -w 200ms job -- touch ran
	[[ ! -e ran ]]
	assert_equal "$(event_names job)" "acquired skipped"
	json_check "$(events job)" \
		'__import__("re").match(r"^timed out after [0-9.]+m?s; held by %s pid %s$" % (__import__("re").escape(a[0]), a[1]), d[1]["reason"])' \
		-- "$ME" "$hp"
}

@test "a waiting run interrupted by SIGINT records skipped: interrupted" {
	local t
	t=$("$RLOCK" acquire -t 60s job)
	bg_start w "$RLOCK" run -w 60s job -- touch "$BATS_TEST_TMPDIR/ran"
	local wpid=$BG_PID
	wait_until 5 has_waiters job 1
	kill -INT "$wpid"
	bg_wait "$wpid" 10
	assert_equal "$BG_STATUS" 130
	[[ ! -e ran ]]
	assert_equal "$(event_names job)" "acquired skipped"
	json_check "$(events job)" 'd[1]["reason"] == "interrupted"'
	held_by job "$t"
}

@test "a run that waited records how long in its acquired event" {
	local t s0 tw
	t=$("$RLOCK" acquire -t 60s job)
	s0=$(server_ms)
	bg_start w "$RLOCK" run -w 20s job -- true
	local wpid=$BG_PID
	wait_until 5 has_waiters job 1
	tw=$(server_ms)
	"$RLOCK" release job "$t"
	bg_wait "$wpid" 10
	assert_equal "$BG_STATUS" 0
	assert_equal "$(event_names job)" "acquired released acquired released"
	# It began waiting after s0 and before tw, and was granted at the
	# time of its acquired entry's ID (all on this machine's clock).
	json_check "$(events job)" \
		'd[0]["waited"] != "" and int(d[0]["waited"]) < 1000' \
		'(lambda g: g - int(a[1]) - 5 <= int(d[2]["waited"]) <= g - int(a[0]) + 5)(int(d[2]["_id"].split("-")[0]))' \
		-- "$s0" "$tw"
	run -0 --separate-stderr "$RLOCK" log job
	assert_regex "${lines[2]}" ' acquired .*waited [0-9]'
	assert_regex "${lines[1]}" ' released .*held [0-9]'
}

@test "release --force records forced with the removed holder's identity and who forced it" {
	local t hp f
	t=$(USER=alice "$RLOCK" acquire -t 60s job)
	hp=$(meta job pid)
	f=$(meta job fence)
	run -0 --separate-stderr env USER=bob "$RLOCK" release --force job
	lock_free job
	assert_equal "$(event_names job)" "acquired forced"
	json_check "$(events job)" \
		'd[1]["user"] == "alice" and d[1]["host"] == a[0]' \
		'd[1]["pid"] == a[1] and d[1]["fence"] == a[2] and d[1]["token"] == a[3][:8]' \
		'__import__("re").match(r"^by bob@%s pid [0-9]+$" % __import__("re").escape(a[0]), d[1]["reason"])' \
		-- "$HOST" "$hp" "$f" "$t"
	run -0 --separate-stderr "$RLOCK" log job
	assert_regex "${lines[1]}" " forced .*alice@$HOST pid $hp.*by bob@$HOST pid [0-9]+"
}

@test "a shared lock and a semaphore record their kind" {
	run -0 "$RLOCK" run -s sh -- true
	run -0 "$RLOCK" run -l 3 sem -- true
	json_check "$(events sh)" 'len(d) == 2 and all(e["kind"] == "s" for e in d)' \
		'd[1]["event"] == "released" and d[1]["exit"] == "0" and d[1]["since"].isdigit()'
	json_check "$(events sem)" 'len(d) == 2 and all(e["kind"] == "3" for e in d)' \
		'd[1]["event"] == "released" and d[1]["exit"] == "0"'
}

@test "a lock lost while its command runs (renewal refused) records lost, with why and how the command ended" {
	run -76 --separate-stderr "$RLOCK" run -t 300ms job -- sh -c '
		redis-cli -p "$R_PORT" DEL "$RLOCK_KEY" >/dev/null
		exec sleep 30'
	assert_equal "$(event_names job)" "acquired lost"
	json_check "$(events job)" \
		'd[1]["reason"].startswith("renewal refused")' \
		'd[1]["fence"] == d[0]["fence"] and d[1]["token"] == d[0]["token"]' \
		'd[1]["pid"] == d[0]["pid"] and d[1]["host"] == d[0]["host"]' \
		'd[1]["exit"] == "143" and d[1]["signal"] == "TERM"'
	run -0 --separate-stderr "$RLOCK" last job
	assert_regex "$output" "^job: last run ended [^ ]+ ago on $HOST \\(tester pid [0-9]+\\): lost \\(renewal refused.*\\) after [^ ]+$"
}

@test "a semaphore place lost while its command runs: the lost event has no kind of its own, and log joins the grant's" {
	run -76 --separate-stderr "$RLOCK" run -l 2 -t 300ms sem -- sh -c '
		redis-cli -p "$R_PORT" DEL "$RLOCK_KEY:holders" >/dev/null
		exec sleep 30'
	assert_equal "$(event_names sem)" "acquired lost"
	json_check "$(events sem)" 'd[0]["kind"] == "2" and d[1]["kind"] == ""' \
		'"kind" not in d[1]["_fields"]'
	run -0 --separate-stderr "$RLOCK" log --json sem
	json_check "$(sed -n 2p <<<"$output")" 'd["event"] == "lost" and d["kind"] == "2"'
}

@test "a lock gone before the command ended (found at release) records lost: lease ran out before release" {
	run -76 --separate-stderr "$RLOCK" run -t 60s job -- sh -c 'redis-cli -p "$R_PORT" DEL "$RLOCK_KEY" >/dev/null'
	assert_equal "$(event_names job)" "acquired lost"
	json_check "$(events job)" \
		'd[1]["reason"] == "lease ran out before release"' \
		'd[1]["fence"] == d[0]["fence"] and d[1]["token"] == d[0]["token"]' \
		'd[1]["exit"] == "0"'
}

@test "--note: shown by status (text and JSON), recorded in the acquired event, shown by log" {
	local note='deploy #42 https://ci.example/job/42 "quoted" é'
	local t
	t=$("$RLOCK" acquire --note "$note" job)
	run -0 --separate-stderr "$RLOCK" status job
	has_note_line "$note"
	run -0 --separate-stderr "$RLOCK" status --json job
	json_check "$output" 'd["locks"][0]["note"] == a[0]' -- "$note"
	"$RLOCK" release job "$t"
	json_check "$(events job)" 'd[0]["note"] == a[0] and d[1]["event"] == "released"' -- "$note"
	run -0 --separate-stderr "$RLOCK" log job
	assert_regex "${lines[0]}" " acquired .*note: .*deploy #42"
	[[ ${lines[0]} == *"note: $note" ]] || fail "no note at the end of: ${lines[0]}"
	run -0 --separate-stderr "$RLOCK" log --json job
	json_check "$(head -n 1 <<<"$output")" 'd["note"] == a[0]' -- "$note"
	json_check "$(tail -n 1 <<<"$output")" 'd["note"] is None'
	# run too; a held lock without a note has note null.
	run -0 "$RLOCK" run --note "from run" job2 -- true
	json_check "$(events job2)" 'd[0]["note"] == "from run"'
	t=$("$RLOCK" acquire job3)
	run -0 --separate-stderr "$RLOCK" status --json job3
	json_check "$output" 'd["locks"][0]["note"] is None'
	run -0 --separate-stderr "$RLOCK" status job3
	refute_output --partial 'note:'
}

@test "RLOCK_NOTE stands in for --note; --note beats it" {
	RLOCK_NOTE="from env" run -0 "$RLOCK" run job -- true
	local t
	t=$(RLOCK_NOTE="env acquire" "$RLOCK" acquire job)
	run -0 --separate-stderr "$RLOCK" status --json job
	json_check "$output" 'd["locks"][0]["note"] == "env acquire"'
	"$RLOCK" release job "$t"
	RLOCK_NOTE="from env" run -0 "$RLOCK" run --note "from flag" job -- true
	json_check "$(events job)" \
		'[e["note"] for e in d if e["event"] == "acquired"] == ["from env", "env acquire", "from flag"]'
}

@test "a note of 256 bytes is kept whole; 257 bytes or a control character is a usage error (64), nothing taken or recorded" {
	local n256 n257 utf
	n256=$(printf 'n%.0s' {1..256})
	n257=${n256}x
	utf=$(printf 'é%.0s' {1..128})
	run -0 "$RLOCK" run --note "$n256" ok -- true
	run -0 "$RLOCK" run --note "$utf" ok -- true
	json_check "$(events ok)" 'd[0]["note"] == a[0] and d[2]["note"] == a[1]' -- "$n256" "$utf"
	local cmd bad
	for cmd in run acquire; do
		for bad in "$n257" "$utf"é $'tab\there' $'line\nbreak' $'esc\e[1m' $'del\x7f'; do
			if [[ $cmd == run ]]; then
				run -64 --separate-stderr "$RLOCK" run --note "$bad" job -- touch ran
			else
				run -64 --separate-stderr "$RLOCK" acquire --note "$bad" job
			fi
			assert_equal "$output" ""
			assert_regex "${stderr_lines[0]}" "^rlock: $cmd: invalid --note: ."
			assert_try "$cmd"
		done
	done
	RLOCK_NOTE=$'a\tb' run -64 --separate-stderr "$RLOCK" run job -- touch ran
	assert_regex "${stderr_lines[0]}" "^rlock: run: invalid (--note|RLOCK_NOTE): ."
	RLOCK_NOTE=$n257 run -64 --separate-stderr "$RLOCK" acquire job
	[[ ! -e ran ]]
	lock_free job
	no_history job
}

@test "--no-log and RLOCK_LOG=off record nothing: no entry in the stream (kept, empty, for its ids)" {
	local t
	# Every kind of event, with the option after the subcommand ...
	run -0 "$RLOCK" run --no-log job -- true
	t=$("$RLOCK" acquire --no-log -t 30s job)
	run -75 "$RLOCK" run --no-log -n job -- true
	run -75 "$RLOCK" acquire --no-log -w 100ms job
	run -0 "$RLOCK" --no-log release --force job
	t=$("$RLOCK" --no-log acquire job)
	run -0 "$RLOCK" --no-log release --status 0 job "$t"
	empty_history job
	# ... before it, and from the environment.
	run -0 "$RLOCK" --no-log run job -- true
	RLOCK_LOG=off run -0 "$RLOCK" run job -- true
	RLOCK_LOG=off run -76 "$RLOCK" run -t 60s job -- sh -c 'redis-cli -p "$R_PORT" DEL "$RLOCK_KEY" >/dev/null'
	t=$(RLOCK_LOG=off "$RLOCK" acquire job)
	RLOCK_LOG=off run -75 "$RLOCK" run -n job -- true
	RLOCK_LOG=off run -0 "$RLOCK" release job "$t"
	empty_history job
	run -1 --separate-stderr "$RLOCK" log job
	# RLOCK_LOG=on, and nothing: recorded.
	RLOCK_LOG=on run -0 "$RLOCK" run job -- true
	assert_equal "$(event_names job)" "acquired released"
}

@test "RLOCK_LOG_MAX trims the history (MAXLEN ~): 150 runs with 5 keep far fewer than 300 entries" {
	local i
	for ((i = 0; i < 150; i++)); do
		RLOCK_LOG_MAX=5 "$RLOCK" run job -- true || fail "run $i failed"
	done
	local n
	n=$(rcli R XLEN "$(logkey job)")
	((n >= 5 && n < 150)) || fail "XLEN $n after 150 runs with RLOCK_LOG_MAX=5"
	# The newest are kept: the last entry is the last run's release.
	json_check "$(events job)" 'd[-1]["event"] == "released" and d[-2]["event"] == "acquired"' \
		'd[-1]["token"] == d[-2]["token"]'
	# Without it, nothing is trimmed at this size (the default is 1000).
	for ((i = 0; i < 60; i++)); do
		"$RLOCK" run job2 -- true || fail "run $i failed"
	done
	assert_equal "$(rcli R XLEN "$(logkey job2)")" 120
}

@test "RLOCK_LOG_MAX on a server with one entry per stream node trims to exactly that many" {
	start_redis ONE --stream-node-max-entries 1
	local i
	for ((i = 0; i < 10; i++)); do
		RLOCK_LOG_MAX=5 "$RLOCK" -u "$ONE_URL" run job -- true || fail "run $i failed"
	done
	assert_equal "$(rcli ONE XLEN "$(logkey job)")" 5
	json_check "$(events job ONE)" 'd[-1]["event"] == "released"'
	# 1 is allowed, and keeps one.
	RLOCK_LOG_MAX=1 run -0 "$RLOCK" -u "$ONE_URL" run job -- true
	assert_equal "$(rcli ONE XLEN "$(logkey job)")" 1
	assert_equal "$(event_names job ONE)" released
}

@test "RLOCK_LOG_DAYS: the history expires that many days after its last grant (default 30); a grant moves it once 10^6 ms of it have gone" {
	local p day=86400000 t
	run -0 "$RLOCK" run job -- true
	p=$(rcli R PTTL "$(logkey job)")
	((p > 30 * day - 60000 && p <= 30 * day)) || fail "default PTTL $p"
	RLOCK_LOG_DAYS=2 run -0 "$RLOCK" run job2 -- true
	p=$(rcli R PTTL "$(logkey job2)")
	((p > 2 * day - 60000 && p <= 2 * day)) || fail "RLOCK_LOG_DAYS=2: PTTL $p"
	# Less than 10^6 ms (about 17 minutes) of the expiry gone (as if set
	# 500s ago): a grant and a release leave it as it is (one command
	# each instead of two).
	rcli R PEXPIRE "$(logkey job2)" $((2 * day - 500000)) >/dev/null
	t=$(RLOCK_LOG_DAYS=2 "$RLOCK" acquire job2)
	RLOCK_LOG_DAYS=1 "$RLOCK" release job2 "$t"
	p=$(rcli R PTTL "$(logkey job2)")
	((p > 2 * day - 560000 && p <= 2 * day - 500000)) || fail "within 10^6 ms: PTTL $p"
	# Two hours of it gone: the next grant sets it again.
	rcli R PEXPIRE "$(logkey job2)" $((2 * day - 7200000)) >/dev/null
	t=$(RLOCK_LOG_DAYS=2 "$RLOCK" acquire job2)
	p=$(rcli R PTTL "$(logkey job2)")
	((p > 2 * day - 60000 && p <= 2 * day)) || fail "two hours gone: PTTL $p"
	"$RLOCK" release job2 "$t"
	# A longer history than the stream's expiry: set at once.
	t=$(RLOCK_LOG_DAYS=3650 "$RLOCK" acquire job2)
	p=$(rcli R PTTL "$(logkey job2)")
	((p > 3650 * day - 60000 && p <= 3650 * day)) || fail "RLOCK_LOG_DAYS=3650: PTTL $p"
	"$RLOCK" release job2 "$t"
	# An event that ends no grant (a skip) sets it too, and a history that
	# is gone is made again with its expiry.
	t=$("$RLOCK" acquire job2)
	RLOCK_LOG_DAYS=1 run -75 "$RLOCK" run -n job2 -- true
	p=$(rcli R PTTL "$(logkey job2)")
	((p > day - 60000 && p <= day)) || fail "skipped, RLOCK_LOG_DAYS=1: PTTL $p"
	rcli R DEL "$(logkey job2)" >/dev/null
	RLOCK_LOG_DAYS=3 "$RLOCK" release job2 "$t"
	assert_equal "$(event_names job2)" released
	p=$(rcli R PTTL "$(logkey job2)")
	((p > 3 * day - 60000 && p <= 3 * day)) || fail "made again, RLOCK_LOG_DAYS=3: PTTL $p"
}

@test "bad RLOCK_LOG_MAX or RLOCK_LOG_DAYS: 64 saying what is allowed, nothing taken" {
	local v
	for v in x 0 1000001 -1 1e3 ' 5' 5x; do
		RLOCK_LOG_MAX=$v run -64 --separate-stderr "$RLOCK" run job -- touch ran
		assert_stderr_line --index 0 "rlock: run: invalid RLOCK_LOG_MAX '$v': must be 1..1000000"
		RLOCK_LOG_MAX=$v run -64 --separate-stderr "$RLOCK" acquire job
		assert_stderr_line --index 0 "rlock: acquire: invalid RLOCK_LOG_MAX '$v': must be 1..1000000"
	done
	for v in x 0 3651 -2 1.5; do
		RLOCK_LOG_DAYS=$v run -64 --separate-stderr "$RLOCK" run job -- touch ran
		assert_stderr_line --index 0 "rlock: run: invalid RLOCK_LOG_DAYS '$v': must be 1..3650"
	done
	RLOCK_LOG=maybe run -64 --separate-stderr "$RLOCK" run job -- touch ran
	[[ ! -e ran ]]
	lock_free job
	no_history job
	RLOCK_LOG_MAX=1000000 RLOCK_LOG_DAYS=3650 run -0 "$RLOCK" run job -- true
}

@test "a history key that is not a stream does not fail the lock: run, acquire, release still work" {
	rcli R SET "$(logkey job)" not-a-stream >/dev/null
	run -0 --separate-stderr "$RLOCK" run job -- echo ran
	assert_output ran
	local t
	t=$("$RLOCK" acquire job)
	run -75 "$RLOCK" run -n job -- true
	run -0 "$RLOCK" release job "$t"
	lock_free job
	assert_equal "$(rcli R GET "$(logkey job)")" not-a-stream
}

# ---- rlock log ---------------------------------------------------------------

@test "log: one line per event, oldest first, local time, holder, fence, exit" {
	local t0 f1 f2
	run -0 "$RLOCK" run job -- sh -c 'echo "$RLOCK_FENCE"'
	f1=$output
	run -3 "$RLOCK" run --note "second one" job -- sh -c 'echo "$RLOCK_FENCE"; exit 3'
	f2=$output
	local json
	json=$(events job)
	local -a ids
	mapfile -t ids < <(python3 -c 'import json, sys; [print(e["_id"]) for e in json.loads(sys.argv[1])]' "$json")
	assert_equal "${#ids[@]}" 4
	local tz
	for tz in UTC ABC-05:30; do
		TZ=$tz run -0 --separate-stderr "$RLOCK" log job
		assert_equal "$stderr" ""
		assert_equal "${#lines[@]}" 4
		local i
		for i in 0 1 2 3; do
			local want
			want=$(TZ=$tz date -d "@$(($(id_ms "${ids[i]}") / 1000))" '+%Y-%m-%d %H:%M:%S')
			[[ ${lines[i]} == "$want "* ]] || fail "line $i does not start with '$want': ${lines[i]}"
		done
	done
	assert_regex "${lines[0]}" "^[0-9-]{10} [0-9:]{8} +acquired .*$ME pid [0-9]+.*fence $f1( |$)"
	assert_regex "${lines[1]}" "^[0-9-]{10} [0-9:]{8} +released .*$ME pid [0-9]+.*fence $f1 .*exit 0( |$)"
	assert_regex "${lines[2]}" "^[0-9-]{10} [0-9:]{8} +acquired .*fence $f2 .*note: second one$"
	assert_regex "${lines[3]}" "^[0-9-]{10} [0-9:]{8} +released .*fence $f2 .*exit 3( |$)"
	# Skipped and forced too, with their reasons.
	local t hp
	t=$("$RLOCK" acquire job)
	hp=$(meta job pid)
	run -75 "$RLOCK" run -n job -- true
	run -0 "$RLOCK" release --force job
	run -0 --separate-stderr "$RLOCK" log job
	assert_equal "${#lines[@]}" 7
	assert_regex "${lines[5]}" " skipped .*held by $ME pid $hp"
	assert_regex "${lines[6]}" " forced .*by $ME pid [0-9]+"
}

@test "log -n N: the newest N events, oldest first; 20 by default" {
	local i
	for ((i = 1; i <= 12; i++)); do
		"$RLOCK" run --note "run $i" job -- true || fail "run $i"
	done
	local json
	json=$(events job)
	run -0 --separate-stderr "$RLOCK" log -n 3 --json job
	log_matches_stream "$output" "$(python3 -c 'import json, sys; print(json.dumps(json.loads(sys.argv[1])[-3:]))' "$json")"
	run -0 --separate-stderr "$RLOCK" log --lines 1 job
	assert_equal "${#lines[@]}" 1
	assert_regex "${lines[0]}" ' released '
	run -0 --separate-stderr "$RLOCK" log --json job
	assert_equal "${#lines[@]}" 20
	log_matches_stream "$output" "$(python3 -c 'import json, sys; print(json.dumps(json.loads(sys.argv[1])[-20:]))' "$json")"
	run -0 --separate-stderr "$RLOCK" log -n 100000 --json job
	assert_equal "${#lines[@]}" 24
	log_matches_stream "$output" "$json"
	json_check "$(head -n 1 <<<"$output")" 'd["note"] == "run 1"'
}

@test "log --since DUR: only events newer than now minus DUR" {
	old_run job 7200000 12000 0
	run -0 "$RLOCK" run job -- true
	run -0 --separate-stderr "$RLOCK" log --since 10m --json job
	assert_equal "${#lines[@]}" 2
	json_check "${lines[0]}" 'd["event"] == "acquired" and d["host"] == a[0]' -- "$HOST"
	run -0 --separate-stderr "$RLOCK" log --since 3h job
	assert_equal "${#lines[@]}" 4
	assert_regex "${lines[0]}" ' acquired .*olduser@oldhost pid 4242'
	run -0 --separate-stderr "$RLOCK" log --since 3h -n 1 job
	assert_equal "${#lines[@]}" 1
	assert_regex "${lines[0]}" ' released .*tester@'
	# Nothing that recent: no history.
	rcli R DEL "$(logkey job)" >/dev/null
	old_run job 7200000 12000 0
	run -1 --separate-stderr "$RLOCK" log --since 1h job
	assert_output ""
	assert_stderr "rlock: log: job: no history"
}

@test "log --json: JSON Lines, every line an object with the fields of the stream" {
	local t
	run -0 "$RLOCK" run --note "n1" job -- true
	run -143 "$RLOCK" run job -- sh -c 'kill -TERM $$'
	t=$("$RLOCK" acquire job)
	run -75 "$RLOCK" run -n job -- true
	"$RLOCK" release job "$t"
	t=$("$RLOCK" acquire job)
	"$RLOCK" release --force job
	run -0 --separate-stderr "$RLOCK" log --json job
	assert_equal "$stderr" ""
	assert_equal "${#lines[@]}" 9
	log_matches_stream "$output" "$(events job)"
	json_check "${lines[0]}" 'isinstance(d["pid"], int) and isinstance(d["fence"], int)' \
		'd["exit"] is None and d["signal"] is None and d["reason"] is None and d["note"] == "n1"' \
		'isinstance(d["waited_ms"], int) and d["held_ms"] is None'
	json_check "${lines[3]}" 'd["exit"] == 143 and d["signal"] == "TERM"'
	json_check "${lines[5]}" 'd["event"] == "skipped" and d["reason"].startswith("held by ")'
	json_check "${lines[6]}" 'd["event"] == "released" and d["exit"] is None'
	json_check "${lines[8]}" 'd["event"] == "forced" and d["reason"].startswith("by ")'
	# --json as a global option too.
	run -0 --separate-stderr "$RLOCK" --json log -n 1 job
	json_check "$output" 'd["event"] == "forced"'
}

# same_ms_entries NAME MS: a semaphore's events as a busy server writes
# them within one millisecond MS (IDs MS-0 .. MS-11), fences out of stream
# order: A and B take places, A releases, C is skipped, eight more runs,
# and B's lease found gone.  Prints the events, space-separated.
same_ms_entries() {
	local name=$1 ms=$2 seq=0 ev fence tok
	while read -r ev fence tok; do
		rcli R XADD "$(logkey "$name")" "$ms-$seq" event "$ev" host h user u \
			pid 42 kind 2 fence "$fence" token "$tok" waited '' held '' \
			exit '' signal '' reason '' command '' note '' >/dev/null
		seq=$((seq + 1))
	done <<'EOF'
acquired 500 aaaaaaaa
acquired 700 bbbbbbbb
released 500 aaaaaaaa
skipped 700 cccccccc
acquired 800 dddddddd
released 800 dddddddd
acquired 900 eeeeeeee
released 900 eeeeeeee
acquired 950 ffffffff
released 950 ffffffff
acquired 990 99999999
lost 700 bbbbbbbb
EOF
}

@test "log, log --json and log -f keep the stream's order within a millisecond, whatever the fences" {
	local ms want
	ms=$(($(server_ms) - 5000))
	same_ms_entries job "$ms"
	want="acquired:500 acquired:700 released:500 skipped:700 acquired:800 released:800 acquired:900 released:900 acquired:950 released:950 acquired:990 lost:700"
	run -0 --separate-stderr "$RLOCK" log --json job
	log_matches_stream "$output" "$(events job)"
	assert_equal "$(python3 -c 'import json, sys; print(" ".join("%s:%s" % (json.loads(l)["event"], json.loads(l)["fence"]) for l in sys.stdin))' <<<"$output")" "$want"
	run -0 --separate-stderr "$RLOCK" log job
	assert_equal "$(awk '{ printf "%s%s:%s", (NR > 1 ? " " : ""), $3, $8 }' <<<"$output")" "$want"
	# Followed: the same entries written while it waits.
	bg_start f "$RLOCK" log -f --json job2
	local fpid=$BG_PID
	wait_until 5 pid_alive "$fpid"
	run -0 "$RLOCK" run job2 -- true
	wait_until 5 has_lines f.out 2
	same_ms_entries job2 "$(($(id_ms "$(events job2 | python3 -c 'import json, sys; print(json.load(sys.stdin)[-1]["_id"])')") + 1))"
	wait_until 5 has_lines f.out 14
	kill -INT "$fpid"
	bg_wait "$fpid" 5
	assert_equal "$BG_STATUS" 0
	log_matches_stream "$(cat f.out)" "$(events job2)"
}

@test "log of a lock without history: 1, 'no history' (nothing with -q)" {
	run -1 --separate-stderr "$RLOCK" log nothing
	assert_output ""
	assert_stderr "rlock: log: nothing: no history"
	run -1 --separate-stderr "$RLOCK" log --json nothing
	assert_output ""
	assert_stderr "rlock: log: nothing: no history"
	run -1 --separate-stderr "$RLOCK" -q log nothing
	assert_output ""
	assert_stderr ""
	# A lock held but never recorded has none either.
	RLOCK_LOG=off "$RLOCK" acquire nothing >/dev/null
	run -1 --separate-stderr "$RLOCK" log nothing
}

@test "log -f: the last events, then new ones as they come, until SIGINT (exit 0)" {
	local i
	for i in 1 2 3; do
		"$RLOCK" run job -- true
	done
	bg_start f "$RLOCK" log -f -n 2 job
	local fpid=$BG_PID
	wait_until 5 has_lines f.out 2
	assert_regex "$(sed -n 1p f.out)" ' acquired '
	assert_regex "$(sed -n 2p f.out)" ' released '
	"$RLOCK" run --note "while followed" job -- sh -c 'exit 5' || true
	wait_until 5 has_lines f.out 4
	assert_regex "$(sed -n 3p f.out)" ' acquired .*note: while followed'
	assert_regex "$(sed -n 4p f.out)" ' released .*exit 5'
	pid_alive "$fpid"
	kill -INT "$fpid"
	bg_wait "$fpid" 5
	assert_equal "$BG_STATUS" 0
	assert_equal "$(n_lines f.out)" 4
	assert_equal "$(bg_err f)" ""
}

@test "log -f --json on a lock with no history yet waits, prints each event once, and exits 0 on SIGTERM" {
	local before
	before=$(read_calls)
	bg_start f "$RLOCK" log -f --json job
	local fpid=$BG_PID
	# It has read the (empty) history once, and waits.
	wait_until 5 eval '(($(read_calls) > before))'
	pid_alive "$fpid"
	"$RLOCK" run job -- true
	wait_until 5 has_lines f.out 2
	local t
	t=$("$RLOCK" acquire job)
	run -75 "$RLOCK" acquire -n job
	"$RLOCK" release --status 0 job "$t"
	wait_until 5 has_lines f.out 5
	pid_alive "$fpid"
	kill -TERM "$fpid"
	bg_wait "$fpid" 5
	assert_equal "$BG_STATUS" 0
	log_matches_stream "$(cat f.out)" "$(events job)"
}

# ---- rlock last -----------------------------------------------------------------

@test "last: one line per lock, how its last run ended; never ran" {
	old_run old 7200000 12000 0
	run -3 "$RLOCK" run failed -- sh -c 'exit 3'
	run -0 "$RLOCK" run ok -- true
	run -0 --separate-stderr "$RLOCK" last old failed ok never
	assert_equal "$stderr" ""
	assert_equal "${#lines[@]}" 4
	assert_regex "${lines[0]}" '^old: last run ended 2h(0m)? ago on oldhost \(olduser pid 4242\): exit 0 after 12s$'
	assert_regex "${lines[1]}" "^failed: last run ended [^ ]+ ago on $HOST \\(tester pid [0-9]+\\): exit 3 after [^ ]+$"
	assert_regex "${lines[2]}" "^ok: last run ended [^ ]+ ago on $HOST \\(tester pid [0-9]+\\): exit 0 after [^ ]+$"
	assert_equal "${lines[3]}" "never: never ran"
	# The last completed run: a newer acquire without its release is not one,
	# nor a skip.
	local t
	t=$("$RLOCK" acquire failed)
	run -75 "$RLOCK" run -n failed -- true
	run -0 "$RLOCK" last failed
	assert_regex "$output" '^failed: last run ended .*: exit 3 after '
	"$RLOCK" release failed "$t"
}

@test "last --max-age: silent and 0 when every lock succeeded within DUR, else 1 and one line per stale lock" {
	run -0 "$RLOCK" run ok -- true
	run -3 "$RLOCK" run failed -- sh -c 'exit 3'
	run -0 --separate-stderr "$RLOCK" last --max-age 1h ok
	assert_output ""
	assert_equal "$stderr" ""
	run -1 --separate-stderr "$RLOCK" last --max-age 1h ok failed never
	assert_equal "$stderr" ""
	assert_equal "${#lines[@]}" 2
	assert_regex "${lines[0]}" "^failed: no successful run within 1h(0m)?: last success never; last run [^ ]+ ago on $HOST \\(tester pid [0-9]+\\): exit 3 after [^ ]+$"
	assert_regex "${lines[1]}" '^never: no successful run within 1h(0m)?: last success never'
	# A success too old: stale, though its last run was fine.
	old_run stale 7200000 5000 0
	run -1 --separate-stderr "$RLOCK" last --max-age 1h stale
	assert_regex "$output" '^stale: no successful run within 1h(0m)?: last success 2h(0m)? ago on oldhost \(olduser pid 4242\); last run 2h(0m)? ago on oldhost \(olduser pid 4242\): exit 0 after 5s$'
	run -0 --separate-stderr "$RLOCK" last --max-age 3h stale
	assert_output ""
	# A success within DUR is enough, even when a later run failed.
	old_run mixed 600000 1000 0
	run -2 "$RLOCK" run mixed -- sh -c 'exit 2'
	run -0 --separate-stderr "$RLOCK" last --max-age 1h mixed
	assert_output ""
	run -1 --separate-stderr "$RLOCK" last --max-age 5m mixed
	assert_regex "$output" "^mixed: no successful run within 5m: last success 10m(0s)? ago on oldhost \\(olduser pid 4242\\); last run [^ ]+ ago on $HOST \\(tester pid [0-9]+\\): exit 2 after [^ ]+$"
}

@test "last --max-age: a release with unknown exit counts as a success; a lost run does not" {
	local t
	t=$("$RLOCK" acquire unknown)
	"$RLOCK" release unknown "$t"
	run -0 --separate-stderr "$RLOCK" last --max-age 1h unknown
	assert_output ""
	run -0 "$RLOCK" last unknown
	assert_regex "$output" "^unknown: last run ended [^ ]+ ago on $HOST \\(tester pid [0-9]+\\): released, exit status not recorded after [^ ]+$"
	t=$("$RLOCK" acquire four)
	"$RLOCK" release --status 4 four "$t"
	run -1 "$RLOCK" last --max-age 1h four
	assert_regex "$output" '^four: no successful run within .*: last success never; last run .*: exit 4 after '
	run -76 "$RLOCK" run -t 300ms lost -- sh -c 'redis-cli -p "$R_PORT" DEL "$RLOCK_KEY" >/dev/null; exec sleep 30'
	run -1 "$RLOCK" last --max-age 1h lost
	assert_regex "$output" '^lost: no successful run within .*: last success never; last run [^ ]+ ago on .*: lost \(.*\) after [^ ]+$'
}

@test "last --json: one object per lock per line, last and last_success as log --json events; stale with --max-age" {
	run -0 "$RLOCK" run ok -- true
	run -3 "$RLOCK" run failed -- sh -c 'exit 3'
	run -0 --separate-stderr "$RLOCK" last --json ok failed never
	assert_equal "${#lines[@]}" 3
	local okrel failrel
	okrel=$(events ok | python3 -c 'import json, sys; print(json.load(sys.stdin)[1]["_id"])')
	failrel=$(events failed | python3 -c 'import json, sys; print(json.load(sys.stdin)[1]["_id"])')
	json_check "${lines[0]}" \
		'set(d) == {"lock", "last", "last_success"}' \
		'd["lock"] == "ok" and d["last"]["event"] == "released" and d["last"]["exit"] == 0' \
		'd["last"]["id"] == a[0] and d["last_success"]["id"] == a[0]' \
		"set(d['last']) >= $LOG_KEYS" \
		'd["last"]["time_ms"] == int(a[0].split("-")[0]) and isinstance(d["last"]["held_ms"], int)' \
		-- "$okrel"
	json_check "${lines[1]}" \
		'd["lock"] == "failed" and d["last"]["exit"] == 3 and d["last"]["id"] == a[0]' \
		'd["last_success"] is None' -- "$failrel"
	json_check "${lines[2]}" 'd == {"lock": "never", "last": None, "last_success": None}'
	run -1 --separate-stderr "$RLOCK" last --json --max-age 1h ok failed never
	assert_equal "${#lines[@]}" 3
	json_check "${lines[0]}" 'd["stale"] is False and d["lock"] == "ok"'
	json_check "${lines[1]}" 'd["stale"] is True and d["lock"] == "failed"'
	json_check "${lines[2]}" 'd["stale"] is True and d["last"] is None'
	run -0 --separate-stderr "$RLOCK" --json last --max-age 1h ok
	json_check "$output" 'd["stale"] is False'
}

@test "last --prometheus: HELP and TYPE lines, gauges labelled by lock, values from the stream, no sample for a lock that never ran" {
	run -0 "$RLOCK" run ok -- true
	run -3 "$RLOCK" run failed -- sh -c 'exit 3'
	local t
	t=$("$RLOCK" acquire unknown)
	"$RLOCK" release unknown "$t"
	run -76 "$RLOCK" run -t 300ms lost -- sh -c 'redis-cli -p "$R_PORT" DEL "$RLOCK_KEY" >/dev/null; exec sleep 30'
	run -0 --separate-stderr "$RLOCK" last --prometheus ok failed unknown lost never
	assert_equal "$stderr" ""
	local text=$output ev
	ev=$(python3 -c '
import json, sys
out = {}
for name, doc in zip(("ok", "failed", "unknown", "lost"), sys.argv[1:]):
    e = json.loads(doc)[-1]
    ms = int(e["_id"].split("-")[0])
    held = int(e["held"]) if e["held"] else ms - int(e["since"]) if e["since"] else None
    out[name] = {"ms": ms, "held": held, "event": e["event"]}
print(json.dumps(out))' "$(events ok)" "$(events failed)" "$(events unknown)" "$(events lost)")
	prom_check "$text" \
		'all(typ.get(g) == "gauge" and g in help for g in ("rlock_last_success_timestamp_seconds", "rlock_last_run_timestamp_seconds", "rlock_last_run_exit_code", "rlock_last_run_duration_seconds"))' \
		'not any(l == "never" for (_, l) in s)' \
		'set(n for (n, _) in s) <= set(typ)' \
		'all(re.match(r"^[0-9]+\.[0-9]{3}$", v) for (n, _), v in s.items() if n.endswith("timestamp_seconds"))' \
		'(lambda e: s[("rlock_last_success_timestamp_seconds", "ok")] == "%d.%03d" % divmod(e["ok"]["ms"], 1000))(json.loads(a[0]))' \
		'(lambda e: s[("rlock_last_run_timestamp_seconds", "ok")] == "%d.%03d" % divmod(e["ok"]["ms"], 1000))(json.loads(a[0]))' \
		's[("rlock_last_run_exit_code", "ok")] == "0"' \
		'(lambda e: abs(float(s[("rlock_last_run_duration_seconds", "ok")]) - e["ok"]["held"] / 1000) < 0.0015)(json.loads(a[0]))' \
		'("rlock_last_success_timestamp_seconds", "failed") not in s' \
		's[("rlock_last_run_exit_code", "failed")] == "3"' \
		'(lambda e: s[("rlock_last_run_timestamp_seconds", "failed")] == "%d.%03d" % divmod(e["failed"]["ms"], 1000))(json.loads(a[0]))' \
		'("rlock_last_success_timestamp_seconds", "unknown") in s' \
		'("rlock_last_run_exit_code", "unknown") not in s' \
		'("rlock_last_run_timestamp_seconds", "unknown") in s' \
		'("rlock_last_success_timestamp_seconds", "lost") not in s' \
		's[("rlock_last_run_exit_code", "lost")] == "76"' \
		'(lambda e: e["lost"]["event"] == "lost" and s[("rlock_last_run_timestamp_seconds", "lost")] == "%d.%03d" % divmod(e["lost"]["ms"], 1000))(json.loads(a[0]))' \
		-- "$ev"
	# Every HELP and TYPE line once, before the samples of its gauge.
	local g
	for g in rlock_last_success_timestamp_seconds rlock_last_run_timestamp_seconds \
		rlock_last_run_exit_code rlock_last_run_duration_seconds; do
		assert_equal "$(grep -c "^# HELP $g " <<<"$text")" 1
		assert_equal "$(grep -c "^# TYPE $g gauge$" <<<"$text")" 1
		local first_sample type_line
		type_line=$(grep -n "^# TYPE $g " <<<"$text" | cut -d: -f1)
		first_sample=$(grep -n "^$g{" <<<"$text" | head -n 1 | cut -d: -f1)
		[[ -z $first_sample ]] || ((type_line < first_sample)) || fail "$g: TYPE after its samples"
	done
	# Only locks that never ran: the HELP and TYPE lines, no sample, exit 0.
	run -0 --separate-stderr "$RLOCK" last --prometheus never
	prom_check "$output" 'len(s) == 0'
}

@test "last --prometheus escapes the lock label" {
	local name='we"ird\name'
	run -0 "$RLOCK" run "$name" -- true
	run -0 --separate-stderr "$RLOCK" last --prometheus "$name"
	assert_line 'rlock_last_run_exit_code{lock="we\"ird\\name"} 0'
	prom_check "$output" 's[("rlock_last_run_exit_code", a[0])] == "0"' -- "$name"
}

@test "twenty rlock run -n copies started together on one lock: one acquired and released pair, nineteen skipped; last --max-age and --prometheus as a monitor reads them" {
	local i pids=()
	for ((i = 0; i < 20; i++)); do
		bg_start "c$i" "$RLOCK" run -n nightly -- sh -c "echo \$PPID >> won; $(gate "$BATS_TEST_TMPDIR/go")"
		pids+=("$BG_PID")
	done
	# All but one give up at once; the one that got it waits for go.
	gone_count() {
		local p n=0
		for p in "${pids[@]}"; do
			pid_gone "$p" && n=$((n + 1))
		done
		((n == 19))
	}
	wait_until 15 gone_count
	wait_until 5 file_nonempty won
	touch go
	local n0=0 n75=0 winner
	winner=$(cat won)
	for i in "${!pids[@]}"; do
		bg_wait "${pids[i]}" 10
		case $BG_STATUS in
		0) n0=$((n0 + 1)) ;;
		75) n75=$((n75 + 1)) ;;
		*) fail "copy $i exited $BG_STATUS: $(bg_err "c$i")" ;;
		esac
	done
	assert_equal "$n0 $n75" "1 19"
	assert_equal "$(wc -l <won)" 1
	json_check "$(events nightly)" \
		'[e["event"] for e in d].count("acquired") == 1' \
		'[e["event"] for e in d].count("released") == 1' \
		'[e["event"] for e in d].count("skipped") == 19' \
		'len(d) == 21 and d[0]["event"] == "acquired" and d[-1]["event"] == "released"' \
		'd[0]["pid"] == a[0] and d[-1]["pid"] == a[0] and d[-1]["exit"] == "0"' \
		'all(e["reason"] == "held by %s pid %s" % (a[1], a[0]) for e in d if e["event"] == "skipped")' \
		'len({e["pid"] for e in d if e["event"] == "skipped"}) == 19' \
		-- "$winner" "$ME"
	run -0 --separate-stderr "$RLOCK" last --max-age 1h nightly
	assert_output ""
	assert_equal "$stderr" ""
	# Next to it a job whose only run failed and one that never ran, as
	# a monitoring system reads them.
	run -3 "$RLOCK" run -n failing -- sh -c 'exit 3'
	run -1 --separate-stderr "$RLOCK" last --max-age 26h nightly failing neverran
	assert_equal "${#lines[@]}" 2
	assert_regex "${lines[0]}" '^failing: no successful run within 26h(0m)?: last success never; last run [^ ]+ ago on .*: exit 3 after '
	assert_regex "${lines[1]}" '^neverran: no successful run within 26h(0m)?: last success never'
	run -0 --separate-stderr "$RLOCK" last --prometheus nightly failing neverran
	local rel
	rel=$(events nightly | python3 -c 'import json, sys; print(json.load(sys.stdin)[-1]["_id"].split("-")[0])')
	prom_check "$output" \
		's[("rlock_last_success_timestamp_seconds", "nightly")] == a[0]' \
		's[("rlock_last_run_timestamp_seconds", "nightly")] == a[0]' \
		's[("rlock_last_run_exit_code", "nightly")] == "0"' \
		'("rlock_last_run_duration_seconds", "nightly") in s' \
		'("rlock_last_success_timestamp_seconds", "failing") not in s' \
		's[("rlock_last_run_exit_code", "failing")] == "3"' \
		'not any(l == "neverran" for (_, l) in s)' \
		-- "$(secs3 "$rel")"
}

# ---- status --------------------------------------------------------------------

@test "status of a free lock with history shows its last run; --json has last and note" {
	old_run old 7200000 12000 0
	run -1 --separate-stderr "$RLOCK" status old
	assert_line --regexp '^ *last: 2h(0m)? ago on oldhost, exit 0 after 12s$'
	run -3 "$RLOCK" run job -- sh -c 'exit 3'
	run -1 --separate-stderr "$RLOCK" status job
	assert_line --regexp "^ *last: [^ ]+ ago on $HOST, exit 3 after [^ ]+$"
	run -1 --separate-stderr "$RLOCK" status --json job never
	local rel
	rel=$(events job | python3 -c 'import json, sys; print(json.load(sys.stdin)[-1]["_id"])')
	json_check "$output" \
		'd["locks"][0]["last"]["event"] == "released" and d["locks"][0]["last"]["exit"] == 3' \
		'd["locks"][0]["last"]["id"] == a[0] and d["locks"][0]["last"]["host"] == a[1]' \
		"set(d['locks'][0]['last']) >= $LOG_KEYS" \
		'd["locks"][0]["note"] is None' \
		'd["locks"][1]["last"] is None and d["locks"][1]["note"] is None' \
		-- "$rel" "$HOST"
	run -1 --separate-stderr "$RLOCK" status never
	refute_output --partial 'last:'
	# Held, with a note: note in the JSON and the text.
	local t
	t=$("$RLOCK" acquire --note "on call: ann" job)
	run -0 --separate-stderr "$RLOCK" status --json job
	json_check "$output" 'd["locks"][0]["note"] == "on call: ann"' 'd["locks"][0]["last"]["exit"] == 3'
	"$RLOCK" release job "$t"
}

@test "doctor: the history check is ok where XADD is allowed, and its probe leaves no key" {
	run --separate-stderr "$RLOCK" --json doctor
	((status == 0 || status == 1)) || fail "doctor exited $status"
	json_check "$output" 'any(c["check"] == "history" and c["level"] == "ok" for c in d)'
	assert_equal "$(rcli R --scan --pattern "${RLOCK_PREFIX}*")" ""
}

# ---- usage ------------------------------------------------------------------------

@test "log and last: usage errors exit 64 before connecting" {
	export RLOCK_URL=redis://127.0.0.1:1
	run -64 --separate-stderr "$RLOCK" log
	assert_try log
	run -64 --separate-stderr "$RLOCK" log a b
	assert_try log
	local bad
	for bad in 0 -1 x 1.5 100001 ''; do
		run -64 --separate-stderr "$RLOCK" log -n "$bad" job
		assert_try log
	done
	for bad in x 0 -5m 1y ''; do
		run -64 --separate-stderr "$RLOCK" log --since "$bad" job
		assert_try log
	done
	run -64 --separate-stderr "$RLOCK" log --bogus job
	assert_usage log "rlock: log: unknown option '--bogus'"
	run -64 --separate-stderr "$RLOCK" log job -n
	assert_try log
	run -64 --separate-stderr "$RLOCK" last
	assert_try last
	for bad in x 0 -1h 1y ''; do
		run -64 --separate-stderr "$RLOCK" last --max-age "$bad" job
		assert_try last
	done
	run -64 --separate-stderr "$RLOCK" last --bogus job
	assert_usage last "rlock: last: unknown option '--bogus'"
	run -64 --separate-stderr "$RLOCK" last -f job
	assert_usage last "rlock: last: unknown option '-f'"
	run -64 --separate-stderr "$RLOCK" log --max-age 1h job
	assert_usage log "rlock: log: unknown option '--max-age'"
	# --help is no error, and names the options.
	run -0 "$RLOCK" log --help
	assert_output --partial --since
	assert_output --partial --follow
	run -0 "$RLOCK" last --help
	assert_output --partial --max-age
	assert_output --partial --prometheus
	run -0 "$RLOCK" help log
	run -0 "$RLOCK" help last
}

@test "log and last with the server down: 69, nothing on stdout" {
	run -69 --separate-stderr "$RLOCK" -u redis://127.0.0.1:1 log job
	assert_output ""
	assert_stderr "rlock: log: cannot connect to 127.0.0.1:1: Connection refused"
	run -69 --separate-stderr "$RLOCK" -u redis://127.0.0.1:1 last --max-age 1h job
	assert_output ""
	assert_stderr "rlock: last: cannot connect to 127.0.0.1:1: Connection refused"
	run -69 --separate-stderr "$RLOCK" -u redis://127.0.0.1:1 last --prometheus job
	assert_output ""
}
