#!/usr/bin/env bash
# overhead.sh - what rlock costs next to flock(1) on one machine, with a
# private redis-server on a free loopback port:
#
#   time      an uncontended "run NAME -- true", measured by hyperfine (both
#             commands side by side in one hyperfine invocation);
#   hand-off  from the moment the holder's command ends to the moment a
#             waiting command starts (flock vs rlock -w);
#   memory    peak RSS of "run NAME -- true" (/usr/bin/time %M).
#
# Prints a markdown table of medians and ratios on stdout and writes it to
# bench/RESULTS-overhead.md; hyperfine's own report goes to stderr.  The
# numbers are only as quiet as the machine: run it with nothing else busy.
#
#   bench/overhead.sh [SAMPLES]    hand-off and RSS samples (default 30);
#                                  HF_RUNS sets hyperfine's runs (default 100)
#
# Installs hyperfine and time with apt-get when they are missing and it runs
# as root (or with sudo).  Never touches port 6379; stops its server by PID.

set -u
cd "$(dirname "$0")/.." || exit 1

SAMPLES=${1:-30}
HF_RUNS=${HF_RUNS:-100}
OUT=bench/RESULTS-overhead.md
if ! [[ $SAMPLES =~ ^[0-9]+$ ]] || ((SAMPLES < 30)); then
	echo "bench: SAMPLES must be a number >= 30" >&2
	exit 64
fi
if ! [[ $HF_RUNS =~ ^[0-9]+$ ]] || ((HF_RUNS < 30)); then
	echo "bench: HF_RUNS must be a number >= 30" >&2
	exit 64
fi

# ---- tools ------------------------------------------------------------------

install_missing() {
	local -a missing=() sudo=()
	command -v hyperfine >/dev/null || missing+=(hyperfine)
	[[ -x /usr/bin/time ]] || missing+=(time)
	command -v flock >/dev/null || missing+=(util-linux)
	command -v redis-server >/dev/null || missing+=(redis-server)
	command -v redis-cli >/dev/null || missing+=(redis-tools)
	((${#missing[@]} == 0)) && return 0
	if (($(id -u) != 0)); then
		command -v sudo >/dev/null || {
			echo "bench: please install: ${missing[*]}" >&2
			return 1
		}
		sudo=(sudo)
	fi
	echo "bench: installing ${missing[*]}" >&2
	"${sudo[@]}" apt-get update -qq &&
		DEBIAN_FRONTEND=noninteractive "${sudo[@]}" apt-get install -y -qq \
			--no-install-recommends "${missing[@]}" >/dev/null
}

install_missing || exit 1
[[ -x ./build/rlock ]] || make build/rlock >&2 || exit 1
RLOCK=./build/rlock

for v in $(compgen -e); do
	case $v in REDIS_* | RLOCK_* | REDISCLI_*) unset "$v" ;; esac
done

tmp=$(mktemp -d "${TMPDIR:-/tmp}/rlock-bench.XXXXXX") || exit 1
server_pid=

. bench/private-redis.sh

trap stop_server EXIT
trap 'exit 130' INT TERM HUP

# ---- a private server -------------------------------------------------------

who=bench

start_server || exit 1
URL=redis://127.0.0.1:$port
echo "bench: redis-server pid $server_pid on $URL" >&2

# ---- statistics -------------------------------------------------------------

# median: of the numbers on stdin.
median() {
	sort -g | awk '{ a[NR] = $1 }
		END {
			if (NR == 0) exit 1
			if (NR % 2) print a[(NR + 1) / 2]
			else printf "%.6f\n", (a[NR / 2] + a[NR / 2 + 1]) / 2
		}'
}

# fixed DIGITS X: X with DIGITS decimals.
fixed() { awk -v d="$1" -v x="$2" 'BEGIN { printf "%.*f", d, x }'; }

# ratio A B: B / A, as "2.3×".
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (a > 0) printf "%.1f×", b / a; else print "-" }'; }

# ---- 1. uncontended run, side by side in one hyperfine ------------------------

echo "bench: hyperfine, $HF_RUNS runs each" >&2
hyperfine -N --warmup 10 --runs "$HF_RUNS" \
	--export-csv "$tmp/hf.csv" --export-markdown "$tmp/hf.md" \
	-n "flock FILE true" "flock $tmp/run.lock true" \
	-n "rlock -u URL run k -- true" "$RLOCK -u $URL run k -- true" >&2 || exit 1
# command,mean,stddev,median,user,system,min,max - in seconds
run_flock=$(awk -F, '$1 ~ /^flock/ { print $4 * 1000 }' "$tmp/hf.csv")
run_rlock=$(awk -F, '$1 ~ /^rlock/ { print $4 * 1000 }' "$tmp/hf.csv")

# ---- 2. hand-off ------------------------------------------------------------

# handoff_once TOOL: one sample in ms.  The holder's command marks that it
# runs, sleeps 0.3s and writes the time it ends; the waiter is started
# while the lock is held and its command writes the time it starts.
handoff_once() {
	local tool=$1 d=$tmp/h holder waiter t1 t2
	rm -rf "$d"
	mkdir "$d"
	# The scripts get their file names as $1 and $2.
	# shellcheck disable=SC2016
	local hold=': >"$1"; sleep 0.3; date +%s%N >"$2"'
	# shellcheck disable=SC2016
	local take='date +%s%N >"$1"'
	case $tool in
	flock)
		flock "$tmp/handoff.lock" sh -c "$hold" sh "$d/f0" "$d/f1" &
		holder=$!
		poll 5 test -e "$d/f0" || return 1
		flock "$tmp/handoff.lock" sh -c "$take" sh "$d/f2" &
		waiter=$!
		;;
	rlock)
		"$RLOCK" -u "$URL" run handoff -- sh -c "$hold" sh "$d/f0" "$d/f1" &
		holder=$!
		poll 5 test -e "$d/f0" || return 1
		"$RLOCK" -u "$URL" run -w 10s handoff -- sh -c "$take" sh "$d/f2" &
		waiter=$!
		;;
	esac
	wait "$holder" || return 1
	wait "$waiter" || return 1
	t1=$(cat "$d/f1") t2=$(cat "$d/f2")
	awk -v a="$t1" -v b="$t2" 'BEGIN { printf "%.6f\n", (b - a) / 1e6 }'
}

