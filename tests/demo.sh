#!/usr/bin/env bash
# demo.sh - a narrated tour of rlock against a throwaway redis-server on a
# free loopback port: two jobs contending for a lock, the hand-off to a
# waiter, status, and locking part of a shell script with acquire/release.
# "make demo" runs it after building build/rlock.  It never touches port 6379,
# and it stops the server it started (by PID) however it ends.  Exits 0 when
# rlock behaved as narrated, 1 otherwise.
#
# Single quotes around $... are meant (the narration shows commands as
# typed); the functions run through traps and poll.
# shellcheck disable=SC2016,SC2317

set -u
cd "$(dirname "$0")/.." || exit 1
RLOCK=$PWD/build/rlock
[[ -x $RLOCK ]] || { echo "demo: no $RLOCK; run make first" >&2; exit 1; }
if ! command -v redis-server >/dev/null || ! command -v redis-cli >/dev/null; then
	echo "demo: redis-server and redis-cli are needed (make deps)" >&2
	exit 1
fi

# Nothing from the caller's environment may steer rlock.
for v in $(compgen -e); do
	case $v in REDIS_* | RLOCK_* | REDISCLI_*) unset "$v" ;; esac
done
unset NO_COLOR

tmp=$(mktemp -d "${TMPDIR:-/tmp}/rlock-demo.XXXXXX") || exit 1
server_pid=
jobs_started=()

. bench/private-redis.sh

cleanup() {
	local pid
	for pid in "${jobs_started[@]}"; do
		kill "$pid" 2>/dev/null
		wait "$pid" 2>/dev/null
	done
	stop_server
}
trap cleanup EXIT
trap 'exit 130' INT TERM HUP

failed=0
say() { printf '\n\033[1m== %s\033[0m\n' "$*"; }
[[ -t 1 ]] || say() { printf '\n== %s\n' "$*"; }
note() { printf '   %s\n' "$*"; }
show() { printf '   $ %s\n' "$*"; }
unexpected() {
	printf '   demo: unexpected: %s\n' "$*" >&2
	failed=1
}

ms_now() { date +%s%3N; }

# ---- a private server -------------------------------------------------------

who=demo

start_server || exit 1
export RLOCK_URL=redis://127.0.0.1:$port
say "A private redis-server (pid $server_pid) listens on 127.0.0.1:$port"
note "export RLOCK_URL=$RLOCK_URL"

# ---- 1. contention ----------------------------------------------------------

say "1. A job takes lock 'nightly' and works for 2 seconds"
show "rlock run --label ./report.sh nightly -- sh -c '...; sleep 2'"
"$RLOCK" run --label ./report.sh nightly -- sh -c '
	echo "   [$(date +%T.%3N)] holder: has the lock (fence $RLOCK_FENCE), working"
	sleep 2
	date +%s%3N >"$1"
	echo "   [$(date +%T.%3N)] holder: done"' sh "$tmp/released" &
holder=$!
jobs_started+=("$holder")
poll 5 "$RLOCK" status nightly >/dev/null || unexpected "the holder did not get the lock"

say "2. A second copy, with -n, gives up at once"
show "rlock run -n nightly -- ./report.sh"
"$RLOCK" run -n nightly -- echo "this must not run" 2>"$tmp/err"
rc=$?
sed 's/^/   /' "$tmp/err"
note "exit status $rc (75: not acquired)"
((rc == 75)) || unexpected "exit status $rc, not 75"

say "3. A third copy, with -w 10s, waits and takes over as soon as the lock is released"
show "rlock run -w 10s --label ./report.sh nightly -- sh -c '...'"
"$RLOCK" run -w 10s --label ./report.sh nightly -- sh -c '
	date +%s%3N >"$1"
	echo "   [$(date +%T.%3N)] waiter: has the lock (fence $RLOCK_FENCE)"' sh "$tmp/acquired" &
waiter=$!
jobs_started+=("$waiter")
# Waiting: rlock's own status counts one in line (and names it "next").
waiting() {
	"$RLOCK" status --json nightly | grep -q '"waiters":1,'
}
poll 5 waiting || unexpected "the waiter is not waiting"

