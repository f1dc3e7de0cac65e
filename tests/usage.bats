#!/usr/bin/env bats
# usage.bats - help, version and every kind of misuse: exit 64 with
# "rlock: <cmd>: <what>" and a "Try 'rlock <cmd> --help'." line, without
# touching the server.

bats_require_minimum_version 1.5.0
load test_helper

SUBCOMMANDS=(run acquire release extend status help)

setup() {
	rl_setup
	# Usage errors must be reported before any connection is made: point
	# rlock at a port where nothing listens, so that an attempt shows as
	# 69 instead of 64.
	export RLOCK_URL="redis://127.0.0.1:$T_CLOSED_PORT"
}

setup_file() {
	rl_setup_file
	start_redis CLOSED
	export T_CLOSED_PORT=$CLOSED_PORT
	stop_redis CLOSED
}

@test "--help and -h print usage on stdout and exit 0" {
	for opt in --help -h; do
		run -0 --separate-stderr "$RLOCK" "$opt"
		assert_equal "$stderr" ""
		for cmd in run acquire release extend status; do
			assert_output --partial "$cmd"
		done
	done
}

@test "help lists the exit statuses and the environment" {
	run -0 --separate-stderr "$RLOCK" --help
	for code in 64 69 70 75 76 126 127; do
		assert_output --partial "$code"
	done
	for var in RLOCK_URL REDIS_URL RLOCK_PREFIX REDISCLI_AUTH; do
		assert_output --partial "$var"
	done
}

@test "every subcommand has --help, -h and help CMD on stdout with exit 0" {
	for cmd in run acquire release extend status; do
		run -0 --separate-stderr "$RLOCK" "$cmd" --help
		assert_equal "$stderr" ""
		assert_output --partial "rlock $cmd"
		local long=$output
		run -0 --separate-stderr "$RLOCK" "$cmd" -h
		assert_equal "$stderr" ""
		assert_equal "$output" "$long"
		run -0 --separate-stderr "$RLOCK" help "$cmd"
		assert_equal "$stderr" ""
		assert_equal "$output" "$long"
	done
	run -0 "$RLOCK" --help
	local top=$output
	run -0 --separate-stderr "$RLOCK" help
	assert_equal "$stderr" ""
	assert_equal "$output" "$top"
}

@test "subcommand help documents its options" {
	run -0 "$RLOCK" run --help
	for o in --ttl --nonblock --timeout --conflict-exit-code --min-hold \
		--label --command --on-lost --kill-after --max-time; do
		assert_output --partial -- "$o"
	done
	run -0 "$RLOCK" acquire --help
	for o in --ttl --nonblock --timeout --renew --pid --format; do
		assert_output --partial -- "$o"
	done
	run -0 "$RLOCK" release --help
	assert_output --partial -- --force
}

@test "no --help has an Options: heading with no option under it" {
	local cmd
	for cmd in "" run acquire release extend status log last bench doctor help; do
		run -0 --separate-stderr "$RLOCK" $cmd --help
		assert_equal "$stderr" ""
		# Each "Options:" line is followed by an option line.
		local i
		for i in "${!lines[@]}"; do
			[[ ${lines[i]} == *Options: ]] || continue
			[[ ${lines[i + 1]-} =~ ^\ +-(-[a-z]|[a-zA-Z]) ]] || {
				echo "rlock $cmd --help: '${lines[i]}' is followed by '${lines[i + 1]-}'"
				return 1
			}
		done
	done
	# Those that had an empty heading list what they honour, or none.
	run -0 "$RLOCK" status --help
	assert_line --regexp '^ +--json +the locks as one JSON document$'
	run -0 "$RLOCK" doctor --help
	assert_line --regexp '^ +--json +the checks as one JSON array$'
	run -0 "$RLOCK" help --help
	refute_line "Options:"
}

@test "--version and -V print the version and exit 0" {
	local version
	version=$(cat "$REPO_DIR/VERSION")
	[[ -n $version ]]
	for opt in --version -V; do
		run -0 --separate-stderr "$RLOCK" "$opt"
		assert_equal "$stderr" ""
		assert_output --partial "$version"
	done
	run -0 --separate-stderr "$RLOCK" run --version
	assert_output --partial "$version"
}

