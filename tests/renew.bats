#!/usr/bin/env bats
# renew.bats - rlock acquire --renew as scripts use it: the renewer follows
# the calling script past forked subshells (bash strict mode with an ERR
# trap, dash, zsh, plain bash, bats itself) or exactly the --pid given;
# it connects in the caller's directory (relative --cacert, --cacertdir,
# --cert, --key, --password-file); acquire prints the token only once the
# renewer runs; and a lost lock is signalled (--on-lost), logged to syslog
# and reported by release.
#
# Servers for the whole file:
#	R	plain (the default URL)
#	T	TLS only, client certificates required
# The renewer's records (TOKEN.renewing, TOKEN.lost) are in /tmp/rlock-UID,
# shared by every test: tokens are unique.

bats_require_minimum_version 1.5.0
load test_helper
load tls_helper

setup_file() {
	tls_make_certs
	start_redis R
	# Without TLS (a server built without it) the tests that use T fail
	# with the reason (need_tls); the others run.
	start_redis_tls T --tls-auth-clients yes || [[ -n ${TLS_MISSING:-} ]] || return 1
	export T_DEFAULT_URL=$R_URL
}

teardown_file() { rl_teardown_file; }

setup() {
	rl_setup
	SRV=R
}

teardown() {
	# A test that froze the server thaws it even if it failed.
	[[ ! -e frozen ]] || kill -CONT "$R_PID" 2>/dev/null
	# A test that set maxclients gets the old value back even if it failed.
	if [[ -f maxclients.was ]]; then
		wait_until 5 set_maxclients "$(cat maxclients.was)" || true
	fi
	rl_teardown
}

# use_tls: this test's rlock (scripts and status alike) talks to T, with
# the client certificate it requires (client.pem holds the key too: there
# is no variable for --key, RLOCK_KEY being the lock's key in run).
use_tls() {
	need_tls || return 1
	export RLOCK_URL=$T_URL RLOCK_CACERT=$CERTS/ca.crt \
		RLOCK_CERT=$CERTS/client.pem
	SRV=T
}

