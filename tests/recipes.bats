#!/usr/bin/env bats
# recipes.bats - every recipe of README.md, docs/cron.md, docs/ci.md and
# docs/scripts.md, run as it is written there against a private server,
# doing what the text around it promises: a cron line run on two hosts runs
# the job once; a CI deploy goes in turn, newest first, a hotfix ahead, and
# gives its lock back when the job is cancelled; a script's section leaves
# nothing held after kill -TERM or kill -9 and its history records a killed
# script as a failure.
#
# A recipe is a fenced block (```sh, ```crontab, ```yaml, ```groovy, ```ini) taken
# from the file at run time by a marker text it holds (recipe FILE LANG
# MARKER).  Only two things are put in: the server (RLOCK_URL, and the TLS
# files of the TLS crontab) and the jobs a recipe names (./report.sh,
# ./deploy.sh, make, tar...), which are stubs in the test's directory and
# on PATH: each logs its start and end to jobs.log and can be held, failed
# and told apart (see stub).  The first test checks that every such block
# of those files is run by some test here, or is listed as no recipe.

bats_require_minimum_version 1.5.0
load test_helper
load tls_helper

DOCS=(README.md docs/cron.md docs/ci.md docs/scripts.md)

# Blocks that are not recipes (FILE:MARKER), and why.
NOT_RECIPES=(
	"README.md:make deb " # installing: tests/package.bats
	"README.md:make deps " # building from source: make test itself
	"README.md:make demo " # for contributors: make demo and make test
)

setup_file() {
	rl_setup_file
	# Two hosts: a UTS namespace of its own per host where one can be
	# made (the history then names them), else two processes.
	if unshare -u true 2>/dev/null; then
		export T_HOSTS=1
	else
		export T_HOSTS=0
	fi
}

setup() {
	rl_setup
	mkdir -p bin
	export PATH="$BATS_TEST_TMPDIR/bin:${RLOCK%/*}:$PATH"
	: >jobs.log
	# on-host HOST COMMAND...: run COMMAND as if on host HOST.
	cat >bin/on-host <<'EOF'
#!/bin/sh
host=$1
shift
if [ "$T_HOSTS" = 1 ]; then
	exec unshare -u sh -c 'hostname "$1" && shift && exec "$@"' sh "$host" "$@"
fi
exec "$@"
EOF
	chmod +x bin/on-host
}

# next_prefix TAG: a prefix of its own for the next round of a test that
# runs a recipe of several files, once the last round's rlock processes
# (renewers) are gone.
next_prefix() {
	wait_until 5 no_rlock_pids
	export RLOCK_PREFIX="t${BATS_TEST_NUMBER}.$$.$RANDOM.$1:"
}

# ---- recipes and stubs -------------------------------------------------------

# blocks FILE: every fenced block of FILE with a language, as LANG, a tab,
# the block's text with its newlines as \x01, one block a line.
blocks() {
	awk '
		/^```[a-z]+$/ && !inblock { inblock = 1; lang = substr($0, 4); block = ""; next }
		/^```$/ && inblock { inblock = 0; printf "%s\t%s\n", lang, block; next }
		inblock { block = block $0 "\001" }' "$REPO_DIR/$1"
}