@test "--version names the git commit of the build and how it does TLS" {
	local version want
	version=$(cat "$REPO_DIR/VERSION")
	want="rlock ${version//./\\.}"	# a regular expression
	# Built at the top of a git checkout: the commit, and "-dirty" if
	# tracked files had changes then.  A clean tree now was clean at the
	# build (make test builds first); a file may have been edited since.
	# package.bats watches the mark come and go in a tree of its own.
	if git -C "$REPO_DIR" rev-parse --git-dir >/dev/null 2>&1 &&
		[[ -z $(git -C "$REPO_DIR" rev-parse --show-prefix) ]]; then
		want+=" \(git $(git -C "$REPO_DIR" rev-parse HEAD | cut -c1-12)"
		if [[ -z $(git -C "$REPO_DIR" status --porcelain --untracked-files=no) ]]; then
			want+='\)'
		else
			want+='(-dirty)?\)'
		fi
	fi
	run -0 --separate-stderr "$RLOCK" --version
	assert_equal "$stderr" ""
	assert_equal "${#lines[@]}" 2
	assert_line --index 0 --regexp "^$want\$"
	assert_line --index 1 "TLS: OpenSSL (libssl.so.3, loaded at the first rediss:// URL)"
}

@test "no arguments at all is a usage error" {
	run -64 --separate-stderr "$RLOCK"
	assert_equal "${stderr_lines[-1]}" "Try 'rlock --help'."
}

@test "unknown command exits 64" {
	run -64 --separate-stderr "$RLOCK" foo
	assert_usage "" "rlock: unknown command 'foo'"
	run -64 --separate-stderr "$RLOCK" help foo
	assert_stderr_line --partial "foo"
}

@test "unknown option exits 64, top level and per subcommand" {
	run -64 --separate-stderr "$RLOCK" --foo status
	assert_try ""
	assert_stderr_line --index 0 --partial "'--foo'"

	run -64 --separate-stderr "$RLOCK" run --foo x -- true
	assert_usage run "rlock: run: unknown option '--foo'"

	for cmd in acquire release extend status; do
		run -64 --separate-stderr "$RLOCK" "$cmd" --foo x
		assert_usage "$cmd" "rlock: $cmd: unknown option '--foo'"
	done
}

@test "a subcommand's option before the subcommand says where it belongs" {
	run -64 --separate-stderr "$RLOCK" -w 5s run x -- true
	assert_usage run "rlock: run: option '-w' belongs after the subcommand: rlock run -w 5s ..."
	run -64 --separate-stderr "$RLOCK" -w5s run x -- true
	assert_usage run "rlock: run: option '-w' belongs after the subcommand: rlock run -w5s ..."
	run -64 --separate-stderr "$RLOCK" -q --timeout=5s -t 10s acquire x
	assert_usage acquire "rlock: acquire: option '--timeout' belongs after the subcommand: rlock acquire --timeout=5s -t 10s ..."
	run -64 --separate-stderr "$RLOCK" --max-age 26h last nightly
	assert_usage last "rlock: last: option '--max-age' belongs after the subcommand: rlock last --max-age 26h ..."
	# Global options may come first; one the subcommand does not take
	# either is only unknown.
	run -64 --separate-stderr "$RLOCK" -w 5s status x
	assert_usage "" "rlock: unknown option '-w'"
	run -64 --separate-stderr "$RLOCK" --bogus run x -- true
	assert_usage "" "rlock: unknown option '--bogus'"
}