for tool in flock rlock; do
	echo "bench: hand-off, $SAMPLES samples of $tool" >&2
	: >"$tmp/handoff.$tool"
	for ((i = 0; i < SAMPLES; i++)); do
		handoff_once "$tool" >>"$tmp/handoff.$tool" ||
			{ echo "bench: a $tool hand-off sample failed" >&2; exit 1; }
	done
done
handoff_flock=$(median <"$tmp/handoff.flock")
handoff_rlock=$(median <"$tmp/handoff.rlock")

# ---- 3. peak RSS ------------------------------------------------------------

for tool in flock rlock; do
	echo "bench: peak RSS, $SAMPLES samples of $tool" >&2
	: >"$tmp/rss.$tool"
	for ((i = 0; i < SAMPLES; i++)); do
		if [[ $tool == flock ]]; then
			/usr/bin/time -f %M -o "$tmp/rss" flock "$tmp/rss.lock" true
		else
			/usr/bin/time -f %M -o "$tmp/rss" "$RLOCK" -u "$URL" run rss -- true
		fi || { echo "bench: $tool failed" >&2; exit 1; }
		tail -n 1 "$tmp/rss" >>"$tmp/rss.$tool"
	done
done
rss_flock=$(median <"$tmp/rss.flock")
rss_rlock=$(median <"$tmp/rss.rlock")

# ---- report -----------------------------------------------------------------

cpu=$(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -n 1)
report() {
	cat <<EOF
# rlock overhead next to flock(1)

Measured by \`bench/overhead.sh\` on $(date -u '+%Y-%m-%d %H:%M UTC'):
$(uname -srm), ${cpu:-unknown CPU}, $(nproc) CPUs; $("$RLOCK" --version 2>&1 | head -n 1);
redis-server $(redis-server --version | sed -n 's/.*v=\([^ ]*\).*/\1/p') on 127.0.0.1 (same machine,
persistence off); $(hyperfine --version); $(flock --version 2>&1 | head -n 1).

| measure | flock | rlock | rlock / flock |
|---|---:|---:|---:|
| \`run NAME -- true\`, uncontended: median of $HF_RUNS runs (hyperfine) | $(fixed 2 "$run_flock") ms | $(fixed 2 "$run_rlock") ms | $(ratio "$run_flock" "$run_rlock") |
| hand-off, holder's command ends → waiter's command starts: median of $SAMPLES | $(fixed 2 "$handoff_flock") ms | $(fixed 2 "$handoff_rlock") ms | $(ratio "$handoff_flock" "$handoff_rlock") |
| peak RSS of \`run NAME -- true\`: median of $SAMPLES (\`/usr/bin/time -f %M\`) | $(fixed 0 "$rss_flock") KiB | $(fixed 0 "$rss_rlock") KiB | $(ratio "$rss_flock" "$rss_rlock") |

An uncontended rlock run opens one connection to the server, runs the
acquire script, starts the command with vfork and exec (flock forks),
runs the release script and exits (a renewal thread starts only if the
command outlives a third of the TTL); flock opens a file and calls
flock(2).  In the hand-off, the waiting
rlock is subscribed to its wake-up channel, and the release that frees the
lock hands it over in the same script: the waiter starts its command when
that message arrives; the waiting flock sleeps in flock(2).  Both commands
are started by \`sh -c\` and stamped by \`date\`, so that part of the cost
is the same on both sides.

hyperfine's report:

$(cat "$tmp/hf.md")
EOF
}

report | tee "$OUT"
echo "bench: wrote $OUT" >&2
