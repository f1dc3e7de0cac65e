#!/usr/bin/env bash
# failover-modes.sh - issue 33's measurement: tests/stress/failover.sh in
# four modes, one after another, with the same seed (so the same chaos in
# the same order), with the settings of the issue's harness, and one
# markdown table with a column per mode.
#
#   bench/failover-modes.sh [--duration SECS] [--seed N] [--every SECS]
#	[--dir DIR] [other failover.sh options]
#
# The modes: Redis's own replication defaults (7.0: diskless sync after a
# 5s repl-diskless-sync-delay) and --repl-delay 0, each plain and with
# --wait-replicas 1.  The settings: a master, two replicas and three
# sentinels (down-after 1000ms, failover-timeout 4000ms, parallel-syncs 1,
# the default sentinel periods), no persistence, 4 workers looping `rlock
# run -t 3s -w 10s` around 200ms fenced sections, every kind of chaos
# action (failover, kill, stop, restart) every --every (8) seconds, on a
# timer (--settle 0: due is due, settled or not; a killed master comes back
# empty as a replica of the new one).  Options after these go to every
# run and win (e.g. --settle 60 to act only on a healthy set).  Defaults:
# 120s per mode, a random seed (printed).
#
# Each mode's --json, table and details go to DIR (default: a new
# /tmp/rlfailover-modes.XXXXXX, printed).  Prints the table on stdout,
# then the distinct messages of the runs that exited 69 or 75 per mode.
# Exits 0 when every mode ran and passed, 1 when one counted a stale write
# accepted or a rightful write refused, 2 when one could not run.  Runs
# ./build/rlock of this tree (built if missing); make test never runs this.

set -u
cd "$(dirname "$0")/.." || exit 2

duration=120 seed=$RANDOM every=8 dir=''
extra=()
while (($# > 0)); do
	case $1 in
	--duration | --seed | --every | --dir)
		(($# >= 2)) || {
			echo "failover-modes.sh: $1 needs a value" >&2
			exit 2
		}
		;;
	esac
	case $1 in
	--duration) duration=$2 && shift ;;
	--seed) seed=$2 && shift ;;
	--every) every=$2 && shift ;;
	--dir) dir=$2 && shift ;;
	-h | --help)
		sed -n '2,/^$/s/^# \{0,1\}//p' "$0"
		exit 0
		;;
	*) extra+=("$1") ;;
	esac
	shift
done
if [[ -z $dir ]]; then
	dir=$(mktemp -d /tmp/rlfailover-modes.XXXXXX) || exit 2
else
	mkdir -p "$dir" || exit 2
fi
[[ -x ./build/rlock ]] || make -s build/rlock >&2 || exit 2

say() { printf 'failover-modes: %s\n' "$*" >&2; }

# name, then the options that make the mode.
MODES=(
	"delay-default:--repl-delay default"
	"delay-default-wr1:--repl-delay default --wait-replicas 1"
	"delay-0:--repl-delay 0"
	"delay-0-wr1:--repl-delay 0 --wait-replicas 1"
)
say "seed $seed, ${duration}s per mode, every ${every}s; files in $dir"
worst=0
names=()
for m in "${MODES[@]}"; do
	name=${m%%:*}
	read -r -a opts <<<"${m#*:}"
	cmd=(tests/stress/failover.sh --duration "$duration" --seed "$seed"
		--workers 4 --ttl 3s --wait 10s --section-ms 200 --every "$every"
		--settle 0 --sentinel-periods default
		--chaos "failover,kill,stop,restart" "${opts[@]}" "${extra[@]}"
		--json "$dir/$name.json")
	echo "${cmd[*]}" >"$dir/$name.cmd"
	say "${cmd[*]}"
	"${cmd[@]}" >"$dir/$name.out" 2>"$dir/$name.err"
	st=$?
	echo "$st" >"$dir/$name.status"
	((st > worst)) && worst=$st
	if [[ -s $dir/$name.json ]]; then
		names+=("$name")
		say "$name: exit $st, $(grep -m1 '^chaos every' "$dir/$name.out")"
	else
		say "$name: exit $st, no result: $(tail -n 3 "$dir/$name.err")"
	fi
