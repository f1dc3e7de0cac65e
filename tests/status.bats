#!/usr/bin/env bats
# status.bats - rlock status: who holds what, as a table or as JSON; exit 0
# when every named lock is held, 1 when one is free.

bats_require_minimum_version 1.5.0
load test_helper

start_holder() {
	# start_holder NAME [rlock run options...]: `rlock run NAME -- sleep 30`
	# in the background; HOLDER_PID is rlock's pid.
	local name=$1
	shift
	bg_start "holder-$name" "$RLOCK" run "$@" "$name" -- sleep 30
	HOLDER_PID=$BG_PID
	wait_until 5 lock_held "$name"
	HOLDER_TOKEN=$(holder "$name")
}

@test "status of a held lock exits 0 and shows its holder" {
	start_holder s
	run -0 --separate-stderr "$RLOCK" status s
	assert_equal "$stderr" ""
	assert_regex "${lines[0]}" '^NAME +STATE +FENCE +AGE +SINCE +TTL +WAITERS +HOLDER +COMMAND *$'
	# FENCE is 16 wide, right-aligned over the fences below it.
	assert_equal "${lines[0]}" "$(printf '%-20s %-5s %16s %8s %8s %8s %7s  %-24s %s' \
		NAME STATE FENCE AGE SINCE TTL WAITERS HOLDER COMMAND)"
	assert_equal "${#lines[@]}" 2
	assert_fence "$(meta s fence)"
	assert_status_row "${lines[1]}" s held "$(meta s fence)"
	assert_output --partial "$(meta s user)@$(meta s host):$HOLDER_PID"
	assert_output --partial "sleep 30"
}

# since_of TZ NAME: the SINCE column of `rlock status NAME` in time zone TZ.
since_of() {
	TZ=$1 run -0 --separate-stderr "$RLOCK" status "$2"
	assert_equal "$stderr" ""
	awk '{ print $5 }' <<<"${lines[1]}"
}

@test "status shows when a hold began, in local time as rlock log does (ps's form: the time today, else the day)" {
	local ms utc ist t
	start_holder began
	ms=$(meta began since)
	[[ $ms =~ ^[0-9]{13}$ ]] || fail "no since in the record: '$ms'"
	t=$((ms / 1000))
	utc=$(since_of UTC began)
	ist=$(since_of Asia/Kolkata began)
	# The hold began today, unless midnight passed since.
	[[ $utc == "$(TZ=UTC date -d "@$t" +%H:%M:%S)" ||
	   $utc == "$(TZ=UTC date -d "@$t" +%b%d)" ]] || fail "UTC: SINCE '$utc'"
	[[ $ist == "$(TZ=Asia/Kolkata date -d "@$t" +%H:%M:%S)" ||
	   $ist == "$(TZ=Asia/Kolkata date -d "@$t" +%b%d)" ]] || fail "+05:30: SINCE '$ist'"
	# Local time, not the server's UTC.
	[[ $utc != "$ist" ]] || fail "the same SINCE in UTC and +05:30: '$utc'"
	# The time of rlock log's acquired line.
	TZ=UTC run -0 "$RLOCK" log began
	assert_line --regexp "^$(TZ=UTC date -d "@$t" +%F) $(TZ=UTC date -d "@$t" +%T)  acquired "
}

@test "status of a key without rlock's metadata shows no SINCE" {
	rcli R SET "$(key nosince)" foreign-token NX PX 30000
	assert_equal "$(since_of UTC nosince)" -
}

@test "status of a free lock exits 1" {
	run -1 --separate-stderr "$RLOCK" status nobody
	assert_equal "$stderr" ""
	assert_regex "${lines[1]}" '^nobody +free '
	assert_regex "${lines[1]}" ' - '
}

@test "status of several locks exits 1 when any is free" {
	start_holder a
	start_holder b
	run -0 "$RLOCK" status a b
	assert_equal "${#lines[@]}" 3
	run -1 "$RLOCK" status a c b
	assert_equal "${#lines[@]}" 4
	assert_regex "${lines[2]}" '^c +free '
}