say "4. Who holds it?  (the waiter shows under WAITERS, and as next in line)"
show "rlock status"
"$RLOCK" status | sed 's/^/   /'

wait "$holder"
rc=$?
((rc == 0)) || unexpected "the holder exited $rc"
wait "$waiter"
rc=$?
((rc == 0)) || unexpected "the waiter exited $rc"
jobs_started=()
if [[ -s $tmp/released && -s $tmp/acquired ]]; then
	note "hand-off: $(($(cat "$tmp/acquired") - $(cat "$tmp/released"))) ms from the holder's command ending to the waiter's starting"
else
	unexpected "no hand-off timestamps"
fi

show "rlock status nightly"
"$RLOCK" status nightly | sed 's/^/   /'
rc=${PIPESTATUS[0]}
note "exit status $rc (1: free)"
((rc == 1)) || unexpected "status of a free lock exited $rc, not 1"

# ---- 5. scripts --------------------------------------------------------------

say "5. A shell script holds 'deploy' across several commands"
show 'token=$(rlock acquire deploy)'
token=$("$RLOCK" acquire deploy) || unexpected "acquire failed"
note "token=$token"

show "rlock acquire -n deploy            # another script"
"$RLOCK" acquire -n deploy >/dev/null 2>"$tmp/err"
rc=$?
sed 's/^/   /' "$tmp/err"
note "exit status $rc"
((rc == 75)) || unexpected "exit status $rc, not 75"

show "rlock release deploy 0123456789abcdef0123456789abcdef   # a wrong token"
"$RLOCK" release deploy 0123456789abcdef0123456789abcdef 2>"$tmp/err"
rc=$?
sed 's/^/   /' "$tmp/err"
note "exit status $rc (76: that token does not hold it)"
((rc == 76)) || unexpected "exit status $rc, not 76"

t0=$(ms_now)
show 'rlock release deploy "$token"'
"$RLOCK" release deploy "$token" || unexpected "release failed"
show 'eval "$(rlock acquire -n --format env deploy)"   # the other script, again'
if out=$("$RLOCK" acquire -n --format env deploy); then
	eval "$out"
	note "got it $(($(ms_now) - t0)) ms after the release: RLOCK_FENCE=$RLOCK_FENCE, RLOCK_TOKEN=${RLOCK_TOKEN:0:8}..."
	show "rlock release deploy            # the token comes from RLOCK_TOKEN"
	"$RLOCK" release deploy || unexpected "release with RLOCK_TOKEN failed"
	unset RLOCK_NAME RLOCK_KEY RLOCK_TOKEN RLOCK_FENCE RLOCK_TTL_MS
else
	unexpected "the second acquire failed"
fi

say "6. acquire --renew keeps a short lease alive until release"
show 'token=$(rlock acquire --renew -t 1s batch)'
token=$("$RLOCK" acquire --renew -t 1s batch) || unexpected "acquire --renew failed"
note "sleeping 2.5s, more than twice the lease"
sleep 2.5
show "rlock status batch"
"$RLOCK" status batch | sed 's/^/   /'
((PIPESTATUS[0] == 0)) || unexpected "the renewed lock was not held any more"
show 'rlock release batch "$token"'
"$RLOCK" release batch "$token" || unexpected "release of the renewed lock failed"

say "7. Once a day across the fleet: a failed run leaves the day open, a good one closes it"
show "rlock run --once-per 1d daily -- sh -c 'exit 1'   # fails: the day stays open"
"$RLOCK" run --once-per 1d daily -- sh -c 'exit 1'
[[ $? == 1 ]] || unexpected "the failing run did not exit 1"
show "rlock run --once-per 1d daily -- ./report.sh      # runs, and closes the day"
"$RLOCK" run --once-per 1d daily -- true || unexpected "the second run did not run"
show "rlock run --once-per 1d daily -- ./report.sh      # another host, later that day"
"$RLOCK" run --once-per 1d daily -- echo "this must not run" 2>"$tmp/err"
rc=$?
sed 's/^/   /' "$tmp/err"
note "exit status $rc (75: done for today)"
((rc == 75)) || unexpected "the run in a done day did not exit 75"

if ((failed)); then
	say "The demo saw something unexpected (see above)."
	exit 1
fi
say "Done; stopping the server."
exit 0
