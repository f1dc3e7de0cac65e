# proxy_helper.bash - fault proxies between rlock and redis-server, for the
# fault suites and the safety checker.  Load it after test_helper:
#
#	load test_helper
#	load proxy_helper
#
#	start_proxy NAME TARGET_PORT	a build/helpers/faultproxy on a free
#					127.0.0.1 port forwarding to
#					TARGET_PORT; exports NAME_PORT,
#					NAME_URL, NAME_PID, NAME_CTL
#	proxy_cmd NAME COMMAND [ARG...]	delay up|down|both MS, hold
#					up|down|both, reset, refuse, cut
#					PATTERN [N], drop PATTERN [N], normal,
#					stats (see faultproxy.c); fails the
#					test unless the proxy says "ok"
#	proxy_stat NAME FIELD		one counter from "stats" (cuts, ...)
#	stop_proxy NAME			SIGTERM, bounded wait, SIGKILL
#	stop_all_proxies		every proxy this test or file started
#
# A proxy started inside a test is stopped by the suite's teardown, which
# must call stop_all_proxies (the proxies also exit by themselves after
# 15 minutes, so that none outlives a broken run).
#
# Lock scripts are told apart on the wire by the SHA-1 their EVALSHA
# carries (release names the ":fence" key too, to hand the lock to the next
# in line): see proxy_pattern_*.

FAULTPROXY=${FAULTPROXY:-$HELPERS/faultproxy}

# Wire patterns of rlock's scripts.
proxy_pattern_acquire() { "$HELPERS/scriptsha" acquire; }
proxy_pattern_release() { "$HELPERS/scriptsha" release; }

_rp_base() {
	if [[ -n ${BATS_TEST_TMPDIR:-} && -n ${BATS_TEST_NAME:-} ]]; then
		echo "$BATS_TEST_TMPDIR/proxies"
	else
		echo "$BATS_FILE_TMPDIR/proxies"
	fi
}

_rp_dir_of() {
	local v="${1}_PROXYDIR"
	if [[ -n ${!v:-} && -d ${!v} ]]; then
		echo "${!v}"
		return 0
	fi
	echo "no proxy named '$1'" >&2
	return 1
}

_rp_ready() {
	local dir=$1
	[[ -s $dir/port ]] || pid_gone "$(cat "$dir/pid")"
}

# start_proxy NAME TARGET_PORT
start_proxy() {
	local name=$1 target=$2 base dir pid
	[[ -x $FAULTPROXY ]] || {
		echo "no fault proxy at $FAULTPROXY (run make $FAULTPROXY)" >&2
		return 1
	}
	base=$(_rp_base)
	mkdir -p "$base"
	# The control socket's path must fit in 108 bytes: keep it in /tmp.
	dir=$(mktemp -d /tmp/rlp.XXXXXX)
	echo "$dir" >>"$base/dirs"
	"$FAULTPROXY" serve -t "$target" -s "$dir/ctl" -p "$dir/port" \
		-l "$dir/log" -T 900 </dev/null >"$dir/out" 2>&1 3>&- &
	pid=$!
	echo "$pid" >"$dir/pid"
	if ! wait_until 5 _rp_ready "$dir" || pid_gone "$pid"; then
		echo "start_proxy $name: the proxy did not start:" >&2
		cat "$dir/out" >&2
		kill -KILL "$pid" 2>/dev/null
		return 1
	fi
	export "${name}_PROXYDIR=$dir"
	export "${name}_PID=$pid"
	export "${name}_CTL=$dir/ctl"
	export "${name}_PORT=$(cat "$dir/port")"
	export "${name}_URL=redis://127.0.0.1:$(cat "$dir/port")"
}

# proxy_cmd NAME COMMAND [ARG...]
proxy_cmd() {
	local name=$1 dir out
	shift
	dir=$(_rp_dir_of "$name") || return 1
	out=$(timeout 10 "$FAULTPROXY" ctl "$dir/ctl" "$@") || {
		echo "proxy_cmd $name $*: ${out:-no reply}" >&2
		return 1
	}
	# For callers that want the counters of the reply.
	# shellcheck disable=SC2034
	PROXY_REPLY=$out
}

# proxy_stat NAME FIELD: print one counter of the proxy's stats.
proxy_stat() {
	local dir out
	dir=$(_rp_dir_of "$1") || return 1
	out=$(timeout 10 "$FAULTPROXY" ctl "$dir/ctl" stats) || return 1
	out=" ${out#ok } "
	out=${out#* "$2"=}
	echo "${out%% *}"
}

# proxy_stat_is NAME FIELD VALUE: for wait_until.
proxy_stat_is() {
	[[ $(proxy_stat "$1" "$2") == "$3" ]]
}

# stop_proxy NAME
stop_proxy() {
	local dir
	dir=$(_rp_dir_of "$1") || return 1
	_rl_stop_dir "$dir"
}

# proxy_log NAME: what the proxy did (for failure messages).
proxy_log() {
	local dir
	dir=$(_rp_dir_of "$1") || return 1
	cat "$dir/log" 2>/dev/null
}

_rp_stop_in() {
	local base=$1 dir
	[[ -f $base/dirs ]] || return 0
	while read -r dir; do
		[[ $dir == /tmp/rlp.* ]] || continue
		_rl_stop_dir "$dir"
		# Keep the log next to the test's files for a post-mortem.
		cp "$dir/log" "$base/$(basename "$dir").log" 2>/dev/null
		rm -rf "$dir"
	done <"$base/dirs"
	rm -f "$base/dirs"
	return 0
}

# stop_all_proxies: those of this test (in teardown) or of the file (in
# teardown_file).
stop_all_proxies() {
	_rp_stop_in "$(_rp_base)"
}