@test "status shows a lock taken by another client with SET NX PX as held" {
	rcli R SET "$(key plain)" foreign-token NX PX 30000
	run -0 "$RLOCK" status plain
	assert_regex "${lines[1]}" '^plain +held '
}

@test "status --json of a key without rlock's metadata has null host, pid, user, command and times" {
	rcli R SET "$(key plain)" foreign-token NX PX 30000
	run -0 --separate-stderr "$RLOCK" status --json plain
	json_check "$output" \
		'd["locks"][0]["held"] is True' \
		'd["locks"][0]["token_prefix"] == "foreign-"' \
		'all(d["locks"][0][k] is None for k in ("host", "pid", "user", "command", "since_ms", "age_ms"))' \
		'0 < d["locks"][0]["ttl_ms"] <= 30000' \
		'all(d["locks"][0]["holders"][0][k] is None for k in ("host", "pid", "user", "command", "since_ms", "age_ms"))' \
		'd["locks"][0]["servers"][0]["held"] is True' \
		'd["locks"][0]["servers"][0]["host"] is None and d["locks"][0]["servers"][0]["pid"] is None'
}

@test "status without NAME lists the held locks under the prefix only" {
	local other="o${RLOCK_PREFIX}"
	"$RLOCK" acquire one >/dev/null
	"$RLOCK" acquire two >/dev/null
	t=$("$RLOCK" acquire gone)
	"$RLOCK" release gone "$t"
	"$RLOCK" --prefix "$other" acquire elsewhere >/dev/null
	RLOCK_PREFIX=$other "$RLOCK" acquire elsewhere2 >/dev/null
	rcli R SET "${RLOCK_PREFIX}notalock" x >/dev/null
	run -0 --separate-stderr "$RLOCK" status
	assert_equal "$stderr" ""
	assert_equal "${#lines[@]}" 3
	assert_line --regexp '^one +held '
	assert_line --regexp '^two +held '
	refute_output --partial gone
	refute_output --partial elsewhere
	run -0 "$RLOCK" --prefix "$other" status
	assert_equal "${#lines[@]}" 3
	assert_line --regexp '^elsewhere +held '
}