done
((${#names[@]} > 0)) || exit 2

python3 -I -S - "$dir" "${names[@]}" <<'PYEOF'
import json, os, sys

d, names = sys.argv[1], sys.argv[2:]
runs = [json.load(open(os.path.join(d, n + ".json"))) for n in names]
KINDS = ("failover", "kill", "stop", "restart")

def title(r):
    t = "delay %s" % ("5 s (default)" if r["repl_delay"] == "default" else r["repl_delay"])
    return t + (", `--wait-replicas %d`" % r["wait_replicas"] if r["wait_replicas"] else ", plain")

def t(v):
    if v is None or v == "":
        return "-"
    return "%.2f s" % (v / 1000) if v >= 1000 else "%d ms" % v

def mm(r, key):
    return "%s / %s" % (t(r[key + "_median"]), t(r[key + "_max"]))

rows = [
    ("chaos actions: failover / kill / stop / restart",
     lambda r: " / ".join(str(r["chaos_" + k]) for k in KINDS)),
    ("actions came every, median / max", lambda r: mm(r, "act_interval_ms")),
    ("sections run", lambda r: str(r["sections"])),
    ("**exits 69 / 75 / 76**", lambda r: "**%d / %d / %d**" % (r["exit_69"], r["exit_75"], r["exit_76"])),
]
for k in KINDS + ("none",):
    rows.append(("  after %s" % (k if k != "none" else "no action yet"),
                 lambda r, k=k: " / ".join(str(r["exit_%d_after_%s" % (rc, k)]) for rc in (69, 75, 76))))
rows.append(("**no holder after an action, median / max**", lambda r: "**%s**" % mm(r, "nohold_ms")))
for k in KINDS:
    rows.append(("  after %s" % k, lambda r, k=k: mm(r, "nohold_after_%s_ms" % k)))
rows.append(("replicas online again after an action, median / max (not before the next)",
             lambda r: "%s (%d)" % (mm(r, "resync_ms"), r["resync_missing"])))
for k in KINDS:
    rows.append(("  after %s" % k, lambda r, k=k: mm(r, "resync_after_%s_ms" % k)))
rows.append(("a replica online again after an action (what `--wait-replicas 1` waits for), median / max (not before the next)",
             lambda r: "%s (%d)" % (mm(r, "resync1_ms"), r["resync1_missing"])))
for k in KINDS:
    rows.append(("  after %s" % k, lambda r, k=k: mm(r, "resync1_after_%s_ms" % k)))
rows += [
    ("no holder after the new master takes writes, median / max", lambda r: mm(r, "gap_ms")),
    ("two holders at once (pairs): failover / kill / stop / restart",
     lambda r: "%d: %s" % (r["overlap_pairs"], " / ".join(str(r["overlap_after_%s_pairs" % k]) for k in KINDS))),
    ("stale writes accepted", lambda r: str(r["stale_accepted"])),
    ("rightful writes refused", lambda r: str(r["rightful_rejected"])),
    ("exits other than 0/69/75/76, runs hung", lambda r: "%d, %d" % (r["exit_other"], r["hung"])),
]
print("| | " + " | ".join(title(r) for r in runs) + " |")
print("|---|" + "---:|" * len(runs))
for name, f in rows:
    print("| %s | %s |" % (name.replace("  ", "&nbsp;&nbsp;"), " | ".join(f(r) for r in runs)))
for n, r in zip(names, runs):
    ms = [m for m in r.get("messages", []) if m["exit"] in (69, 75)]
    print()
    print("%s: %s" % (title(r), "no exit 69 or 75" if not ms else "the messages of the runs that exited 69 or 75"))
    for m in ms:
        print("    %d: %d x %s" % (m["exit"], m["count"], m["message"]))
PYEOF
exit "$worst"
