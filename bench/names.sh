#!/usr/bin/env bash
# names.sh - what a name costs the server (issue 46, item 3), before and
# after its history was copied to its size and its :grant record given the
# lock's expiry, on a private redis-server on a free loopback port that it
# starts and stops by PID:
#
#   names     NAMES names each run once ("rlock run -q name-I -- true"):
#             INFO memory's used_memory before and after, divided by NAMES;
#             the keys left (DBSIZE) and those without an expiry (PTTL -1);
#   keys      MEMORY USAGE of each key of one of them;
#   runs      MEMORY USAGE of a name's keys after 10 and after 100 runs;
#   nocopy    the same NAMES run by an ACL user with docs/servers.md's rule
#             less +copy +rename (after only): what the shrink buys.
#
#   BEFORE=/path/to/old/rlock bench/names.sh [NAMES]
#
# BEFORE defaults to a build of the commit before lib/scripts/shrink.lua
# came, made from `git archive` in a temporary directory.  NAMES defaults
# to 2000.  Prints the figures as the tables of bench/RESULTS-names.md.

set -u
cd "$(dirname "$0")/.." || exit 1

NAMES=${1:-2000}
AFTER=${AFTER:-$PWD/build/rlock}
tmp=$(mktemp -d)
who=names.sh
# shellcheck source=bench/private-redis.sh
. bench/private-redis.sh
trap stop_server EXIT

[[ -x $AFTER ]] || make -s build/rlock || exit 1
if [[ -z ${BEFORE:-} ]]; then
	base=$(git log --format=%H --diff-filter=A -- lib/scripts/shrink.lua | tail -n 1)
	mkdir -p "$tmp/before"
	git archive "$base^" | tar -x -C "$tmp/before" || exit 1
	make -s -C "$tmp/before" build/rlock >/dev/null || exit 1
	BEFORE=$tmp/before/build/rlock
	echo "before: $(git log -1 --format='%h %s' "$base^" | cut -c1-72)"
fi
start_server || exit 1
url="redis://127.0.0.1:$port"

cli() { redis-cli -h 127.0.0.1 -p "$port" "$@"; }
used() { cli INFO memory | tr -d '\r' | sed -n 's/^used_memory://p'; }
# no_expiry PATTERN: how many keys PATTERN matches that have no expiry.
no_expiry() {
	cli EVAL "local n = 0
for _, k in ipairs(redis.call('KEYS', ARGV[1])) do
  if redis.call('PTTL', k) == -1 then n = n + 1 end
end
return n" 0 "$1"
}
# usage NAME: "key bytes" for each key of lock NAME, and their sum.
usage() {
	local k b sum=0
	for k in $(cli --scan --pattern "rlock:{$1}*" | sort); do
		b=$(cli MEMORY USAGE "$k" SAMPLES 0)
		sum=$((sum + b))
		printf '| `%s` | %s | %s |\n' "$k" "$b" "$(cli PTTL "$k")"
	done
	printf '| all | %s | |\n' "$sum"
}

# names LABEL RLOCK URL: NAMES names run once; one table row.
names() {
	local label=$1 rl=$2 u=$3 b a i
	cli FLUSHALL >/dev/null
	cli MEMORY PURGE >/dev/null 2>&1
	b=$(used)
	for ((i = 1; i <= NAMES; i++)); do
		"$rl" -u "$u" run -q "name-$i" -- true || exit 1
	done
	a=$(used)
	printf '| %s | %s | %s | %s | %s | %s |\n' "$label" "$NAMES" "$((a - b))" \
		"$(((a - b) / NAMES))" "$(cli DBSIZE)" "$(no_expiry 'rlock:*')"
}

# runs RLOCK N: one name run N times, its keys.
runs() {
	local i
	cli FLUSHALL >/dev/null
	for ((i = 0; i < $2; i++)); do "$1" -u "$url" run -q "r$2" -- true || exit 1; done
	usage "r$2"
}

echo "server: $(redis-server --version | cut -d' ' -f3), $NAMES names"
echo
echo '| build | names | used_memory grew by | per name | keys left | without expiry |'
echo '|---|---|---|---|---|---|'
names before "$BEFORE" "$url"
names after "$AFTER" "$url"
rule=$(grep -E '^ACL SETUSER app on >secret ' docs/servers.md | head -n 1)
read -r -a words <<<"$rule"
words[2]=nocopy
cli "${words[@]}" -copy -rename >/dev/null || exit 1
names "after, no +copy +rename" "$AFTER" "redis://nocopy:secret@127.0.0.1:$port"
for b in before after; do
	rl=$BEFORE
	[[ $b == after ]] && rl=$AFTER
	echo
	echo "$b: one name run once, then ten times, then a hundred"
	echo
	echo '| key | MEMORY USAGE | PTTL |'
	echo '|---|---|---|'
	cli FLUSHALL >/dev/null
	"$rl" -u "$url" run -q once -- true || exit 1
	usage once
	runs "$rl" 10
	runs "$rl" 100
done