@test "an unknown long option names the nearest one, when it is a near miss" {
	run -64 --separate-stderr "$RLOCK" run --tiemout 5s x -- true
	assert_usage run "rlock: run: unknown option '--tiemout'; did you mean '--timeout'?"
	run -64 --separate-stderr "$RLOCK" run --ttll 5s x -- true
	assert_usage run "rlock: run: unknown option '--ttll'; did you mean '--ttl'?"
	run -64 --separate-stderr "$RLOCK" acquire --nonblok x
	assert_usage acquire "rlock: acquire: unknown option '--nonblok'; did you mean '--nonblock'?"
	run -64 --separate-stderr "$RLOCK" last --max-ages 26h x
	assert_usage last "rlock: last: unknown option '--max-ages'; did you mean '--max-age'?"
	# A global option, at the top level and after the subcommand.
	run -64 --separate-stderr "$RLOCK" --urll redis://x status
	assert_usage "" "rlock: unknown option '--urll'; did you mean '--url'?"
	run -64 --separate-stderr "$RLOCK" status --pefix p: x
	assert_usage status "rlock: status: unknown option '--pefix'; did you mean '--prefix'?"
	# Far from all of them, or another subcommand's: no guess.
	run -64 --separate-stderr "$RLOCK" run --wiat 5 x -- true
	assert_usage run "rlock: run: unknown option '--wiat'"
	run -64 --separate-stderr "$RLOCK" status --nonblok x
	assert_usage status "rlock: status: unknown option '--nonblok'"
}

@test "unknown short option exits 64 with the Try line" {
	run -64 --separate-stderr "$RLOCK" run -Z x -- true
	assert_try run
	run -64 --separate-stderr "$RLOCK" acquire -Z x
	assert_try acquire
}

@test "option without its value exits 64" {
	run -64 --separate-stderr "$RLOCK" run --ttl
	assert_usage run "rlock: run: option '--ttl' requires a value"
	run -64 --separate-stderr "$RLOCK" acquire --ttl
	assert_usage acquire "rlock: acquire: option '--ttl' requires a value"
	run -64 --separate-stderr "$RLOCK" run -t
	assert_try run
	run -64 --separate-stderr "$RLOCK" --url
	assert_try ""
}

@test "--ttl outside 10ms..30d exits 64 with the range" {
	for ttl in 5ms 9ms 721h 2592001s 43201m; do
		run -64 --separate-stderr "$RLOCK" run --ttl "$ttl" x -- true
		assert_usage run "rlock: run: invalid --ttl '$ttl': must be between 10ms and 30d"
	done
	run -64 --separate-stderr "$RLOCK" run -t 5ms x -- true
	assert_usage run "rlock: run: invalid --ttl '5ms': must be between 10ms and 30d"
	run -64 --separate-stderr "$RLOCK" acquire --ttl 5ms x
	assert_usage acquire "rlock: acquire: invalid --ttl '5ms': must be between 10ms and 30d"
	run -64 --separate-stderr "$RLOCK" extend --ttl 5ms x 0123456789abcdef0123456789abcdef
	assert_usage extend "rlock: extend: invalid --ttl '5ms': must be between 10ms and 30d"
}

@test "--min-hold above 30d exits 64; 30d is accepted" {
	for hold in 1000d 31d 721h 2592001s 2592000001ms; do
		for cmd in run acquire; do
			local args=(--min-hold "$hold" x)
			[[ $cmd == run ]] && args+=(-- true)
			run -64 --separate-stderr "$RLOCK" "$cmd" "${args[@]}"
			assert_usage "$cmd" "rlock: $cmd: invalid --min-hold '$hold': must be at most 30d"
		done
	done
	export RLOCK_URL=$R_URL
	run -0 "$RLOCK" acquire --min-hold 30d -t 1s hold30d
	assert_output --regexp '^[0-9a-f]{32}$'
	local token=$output
	# The hold keeps the key after the release, for 30 days.
	run -0 "$RLOCK" release hold30d "$token"
	run -0 rcli R PTTL "$(key hold30d)"
	((output > 2591000000 && output <= 2592000000))
}

@test "the ttl bounds themselves are accepted" {
	export RLOCK_URL=$R_URL
	# acquire, not run: a 10ms lease renewed every 3ms may be lost on a
	# slow (sanitizer) build, and that is not what this test is about.
	run -0 "$RLOCK" acquire --ttl 10ms lo
	run -0 "$RLOCK" run --ttl 720h hi -- true
	run -0 "$RLOCK" run --ttl 43200m hi -- true
	run -0 "$RLOCK" run --ttl 2592000 hi -- true
	run -0 "$RLOCK" run --ttl 30d hi -- true
}