# recipe FILE LANG MARKER: the one LANG block of FILE that holds MARKER
# (in which \n stands for a newline).
recipe() {
	local file=$1 lang=$2 marker=${3//'\n'/$'\001'} l b n=0 found
	while IFS=$'\t' read -r l b; do
		[[ $l == "$lang" && $b == *"$marker"* ]] || continue
		found=$b
		n=$((n + 1))
	done < <(blocks "$file")
	if ((n != 1)); then
		echo "$file has $n $lang blocks with '$marker' (want 1)" >&2
		return 1
	fi
	printf '%s' "${found//$'\001'/$'\n'}"
}

# recipe_line FILE LANG MARKER WORD: the line of that block holding WORD.
recipe_line() {
	local text line
	text=$(recipe "$1" "$2" "$3") || return 1
	line=$(grep -F -- "$4" <<<"$text") || {
		echo "$1: the $2 block with '$3' has no line with '$4'" >&2
		return 1
	}
	[[ $(wc -l <<<"$line") == 1 ]] || {
		echo "$1: the $2 block with '$3' has several lines with '$4'" >&2
		return 1
	}
	printf '%s\n' "$line"
}

# stub PATH: an executable job at PATH (./deploy.sh, bin/make...).  Each
# run appends "NAME start TAG ARGS" and "NAME end TAG STATUS" to jobs.log
# (TAG: $JOB, the simulated job or host, "-" when unset) and writes its pid
# to NAME.pid.  While NAME.hold exists it waits (up to 30s) for NAME.go or
# NAME.go.TAG; with NAME.nointr it ignores SIGINT.  Its status is that in
# NAME.fail-once (read once, then removed), else NAME.exit, else 0.
stub() {
	local path=$1 name=${1##*/}
	cat >"$path" <<EOF
#!/bin/sh
d='$BATS_TEST_TMPDIR'
n='$name'
tag=\${JOB:--}
[ -e "\$d/\$n.nointr" ] && trap '' INT
echo \$\$ >"\$d/\$n.pid"
echo "\$n start \$tag \$*" >>"\$d/jobs.log"
if [ -e "\$d/\$n.hold" ]; then
	i=0
	while [ ! -e "\$d/\$n.go" ] && [ ! -e "\$d/\$n.go.\$tag" ] && [ \$i -lt 1500 ]; do
		sleep 0.02
		i=\$((i + 1))
	done
fi
st=0
if [ -e "\$d/\$n.fail-once" ]; then
	st=\$(cat "\$d/\$n.fail-once")
	rm -f "\$d/\$n.fail-once"
elif [ -e "\$d/\$n.exit" ]; then
	st=\$(cat "\$d/\$n.exit")
fi
echo "\$n end \$tag \$st" >>"\$d/jobs.log"
exit \$st
EOF
	chmod +x "$path"
}

# starts NAME: how many times job NAME started.
starts() {
	grep -c "^$1 start " jobs.log || true
}

# started NAME [TAG]: job NAME has started (as TAG).
started() {
	grep -q "^$1 start ${2:-}" jobs.log
}

# job_order NAME: the tags of NAME's starts, in order, space-separated.
job_order() {
	awk -v n="$1" '$1 == n && $2 == "start" { printf "%s%s", sep, $3; sep = " " }' jobs.log
}

# no_overlap: no job started while another one ran (every start is
# followed by its own end before the next start).
no_overlap() {
	awk '
		$2 == "start" { if (open != "") { print "overlap: " $0 " while " open; bad = 1 } open = $1 " " $3 }
		$2 == "end" { open = "" }
		END { exit bad }' jobs.log
}

# cron_env BLOCK VAR=VALUE...: the block's environment lines, each VAR
# replaced by the VALUE given (every VAR of the block must be given one: a
# recipe's server or file names are not this machine's), as export lines.
cron_env() {
	local block=$1 line var
	shift
	local -A put=()
	for line in "$@"; do
		put[${line%%=*}]=${line#*=}
	done
	while IFS= read -r line; do
		[[ $line =~ ^([A-Z_]+)= ]] || continue
		var=${BASH_REMATCH[1]}
		[[ -v put[$var] ]] || {
			echo "the crontab sets $var, which the test does not replace" >&2
			return 1
		}
		printf 'export %s=%q\n' "$var" "${put[$var]}"
	done <<<"$block"
}

# cron_cmd BLOCK: the command of the block's one schedule line (the line
# without its five time fields).
cron_cmd() {
	local lines
	lines=$(grep -E '^[0-9*/,-]+ +[0-9*/,-]+ +[0-9*/,-]+ +[0-9*/,-]+ +[0-9*/,-]+ ' <<<"$1")
	[[ -n $lines && $(wc -l <<<"$lines") == 1 ]] || {
		echo "want one schedule line in: $1" >&2
		return 1
	}
	sed -E 's/^([^ ]+ +){5}//' <<<"$lines"
}

# cron_script FILE MARKER VAR=VALUE...: cron.sh, the crontab block of FILE
# with MARKER as cron runs it: its environment, then its command by sh.
cron_script() {
	local file=$1 marker=$2 block env cmd
	shift 2
	block=$(recipe "$file" crontab "$marker") || return 1
	env=$(cron_env "$block" "$@") || return 1
	cmd=$(cron_cmd "$block") || return 1
	printf '%s\n%s\n' "$env" "$cmd" >cron.sh
}

# ---- the recipes are run ----------------------------------------------------

@test "recipes: every sh, crontab, yaml, groovy and ini block of the README and the three guides is run here, or listed as no recipe" {
	local f l b marker m ok bad=0
	local -a markers=()
	# The markers this file runs: the third argument of each recipe,
	# recipe_line and cron_script call ("recipe FILE LANG 'MARKER'").
	mapfile -t markers < <(grep -oE "(recipe|recipe_line|cron_script) [^ ]+ ([a-z]+ )?'[^']+'" \
		"$BATS_TEST_FILENAME" | sed -E "s/^[a-z_]+ ([^ ]+) ([a-z]+ )?'(.*)'$/\1:\3/")
	[[ ${#markers[@]} -gt 10 ]]
	for f in "${DOCS[@]}"; do
		[[ -f $REPO_DIR/$f ]] || { echo "no $f"; bad=1; continue; }
		while IFS=$'\t' read -r l b; do
			case $l in sh | crontab | yaml | groovy | ini) ;; *) continue ;; esac
			ok=0
			for marker in "${markers[@]}" "${NOT_RECIPES[@]}"; do
				# "$f", "$1": a recipe of several files.
				[[ ${marker%%:*} == "$f" || ${marker%%:*} == '"'* ]] || continue
				m=${marker#*:}
				[[ $b == *"${m//'\n'/$'\001'}"* ]] && ok=1
			done
			if ((!ok)); then
				echo "$f: no test runs this $l block: ${b//$'\001'/$'\n'}"
				bad=1
			fi
		done < <(blocks "$f")
	done
	((bad == 0))
}

# -- cron ----------------------------------------------------------------------

# clear_of_day_end: not within 10s of the end of the server's UTC day, so
# that two runs of a --once-per 1d recipe fall in one period.
clear_of_day_end() {
	local now
	now=$(rcli R TIME | head -n 1)
	if ((now % 86400 > 86390)); then
		wait_until 15 day_began
	fi
}
day_began() {
	local now
	now=$(rcli R TIME | head -n 1)
	((now % 86400 < 86390))
}

@test "recipes: the cron line (README, cron.md), run on two hosts one after the other, runs the report once; the second skips it quietly" {
	local f
	for f in README.md docs/cron.md; do
		next_prefix "${f//[\/.]/_}"
		: >jobs.log
		stub ./report.sh
		cron_script "$f" '6379\n0 2 * * *  rlock run -q --once-per 1d -w 30m nightly-report' "RLOCK_URL=$R_URL"
		clear_of_day_end
		run -0 --separate-stderr on-host web1 sh cron.sh
		assert_output ""
		assert_equal "$stderr" ""
		run -75 --separate-stderr on-host web2 sh cron.sh
		assert_output ""
		assert_equal "$stderr" ""
		assert_equal "$(starts report.sh)" 1
		assert_equal "$(hist_names nightly-report)" "acquired released skipped"
		lock_free nightly-report
		if ((T_HOSTS)); then
			run -0 "$RLOCK" log nightly-report
			assert_line --index 0 --regexp 'acquired +[^ ]+@web1 '
			assert_line --index 2 --regexp 'skipped +[^ ]+@web2 .*\(done this period by [^ ]+@web1 pid [0-9]+\)'
		fi
	done
}

@test "recipes: the cron line: when the report fails on the first host, the second runs it; a third skips it" {
	stub ./report.sh
	echo 3 >report.sh.fail-once
	cron_script README.md '6379\n0 2 * * *  rlock run -q --once-per 1d -w 30m nightly-report' "RLOCK_URL=$R_URL"
	clear_of_day_end
	run -3 on-host web1 sh cron.sh
	run -0 on-host web2 sh cron.sh
	run -75 on-host web3 sh cron.sh
	assert_equal "$(starts report.sh)" 2
	run -0 "$RLOCK" last nightly-report
	assert_output --regexp '^nightly-report: last run ended .*: exit 0 after '
}

@test "recipes: the cron line on two hosts at once: the second waits in line, and leaves it when the first succeeds; runs the report when it fails" {
	local a b
	stub ./report.sh
	cron_script README.md '6379\n0 2 * * *  rlock run -q --once-per 1d -w 30m nightly-report' "RLOCK_URL=$R_URL"
	clear_of_day_end
	# The first host's report succeeds: the waiter skips it.
	: >report.sh.hold
	JOB=a bg_start a on-host web1 sh cron.sh
	a=$BG_PID
	wait_until 5 started report.sh a
	JOB=b bg_start b on-host web2 sh cron.sh
	b=$BG_PID
	wait_until 5 has_waiters nightly-report 1
	: >report.sh.go
	bg_wait "$a" 10
	assert_equal "$BG_STATUS" 0
	bg_wait "$b" 10
	assert_equal "$BG_STATUS" 75
	assert_equal "$(job_order report.sh)" "a"
	run bg_err b
	assert_output ""
	# Another day (a new name): the first fails, the waiter runs it.
	next_prefix again
	rm -f report.sh.go
	: >jobs.log
	echo 1 >report.sh.fail-once
	JOB=a bg_start a2 on-host web1 sh cron.sh
	a=$BG_PID
	wait_until 5 started report.sh a
	JOB=b bg_start b2 on-host web2 sh cron.sh
	b=$BG_PID
	wait_until 5 has_waiters nightly-report 1
	: >report.sh.go
	bg_wait "$a" 10
	assert_equal "$BG_STATUS" 1
	bg_wait "$b" 10
	assert_equal "$BG_STATUS" 0
	assert_equal "$(job_order report.sh)" "a b"
	no_overlap
}

@test "recipes: cron.md's claim: -n on two hosts one after the other runs the report twice" {
	stub ./report.sh
	on-host web1 rlock run -q -n nightly-report -- ./report.sh
	on-host web2 rlock run -q -n nightly-report -- ./report.sh
	assert_equal "$(starts report.sh)" 2
	assert_equal "$(hist_names nightly-report)" "acquired released acquired released"
}

@test "recipes: cron.md's line with --max-time runs the report once on two hosts, and stops one that runs too long" {
	stub ./report.sh
	cron_script docs/cron.md '--max-time 1h nightly-report' "RLOCK_URL=$R_URL"
	grep -q -- '-w 2h --max-time 1h nightly-report -- ./report.sh$' cron.sh
	clear_of_day_end
	run -0 on-host web1 sh cron.sh
	run -75 on-host web2 sh cron.sh
	assert_equal "$(starts report.sh)" 1
}

@test "recipes: cron.md's history commands show the run and the skip; its --max-age crontab prints nothing after a success, a line after none" {
	stub ./report.sh
	cron_script docs/cron.md '30 8 * * *' "RLOCK_URL=$R_URL"
	grep -q '^rlock last --max-age 26h nightly-report$' cron.sh
	# No run yet: one line and exit 1, which cron mails.
	run -1 --separate-stderr sh cron.sh
	assert_output --regexp '^nightly-report: no successful run within 26h0m: last success never'
	cp cron.sh check.sh
	cron_script README.md '6379\n0 2 * * *  rlock run -q --once-per 1d -w 30m nightly-report' "RLOCK_URL=$R_URL"
	clear_of_day_end
	run -0 on-host web1 sh cron.sh
	run -75 on-host web2 sh cron.sh
	run -0 --separate-stderr sh check.sh
	assert_output ""
	assert_equal "$stderr" ""
	# The sh block, line by line.
	local log last
	log=$(recipe_line docs/cron.md sh 'rlock log nightly-report' 'rlock log')
	last=$(recipe_line docs/cron.md sh 'rlock log nightly-report' 'rlock last')
	run -0 sh -c "$log"
	assert_line --index 0 --regexp '  acquired  .* \./report\.sh$'
	assert_line --index 1 --regexp '  released  .*  exit 0$'
	assert_line --index 2 --regexp '  skipped   .*\(done this period by .*\)  \./report\.sh$'
	run -0 sh -c "$last"
	assert_output --regexp '^nightly-report: last run ended .*: exit 0 after '
	run -1 "$RLOCK" status nightly-report
	assert_line --regexp '^  done this period: .*, next period [0-9-]+ 00:00:00 UTC$'
}

@test "recipes: cron.md's TLS crontab, with its CA and a client certificate, runs the report once on two hosts" {
	start_redis_tls T --tls-auth-clients yes
	stub ./report.sh
	cron_script docs/cron.md 'RLOCK_URL=rediss://' "RLOCK_URL=$T_URL" \
		"RLOCK_CACERT=$CERTS/ca.crt" "RLOCK_CERT=$CERTS/client.crt" \
		"RLOCK_CERT_KEY=$CERTS/client.key"
	run -0 --separate-stderr on-host web1 sh cron.sh
	assert_equal "$stderr" ""
	run -75 on-host web2 sh cron.sh
	assert_equal "$(starts report.sh)" 1
	tlock_free nightly-report
	[[ $(rcli T XLEN "$(key nightly-report):log") == 3 ]]
	# The server asks for a client certificate: without it, no run.
	grep -v '^export RLOCK_CERT' cron.sh >nocert.sh
	run -69 sh nocert.sh
	assert_equal "$(starts report.sh)" 1
}

# -- a server, a deploy in turn ----------------------------------------------

@test "recipes: README's first example runs the command holding the lock and exits with its status" {
	local line
	line=$(recipe README.md sh 'rlock run -w 30m deploy -- ./deploy.sh')
	assert_equal "$(wc -l <<<"$line")" 1
	stub ./deploy.sh
	echo 3 >deploy.sh.exit
	run -3 sh -c "$line"
	assert_equal "$(starts deploy.sh)" 1
	lock_free deploy
	assert_equal "$(hist_names deploy)" "acquired released"
}

@test "recipes: README's server lines: RLOCK_URL names the server status asks" {
	local block
	block=$(recipe README.md sh 'export RLOCK_URL=')
	[[ $block == *'redis://redis.internal:6379'* ]]
	block=${block//redis:\/\/redis.internal:6379/$R_URL}
	bg_start h "$RLOCK" run held-now -- sleep 30
	wait_until 5 lock_held held-now
	unset RLOCK_URL
	run -0 sh -c "$block"
	assert_line --index 1 --regexp '^held-now +held '
}

@test "recipes: README's CI deploy: pipelines deploy in turn, in the order they started, each job's URL in status and the history" {
	local line h a b
	line=$(recipe README.md sh 'rlock run -w 30m --note "$CI_JOB_URL" deploy')
	stub ./deploy.sh
	: >deploy.sh.hold
	JOB=h CI_JOB_URL=https://ci.example/job/1 bg_start h sh -c "$line"
	h=$BG_PID
	wait_until 5 started deploy.sh h
	JOB=a CI_JOB_URL=https://ci.example/job/2 bg_start a sh -c "$line"
	a=$BG_PID
	wait_until 5 has_waiters deploy 1
	JOB=b CI_JOB_URL=https://ci.example/job/3 bg_start b sh -c "$line"
	b=$BG_PID
	wait_until 5 has_waiters deploy 2
	run -0 "$RLOCK" status deploy
	assert_line --index 2 '  note: https://ci.example/job/1'
	assert_line --index 3 --regexp '^  next: [^ ]+, waiting .*  \./deploy\.sh$'
	: >deploy.sh.go
	for pid in "$h" "$a" "$b"; do
		bg_wait "$pid" 10
		assert_equal "$BG_STATUS" 0
	done
	assert_equal "$(job_order deploy.sh)" "h a b"
	no_overlap
	run -0 "$RLOCK" log deploy
	assert_line --index 4 --regexp '  acquired  .*  note: https://ci\.example/job/3$'
}

# -- a section of a shell script ----------------------------------------------

# section FILE: the acquire recipe of FILE into section.sh.
section() {
	recipe "$1" sh 'token=$(rlock acquire --renew -w 5m db-migrate)' >section.sh
}

@test "recipes: the acquire section (README, scripts.md) releases the lock and records the script's status when it ends" {
	local f
	for f in README.md docs/scripts.md; do
		next_prefix "${f//[\/.]/_}"
		section "$f"
		stub ./migrate.sh
		rm -f migrate.sh.exit
		run -0 --separate-stderr bash section.sh
		assert_equal "$stderr" ""
		lock_free db-migrate
		run -0 "$RLOCK" last --max-age 1h db-migrate
		echo 3 >migrate.sh.exit
		run -3 --separate-stderr bash section.sh
		assert_equal "$stderr" ""
		lock_free db-migrate
		run -0 "$RLOCK" last db-migrate
		assert_output --regexp '^db-migrate: last run ended .*: exit 3 after '
	done
}

@test "recipes: the acquire section, sent SIGTERM or SIGINT with its command, exits 143 or 130, leaves nothing held and is recorded as a failure" {
	local f sig want pid
	for f in README.md docs/scripts.md; do
		for sig in TERM INT; do
			next_prefix "${f//[\/.]/_}$sig"
			want=143
			[[ $sig == INT ]] && want=130
			section "$f"
			stub ./migrate.sh
			: >migrate.sh.hold
			rm -f migrate.sh.pid
			bg_start s bash section.sh
			pid=$BG_PID
			wait_until 5 file_nonempty migrate.sh.pid
			lock_held db-migrate
			# The script's process group, as a terminal or timeout(1)
			# signals it: the script and its command.
			kill -"$sig" -- "-$pid"
			bg_wait "$pid" 10
			assert_equal "$BG_STATUS" "$want"
			lock_free db-migrate
			run -0 "$RLOCK" last db-migrate
			assert_output --regexp "^db-migrate: last run ended .*: exit $want after "
			run -1 "$RLOCK" last --max-age 1h db-migrate
		done
	done
}

# no_signal_pending PID: PID has taken every signal sent to it.
no_signal_pending() {
	local pnd
	pnd=$(awk '/^(SigPnd|ShdPnd):/ { print $2 }' "/proc/$1/status" | sort -u)
	[[ $pnd == 0000000000000000 ]]
}

@test "recipes: the acquire section, sent SIGTERM alone, keeps the lock until its command ends, then exits 143, released, recorded as a failure" {
	local pid
	section README.md
	stub ./migrate.sh
	: >migrate.sh.hold
	bg_start s bash section.sh
	pid=$BG_PID
	wait_until 5 file_nonempty migrate.sh.pid
	kill -TERM "$pid"
	# Bash runs the trap once the command has ended: the lock is held
	# meanwhile, the script still there.
	wait_until 5 no_signal_pending "$pid"
	pid_alive "$pid"
	lock_held db-migrate
	run -1 grep '^migrate.sh end' jobs.log
	: >migrate.sh.go
	bg_wait "$pid" 10
	assert_equal "$BG_STATUS" 143
	lock_free db-migrate
	run -0 "$RLOCK" last db-migrate
	assert_output --regexp '^db-migrate: last run ended .*: exit 143 after '
}

@test "recipes: the acquire section killed with kill -9: its renewer releases the lock at once and records the run as abandoned, a failure" {
	local f pid
	for f in README.md docs/scripts.md; do
		next_prefix "${f//[\/.]/_}"
		section "$f"
		stub ./migrate.sh
		: >migrate.sh.hold
		rm -f migrate.sh.pid
		bg_start s bash section.sh
		pid=$BG_PID
		wait_until 5 file_nonempty migrate.sh.pid
		track_pid "$(<migrate.sh.pid)"
		lock_held db-migrate
		kill -KILL "$pid"
		bg_wait "$pid" 5
		assert_equal "$BG_STATUS" 137
		# The renewer follows the script: it releases within a moment,
		# not at the end of a lease.
		wait_until 3 lock_free db-migrate
		assert_equal "$(hist_names db-migrate)" "acquired abandoned"
		run -0 "$RLOCK" last db-migrate
		assert_output --regexp '^db-migrate: last run ended .*: abandoned \(the process that held it ended without releasing\) after '
		run -1 "$RLOCK" last --max-age 1h db-migrate
		wait_until 5 no_rlock_pids
	done
}

@test "recipes: scripts.md's run -c runs its commands in order under the lock, and records a failure" {
	local line
	line=$(recipe docs/scripts.md sh 'rlock run -w 5m db-migrate -c')
	stub ./migrate.sh
	stub ./reindex.sh
	run -0 sh -c "$line"
	assert_equal "$(cut -d' ' -f1,2 jobs.log | tr '\n' ' ')" "migrate.sh start migrate.sh end reindex.sh start reindex.sh end "
	lock_free db-migrate
	: >jobs.log
	echo 4 >migrate.sh.exit
	run -4 sh -c "$line"
	assert_equal "$(starts reindex.sh)" 0
	run -0 "$RLOCK" last db-migrate
	assert_output --regexp ': exit 4 after '
}

# -- work that must stop when the lock is lost (scripts.md) -------------------

# backup_recipe: scripts.md's --on-lost term script into backup.sh, with a
# 3s lease (renewed every second, so a loss is found within one) instead of
# the default 30s.  Its tar is the stub on PATH.
backup_recipe() {
	local text
	text=$(recipe docs/scripts.md sh 'acquire --renew --on-lost term backup') || return 1
	[[ $text == *'rlock acquire --renew'* ]] || return 1
	printf '%s\n' "${text//'rlock acquire --renew'/'rlock acquire -t 3s --renew'}" >backup.sh
	stub bin/tar
}

@test "recipes: scripts.md's --on-lost term script stops its work within a second of the loss and exits 76, saying so" {
	local spid work
	backup_recipe
	: >tar.hold
	bg_start s bash backup.sh
	spid=$BG_PID
	wait_until 5 file_nonempty tar.pid
	work=$(<tar.pid)
	track_pid "$work"
	lock_held backup
	grep -q '^tar start - -czf /backup/home.tgz /home$' jobs.log
	# The lock is lost: the renewer finds it out at its next renewal.
	rcli R DEL "$(key backup)"
	wait_until 5 pid_gone "$work"
	bg_wait "$spid" 5
	assert_equal "$BG_STATUS" 76
	run bg_err s
	assert_line --index 0 --regexp '^rlock: release: backup: the lock was lost at .*: the token no longer holds it$'
	assert_equal "${#lines[@]}" 1
	lock_free backup
}

@test "recipes: scripts.md's --on-lost term script releases the lock with the work's status; a TERM stops the work and is recorded" {
	local spid
	backup_recipe
	run -0 --separate-stderr bash backup.sh
	assert_equal "$stderr" ""
	assert_output ""
	lock_free backup
	run -0 "$RLOCK" last --max-age 1h backup
	# A failed work: its status, the ERR trap's line, the lock released.
	echo 3 >tar.exit
	run -3 --separate-stderr bash backup.sh
	assert_stderr --regexp '^failed at line [0-9]+$'
	lock_free backup
	run -0 "$RLOCK" last backup
	assert_output --regexp '^backup: last run ended .*: exit 3 after '
	# SIGTERM to the script alone: the work is stopped at once.
	rm -f tar.exit tar.pid
	: >tar.hold
	bg_start s bash backup.sh
	spid=$BG_PID
	wait_until 5 file_nonempty tar.pid
	kill -TERM "$spid"
	wait_until 2 pid_gone "$(<tar.pid)"
	bg_wait "$spid" 5
	assert_equal "$BG_STATUS" 143
	lock_free backup
	run -0 "$RLOCK" last backup
	assert_output --regexp '^backup: last run ended .*: exit 143 after '
}

@test "recipes: scripts.md's --format env section takes, extends and releases the lock" {
	local block
	block=$(recipe docs/scripts.md sh 'acquire --format env')
	run -0 --separate-stderr bash -c "$block"
	assert_output --regexp '^lock report, fencing token [0-9]{16}$'
	assert_equal "$stderr" ""
	lock_free report
	assert_equal "$(hist_names report)" "acquired released"
}

# -- shared locks, semaphores, pools, sets ------------------------------------

@test "recipes: scripts.md's shared lock: backups together, the migration alone after them, a later backup after it" {
	local sh x b1 b2 m b3
	sh=$(recipe_line docs/scripts.md sh 'rlock run -s db' 'rlock run -s db')
	x=$(recipe_line docs/scripts.md sh 'rlock run -s db' 'rlock run -x db')
	stub ./backup.sh
	stub ./migrate.sh
	: >backup.sh.hold
	: >migrate.sh.hold
	JOB=1 bg_start b1 sh -c "$sh"
	b1=$BG_PID
	JOB=2 bg_start b2 sh -c "$sh"
	b2=$BG_PID
	wait_until 5 started backup.sh 1
	wait_until 5 started backup.sh 2
	bg_start m sh -c "$x"
	m=$BG_PID
	wait_until 5 has_waiters db 1
	JOB=3 bg_start b3 sh -c "$sh"
	b3=$BG_PID
	wait_until 5 has_waiters db 2
	: >backup.sh.go.1
	: >backup.sh.go.2
	bg_wait "$b1" 10
	bg_wait "$b2" 10
	wait_until 5 started migrate.sh
	assert_equal "$(starts backup.sh)" 2
	: >migrate.sh.go
	: >backup.sh.go.3
	bg_wait "$m" 10
	assert_equal "$BG_STATUS" 0
	bg_wait "$b3" 10
	assert_equal "$BG_STATUS" 0
	run -0 grep -n 'start' jobs.log
	assert_line --index 2 --regexp '^5:migrate\.sh start '
	assert_line --index 3 --regexp '^7:backup\.sh start 3'
}

@test "recipes: scripts.md's semaphore: four builds at once, a fifth waits for a free place" {
	local line i pids=()
	line=$(recipe docs/scripts.md sh 'rlock run -l 4 build-slots -- make')
	stub bin/make
	: >make.hold
	for i in 1 2 3 4; do
		JOB=$i bg_start "m$i" sh -c "$line"
		pids+=("$BG_PID")
		wait_until 5 started make "$i"
	done
	JOB=5 bg_start m5 sh -c "$line"
	pids+=("$BG_PID")
	wait_until 5 has_waiters build-slots 1
	assert_equal "$(starts make)" 4
	: >make.go.2
	wait_until 5 started make 5
	: >make.go
	for i in "${pids[@]}"; do
		bg_wait "$i" 10
		assert_equal "$BG_STATUS" 0
	done
}

@test "recipes: scripts.md's three test databases: three jobs at once get db0, db1 and db2" {
	local line i pids=()
	line=$(recipe docs/scripts.md sh 'rlock run -l 3 -w 30m test-dbs')
	stub ./integration.sh
	: >integration.sh.hold
	for i in 1 2 3; do
		JOB=$i bg_start "j$i" sh -c "$line"
		pids+=("$BG_PID")
		wait_until 5 started integration.sh "$i"
	done
	run -0 sh -c "awk '{ print \$4 }' jobs.log | sort"
	assert_output $'db0\ndb1\ndb2'
	: >integration.sh.go
	for i in "${pids[@]}"; do
		bg_wait "$i" 10
		assert_equal "$BG_STATUS" 0
	done
}

@test "recipes: the README's pool: two jobs at once get the two environments, a third waits; scripts.md's --count 2 gets both, then rm" {
	local add run_line i pids=()
	add=$(recipe README.md sh 'rlock pool envs add' | grep '^rlock pool envs add')
	run_line=$(recipe_line README.md sh 'rlock pool envs add' 'rlock run')
	run -0 sh -c "$add"
	stub ./e2e.sh
	: >e2e.sh.hold
	for i in 1 2; do
		JOB=$i bg_start "e$i" sh -c "$run_line"
		pids+=("$BG_PID")
		wait_until 5 started e2e.sh "$i"
	done
	run -0 sh -c "awk '{ print \$4 }' jobs.log | sort"
	assert_output $'https://a.staging.example\nhttps://b.staging.example'
	JOB=3 bg_start e3 sh -c "$run_line"
	pids+=("$BG_PID")
	wait_until 5 has_waiters envs 1
	assert_equal "$(starts e2e.sh)" 2
	: >e2e.sh.go.1
	wait_until 5 started e2e.sh 3
	: >e2e.sh.go
	for i in "${pids[@]}"; do
		bg_wait "$i" 10
		assert_equal "$BG_STATUS" 0
	done
	# scripts.md: two members at once, the list, a member removed.
	local count list rm
	count=$(recipe_line docs/scripts.md sh 'rlock run --pool envs --count 2' 'rlock run')
	list=$(recipe docs/scripts.md sh 'rlock run --pool envs --count 2' | grep -x 'rlock pool envs')
	rm=$(recipe_line docs/scripts.md sh 'rlock run --pool envs --count 2' 'rlock pool envs rm')
	stub ./compare.sh
	run -0 sh -c "$count"
	grep -q '^compare.sh start - https://a.staging.example https://b.staging.example$' jobs.log
	run -0 sh -c "$list"
	assert_line --index 1 --regexp '^staging-a +free +- +url=https://a\.staging\.example$'
	assert_line --index 2 --regexp '^staging-b +free '
	run -0 sh -c "$rm"
	run -0 sh -c "$list"
	refute_line --partial staging-b
}

@test "recipes: several locks at once (README, scripts.md): the two orders never deadlock and never overlap" {
	local f deploy migrate i d m
	for f in README.md docs/scripts.md; do
		next_prefix "${f//[\/.]/_}"
		: >jobs.log
		deploy=$(recipe_line "$f" sh 'db --with cache' 'db --with cache')
		migrate=$(recipe_line "$f" sh 'db --with cache' 'cache --with db')
		stub ./deploy.sh
		stub ./migrate.sh
		for i in 1 2 3; do
			bg_start "d$i" sh -c "$deploy"
			d=$BG_PID
			bg_start "m$i" sh -c "$migrate"
			m=$BG_PID
			bg_wait "$d" 10
			assert_equal "$BG_STATUS" 0
			bg_wait "$m" 10
			assert_equal "$BG_STATUS" 0
		done
		assert_equal "$(starts deploy.sh)" 3
		assert_equal "$(starts migrate.sh)" 3
		no_overlap
		lock_free db
		lock_free cache
	done
}

@test "recipes: README's who-holds-it lines: status shows the holder, log the runs, last the last run" {
	local st log last
	st=$(recipe_line README.md sh 'rlock status deploy' 'rlock status')
	log=$(recipe_line README.md sh 'rlock status deploy' 'rlock log')
	last=$(recipe_line README.md sh 'rlock status deploy' 'rlock last')
	stub ./deploy.sh
	stub ./report.sh
	"$RLOCK" run nightly-report -- ./report.sh
	: >deploy.sh.hold
	bg_start h "$RLOCK" run deploy -- ./deploy.sh
	wait_until 5 started deploy.sh
	run -0 sh -c "$st"
	assert_line --index 1 --regexp '^deploy +held .* \./deploy\.sh$'
	: >deploy.sh.go
	bg_wait "$BG_PID" 10
	run -1 sh -c "$st"
	run -0 sh -c "$log"
	assert_equal "${#lines[@]}" 2
	assert_line --index 0 --regexp '  acquired  '
	assert_line --index 1 --regexp '  released  .*  exit 0$'
	run -0 sh -c "$last"
	assert_output --regexp '^nightly-report: last run ended .*: exit 0 after '
}

# -- CI (ci.md) ----------------------------------------------------------------

# in_turn DEPLOY HOTFIX: a deploy runs; deploys A then B wait with
# --supersede: A gives way to B (75, saying so); a hotfix comes and goes
# before B.  DEPLOY and HOTFIX are the recipe's command lines.
in_turn() {
	local deploy=$1 hotfix=$2 h a b x
	stub ./deploy.sh
	: >deploy.sh.hold
	JOB=h RLOCK_NOTE=https://ci.example/job/h bg_start h bash -c "$deploy"
	h=$BG_PID
	wait_until 5 started deploy.sh h
	JOB=a RLOCK_NOTE=https://ci.example/job/a bg_start a bash -c "$deploy"
	a=$BG_PID
	wait_until 5 has_waiters deploy 1
	JOB=b RLOCK_NOTE=https://ci.example/job/b bg_start b bash -c "$deploy"
	b=$BG_PID
	bg_wait "$a" 5
	assert_equal "$BG_STATUS" 75
	run bg_err a
	assert_output --regexp '^rlock: run: deploy: superseded by [^ ]+:[0-9]+ \(\./deploy\.sh.*\)$'
	JOB=x RLOCK_NOTE=https://ci.example/job/x bg_start x bash -c "$hotfix"
	x=$BG_PID
	wait_until 5 has_waiters deploy 2
	: >deploy.sh.go
	for pid in "$h" "$x" "$b"; do
		bg_wait "$pid" 10
		assert_equal "$BG_STATUS" 0
	done
	assert_equal "$(job_order deploy.sh)" "h x b"
	no_overlap
	run -0 "$RLOCK" log deploy
	assert_line --regexp '  acquired  .*  note: https://ci\.example/job/x$'
}

@test "recipes: ci.md's GitLab jobs: one deploy at a time, the newest waiter first, the hotfix ahead, each job's URL kept" {
	local deploy hotfix
	deploy=$(recipe_line docs/ci.md yaml 'stage: deploy' '--supersede')
	hotfix=$(recipe_line docs/ci.md yaml 'stage: deploy' '--priority 10')
	recipe docs/ci.md yaml 'stage: deploy' | grep -qF 'RLOCK_NOTE: $CI_JOB_URL'
	in_turn "${deploy#*- }" "${hotfix#*- }"
}

@test "recipes: ci.md's --supersede and --priority lines: the newest waiter first, the hotfix ahead" {
	local deploy hotfix
	deploy=$(recipe_line docs/ci.md sh '"$CI_COMMIT_SHA"' '--supersede')
	hotfix=$(recipe_line docs/ci.md sh '"$CI_COMMIT_SHA"' '--priority 10')
	CI_COMMIT_SHA=v43 HOTFIX_SHA=v42.1 in_turn "$deploy" "$hotfix"
	grep -q '^deploy.sh start b v43$' jobs.log
	grep -q '^deploy.sh start x v42.1$' jobs.log
}

@test "recipes: ci.md's Jenkins step deploys holding the lock, with the build's URL" {
	local step
	step=$(recipe_line docs/ci.md groovy 'pipeline {' "sh '")
	step=${step#*sh \'}
	step=${step%\'*}
	recipe docs/ci.md groovy 'pipeline {' | grep -qF 'RLOCK_NOTE = "${env.BUILD_URL}"'
	stub ./deploy.sh
	RLOCK_NOTE=https://jenkins.example/job/7/ run -0 sh -c "$step"
	assert_equal "$(starts deploy.sh)" 1
	run -0 "$RLOCK" log deploy
	assert_line --index 0 --regexp '  note: https://jenkins\.example/job/7/$'
}

# github_step: the GitHub Actions step's command, checked to be exec'd and
# to take RLOCK_URL and RLOCK_NOTE from the step's env.
github_step() {
	local block step
	block=$(recipe docs/ci.md yaml 'runs-on: ubuntu-latest') || return 1
	grep -qF 'RLOCK_URL: ${{ secrets.RLOCK_URL }}' <<<"$block" || return 1
	grep -qF 'RLOCK_NOTE: ${{ github.server_url }}' <<<"$block" || return 1
	step=$(grep -E '^ +run: ' <<<"$block") || return 1
	step=${step#*run: }
	[[ $step == 'exec rlock run '* ]] || return 1
	printf '%s\n' "$step"
}

@test "recipes: ci.md's GitHub Actions step, cancelled while it waits, leaves the line at the SIGINT (130)" {
	local step h w
	step=$(github_step)
	stub ./deploy.sh
	: >deploy.sh.hold
	JOB=h bg_start h bash -e -c "$step"
	h=$BG_PID
	wait_until 5 started deploy.sh h
	JOB=w bg_start w bash -e -c "$step"
	w=$BG_PID
	wait_until 5 has_waiters deploy 1
	kill -INT "$w"
	bg_wait "$w" 5
	assert_equal "$BG_STATUS" 130
	[[ $(waiters deploy) == 0 ]]
	: >deploy.sh.go
	bg_wait "$h" 10
	assert_equal "$BG_STATUS" 0
	assert_equal "$(job_order deploy.sh)" "h"
}

@test "recipes: ci.md's GitHub Actions step, cancelled while its command runs: a command that stops on SIGINT, one that ignores it until the SIGTERM; the lock is free at once" {
	local step pid
	step=$(github_step)
	stub ./deploy.sh
	: >deploy.sh.hold
	# The command stops at the SIGINT: rlock exits with its status.
	bg_start a bash -e -c "$step"
	pid=$BG_PID
	wait_until 5 started deploy.sh
	kill -INT "$pid"
	bg_wait "$pid" 5
	assert_equal "$BG_STATUS" 130
	lock_free deploy
	# It ignores SIGINT: the runner's SIGTERM, 7.5s later, kills it.
	: >deploy.sh.nointr
	: >jobs.log
	rm -f deploy.sh.pid
	bg_start b bash -e -c "$step"
	pid=$BG_PID
	wait_until 5 file_nonempty deploy.sh.pid
	kill -INT "$pid"
	run -0 "$RLOCK" status deploy
	pid_alive "$(<deploy.sh.pid)"
	kill -TERM "$pid"
	bg_wait "$pid" 2
	assert_equal "$BG_STATUS" 137
	lock_free deploy
	run bg_err b
	assert_output 'rlock: run: deploy: second SIGTERM: killing the command'
	wait_until 2 pid_gone "$(<deploy.sh.pid)"
}

# -- a service on one host at a time (systemd) ------------------------------------

# notify_listen ID: a datagram socket at ID.sock, as systemd's NOTIFY_SOCKET,
# whose messages go to ID.msgs, one a line.
notify_listen() {
	local id=$1
	cat >listen.py <<-'EOF'
		import socket, sys
		path, out = sys.argv[1], sys.argv[2]
		s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
		s.bind(path)
		open(out + ".ready", "w").close()
		while True:
		    d = s.recv(65536).decode("utf-8", "replace")
		    with open(out, "a") as f:
		        f.write(d.rstrip("\n").replace("\n", " | ") + "\n")
	EOF
	bg_start "listen-$id" python3 listen.py "$BATS_TEST_TMPDIR/$id.sock" "$BATS_TEST_TMPDIR/$id.msgs"
	wait_until 5 test -e "$id.msgs.ready"
}

# unit_start HOST [MARKER DIR]: the ExecStart of the README's unit that
# holds MARKER (default: the sender's), started as systemd would on HOST:
# its Environment= (the server replaced), NOTIFY_SOCKET, its
# RuntimeDirectory= /run/DIR (here run-HOST), and the daemon a stub on
# PATH.
unit_start() {
	local host=$1 marker=${2:-RuntimeDirectory=sender} dir=${3:-sender}
	local unit exec env
	unit=$(recipe README.md ini "$marker") || return 1
	exec=$(grep '^ExecStart=' <<<"$unit") || return 1
	exec=${exec#ExecStart=}
	exec=${exec//\/usr\/local\/bin\//}
	exec=${exec//\/run\/$dir/$BATS_TEST_TMPDIR/run-$host}
	env=$(grep '^Environment=' <<<"$unit") || return 1
	[[ $env == Environment=RLOCK_URL=redis://redis.internal:6379 ]] || {
		echo "the unit sets $env, which the test does not replace" >&2
		return 1
	}
	mkdir -p "run-$host"
	notify_listen "$host"
	JOB=$host NOTIFY_SOCKET=$BATS_TEST_TMPDIR/$host.sock RLOCK_URL=$R_URL \
		bg_start "$host" on-host "$host" sh -c "exec $exec"
}

@test "recipes: the systemd unit (README) on three hosts runs the sender on one; each is READY; a stop hands the lead on after the old sender ended" {
	local unit a first
	unit=$(recipe README.md ini 'RuntimeDirectory=sender')
	grep -qx 'Type=notify' <<<"$unit"
	grep -qx 'KillMode=mixed' <<<"$unit"
	stub bin/sender
	: >sender.hold
	unit_start web1
	a=$BG_PID
	wait_until 5 started sender web1
	first=$(<sender.pid)
	unit_start web2
	unit_start web3
	wait_until 5 has_waiters sender 2
	for h in web1 web2 web3; do
		wait_until 5 file_has "$h.msgs" READY=1
	done
	wait_until 5 grep -q '^STATUS=leading (fence [0-9]*) since ' web1.msgs
	if ((T_HOSTS)); then
		wait_until 15 grep -q "^STATUS=standby: led by [^@]*@web1 pid $a\$" web2.msgs
	fi
	grep -q '^fence=[0-9]*$' run-web1/leader
	[[ ! -e run-web2/leader && ! -e run-web3/leader ]]
	assert_equal "$(starts sender)" 1
	# systemctl stop on web1, KillMode=mixed: SIGTERM to rlock alone.
	kill -TERM "$a"
	bg_wait "$a" 10
	assert_equal "$BG_STATUS" 0
	pid_gone "$first"
	wait_until 5 started sender web2
	assert_equal "$(job_order sender)" "web1 web2"
	[[ ! -e run-web1/leader ]]
	wait_until 5 test -e run-web2/leader
	run -0 "$RLOCK" status sender
	assert_line --partial "lead: sender"
}

@test "recipes: the hot standby unit (README) on two hosts: both daemons run, the leader's is told USR1; a stop demotes it (USR2) before the other is told USR1; a reload reaches it" {
	local unit a
	unit=$(recipe README.md ini 'RuntimeDirectory=warmer')
	grep -qx 'ExecReload=/bin/kill -HUP $MAINPID' <<<"$unit"
	grep -qx 'KillMode=mixed' <<<"$unit"
	# The warmer: logs its start, each USR1 (with the fence the leader
	# file says), USR2 and HUP.
	cat >bin/warmer <<EOF
#!/bin/bash
d='$BATS_TEST_TMPDIR'
trap 'echo "usr1 \$JOB \${EPOCHREALTIME/[.,]/} \$(grep ^fence= "\$d/run-\$JOB/leader")" >>"\$d/jobs.log"' USR1
trap 'echo "usr2 \$JOB \${EPOCHREALTIME/[.,]/}" >>"\$d/jobs.log"' USR2
trap 'echo "hup \$JOB" >>"\$d/jobs.log"' HUP
echo "warmer start \$JOB" >>"\$d/jobs.log"
while :; do sleep 1 & wait \$!; done
EOF
	chmod +x bin/warmer
	unit_start web1 'RuntimeDirectory=warmer' warmer
	a=$BG_PID
	wait_until 5 grep -q '^usr1 web1 [0-9]* fence=[0-9]*$' jobs.log
	unit_start web2 'RuntimeDirectory=warmer' warmer
	wait_until 5 has_waiters warmer 1
	wait_until 5 started warmer web2
	wait_until 5 file_has web2.msgs READY=1
	# systemctl reload on web1.
	kill -HUP "$a"
	wait_until 5 grep -qx 'hup web1' jobs.log
	# systemctl stop on web1.
	kill -TERM "$a"
	bg_wait "$a" 10
	assert_equal "$BG_STATUS" 0
	wait_until 5 grep -q '^usr1 web2 ' jobs.log
	local down up
	down=$(awk '$1 == "usr2" && $2 == "web1" { print $3 }' jobs.log)
	up=$(awk '$1 == "usr1" && $2 == "web2" { print $3 }' jobs.log)
	[[ -n $down ]]
	((down < up))
	assert_equal "$(grep -c '^warmer start' jobs.log)" 2
}