@test "status without NAME and no locks exits 0" {
	run -0 --separate-stderr "$RLOCK" status
	((${#lines[@]} <= 1))
	run -0 --separate-stderr "$RLOCK" status --json
	python3 -c 'import json,sys; assert json.loads(sys.argv[1]) == {"locks": []}' "$output"
}

@test "status --json follows the schema and never shows the token" {
	start_holder js -t 20s
	run -0 --separate-stderr "$RLOCK" status --json js
	refute_output --partial "$HOLDER_TOKEN"
	json_check "$output" \
		'list(d) == ["locks"]' \
		'len(d["locks"]) == 1' \
		'set(d["locks"][0]) == {"name","key","held","token_prefix","host","pid","user","command","fence","since_ms","age_ms","ttl_ms","waiters","kind","limit","holders","next","note","with","once","last","servers"}' \
		'd["locks"][0]["kind"] == "exclusive" and d["locks"][0]["limit"] is None' \
		'd["locks"][0]["next"] is None and len(d["locks"][0]["holders"]) == 1' \
		"d['locks'][0]['holders'][0]['token_prefix'] == '${HOLDER_TOKEN:0:8}'" \
		'd["locks"][0]["name"] == "js"' \
		"d['locks'][0]['key'] == '$(key js)'" \
		'd["locks"][0]["held"] is True' \
		"d['locks'][0]['token_prefix'] == '${HOLDER_TOKEN:0:8}'" \
		"d['locks'][0]['host'] == '$(meta js host)'" \
		"d['locks'][0]['pid'] == $HOLDER_PID" \
		"d['locks'][0]['user'] == '$(id -un)'" \
		'd["locks"][0]["command"] == "sleep 30"' \
		"d['locks'][0]['fence'] == $(meta js fence)" \
		"d['locks'][0]['holders'][0]['fence'] == $(meta js fence)" \
		"d['locks'][0]['since_ms'] == $(meta js since)" \
		'0 <= d["locks"][0]["age_ms"] < 60000' \
		'0 < d["locks"][0]["ttl_ms"] <= 20000' \
		'd["locks"][0]["waiters"] == 0' \
		'len(d["locks"][0]["servers"]) == 1' \
		"d['locks'][0]['servers'][0] == {'addr': '127.0.0.1:$R_PORT', 'held': True, 'token_prefix': '${HOLDER_TOKEN:0:8}', 'host': '$(meta js host)', 'pid': $HOLDER_PID, 'ttl_ms': d['locks'][0]['ttl_ms'], 'error': None}"
	# --json as a global option, before the subcommand
	run -0 "$RLOCK" --json status js
	json_check "$output" 'd["locks"][0]["held"] is True'
}

@test "status --json of a free lock has nulls and exits 1" {
	local f
	t=$("$RLOCK" acquire fr)
	f=$(meta fr fence)
	assert_fence "$f"
	"$RLOCK" release fr "$t"
	run -1 --separate-stderr "$RLOCK" status --json fr never
	json_check "$output" \
		'len(d["locks"]) == 2' \
		'[l["name"] for l in d["locks"]] == ["fr", "never"]' \
		'all(l["held"] is False for l in d["locks"])' \
		'all(l[k] is None for l in d["locks"] for k in ("token_prefix","host","pid","user","command","since_ms","age_ms","ttl_ms"))' \
		"d['locks'][0]['fence'] == $f" \
		'd["locks"][1]["fence"] == 0' \
		'all(l["waiters"] == 0 for l in d["locks"])'
}

@test "status --json without NAME lists held locks" {
	"$RLOCK" acquire j1 >/dev/null
	"$RLOCK" acquire 'j "2"' >/dev/null
	run -0 "$RLOCK" status --json
	json_check "$output" \
		'sorted(l["name"] for l in d["locks"]) == ["j \"2\"", "j1"]' \
		'all(l["held"] for l in d["locks"])'
}

@test "status counts the processes waiting for a lock" {
	start_holder w
	bg_start w1 "$RLOCK" run -w 20s w -- true
	bg_start w2 "$RLOCK" acquire -w 20s w
	wait_until 5 has_waiters w 2
	run -0 "$RLOCK" status --json w
	json_check "$output" 'd["locks"][0]["waiters"] == 2'
	run -0 "$RLOCK" status w
	assert_regex "${lines[1]}" '^w +held +[0-9]+ +[^ ]+ +[^ ]+ +[^ ]+ +2 '
}

@test "status on a unix socket and with a URL option" {
	start_redis_unix U
	RLOCK_URL=$U_URL "$RLOCK" acquire u >/dev/null
	run -0 "$RLOCK" -u "$U_URL" status u
	run -1 "$RLOCK" status u
}

@test "no colours or control sequences when stderr and stdout are not terminals" {
	start_holder nc
	run -0 "$RLOCK" status
	refute_output --partial $'\e'
	run -75 "$RLOCK" run -n nc -- true
	refute_output --partial $'\e'
	run -75 "$RLOCK" run -w 300ms nc -- true
	refute_output --partial $'\e'
	refute_output --partial $'\r'
}

@test "status with the server down prints nothing on stdout, neither a half table nor broken JSON" {
	run -69 --separate-stderr "$RLOCK" -u redis://127.0.0.1:1 --json status k
	assert_output ""
	assert_stderr "rlock: status: cannot connect to 127.0.0.1:1: Connection refused"
	run -69 --separate-stderr "$RLOCK" -u redis://127.0.0.1:1 status k
	assert_output ""
}