@test "zero, negative and malformed durations exit 64" {
	for ttl in 0 0s 0ms -1 -1s abc 1e3 '' ' 1s' '1s ' 1.5.2 31d 1D 1day 5sec s ms d 0x10 1,5 inf nan; do
		run -64 --separate-stderr "$RLOCK" run --ttl "$ttl" x -- true
		assert_try run
		assert_stderr_line --index 0 --partial "rlock: run: invalid --ttl '$ttl': "
	done
	run -64 --separate-stderr "$RLOCK" run --timeout abc x -- true
	assert_usage run "rlock: run: invalid --timeout 'abc': not a duration (e.g. 500ms, 30s, 1.5m, 1h30m, 2d)"
	run -64 --separate-stderr "$RLOCK" run -w abc x -- true
	assert_usage run "rlock: run: invalid --timeout 'abc': not a duration (e.g. 500ms, 30s, 1.5m, 1h30m, 2d)"
}

@test "every duration option rejects garbage" {
	for opt in --timeout --min-hold --kill-after --max-time; do
		for bad in abc -1 1e3 ''; do
			run -64 --separate-stderr "$RLOCK" run "$opt" "$bad" x -- true
			assert_stderr_line --index 0 --partial "rlock: run: invalid $opt '$bad'"
			assert_try run
		done
	done
	for opt in --connect-timeout --io-timeout; do
		for bad in abc -1 ''; do
			run -64 --separate-stderr "$RLOCK" "$opt" "$bad" status
			assert_stderr_line --index 0 --partial "invalid $opt '$bad'"
		done
	done
	run -64 --separate-stderr "$RLOCK" acquire --timeout abc x
	assert_usage acquire "rlock: acquire: invalid --timeout 'abc': not a duration (e.g. 500ms, 30s, 1.5m, 1h30m, 2d)"
}

@test "-w 0 means -n and is accepted; decimal seconds are accepted" {
	export RLOCK_URL=$R_URL
	run -0 "$RLOCK" run -w 0 x -- true
	run -0 "$RLOCK" run -w 1.5 -t 2.5 x -- true
	run -0 "$RLOCK" run -w 500ms -t 1m x -- true
	run -0 "$RLOCK" run -t 1h x -- true
}

@test "compound durations: each unit once, largest first (1h30m, 1m30s)" {
	export RLOCK_URL=$R_URL
	run -0 "$RLOCK" acquire -t 1m30s -w 1h30m cx
	local p
	p=$(pttl cx)
	((p > 88000 && p <= 90000)) || fail "pttl $p"
	for bad in 30m1h 1h1h 1.5h30m 1h30 '1h 30m'; do
		run -64 --separate-stderr "$RLOCK" run -w "$bad" x -- true
		assert_usage run "rlock: run: invalid --timeout '$bad': not a duration (e.g. 500ms, 30s, 1.5m, 1h30m, 2d)"
	done
}

@test "bad --conflict-exit-code exits 64" {
	run -64 --separate-stderr "$RLOCK" run -E 300 x -- true
	assert_usage run "rlock: run: invalid --conflict-exit-code '300': must be 0..255"
	run -64 --separate-stderr "$RLOCK" run --conflict-exit-code 256 x -- true
	assert_usage run "rlock: run: invalid --conflict-exit-code '256': must be 0..255"
	for bad in -1 x '' 1x 2.5 ' 1' +1; do
		run -64 --separate-stderr "$RLOCK" run -E "$bad" x -- true
		assert_stderr_line --index 0 --partial "rlock: run: invalid --conflict-exit-code '$bad'"
		assert_try run
	done
	run -64 --separate-stderr "$RLOCK" acquire -E 256 x
	assert_usage acquire "rlock: acquire: invalid --conflict-exit-code '256': must be 0..255"
}

@test "missing NAME exits 64" {
	for cmd in run acquire release extend; do
		run -64 --separate-stderr "$RLOCK" "$cmd"
		assert_usage "$cmd" "rlock: $cmd: missing lock NAME"
	done
	run -64 --separate-stderr "$RLOCK" run -n -t 1s
	assert_usage run "rlock: run: missing lock NAME"
}

