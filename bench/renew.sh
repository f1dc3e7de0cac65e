#!/usr/bin/env bash
# renew.sh - what a change costs the commands a script calls, before and
# after, side by side on one private redis-server:
#
#   run       an uncontended "run k -- true" of each binary, and flock;
#   renew     one "t=$(rlock acquire --renew k); rlock release k $t" cycle
#             (acquire waits for its renewer to connect and confirm);
#   callgrind instructions of "run k -- true" and of "acquire k" (the
#             client's own count, which the machine's noise does not move).
#
# Hyperfine runs the commands of each measure in ROUNDS rounds, the order
# alternating, so that a slow moment falls on both binaries alike.
#
#   RLOCK_BEFORE=/path/rlock RLOCK_AFTER=./build/rlock bench/renew.sh
#
# Prints a markdown report on stdout.  ROUNDS (3) and RUNS (60 per command
# and round) may be set.  Never touches port 6379; stops its server by PID.

set -u
cd "$(dirname "$0")/.." || exit 1

BEFORE=${RLOCK_BEFORE:?set RLOCK_BEFORE to the binary to compare with}
AFTER=${RLOCK_AFTER:-./build/rlock}
ROUNDS=${ROUNDS:-3}
RUNS=${RUNS:-60}
for b in "$BEFORE" "$AFTER"; do
	[[ -x $b ]] || { echo "bench: no binary $b" >&2; exit 64; }
done
for t in hyperfine valgrind flock redis-server redis-cli; do
	command -v "$t" >/dev/null || { echo "bench: needs $t" >&2; exit 69; }
done
BEFORE=$(realpath "$BEFORE")
AFTER=$(realpath "$AFTER")

for v in $(compgen -e); do
	case $v in REDIS_* | RLOCK_* | REDISCLI_*) unset "$v" ;; esac
done
tmp=$(mktemp -d "${TMPDIR:-/tmp}/rlock-bench.XXXXXX") || exit 1
server_pid=
who=bench
. bench/private-redis.sh
trap stop_server EXIT
trap 'exit 130' INT TERM HUP
start_server || exit 1
URL=redis://127.0.0.1:$port

# median_ms CSV NAME: hyperfine's median of command NAME, in ms.
median_ms() {
	awk -F, -v n="$2" '$1 == n { printf "%.3f", $4 * 1000 }' "$1"
}

# measure LABEL NAME=CMD...: ROUNDS hyperfine rounds over the commands,
# the order reversed every other round; prints "NAME median..." lines.
measure() {
	local label=$1 r i
	shift
	local -a names=() cmds=() args=()
	for i in "$@"; do
		names+=("${i%%=*}")
		cmds+=("${i#*=}")
	done
	for ((r = 1; r <= ROUNDS; r++)); do
		args=()
		for ((i = 0; i < ${#names[@]}; i++)); do
			local k=$i
			((r % 2 == 0)) && k=$((${#names[@]} - 1 - i))
			args+=(-n "${names[k]}" "${cmds[k]}")
		done
		echo "bench: $label, round $r" >&2
		hyperfine -N --warmup 5 --runs "$RUNS" --export-csv "$tmp/$label.$r.csv" \
			"${args[@]}" >/dev/null 2>&1 || return 1
	done
	for name in "${names[@]}"; do
		printf '%s' "$name"
		for ((r = 1; r <= ROUNDS; r++)); do
			printf ' %s' "$(median_ms "$tmp/$label.$r.csv" "$name")"
		done
		echo
	done
}

cycle='t=$("$0" -u "$1" acquire --renew k) && "$0" -u "$1" release k "$t"'

runs=$(measure run "before=$BEFORE -u $URL run k -- true" \
	"after=$AFTER -u $URL run k -- true" "flock=flock $tmp/f true") || exit 1
renews=$(measure renew "before=bash -c '$cycle' $BEFORE $URL" \
	"after=bash -c '$cycle' $AFTER $URL") || exit 1

# instructions B ARGS...: callgrind's count for one call of binary B.
instructions() {
	local b=$1
	shift
	valgrind --tool=callgrind --callgrind-out-file=/dev/null "$b" -u "$URL" "$@" \
		2>&1 >/dev/null | sed -n 's/.*Collected : \([0-9]*\).*/\1/p'
}
ir_run_b=$(instructions "$BEFORE" run k -- true)
ir_run_a=$(instructions "$AFTER" run k -- true)
ir_acq_b=$(instructions "$BEFORE" acquire -t 1s k1)
ir_acq_a=$(instructions "$AFTER" acquire -t 1s k2)

row() { # NAME LINES: "| name | m1 / m2 / m3 ms |"
	awk -v n="$1" '$1 == n { s = ""; for (i = 2; i <= NF; i++) s = s (i > 2 ? " / " : "") $i; print s }' <<<"$2"
}
pct() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%+.1f%%", (b - a) * 100 / a }'; }

cat <<EOF
Measured by \`bench/renew.sh\` on $(date -u '+%Y-%m-%d %H:%M UTC'): $(uname -sm), $(nproc) CPUs,
redis-server $(redis-server --version | sed 's/.*v=\([^ ]*\).*/\1/') on loopback, hyperfine $(hyperfine --version | cut -d' ' -f2),
$ROUNDS rounds of $RUNS runs per command (order alternating), medians in ms per round.

| measure | before | after | flock |
|---|---|---|---|
| \`run k -- true\` | $(row before "$runs") | $(row after "$runs") | $(row flock "$runs") |
| \`t=\$(acquire --renew k); release k \$t\` (in bash -c) | $(row before "$renews") | $(row after "$renews") | |

| callgrind instructions | before | after | change |
|---|---:|---:|---:|
| \`run k -- true\` | $ir_run_b | $ir_run_a | $(pct "$ir_run_b" "$ir_run_a") |
| \`acquire k\` | $ir_acq_b | $ir_acq_a | $(pct "$ir_acq_b" "$ir_acq_a") |
EOF
