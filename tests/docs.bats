#!/usr/bin/env bats
# docs.bats - the man page and the bash, zsh and fish completions agree with
# what the binary says in "rlock --help" and "rlock CMD --help": the same
# subcommands, the same options (short and long) for each subcommand, in
# both directions.  Needs no server, but for the README's recipes, which are
# run as the README has them against a server of their own.
#
# Options are read from the option lines of the help: lines that start with
# spaces and a dash ("  -t, --ttl DUR   ..." or "      --label TEXT  ...").
# Global options are those of "rlock --help" that every subcommand's help
# lists too, or none does; each subcommand must complete them.

bats_require_minimum_version 1.5.0
load test_helper

RLOCK=${RLOCK:-$BATS_TEST_DIRNAME/../build/rlock}
DOCS_DIR=$BATS_TEST_DIRNAME/..
MAN_PAGE=$DOCS_DIR/man/rlock.1
BASH_COMP=$DOCS_DIR/completions/rlock.bash
ZSH_COMP=$DOCS_DIR/completions/_rlock
FISH_COMP=$DOCS_DIR/completions/rlock.fish

# No server and no binary are needed for every test here; a recipe's test
# starts its server itself, which teardown stops.
setup_file() { :; }
teardown_file() { :; }
setup() { cd "$BATS_TEST_TMPDIR" || return 1; }
teardown() { rl_teardown; }

# ---- what the binary says ---------------------------------------------------

need_rlock() {
	if [[ ! -x $RLOCK ]]; then
		echo "no rlock binary at $RLOCK (run make)"
		return 1
	fi
}

# options_in_help: read help text, print its options, one a line, sorted.
# The option part of a line ends at the first run of two blanks.
options_in_help() {
	awk '/^  +-/ { sub(/^ +/, ""); split($0, part, /  |\t/); print part[1] }' |
		tr ',/|=[]' '      ' | tr -s ' ' '\n' |
		grep -E '^(-[A-Za-z]|--[a-z][a-z0-9-]*)$' | sort -u
	return 0
}

# help_options [CMD]: the options of "rlock [CMD] --help".
help_options() {
	local out
	out=$("$RLOCK" "$@" --help) || {
		echo "'rlock $* --help' failed" >&2
		return 1
	}
	printf '%s\n' "$out" | options_in_help
}

# help_commands: the subcommands named by "rlock --help", in a usage line
# ("Usage: rlock [global options] run ...") or in a table of commands
# ("  run    run a command ...").
help_commands() {
	local out
	out=$("$RLOCK" --help) || return 1
	printf '%s\n' "$out" | awk '
		{ line = $0; sub(/^[Uu]sage:/, "", line) }
		line ~ /^ *rlock / {
			n = split(line, w, " ")
			for (i = 2; i <= n; i++) {
				if (w[i] ~ /^\[/) {
					while (i <= n && w[i] !~ /\]$/)
						i++
					continue
				}
				if (w[i] ~ /^[a-z][a-z-]*$/)
					print w[i]
				break
			}
		}
		/^  [a-z][a-z-]*(  |\t)/ { split(substr($0, 3), w, /[ \t]/); print w[1] }
	' | sort -u
}

# The subcommands that take options of their own (all but "help").
option_commands() {
	help_commands | grep -vx help
}

# global_options: the options of "rlock --help" that the help of every
# subcommand lists, or that none lists.
global_options() {
	local top cmd n=0 all
	top=$(help_options) || return 1
	all=$(for cmd in $(option_commands); do help_options "$cmd" || return 1; done)
	n=$(option_commands | wc -l)
	printf '%s\n' "$top" | while read -r opt; do
		[[ -n $opt ]] || continue
		local k
		k=$(printf '%s\n' "$all" | grep -cxF -- "$opt")
		if ((k == 0 || k == n)); then
			echo "$opt"
		fi
	done | sort -u
}

# wanted_options CMD: what CMD must complete: its own options and the
# global ones.
wanted_options() {
	local own=
	if [[ $1 != help ]]; then
		own=$(help_options "$1") || return 1
	fi
	{ printf '%s\n' "$own"; global_options; } | grep . | sort -u
}

# ---- what the completions offer ---------------------------------------------