@test "missing COMMAND exits 64" {
	run -64 --separate-stderr "$RLOCK" run x
	assert_usage run "rlock: run: missing COMMAND"
	run -64 --separate-stderr "$RLOCK" run x --
	assert_usage run "rlock: run: missing COMMAND"
	run -64 --separate-stderr "$RLOCK" run -n x --
	assert_usage run "rlock: run: missing COMMAND"
}

@test "run: a '--' before any NAME: the NAME is what is missing, not the COMMAND" {
	run -64 --separate-stderr "$RLOCK" run -w 30m -- ./report.sh
	assert_usage run "rlock: run: missing lock NAME before '--': rlock run [OPTION]... NAME -- COMMAND"
	run -64 --separate-stderr "$RLOCK" run -- x
	assert_usage run "rlock: run: missing lock NAME before '--': rlock run [OPTION]... NAME -- COMMAND"
	# -c gives the command: "-- x" names the lock.
	run -64 --separate-stderr "$RLOCK" run -c true -- x y
	assert_usage run "rlock: run: give COMMAND or -c STRING, not both"
}

@test "-c and a COMMAND together are a usage error" {
	run -64 --separate-stderr "$RLOCK" run -c 'true' x -- true
	assert_try run
}

@test "bad lock names exit 64" {
	local long
	long=$(printf 'a%.0s' {1..1025})
	for cmd in run acquire; do
		local -a tail=()
		[[ $cmd == run ]] && tail=(-- true)
		run -64 --separate-stderr "$RLOCK" "$cmd" '' "${tail[@]}"
		assert_usage "$cmd" "rlock: $cmd: invalid lock name: empty"
		run -64 --separate-stderr "$RLOCK" "$cmd" "$long" "${tail[@]}"
		assert_usage "$cmd" "rlock: $cmd: invalid lock name: longer than 1024 bytes"
		run -64 --separate-stderr "$RLOCK" "$cmd" $'a\x01b' "${tail[@]}"
		assert_usage "$cmd" "rlock: $cmd: invalid lock name: contains a control character"
		run -64 --separate-stderr "$RLOCK" "$cmd" $'a\nb' "${tail[@]}"
		assert_usage "$cmd" "rlock: $cmd: invalid lock name: contains a control character"
		run -64 --separate-stderr "$RLOCK" "$cmd" $'a\x7fb' "${tail[@]}"
		assert_usage "$cmd" "rlock: $cmd: invalid lock name: contains a control character"
	done
	run -64 --separate-stderr "$RLOCK" release '' 0123456789abcdef0123456789abcdef
	assert_usage release "rlock: release: invalid lock name: empty"
	run -64 --separate-stderr "$RLOCK" status $'a\x01b'
	assert_usage status "rlock: status: invalid lock name: contains a control character"
}

@test "a 1024-byte name, spaces, unicode and braces are fine" {
	export RLOCK_URL=$R_URL
	local long
	long=$(printf 'b%.0s' {1..1024})
	run -0 "$RLOCK" run "$long" -- true
	run -0 "$RLOCK" run 'a name with spaces' -- true
	run -0 "$RLOCK" run 'verrou-été-ロック' -- true
	run -0 "$RLOCK" run -t 5s 'br{ace}s' -- sh -c 'test "$RLOCK_KEY" = "${RLOCK_PREFIX}{br{ace}s}"'
}

@test "-- ends the options: a name may start with a dash" {
	export RLOCK_URL=$R_URL
	run -0 "$RLOCK" run -- -dash true
	run -0 "$RLOCK" run -n -- -dash -- true
	run -1 "$RLOCK" status -- -notheld
}

@test "release and extend without a token exit 64" {
	run -64 --separate-stderr "$RLOCK" release x
	assert_usage release "rlock: release: missing TOKEN (give it or set RLOCK_TOKEN)"
	run -64 --separate-stderr "$RLOCK" extend x
	assert_usage extend "rlock: extend: missing TOKEN (give it or set RLOCK_TOKEN)"
	RLOCK_TOKEN= run -64 --separate-stderr "$RLOCK" release x
	assert_try release
}

@test "extra arguments exit 64" {
	run -64 --separate-stderr "$RLOCK" acquire x y
	assert_try acquire
	run -64 --separate-stderr "$RLOCK" release x tok extra
	assert_try release
	run -64 --separate-stderr "$RLOCK" extend x tok extra
	assert_try extend
}

