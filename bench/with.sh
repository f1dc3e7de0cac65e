#!/usr/bin/env bash
# with.sh - several locks at once (--with, issue 35), on a private
# redis-server, in one run on one machine:
#
#   1  pairs: P pairs of "rlock run -w 300s a --with b" and "rlock run -w
#      300s b --with a" (each holding both for HOLD seconds) started
#      together: every exit status checked (none may time out: no
#      deadlock), the wall time until the last has exited, the longest wait
#      of one against the holds that went before it (its place in the order
#      the grants came in times HOLD), and the scripts the server ran per
#      hand-off (INFO commandstats);
#   2  mixed: N requests on three names started together, each a single
#      lock (x, y or z) or a set of two of them, in a random order with a
#      fixed seed, each holding HOLD: the wall time to drain them against
#      the least any order could take, the hold time of the busiest name
#      (its holds cannot overlap), and the scripts per hand-off; and the
#      same holds taken one name at a time: each set's request is two
#      single-lock runs, one after the other, each holding HOLD;
#   3  singles: 2P single-lock runs of one name, each holding HOLD: what a
#      hand-off costs with no set at all, next to section 1.
#
#   bench/with.sh [P [N [HOLD]]]     defaults 100, 200, 0.02
set -euo pipefail
cd "$(dirname "$0")/.."
RLOCK=${RLOCK:-./build/rlock}
P=${1:-100} N=${2:-200} HOLD=${3:-0.02}
who=with.sh
tmp=$(mktemp -d)
# shellcheck source=bench/private-redis.sh
. bench/private-redis.sh
trap stop_server EXIT
start_server
export RLOCK_URL="redis://127.0.0.1:$port"

# runs LOG: start the commands in $tmp/cmds (one a line) together, wait
# for all, fail on any exit status but 0; wall ms on stdout.
runs() {
	local pids=() t0 t1 line bad=0
	t0=$(date +%s%3N)
	while IFS= read -r line; do
		bash -c "$line" &
		pids+=($!)
	done <"$tmp/cmds"
	for p in "${pids[@]}"; do wait "$p" || bad=$((bad + 1)); done
	t1=$(date +%s%3N)
	((bad == 0)) || { echo "$who: $bad runs failed" >&2; exit 1; }
	echo $((t1 - t0))
}

# 1: pairs.
: >"$tmp/cmds"
: >"$tmp/grants"
for ((i = 0; i < P; i++)); do
	for o in "a --with b" "b --with a"; do
		echo "s=\$(date +%s%3N); $RLOCK run -w 300s $o -- sh -c 'echo \$(date +%s%3N) \$0 >> $tmp/grants; sleep $HOLD' \$s" >>"$tmp/cmds"
	done
done
read -r c0 _ < <(script_stats)
wall=$(runs)
read -r c1 _ < <(script_stats)
runs_n=$((2 * P))
# The longest wait against the holds before it: the k-th grant (0 from the
# first) waited at most k holds and what rlock adds per hand-off.
worst=$(sort -n "$tmp/grants" | awk -v h="$HOLD" '
	{ w = $1 - $2; k = NR - 1; over = w - k * h * 1000; if (over > m) m = over }
	END { printf "%d", m }')
echo "pairs: $runs_n runs of $P pairs, hold ${HOLD}s: all ended in ${wall}ms" \
	"(holds alone: $(awk -v n="$runs_n" -v h="$HOLD" 'BEGIN { printf "%d", n * h * 1000 }')ms);" \
	"the longest wait exceeded the holds before it by ${worst}ms;" \
	"$(awk -v c=$((c1 - c0)) -v n="$runs_n" 'BEGIN { printf "%.1f", c / n }') scripts per run"

# 2: mixed.
: >"$tmp/cmds"
RANDOM=35
declare -A busy=([x]=0 [y]=0 [z]=0)
sets=("x" "y" "z" "x --with y" "y --with z" "z --with x")
for ((i = 0; i < N; i++)); do
	s=${sets[RANDOM % 6]}
	for n in $s; do [[ $n == --with ]] || busy[$n]=$((busy[$n] + 1)); done
	echo "$RLOCK run -w 300s $s -- sleep $HOLD" >>"$tmp/cmds"
done
most=0
for n in x y z; do ((busy[$n] > most)) && most=${busy[$n]}; done
read -r c0 _ < <(script_stats)
wall=$(runs)
read -r c1 _ < <(script_stats)
bound=$(awk -v m="$most" -v h="$HOLD" 'BEGIN { printf "%d", m * h * 1000 }')
echo "mixed: $N requests on x, y, z (x ${busy[x]}, y ${busy[y]}, z ${busy[z]} holds), hold ${HOLD}s:" \
	"drained in ${wall}ms; the busiest name's holds alone ${bound}ms" \
	"(ratio $(awk -v w="$wall" -v b="$bound" 'BEGIN { printf "%.2f", w / b }'));" \
	"$(awk -v c=$((c1 - c0)) -v n="$N" 'BEGIN { printf "%.1f", c / n }') scripts per request"
mixed=$wall
sed -i -E "s|run -w 300s ([xyz]) --with ([xyz]) -- sleep $HOLD|run -w 300s \\1 -- sleep $HOLD; $RLOCK run -w 300s \\2 -- sleep $HOLD|" "$tmp/cmds"
wall=$(runs)
echo "mixed, one name at a time: drained in ${wall}ms (the sets' drain is" \
	"$(awk -v a="$mixed" -v b="$wall" 'BEGIN { printf "%.2f", a / b }') of it)"

# 3: singles.
: >"$tmp/cmds"
for ((i = 0; i < 2 * P; i++)); do
	echo "$RLOCK run -w 300s a -- sleep $HOLD" >>"$tmp/cmds"
done
read -r c0 _ < <(script_stats)
wall=$(runs)
read -r c1 _ < <(script_stats)
echo "singles: $((2 * P)) runs of one name, hold ${HOLD}s: all ended in ${wall}ms;" \
	"$(awk -v c=$((c1 - c0)) -v n=$((2 * P)) 'BEGIN { printf "%.1f", c / n }') scripts per run"
