#!/usr/bin/env bash
# seckill.sh - the flash-sale ("seckill") oversell scenario: many buyers,
# few items, one lock.  Each buyer runs
#
#	rlock run seckill -- buy
#
# where buy reads the stock, and if some is left writes it back one lower
# and records the sale: a read-modify-write that oversells without mutual
# exclusion.  With rlock exactly ITEMS are sold and the stock never goes
# below zero.
#
#   examples/seckill.sh [--buyers N] [--items M] [--url redis://HOST:PORT]
#                       [--no-lock]
#
# Defaults: 1000 buyers, 100 items, and a private redis-server on a free
# loopback port (give --url to use yours: it writes the keys seckill:*).
# --no-lock runs the same buyers without rlock, to show the oversell.
# Exits 0 when exactly ITEMS were sold and the stock never went negative.

set -u
buyers=1000 items=100 url='' lock=1
while (($# > 0)); do
	case $1 in
	--buyers) buyers=$2 && shift ;;
	--items) items=$2 && shift ;;
	--url) url=$2 && shift ;;
	--no-lock) lock=0 ;;
	-h | --help)
		sed -n '2,/^$/s/^# \{0,1\}//p' "$0"
		exit 0
		;;
	*)
		echo "seckill: unknown option '$1'" >&2
		exit 2
		;;
	esac
	shift
done

here=$(cd "$(dirname "$0")" && pwd)
RLOCK=${RLOCK:-$here/../build/rlock}
command -v "$RLOCK" >/dev/null || RLOCK=rlock
work=$(mktemp -d /tmp/seckill.XXXXXX) || exit 2
server_pid=
cleanup() {
	[[ -n $server_pid ]] && kill "$server_pid" 2>/dev/null
	rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 2' INT TERM

if [[ -z $url ]]; then
	for ((try = 0; try < 20; try++)); do
		port=$((20000 + (RANDOM * 32768 + RANDOM) % 12000))
		redis-server --bind 127.0.0.1 --port "$port" --save '' \
			--appendonly no --dir "$work" --maxclients 4000 \
			</dev/null >"$work/redis.log" 2>&1 &
		server_pid=$!
		for ((i = 0; i < 100; i++)); do
			[[ $(redis-cli -p "$port" PING 2>/dev/null) == PONG ]] && break 2
			kill -0 "$server_pid" 2>/dev/null || break
			sleep 0.05
		done
		kill "$server_pid" 2>/dev/null
		server_pid=
	done
	[[ -n $server_pid ]] || {
		echo "seckill: cannot start redis-server" >&2
		exit 2
	}
	url=redis://127.0.0.1:$port
fi
host=${url#redis://}
host=${host%%/*}
port=${host##*:}
host=${host%:*}
r() { redis-cli -h "$host" -p "$port" "$@"; }

r DEL seckill:stock seckill:sales >/dev/null
r SET seckill:stock "$items" >/dev/null

# One purchase: read, decide, write back.  Not atomic on purpose.
cat >"$work/buy" <<BUY
#!/bin/sh
r() { redis-cli -h '$host' -p '$port' "\$@"; }
stock=\$(r GET seckill:stock)
if [ "\$stock" -gt 0 ]; then
	r SET seckill:stock \$((stock - 1)) >/dev/null
	r RPUSH seckill:sales "\$1 \$((stock - 1))" >/dev/null
fi
BUY
chmod +x "$work/buy"

start=$(date +%s%N)
pids=()
for ((b = 1; b <= buyers; b++)); do
	if ((lock)); then
		"$RLOCK" -u "$url" run -t 10s -w 600s seckill -- "$work/buy" "$b" \
			</dev/null 2>>"$work/errors" &
	else
		"$work/buy" "$b" </dev/null 2>>"$work/errors" &
	fi
	pids+=($!)
done
failed=0
for pid in "${pids[@]}"; do
	wait "$pid" || failed=$((failed + 1))
done
ms=$((($(date +%s%N) - start) / 1000000))

sold=$(r LLEN seckill:sales)
stock=$(r GET seckill:stock)
r LRANGE seckill:sales 0 -1 >"$work/sales"
lowest=$(cut -d' ' -f2 "$work/sales" | sort -n | head -n 1)
units=$(cut -d' ' -f2 "$work/sales" | sort -n | uniq | wc -l)
echo "buyers $buyers, items $items, $( ((lock)) && echo "one rlock" || echo "no lock"):" \
	"sold $sold, stock left $stock, lowest stock after a sale ${lowest:-none}," \
	"distinct units sold $units, failed buyers $failed, ${ms}ms"
if [[ -s $work/errors ]]; then
	echo "errors:" >&2
	sort "$work/errors" | uniq -c | head -n 5 >&2
fi
if ((sold == items && stock == 0 && units == items && ${lowest:-0} >= 0 && failed == 0)); then
	echo "ok: exactly $items sold, the stock never went negative"
	exit 0
fi
echo "OVERSOLD or wrong: expected exactly $items sales and no negative stock"
exit 1
