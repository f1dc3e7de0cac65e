# hostile_helper.bash - RESP servers of the tests' own (helpers/hostile_server.py)
# that answer what a test asks: odd types, huge declared lengths, truncated
# replies, silence.  Load it after test_helper:
#
#	load test_helper
#	load hostile_helper
#
#	start_hostile NAME RULE...	a hostile server on a free 127.0.0.1
#					port; each RULE is one line of its rules
#					file, "WHAT REPLY" (see hostile_server.py):
#					WHAT a command name or a script name
#					(acquire, extend, release, status, ...),
#					REPLY raw RESP with \r\n escapes or one of
#					silent, close, stream-bulk, stream-array,
#					stream-bulks;
#					the rules of one WHAT are its replies in
#					order, the last repeating.  Exports
#					NAME_PORT, NAME_PID, NAME_URL, NAME_LOG.
#	hostile_log NAME		what it received, one command a line,
#					each EVALSHA's SHA-1 shown as its script's
#					name ("EVALSHA acquire 3 ...")
#	hostile_calls NAME WHAT		how many commands (or script calls) WHAT
#					it received
#	stop_hostile NAME		SIGTERM, bounded wait, SIGKILL
#	stop_all_hostile		every one this test or file started
#
# A suite that starts them calls stop_all_hostile from its teardown (and
# teardown_file when setup_file started some).
#
#	GRANT				a grant from acquire: {1, FENCE} with a
#					fence in the server clock's range (µs)
#	OK_1				":1\r\n", a release or extend that held

HOSTILE_SERVER=${HOSTILE_SERVER:-$TESTS_DIR/helpers/hostile_server.py}
# shellcheck disable=SC2034 # for the suites
GRANT='*2\r\n:1\r\n:1795736700000000\r\n'
# shellcheck disable=SC2034
OK_1=':1\r\n'

_hs_base() {
	if [[ -n ${BATS_TEST_TMPDIR:-} && -n ${BATS_TEST_NAME:-} ]]; then
		echo "$BATS_TEST_TMPDIR/hostile"
	else
		echo "$BATS_FILE_TMPDIR/hostile"
	fi
}

_hs_ready() {
	[[ -s $1/port ]] || pid_gone "$(cat "$1/pid")"
}

# start_hostile NAME RULE...
start_hostile() {
	local name=$1 base dir pid
	shift
	# The SHA-1s must be those of the scripts in build/rlock: relink the
	# helper when it is older than the binary.
	if [[ ! -x $HELPERS/scriptsha || $RLOCK -nt $HELPERS/scriptsha ]]; then
		make -s -C "$REPO_DIR" build/helpers/scriptsha >&2 || {
			echo "start_hostile: cannot build $HELPERS/scriptsha" >&2
			return 1
		}
	fi
	base=$(_hs_base)
	dir="$base/$name"
	mkdir -p "$dir"
	printf '%s\n' "$@" >"$dir/rules"
	: >"$dir/log"
	rm -f "$dir/port"
	/usr/bin/python3 "$HOSTILE_SERVER" --port-file "$dir/port" --rules "$dir/rules" \
		--log "$dir/log" </dev/null >"$dir/out" 2>&1 3>&- &
	pid=$!
	echo "$pid" >"$dir/pid"
	echo "$dir" >>"$base/dirs"
	if ! wait_until 10 _hs_ready "$dir" || pid_gone "$pid"; then
		echo "start_hostile $name: the server did not start:" >&2
		cat "$dir/out" >&2
		return 1
	fi
	export "${name}_HOSTILEDIR=$dir"
	export "${name}_PID=$pid"
	export "${name}_LOG=$dir/log"
	export "${name}_PORT=$(cat "$dir/port")"
	export "${name}_URL=redis://127.0.0.1:$(cat "$dir/port")"
}

_hs_dir_of() {
	local v="${1}_HOSTILEDIR"
	if [[ -n ${!v:-} && -d ${!v} ]]; then
		echo "${!v}"
		return 0
	fi
	echo "no hostile server named '$1'" >&2
	return 1
}

# hostile_log NAME
hostile_log() {
	local dir s sed=()
	dir=$(_hs_dir_of "$1") || return 1
	for s in acquire extend release force fence status leave log; do
		sed+=(-e "s/^EVALSHA $("$HELPERS/scriptsha" "$s") /EVALSHA $s /I")
	done
	sed "${sed[@]}" "$dir/log"
}

# hostile_calls NAME WHAT: commands named WHAT (any case), or EVALSHA calls
# of the script WHAT, that NAME received.
hostile_calls() {
	local n
	n=$(hostile_log "$1" | awk -v w="$2" '
		toupper($1) == toupper(w) || (toupper($1) == "EVALSHA" && $2 == w) { n++ }
		END { print n + 0 }')
	echo "$n"
}

# hostile_calls_at_least NAME WHAT N: for wait_until.
hostile_calls_at_least() {
	(($(hostile_calls "$1" "$2") >= $3))
}

stop_hostile() {
	local dir
	dir=$(_hs_dir_of "$1") || return 1
	_rl_stop_dir "$dir"
}

# stop_all_hostile: those of this test (in teardown) or of the file (in
# teardown_file).
stop_all_hostile() {
	local base dir
	base=$(_hs_base)
	[[ -f $base/dirs ]] || return 0
	while read -r dir; do
		[[ -d $dir ]] && _rl_stop_dir "$dir"
	done <"$base/dirs"
	rm -f "$base/dirs"
	return 0
}