@test "a failed write to stdout is an error" {
	export RLOCK_URL=$R_URL
	# run captures stdout itself; do it by hand.
	local status=0
	"$RLOCK" acquire full >/dev/full 2>err || status=$?
	((status != 0))
	((status != 64))
	grep -q '^rlock: acquire: ' err
	grep -qi 'No space left on device' err

	status=0
	"$RLOCK" --help >/dev/full 2>err || status=$?
	((status != 0))

	"$RLOCK" acquire held >/dev/null
	status=0
	"$RLOCK" status >/dev/full 2>err || status=$?
	((status != 0))
	grep -q '^rlock: status: ' err
}

@test "acquire that cannot print its token does not leave the lock held" {
	export RLOCK_URL=$R_URL
	local status=0
	"$RLOCK" acquire -t 30s full2 >/dev/full 2>err || status=$?
	((status != 0))
	lock_free full2
}

@test "a closed stdout is a failed write, never the server's connection" {
	export RLOCK_URL=$R_URL
	local status=0
	# Were fd 1 free, the first socket would take it and the token would
	# be written to the server, with exit 0.
	"$RLOCK" acquire -t 30s closed >&- 2>err || status=$?
	assert_equal "$status" 71
	assert_equal "$(cat err)" "rlock: acquire: closed: cannot write the token: Bad file descriptor; lock released"
	lock_free closed
	status=0
	"$RLOCK" acquire --renew -t 30s closed >&- 2>err || status=$?
	assert_equal "$status" 71
	lock_free closed
	[[ -z $(rlock_pids) ]] || fail "a renewer was left: $(rlock_pids)"
	# The command of run gets the descriptors closed as they were given.
	out=$("$RLOCK" run closed -- sh -c \
		'if { true >&0; } 2>/dev/null; then echo open; else echo closed; fi' <&-)
	assert_equal "$out" closed
}

@test "bad URLs exit 64" {
	for url in http://127.0.0.1:1 ftp://x 'redis://127.0.0.1:notaport' \
		'redis://127.0.0.1:99999' 'redis://127.0.0.1:0' \
		'redis://127.0.0.1/notadb' 'unix://' ''; do
		run -64 --separate-stderr "$RLOCK" -u "$url" acquire x
		assert_try acquire
		run -64 --separate-stderr "$RLOCK" acquire --url "$url" x
		assert_try acquire
	done
	RLOCK_URL=http://x run -64 --separate-stderr "$RLOCK" acquire x
	assert_try acquire
	REDIS_URL=http://x run -64 --separate-stderr env -u RLOCK_URL "$RLOCK" acquire x
	assert_try acquire
}

@test "bad --on-lost, --format and --pid values exit 64" {
	run -64 --separate-stderr "$RLOCK" run --on-lost stop x -- true
	assert_try run
	assert_stderr_line --index 0 --partial "--on-lost"
	run -64 --separate-stderr "$RLOCK" acquire --format xml x
	assert_try acquire
	assert_stderr_line --index 0 --partial "--format"
	for bad in abc -5 1x ''; do
		run -64 --separate-stderr "$RLOCK" acquire --renew --pid "$bad" x
		assert_try acquire
		assert_stderr_line --index 0 --partial "--pid"
	done
}

@test "the valid --on-lost and --format values are accepted" {
	export RLOCK_URL=$R_URL
	for v in term kill ignore; do
		run -0 "$RLOCK" run --on-lost "$v" x -- true
	done
	for v in token json env; do
		run -0 "$RLOCK" acquire --format "$v" "f-$v"
	done
}

@test "global options work before and after the subcommand" {
	export RLOCK_URL="redis://127.0.0.1:$T_CLOSED_PORT"
	run -0 "$RLOCK" --url "$R_URL" --prefix "$RLOCK_PREFIX" run g1 -- true
	run -0 "$RLOCK" run --url "$R_URL" --prefix "$RLOCK_PREFIX" g2 -- true
	run -0 "$RLOCK" -u "$R_URL" -q --io-timeout 1s --connect-timeout 1s \
		status
	run -0 "$RLOCK" status -u "$R_URL" -v --json
}