# bash_complete WORD...: run the bash completion for the command line WORD...
# (the last word is the one completed) and print the candidates.  Words
# are split as bash splits them: "--format=j" is "--format" "=" "j", and
# COMP_LINE has no blanks around such "=" and ":".
bash_complete() {
	bash --norc --noprofile -c '
		source "$1" || exit 1
		shift
		COMP_WORDS=("$@")
		COMP_CWORD=$(($# - 1))
		COMP_LINE= prev=
		for w in "$@"; do
			if [[ -n $COMP_LINE && $w != [=:] && $prev != [=:] ]]; then
				COMP_LINE+=" "
			fi
			COMP_LINE+=$w prev=$w
		done
		COMP_POINT=${#COMP_LINE}
		_rlock || exit 1
		printf "%s\n" "${COMPREPLY[@]}"' bash "$BASH_COMP" "$@"
}

bash_options() { bash_complete rlock "$1" - | grep -E '^-' | sort -u; }
bash_commands() { bash_complete rlock '' | sort -u; }

# Option names in zsh _arguments specs (lines that start with a quote): the
# part before the description "[" or the first ":".
spec_options() {
	grep -E "^[[:space:]]*'" | sed -E 's/^[[:space:]]+//; s/\[.*$//; s/:.*$//' |
		tr "'(){},+=*" '          ' | tr -s ' ' '\n' |
		grep -E '^(-[A-Za-z]|--[a-z][a-z0-9-]*)$' | sort -u
	return 0
}

# zsh_array NAME: the lines of "NAME=(" ... ")" in _rlock.
zsh_array() {
	sed -n "/^[[:space:]]*$1=(\$/,/^[[:space:]]*)\$/p" "$ZSH_COMP"
}

# zsh_branch CMD: the lines of the case branch "(CMD)" ... ";;".
zsh_branch() {
	sed -n "/^[[:space:]]*($1)\$/,/^[[:space:]]*;;\$/p" "$ZSH_COMP"
}

zsh_options() {
	local branch
	branch=$(zsh_branch "$1")
	[[ -n $branch ]] || return 0
	{
		printf '%s\n' "$branch"
		if grep -qF "\$global_opts" <<<"$branch"; then zsh_array global_opts; fi
		if grep -qF "\$lease_opts" <<<"$branch"; then zsh_array lease_opts; fi
	} | spec_options
}

zsh_commands() {
	sed -n '/^[[:space:]]*commands=($/,/^[[:space:]]*)$/p' "$ZSH_COMP" |
		sed -nE "s/^[[:space:]]*'([a-z][a-z-]*):.*/\\1/p" | sort -u
}

# fish_options CMD: the -s/-l of the "complete" lines with no condition
# (global) or with "__rlock_using ... CMD ...".
fish_options() {
	local cmd=$1 line cond opts
	while IFS= read -r line; do
		[[ $line == 'complete -c rlock '* ]] || continue
		cond=
		if [[ $line =~ \ -n\ \'([^\']*)\' ]]; then
			cond=${BASH_REMATCH[1]}
		elif [[ $line =~ \ -n\ ([^ ]+) ]]; then
			cond=${BASH_REMATCH[1]}
		fi
		if [[ -n $cond ]]; then
			[[ $cond == __rlock_using\ * ]] || continue
			[[ " ${cond#__rlock_using } " == *" $cmd "* ]] || continue
		fi
		opts=${line%% -d *}
		opts=${opts%% -a *}
		grep -oE -- ' -[sl] [^ ]+' <<<"$opts" | sed -E 's/^ -s /-/; s/^ -l /--/'
	done <"$FISH_COMP" | sort -u
	return 0
}

fish_commands() {
	sed -nE 's/^complete -c rlock -n __rlock_needs_command .*-a ([a-z][a-z-]*) .*/\1/p' \
		"$FISH_COMP" | sort -u
}

# ---- what the man page says -------------------------------------------------

# The man page as plain text, one paragraph a line, no overstriking.
man_text() {
	mandoc -T ascii -O width=1000 "$MAN_PAGE" | sed 's/.\x08//g'
}

# man_section NAME: the text of one section.
man_section() {
	man_text | awk -v s="$1" '/^[A-Z]/ { on = ($0 == s) } on'
}

# man_has WORD: the man page text has WORD (an option, say) on its own.
man_has() {
	grep -qE -- "(^|[^[:alnum:]-])$1([^[:alnum:]-]|\$)" <<<"$MAN_TEXT"
}

# ---- comparing --------------------------------------------------------------

# same_set WHAT EXPECTED ACTUAL: fail, showing the difference, unless the
# two sorted lists are equal.
same_set() {
	if [[ $2 != "$3" ]]; then
		echo "$1 differ (< from rlock --help, > found):"
		diff <(printf '%s\n' "$2") <(printf '%s\n' "$3") || true
		return 1
	fi
}

# check_options CMD: the three completions offer exactly CMD's options and
# the man page names each one, with its short form next to the long one.
check_options() {
	local cmd=$1 want opt line pair missing=0
	need_rlock
	want=$(wanted_options "$cmd")
	if [[ -z $want ]]; then
		echo "found no option lines in 'rlock --help' or 'rlock $cmd --help':"
		"$RLOCK" --help
		"$RLOCK" "$cmd" --help
		return 1
	fi
	[[ -n $(zsh_branch "$cmd") ]] || { echo "_rlock has no branch for $cmd"; return 1; }
	same_set "options of 'rlock $cmd' in $BASH_COMP" "$want" "$(bash_options "$cmd")"
	same_set "options of 'rlock $cmd' in $ZSH_COMP" "$want" "$(zsh_options "$cmd")"
	same_set "options of 'rlock $cmd' in $FISH_COMP" "$want" "$(fish_options "$cmd")"

	MAN_TEXT=$(man_text)
	for opt in $want; do
		if ! man_has "$opt"; then
			echo "man page does not mention $opt (rlock $cmd)"
			missing=1
		fi
	done
	# "-t, --ttl" in the help is "-t, --ttl" in the man page.
	while IFS= read -r line; do
		pair=$(sed -nE 's/^ +(-[A-Za-z], --[a-z][a-z0-9-]*).*/\1/p' <<<"$line")
		[[ -n $pair ]] || continue
		if ! grep -qF -- "$pair" <<<"$MAN_TEXT"; then
			echo "man page does not say '$pair'"
			missing=1
		fi
	done < <("$RLOCK" "$cmd" --help)
	((missing == 0))
}

# ---- tests ------------------------------------------------------------------

@test "docs: mandoc -Tlint reports nothing for man/rlock.1" {
	run --separate-stderr mandoc -Tlint "$MAN_PAGE"
	echo "stdout: $output"
	echo "stderr: $stderr"
	[ "$status" -eq 0 ]
	[ -z "$output" ]
	[ -z "$stderr" ]
}

@test "docs: man -l renders man/rlock.1 without a warning at 80 and 60 columns" {
	local w
	for w in 80 60; do
		run --separate-stderr env MANWIDTH=$w MANPAGER=cat PAGER=cat \
			man -l "$MAN_PAGE"
		echo "width $w, stderr: $stderr"
		[ "$status" -eq 0 ]
		[ -z "$stderr" ]
		[[ $output == *"EXIT STATUS"* ]]
	done
}

@test "docs: man page has the sections, and one SYNOPSIS line per subcommand" {
	need_rlock
	local text sec cmd cmds synopsis listed
	text=$(man_text)
	for sec in NAME SYNOPSIS DESCRIPTION COMMANDS OPTIONS ENVIRONMENT \
		'EXIT STATUS' 'REDIS KEYS' 'STATUS JSON' EXAMPLES 'SEE ALSO' CAVEATS; do
		grep -qx -- "$sec" <<<"$text" || { echo "no section $sec"; return 1; }
	done
	cmds=$(help_commands)
	[ -n "$cmds" ]
	synopsis=$(man_section SYNOPSIS)
	listed=$(sed -nE 's/^ +rlock( \[global-options\])? ([a-z][a-z-]*)( .*)?$/\2/p' <<<"$synopsis" | sort -u)
	same_set "subcommands in the man page's SYNOPSIS" "$cmds" "$listed"
	for cmd in flock redis-cli timeout; do
		grep -q "$cmd(1)" <<<"$(man_section 'SEE ALSO')" || { echo "SEE ALSO lacks $cmd(1)"; return 1; }
	done
}

@test "docs: man page names only options that the binary has" {
	need_rlock
	local all cmd opt bad=0
	all=$({
		help_options
		for cmd in $(option_commands); do help_options "$cmd"; done
	} | sort -u)
	[ -n "$all" ]
	for opt in $(man_text | grep -oE -- '(^|[^[:alnum:]-])--[a-z][a-z0-9-]*' | sed 's/^[^-]*//' | sort -u); do
		if ! grep -qxF -- "$opt" <<<"$all"; then
			echo "man page mentions $opt, which no --help lists"
			bad=1
		fi
	done
	((bad == 0))
}

@test "docs: man page lists every exit status and environment variable" {
	need_rlock
	local exits env code var bad=0
	exits=$(man_section 'EXIT STATUS')
	for code in 0 1 64 69 70 71 75 76 126 127; do
		grep -qE "^ +$code( |\$)" <<<"$exits" || { echo "EXIT STATUS lacks $code"; bad=1; }
	done
	env=$(man_section ENVIRONMENT)
	for var in $({
		"$RLOCK" --help
		for cmd in $(option_commands); do "$RLOCK" "$cmd" --help; done
	} | grep -oE '\b(RLOCK_[A-Z_]+|REDIS_URL|REDISCLI_AUTH|NO_COLOR)\b' | sort -u) \
		RLOCK_URL REDIS_URL RLOCK_PREFIX REDISCLI_AUTH RLOCK_VERBOSE NO_COLOR \
		RLOCK_NAME RLOCK_KEY RLOCK_TOKEN RLOCK_FENCE RLOCK_SLOT RLOCK_TTL_MS \
		RLOCK_HELD; do
		grep -qE "^ +$var\$|^ +$var " <<<"$env" || { echo "ENVIRONMENT lacks $var"; bad=1; }
	done
	((bad == 0))
}

@test "docs: completions list exactly the subcommands of rlock --help" {
	need_rlock
	local cmds
	cmds=$(help_commands)
	if [[ -z $cmds ]]; then
		echo "found no subcommands in 'rlock --help':"
		"$RLOCK" --help
		return 1
	fi
	same_set "subcommands in $BASH_COMP" "$cmds" "$(bash_commands)"
	same_set "subcommands after 'rlock help' in $BASH_COMP" "$cmds" "$(bash_complete rlock help '' | sort -u)"
	same_set "subcommands in $ZSH_COMP" "$cmds" "$(zsh_commands)"
	same_set "subcommands in $FISH_COMP" "$cmds" "$(fish_commands)"
}

@test "docs: run options agree in help, completions and man page" {
	check_options run
}

@test "docs: acquire options agree in help, completions and man page" {
	check_options acquire
}

@test "docs: release options agree in help, completions and man page" {
	check_options release
}

@test "docs: extend options agree in help, completions and man page" {
	check_options extend
}

@test "docs: status options agree in help, completions and man page" {
	check_options status
}

@test "docs: options of any further subcommand agree too" {
	need_rlock
	local cmd
	for cmd in $(option_commands); do
		case $cmd in
		run | acquire | release | extend | status) ;;
		*) check_options "$cmd" ;;
		esac
	done
}

@test "docs: help completes the global options and the subcommands" {
	need_rlock
	local want
	want=$(wanted_options help)
	[ -n "$want" ]
	same_set "options of 'rlock help' in $BASH_COMP" "$want" "$(bash_options help)"
	same_set "options of 'rlock help' in $ZSH_COMP" "$want" "$(zsh_options help)"
	same_set "options of 'rlock help' in $FISH_COMP" "$want" "$(fish_options help)"
	same_set "global options (before the subcommand) in $BASH_COMP" "$want" \
		"$(bash_complete rlock - | sort -u)"
}

@test "docs: bash completion offers the values of --on-lost, --format and files" {
	run bash_complete rlock run --on-lost ''
	[ "$status" -eq 0 ]
	[ "$(sort <<<"$output" | tr '\n' ' ')" = "ignore kill term " ]
	run bash_complete rlock acquire --format j
	[ "$output" = json ]
	run bash_complete rlock acquire --format = ''
	[ "$(sort <<<"$output" | tr '\n' ' ')" = "env json token " ]
	: >"$BATS_TEST_TMPDIR/pwfile"
	run bash_complete rlock --password-file "$BATS_TEST_TMPDIR/pwf"
	[ "$output" = "$BATS_TEST_TMPDIR/pwfile" ]
	# After NAME, "run" completes its options or a command; after "--" or
	# the command's first word, never rlock's options.
	run bash_complete rlock run -n job -- ech
	[[ $'\n'$output$'\n' == *$'\n'echo$'\n'* ]]
	run bash_complete rlock run job --on
	[ "$(sort <<<"$output" | tr '\n' ' ')" = "--on-lost --once-per " ]
	run bash_complete rlock run job -- --on
	[[ $output != *--on-lost* ]]
	run bash_complete rlock run job echo --on
	[[ $output != *--on-lost* ]]
	run bash_complete rlock run -- job ech
	[[ $'\n'$output$'\n' == *$'\n'echo$'\n'* ]]
	# Other subcommands: options after the operands too, none after "--".
	run bash_complete rlock last job --max
	[ "$output" = --max-age ]
	run bash_complete rlock last -- job --max
	[ -z "$output" ]
}

@test "docs: completion files are valid bash, zsh and fish" {
	run bash -n "$BASH_COMP"
	[ "$status" -eq 0 ]
	grep -qx 'complete -F _rlock rlock' "$BASH_COMP"

	[ "$(head -n 1 "$ZSH_COMP")" = '#compdef rlock' ]
	grep -q '_arguments' "$ZSH_COMP"
	if command -v zsh >/dev/null; then
		run zsh -n "$ZSH_COMP"
		echo "$output"
		[ "$status" -eq 0 ]
	fi

	grep -q '^complete -c rlock ' "$FISH_COMP"
	if command -v fish >/dev/null; then
		run fish --no-execute "$FISH_COMP"
		echo "$output"
		[ "$status" -eq 0 ]
	fi
}

# ---- the README's recipes, run ------------------------------------------------

# readme_block TEXT: the README's ```sh block that has TEXT.
readme_block() {
	awk -v want="$1" '
		/^```sh$/ { inblock = 1; block = ""; next }
		/^```$/ && inblock {
			inblock = 0
			if (index(block, want)) { printf "%s", block; found = 1; exit }
			next
		}
		inblock { block = block $0 "\n" }
		END { exit !found }' "$REPO_DIR/README.md"
}

# backup_recipe WORK: the README's acquire --renew --on-lost term script
# with WORK instead of its tar, and a 3s lease (renewed every second, so a
# loss is found within one) instead of the default 30s, into backup.sh.
backup_recipe() {
	local recipe tar='tar -czf /backup/home.tgz /home &'
	recipe=$(readme_block 'acquire --renew --on-lost term backup') || {
		echo "README has no sh block with 'acquire --renew --on-lost term backup'" >&2
		return 1
	}
	[[ $recipe == *"$tar"* ]] || {
		echo "the README's backup recipe has no '$tar' line:" >&2
		echo "$recipe" >&2
		return 1
	}
	recipe=${recipe//"$tar"/"$1 &"}
	recipe=${recipe//'rlock acquire --renew'/'rlock acquire -t 3s --renew'}
	printf '%s\n' "$recipe" >backup.sh
}

@test "docs: README's --on-lost term recipe stops its work within a second of the loss and exits 76" {
	rl_setup
	start_redis R
	export RLOCK_URL=$R_URL PATH="${RLOCK%/*}:$PATH"
	# sleep stands in for tar, and says its pid.
	backup_recipe "sh -c 'echo \$\$ >work.pid; exec sleep 60'"
	bg_start s bash backup.sh
	local spid=$BG_PID work
	wait_until 5 file_nonempty work.pid
	work=$(<work.pid)
	track_pid "$work"
	pid_alive "$work"
	lock_held backup
	# The lock is lost: the renewer finds it out at its next renewal.
	rcli R DEL "$(key backup)"
	wait_until 5 file_has s.err "lost the lock"
	wait_until 1 pid_gone "$work"
	bg_wait "$spid" 5
	assert_equal "$BG_STATUS" 76
	run bg_err s
	assert_line --index 0 "lost the lock"
	assert_line --index 1 --regexp '^rlock: release: backup: the lock was lost at .*: the token no longer holds it$'
	assert_equal "${#lines[@]}" 2
	lock_free backup
}

@test "docs: README's --on-lost term recipe releases the lock when its work ends, with the work's status" {
	rl_setup
	start_redis R
	export RLOCK_URL=$R_URL PATH="${RLOCK%/*}:$PATH"
	backup_recipe 'true'
	run -0 --separate-stderr bash backup.sh
	assert_equal "$stderr" ""
	assert_output ""
	lock_free backup
	# A failed work: its status, the ERR trap's line, the lock released.
	backup_recipe 'sh -c "exit 3"'
	run -3 --separate-stderr bash backup.sh
	assert_stderr --regexp '^failed at line [0-9]+$'
	lock_free backup
}