# held_for NAME MS: `rlock status` shows lock NAME held, for MS ms or more
# (status exits 1 for a free lock; the lock's own age comes first).
held_for() {
	local out
	out=$("$RLOCK" status --json "$1" 2>/dev/null) || return 1
	[[ $out =~ \"age_ms\":([0-9]+) ]] && ((BASH_REMATCH[1] >= $2))
}

# status_pid_is NAME PID: status shows PID as lock NAME's holder.
status_pid_is() {
	json_check "$("$RLOCK" status --json "$1")" \
		'd["locks"][0]["held"] is True' "d['locks'][0]['pid'] == $2"
}

file_exists() {
	[[ -e $1 ]]
}

# fence NAME [SERVER]: the fence of lock NAME's last exclusive grant (its
# record P{NAME}:grant while it holds, its history after; empty when
# none).
fence() {
	meta "$1" fence "${2:-R}"
}

# lock_script FILE NAME END PREAMBLE [ACQUIRE-OPTION...]: a script, the same
# text for sh, bash and zsh, that runs PREAMBLE, writes its $$ to NAME.pid,
# does `token=$(rlock acquire --renew OPTIONS NAME)`, writes the token to
# NAME.token and waits for NAME.go.  Then, with END "release", it releases
# the lock itself, says so in NAME.released and waits for NAME.done; with
# END "exit" it ends without releasing.
lock_script() {
	local file=$1 name=$2 end=$3 pre=$4
	shift 4
	{
		printf '%s\n' "$pre"
		echo "echo \$\$ >$name.pid"
		echo "token=\$(\"\$RLOCK\" acquire --renew $* $name)"
		echo "echo \"\$token\" >$name.token"
		gate "$name.go"
		echo
		if [[ $end == release ]]; then
			echo "\"\$RLOCK\" release $name \"\$token\""
			echo ": >$name.released"
			gate "$name.done"
			echo
		fi
	} >"$file"
}

# bash strict mode: bash runs $(...) in a forked subshell when there is an
# ERR trap with set -E.  The trap leaves a note if anything fails.
STRICT="set -eEu
trap 'echo \"ERR: \$BASH_COMMAND\" >>err.trap' ERR"

# term_trap NAME: a preamble that notes a SIGTERM in NAME.term and ends
# the script with status 3.
term_trap() {
	echo "trap 'echo TERM >>$1.term; exit 3' TERM"
}

# follows_script SHELL PREAMBLE: two scripts run by SHELL take a lock each
# with a 1s TTL.  Both locks are still held well past it, and status shows
# the script's own pid; the one that releases its lock frees it at once
# (while it still runs), the other's is freed when it exits.
follows_script() {
	local shell=$1 pre=$2 rpid xpid
	lock_script rel.sh rel release "$pre" -t 1s
	lock_script ex.sh ex exit "$pre" -t 1s
	bg_start rel "$shell" rel.sh
	rpid=$BG_PID
	bg_start ex "$shell" ex.sh
	xpid=$BG_PID
	wait_until 10 file_nonempty rel.token
	wait_until 10 file_nonempty ex.token
	wait_until 10 held_for rel 2500
	wait_until 10 held_for ex 2500
	held_by rel "$(cat rel.token)" "$SRV"
	held_by ex "$(cat ex.token)" "$SRV"
	assert_equal "$(cat rel.pid)" "$rpid"
	assert_equal "$(cat ex.pid)" "$xpid"
	status_pid_is rel "$rpid"
	status_pid_is ex "$xpid"

	touch rel.go
	wait_until 10 file_exists rel.released
	lock_free rel "$SRV"
	pid_alive "$rpid"
	touch rel.done
	bg_wait "$rpid" 5
	assert_equal "$BG_STATUS" 0

	pid_alive "$xpid"
	held_by ex "$(cat ex.token)" "$SRV"
	touch ex.go
	bg_wait "$xpid" 5
	assert_equal "$BG_STATUS" 0
	wait_until 5 lock_free ex "$SRV"
	wait_until 5 no_rlock_pids
	[[ ! -e err.trap ]] || fail "ERR trap: $(cat err.trap)"
	assert_equal "$(bg_err rel)$(bg_err ex)" ""
}

# ---- whom the renewer follows ---------------------------------------------

@test "bash set -eEu with an ERR trap: token=\$(acquire --renew) holds until the script releases or exits" {
	follows_script bash "$STRICT"
}

@test "bash set -eEu with an ERR trap over TLS: held until the script releases or exits" {
	use_tls
	follows_script bash "$STRICT"
}

@test "sh (dash): token=\$(acquire --renew) holds until the script releases or exits" {
	follows_script sh ""
}

@test "zsh: token=\$(acquire --renew) holds until the script releases or exits" {
	follows_script zsh ""
}

@test "plain bash: token=\$(acquire --renew) holds until the script releases or exits" {
	follows_script bash ""
}

@test "in a bats test body the test process is followed, until it releases" {
	local token
	token=$("$RLOCK" acquire --renew -t 1s body)
	wait_until 10 held_for body 2500
	held_by body "$token"
	status_pid_is body $$
	run -0 --separate-stderr "$RLOCK" release body "$token"
	assert_equal "$stderr" ""
	lock_free body
	wait_until 5 no_rlock_pids
}

@test "--pid \$BASHPID in a subshell follows that subshell, not the shell around it" {
	(
		echo "$BASHPID" >sub.pid
		"$RLOCK" acquire --renew --pid "$BASHPID" -t 600ms sub >sub.token
		eval "$(gate sub.go)"
	) </dev/null >sub.out 2>sub.err 3>&- &
	local spid=$!
	track_pid "$spid"
	wait_until 10 file_nonempty sub.token
	assert_equal "$(cat sub.pid)" "$spid"
	wait_until 10 held_for sub 1500
	status_pid_is sub "$spid"
	touch sub.go
	wait_until 10 pid_gone "$spid"
	wait "$spid"
	wait_until 5 lock_free sub
	wait_until 5 no_rlock_pids
	assert_equal "$(cat sub.err)" ""
}

# ---- the renewer's connection ---------------------------------------------

@test "relative --cacert, --cert/--key, --cacertdir and --password-file: still held after 2.5 TTLs" {
	# Before, acquire let go of its TLS context and the renewer went to /
	# before it connected: with relative certificate paths it had no
	# connection and the lock ran out after one TTL.  (The password file
	# was read once, before the fork: that case held before too.)
	need_tls
	start_redis P --requirepass s3cret
	bg_start sleeper sleep 30
	local spid=$BG_PID t_ca t_cert t_dir t_pw
	local -a mtls=(--cert "$CERTS/client.crt" --key "$CERTS/client.key")
	mkdir -p rel/cadir
	cp "$CERTS/ca.crt" "$CERTS/client.crt" "$CERTS/client.key" rel/
	cp "$CERTS/ca.crt" rel/cadir/
	openssl rehash rel/cadir 2>/dev/null || c_rehash rel/cadir >/dev/null
	printf 's3cret' >rel/pw
	# Nothing of these names at /, where the renewer spends its life.
	for f in ca.crt client.crt client.key cadir pw; do
		[[ ! -e /$f ]] || fail "/$f exists"
	done

	cd rel
	t_ca=$("$RLOCK" -u "$T_URL" --cacert ca.crt "${mtls[@]}" \
		acquire --renew --pid "$spid" -t 1s ca)
	t_cert=$("$RLOCK" -u "$T_URL" --cacert "$CERTS/ca.crt" --cert client.crt \
		--key client.key acquire --renew --pid "$spid" -t 1s cert)
	t_dir=$("$RLOCK" -u "$T_URL" --cacertdir cadir "${mtls[@]}" \
		acquire --renew --pid "$spid" -t 1s dir)
	t_pw=$("$RLOCK" -u "$P_URL" --password-file pw \
		acquire --renew --pid "$spid" -t 1s pw)
	cd "$BATS_TEST_TMPDIR"

	# The renewers live in / by now: dropping their connections makes them
	# connect again from there, with what they loaded in rel.
	local killed_t killed_p
	killed_t=$(rcli T CLIENT KILL TYPE normal)
	killed_p=$(rcli P CLIENT KILL TYPE normal)
	use_tls
	wait_until 10 held_for ca 2500
	wait_until 10 held_for cert 2500
	wait_until 10 held_for dir 2500
	RLOCK_URL=$P_URL REDISCLI_AUTH=s3cret wait_until 10 held_for pw 2500
	held_by ca "$t_ca" T
	held_by cert "$t_cert" T
	held_by dir "$t_dir" T
	held_by pw "$t_pw" P
	((killed_t >= 3 && killed_p >= 1)) || fail "killed $killed_t and $killed_p connections"
}

@test "a renewer the server turns away (maxclients 1): 69, nothing on stdout, the lock released" {
	# With the fences ahead of the clock, a grant's is above c.
	local c f
	c=$(fence_ahead mc)
	rcli R CONFIG GET maxclients | sed -n 2p >maxclients.was
	assert_regex "$(cat maxclients.was)" '^[0-9]+$'
	assert_equal "$(rcli R CONFIG SET maxclients 1)" OK
	# Until the server has let go of that redis-cli, acquire itself could
	# be the one turned away.
	wait_until 5 no_clients R
	run -69 --separate-stderr "$RLOCK" acquire --renew -t 10s mc
	assert_equal "$output" ""
	assert_stderr "rlock: acquire: 127.0.0.1:$R_PORT: the server takes no more clients (maxclients reached)"
	no_rlock_pids
	wait_until 5 set_maxclients "$(cat maxclients.was)"
	rm maxclients.was
	# acquire took it (its connection was let in), once, then gave it back.
	f=$(fence mc)
	assert_fence "$f" $((c + 1))
	assert_equal "$(hist_names mc)" "acquired abandoned"
	lock_free mc
}

# no_clients SERVER: the server holds no client connection, judged from
# outside without connecting: none of its sockets is established, or
# closed by the client and not yet by the server.
no_clients() {
	local port=${1}_PORT
	[[ -z $(ss -Htn state established state close-wait "sport = :${!port}") ]]
}

# set_maxclients N: set server R's maxclients (false while it turns us away).
set_maxclients() {
	[[ $(rcli R CONFIG SET maxclients "$1" 2>&1) == OK ]]
}

# ---- a lost lock ----------------------------------------------------------

# assert_lost_line NAME T0 T1 [WHY]: stderr is release's report of lock NAME
# lost by its renewer between T0 and T1 (epoch seconds), for the reason
# matched by the regex WHY (default: a renewal refused).
assert_lost_line() {
	local name=$1 t0=$2 t1=$3 why=${4:-the token no longer holds it} when
	assert_stderr --regexp "^rlock: release: $name: the lock was lost at [0-9]{4}-[0-9]{2}-[0-9]{2} [0-9]{2}:[0-9]{2}:[0-9]{2} [A-Za-z0-9+-]+: $why\$"
	when=${stderr#*lost at }
	when=${when%%: *}
	when=$(date -d "$when" +%s)
	((t0 <= when && when <= t1)) || fail "lost at $when, not in [$t0, $t1]"
}

# release_after_loss NAME T0: lock NAME, whose token is in NAME.token, was
# lost after T0 (epoch seconds): release of that token exits 76 and says
# when and why, once; then it says what it says of any token that does
# not hold the lock.
release_after_loss() {
	local name=$1 t0=$2 token
	token=$(cat "$name.token")
	run -76 --separate-stderr "$RLOCK" release "$name" "$token"
	assert_equal "$output" ""
	assert_lost_line "$name" "$t0" "$(date +%s)"
	run -76 --separate-stderr "$RLOCK" release "$name" "$token"
	assert_stderr "rlock: release: $name: token does not hold the lock"
}

# on_lost_term: --on-lost term sends the script SIGTERM once another takes
# the lock away (release --force); release then says when it was lost.
on_lost_term() {
	local t0
	lock_script lt.sh lt exit "$(term_trap lt)" --on-lost term -t 1s
	bg_start lt bash lt.sh
	wait_until 10 file_nonempty lt.token
	t0=$(date +%s)
	run -0 --separate-stderr "$RLOCK" release --force lt
	assert_stderr --regexp "^rlock: release: lt: removed lock held by [^ ]+ pid $BG_PID \(rlock acquire --renew\)\$"
	wait_until 5 file_exists lt.term
	bg_wait "$BG_PID" 5
	assert_equal "$BG_STATUS" 3
	assert_equal "$(cat lt.term)" TERM
	release_after_loss lt "$t0"
	wait_until 5 no_rlock_pids
}

# release_under_term: the script's own release under --on-lost term is no
# loss: the renewer goes at its next renewal (a third of the TTL later)
# without a signal, and the script lives on.
release_under_term() {
	lock_script rt.sh rt release "$(term_trap rt)" --on-lost term -t 600ms
	bg_start rt bash rt.sh
	local rpid=$BG_PID
	wait_until 10 file_nonempty rt.token
	[[ -n $(rlock_pids) ]] || fail "no renewer"
	touch rt.go
	wait_until 5 file_exists rt.released
	lock_free rt "$SRV"
	wait_until 5 no_rlock_pids
	pid_alive "$rpid"
	[[ ! -e rt.term ]] || fail "the script got SIGTERM"
	touch rt.done
	bg_wait "$rpid" 5
	assert_equal "$BG_STATUS" 0
	[[ ! -e rt.term ]]
	assert_equal "$(bg_err rt)" ""
}

@test "--on-lost term: the script gets SIGTERM when the lock is taken away; release says when it was lost (76)" {
	on_lost_term
}

@test "--on-lost term over TLS: SIGTERM on a loss, release says when (76)" {
	use_tls
	on_lost_term
}

@test "--on-lost term: the script's own release is no loss, no signal" {
	release_under_term
}

@test "--on-lost term over TLS: the script's own release is no loss, no signal" {
	use_tls
	release_under_term
}

# Release tells the renewer that the token's end is a release by removing
# TOKEN.renewing, in a directory that the environment does not choose: a
# script that changes TMPDIR or XDG_RUNTIME_DIR between acquire and release
# (export TMPDIR=$(mktemp -d) is common) must not be taken for a loss.
@test "the script's own release is no loss even after it changed TMPDIR and XDG_RUNTIME_DIR" {
	mkdir -m 700 tmp run
	export TMPDIR=$BATS_TEST_TMPDIR/tmp XDG_RUNTIME_DIR=$BATS_TEST_TMPDIR/run
	cat >td.sh <<EOF
$(term_trap td)
token=\$("\$RLOCK" acquire --renew --on-lost term -t 600ms td)
echo "\$token" >td.token
export TMPDIR=\$(mktemp -d) XDG_RUNTIME_DIR=/nonexistent
$(gate td.go)
"\$RLOCK" release td "\$token"
: >td.released
$(gate td.done)
EOF
	bg_start td bash td.sh
	local pid=$BG_PID
	wait_until 10 file_nonempty td.token
	touch td.go
	wait_until 5 file_exists td.released
	lock_free td
	wait_until 5 no_rlock_pids
	touch td.done
	bg_wait "$pid" 5
	[[ ! -e td.term ]] || fail "the script got SIGTERM after its own release"
	assert_equal "$BG_STATUS" 0
}

@test "--on-lost term: a lease that runs out unconfirmed (the server frozen) stops the script; release says why (76)" {
	local t0
	lock_script lf.sh lf exit "$(term_trap lf)" --on-lost term -t 1s
	bg_start lf bash lf.sh
	local pid=$BG_PID
	wait_until 10 file_nonempty lf.token
	t0=$(date +%s)
	kill -STOP "$R_PID"
	: >frozen
	# The renewer judges the lease lost a safety margin before it ends,
	# whatever the frozen server would say.
	wait_until 5 file_exists lf.term
	kill -CONT "$R_PID"
	rm frozen
	bg_wait "$pid" 5
	assert_equal "$BG_STATUS" 3
	wait_until 5 lock_free lf
	run -76 --separate-stderr "$RLOCK" release lf "$(cat lf.token)"
	assert_lost_line lf "$t0" "$(date +%s)" 'no renewal confirmed for [0-9.]+m?s'
	wait_until 5 no_rlock_pids
}

@test "--on-lost kill: the script dies of SIGKILL when the lock is taken away" {
	local t0
	lock_script lk.sh lk exit "$(term_trap lk)" --on-lost kill -t 1s
	bg_start lk bash lk.sh
	wait_until 10 file_nonempty lk.token
	t0=$(date +%s)
	run -0 --separate-stderr "$RLOCK" release --force lk
	bg_wait "$BG_PID" 5
	assert_equal "$BG_STATUS" $((128 + 9))
	[[ ! -e lk.term ]]
	release_after_loss lk "$t0"
	wait_until 5 no_rlock_pids
}

@test "--on-lost ignore (the default): no signal on a loss, but release still says it was lost" {
	local t0 pid
	lock_script li.sh li exit "$(term_trap li)" -t 1s
	bg_start li bash li.sh
	pid=$BG_PID
	wait_until 10 file_nonempty li.token
	t0=$(date +%s)
	run -0 --separate-stderr "$RLOCK" release --force li
	# The renewer is gone once it has found the loss and recorded it.
	wait_until 5 no_rlock_pids
	pid_alive "$pid"
	[[ ! -e li.term ]] || fail "the script got SIGTERM"
	release_after_loss li "$t0"
	touch li.go
	bg_wait "$pid" 5
	assert_equal "$BG_STATUS" 0
	[[ ! -e li.term ]]
}

@test "a loss is logged to syslog (LOG_USER, warning) by the renewer" {
	command -v unshare >/dev/null || skip "no unshare"
	local py=/usr/bin/python3 sock=$BATS_TEST_TMPDIR/log.sock renewers
	[[ -x $py ]] || py=$(type -P python3)
	# A syslog daemon of our own: every datagram on the socket, a line each.
	bg_start syslogd "$py" -c '
import socket, sys
s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
s.bind(sys.argv[1])
with open(sys.argv[2], "ab", buffering=0) as f:
    while True:
        f.write(s.recv(65536).rstrip(b"\0\n") + b"\n")
' "$sock" "$BATS_TEST_TMPDIR/syslog"
	wait_until 5 test -S "$sock"
	lock_script st.sh st exit "$(term_trap st)" --on-lost term -t 1s
	lock_script si.sh si exit "$(term_trap si)" -t 1s
	# The scripts run in a mount namespace of their own where /dev is a
	# small tmpfs holding null (the real one, bound) and log, a symlink to
	# our socket; the machine has no /dev/log, and ours stays unchanged.
	# Their renewers inherit it and send syslog(3) there.
	local ns='mkdir "$1" && mount -t tmpfs -o mode=755 rldev "$1" &&
		touch "$1/null" && mount --bind /dev/null "$1/null" &&
		ln -s "$2" "$1/log" && mount --move "$1" /dev && shift 2 &&
		exec "$@"'
	bg_start st unshare --mount --propagation private \
		sh -c "$ns" sh "$PWD/st.dev" "$sock" bash st.sh
	bg_start si unshare --mount --propagation private \
		sh -c "$ns" sh "$PWD/si.dev" "$sock" bash si.sh
	wait_until 10 file_nonempty st.token
	wait_until 10 file_nonempty si.token
	renewers=$(rlock_pids | sort | tr '\n' ' ')
	[[ ! -e /dev/log ]]

	run -0 --separate-stderr "$RLOCK" release --force st
	run -0 --separate-stderr "$RLOCK" release --force si
	wait_until 5 no_rlock_pids
	wait_until 5 eval '(($(wc -l <syslog) >= 2))'
	local date='[0-9]{4}-[0-9]{2}-[0-9]{2} [0-9]{2}:[0-9]{2}:[0-9]{2} [A-Za-z0-9+-]+'
	local why='the token no longer holds it \(renewal refused\)'
	local pre='^<12>[A-Z][a-z]{2} [ 0-9]{2} [0-9:]{8} rlock\[([0-9]+)\]: '
	assert_regex "$(grep ': st: ' syslog)" \
		"$pre""st: lock lost at $date: $why; sent SIGTERM to the process it followed\$"
	[[ " $renewers" == *" ${BASH_REMATCH[1]} "* ]] || fail "rlock[${BASH_REMATCH[1]}] is not a renewer ($renewers)"
	assert_regex "$(grep ': si: ' syslog)" "$pre""si: lock lost at $date: $why\$"
	[[ " $renewers" == *" ${BASH_REMATCH[1]} "* ]] || fail "rlock[${BASH_REMATCH[1]}] is not a renewer ($renewers)"
	assert_equal "$(wc -l <syslog)" 2
	wait_until 5 file_exists st.term
	[[ ! -e si.term ]]
}

# ---- usage, and a token that cannot be printed -----------------------------

@test "--on-lost needs --renew and one of term, kill, ignore (64)" {
	run -64 --separate-stderr "$RLOCK" acquire --on-lost term ol
	assert_usage acquire "rlock: acquire: --on-lost needs --renew"
	run -64 --separate-stderr "$RLOCK" acquire --renew --on-lost x ol
	assert_usage acquire "rlock: acquire: invalid --on-lost 'x': must be term, kill or ignore"
	run -64 --separate-stderr "$RLOCK" acquire --renew --on-lost TERM ol
	assert_usage acquire "rlock: acquire: invalid --on-lost 'TERM': must be term, kill or ignore"
	run -64 --separate-stderr "$RLOCK" acquire --renew --on-lost= ol
	assert_usage acquire "rlock: acquire: invalid --on-lost '': must be term, kill or ignore"
	assert_equal "$output" ""
	assert_equal "$(fence ol)" ""
	no_rlock_pids
}

@test "acquire --renew >/dev/full: 71, the lock free again, no renewer left" {
	local c f
	c=$(fence_ahead full)
	run -71 --separate-stderr sh -c '"$RLOCK" acquire --renew -t 30s full >/dev/full'
	assert_stderr "rlock: acquire: full: cannot write the token: No space left on device; lock released"
	# Taken once, then given back.
	f=$(fence full)
	assert_fence "$f" $((c + 1))
	assert_equal "$(hist_names full)" "acquired abandoned"
	lock_free full
	no_rlock_pids
}
