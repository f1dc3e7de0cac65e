#!/usr/bin/env bats
# docs.bats - the man pages and the bash, zsh and fish completions agree with
# what the binary says in "rlock --help" and "rlock CMD --help": the same
# subcommands, the same options (short and long) for each subcommand, in
# both directions.  The man pages are lint-clean, render without a warning,
# and refer only to pages that exist.  Needs no server (the recipes of the
# README and the guides are run by recipes.bats).
#
# Options are read from the option lines of the help: lines that start with
# spaces and a dash ("  -t, --ttl DUR   ..." or "      --label TEXT  ...").
# Global options are those of "rlock --help" that every subcommand's help
# lists too, or none does; each subcommand must complete them.
#
# The man pages: man/rlock.1 (the global options, the environment, the exit
# status), man/rlock-CMD.1 for each subcommand CMD, man/rlock-formats.5.

bats_require_minimum_version 1.5.0
load test_helper

RLOCK=${RLOCK:-$BATS_TEST_DIRNAME/../build/rlock}
DOCS_DIR=$BATS_TEST_DIRNAME/..
MAN_DIR=$DOCS_DIR/man
MAN_PAGE=$MAN_DIR/rlock.1
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

# ---- what the man pages say ------------------------------------------------

# man_pages: every page in man/, one a line.
man_pages() {
	ls "$MAN_DIR"/*.[1-8]
}

# cmd_page CMD: the page of subcommand CMD.
cmd_page() {
	echo "$MAN_DIR/rlock-$1.1"
}

# man_text [PAGE]: a page (default rlock(1)) as plain text, one paragraph a
# line, no overstriking.
man_text() {
	mandoc -T ascii -O width=1000 "${1:-$MAN_PAGE}" | sed 's/.\x08//g'
}

# man_section NAME [PAGE]: the text of one section.
man_section() {
	man_text "${2:-$MAN_PAGE}" | awk -v s="$1" '/^[A-Z]/ { on = ($0 == s) } on'
}

# man_has WORD: the man page text in MAN_TEXT has WORD (an option, say) on
# its own.
man_has() {
	grep -qE -- "(^|[^[:alnum:]-])$1([^[:alnum:]-]|\$)" <<<"$MAN_TEXT"
}

# xr_missing PAGE...: each ".Xr rlock... N" of the pages that names no page
# in man/, as "PAGE:LINE: name(N)".
xr_missing() {
	local f
	for f in "$@"; do
		awk -v f="${f##*/}" '$1 == ".Xr" && $2 ~ /^rlock/ {
			print f ":" FNR ": " $2 "(" $3 ")" "\t" $2 "." $3 }' "$f"
	done | while IFS=$'\t' read -r where file; do
		[[ -f $MAN_DIR/$file ]] || echo "$where"
	done
}

# sx_missing PAGE...: each ".Sx NAME" of the pages that names no section or
# subsection of its own page, as "PAGE:LINE: NAME".
sx_missing() {
	local f
	for f in "$@"; do
		awk -v f="${f##*/}" '
			/^\.S[hs] / { s = $0; sub(/^\.S[hs] /, "", s); have[s] = 1 }
			/(^\.| )Sx / {
				s = $0
				sub(/.*Sx /, "", s)
				sub(/ [.,;:)]( .*)?$/, "", s)
				sub(/ (No|Ns|Pc|Pq|Po|Xr|Cm|Fl) .*$/, "", s)
				want[FNR] = s
			}
			END { for (l in want) if (!(want[l] in have)) print f ":" l ": " want[l] }' "$f"
	done
}

# lint PAGE: what mandoc -Tlint says of PAGE (on stdout and stderr) but its
# notes about references to pages it looks for under /usr/share/man only:
# "referenced manual not found" for a page of man/, which is not installed
# while it is checked (xr_missing checks those), and "outdated mandoc.db"
# for a page it found there without a database.
lint() {
	local line name sec
	mandoc -Tlint "$1" 2>&1 | while IFS= read -r line; do
		if [[ $line =~ ^mandoc:\ outdated\ mandoc\.db\ lacks\ [^\ ]+\ entry ]]; then
			continue
		fi
		if [[ $line =~ STYLE:\ referenced\ manual\ not\ found:\ Xr\ (rlock[a-z-]*)\ ([0-9])( \([0-9]+\ times\))?$ ]]; then
			name=${BASH_REMATCH[1]} sec=${BASH_REMATCH[2]}
			[[ -f $MAN_DIR/$name.$sec ]] && continue
		fi
		echo "$line"
	done
}

# ---- one source for each option ---------------------------------------------
#
# The help (cli/main.c) is the source of each option's name, argument and
# one-line help.  The man pages' option lists must have the same names and
# argument names, and each item's text must begin with the help's; the zsh
# and fish completions' descriptions must be the help's.  Text is compared
# rendered and with its blanks squeezed; the man pages write an argument in
# lower case and begin a sentence with a capital, fish begins a description
# with one, so case is ignored there.

# help_items [CMD]: CMD's own options (with no CMD, the global options of
# "rlock --help"), one a line: NAMES<TAB>ARG<TAB>TEXT, NAMES being "-t --ttl"
# or "--label", ARG "-" for none.  Fails on an option whose help does not
# fit on its line.
help_items() {
	local out block
	if (($#)); then
		block='Options:'
		out=$("$RLOCK" "$1" --help) || return 1
	else
		block='Global options:'
		out=$("$RLOCK" --help) || return 1
	fi
	printf '%s\n' "$out" | awk -v block="$block" '
		/^[^ ].*:$/ { on = ($0 == block); next }
		/^$/ { on = 0; next }
		!on { next }
		match($0, /^ +(-[A-Za-z], )?--[a-z][a-z0-9-]*( [^ ]+)?  +/) {
			opt = substr($0, 1, RLENGTH)
			text = substr($0, RLENGTH + 1)
			sub(/,/, "", opt)
			n = split(opt, w, " ")
			names = w[1]
			arg = ""
			if (w[1] ~ /^-[A-Za-z]$/) {
				names = w[1] " " w[2]
				if (n > 2) arg = w[3]
			} else if (n > 1)
				arg = w[2]
			print names "\t" (arg == "" ? "-" : arg) "\t" text
			next
		}
		{ print "help of " block " option not on one line: " $0 > "/dev/stderr"; bad = 1 }
		END { exit bad }'
}

# man_items PAGE SECTION: the items of an option list in SECTION of PAGE, as
# help_items prints them, TEXT being the item's first paragraph.
man_items() {
	man_section "$2" "$1" | awk '
		/^     -/ {
			tag = substr($0, 6)
			body = ""
			if (match(tag, /   */)) {
				body = substr(tag, RSTART + RLENGTH)
				tag = substr(tag, 1, RSTART - 1)
			}
			gsub(/ \| /, "|", tag)
			sub(/,/, "", tag)
			n = split(tag, w, " ")
			names = w[1]
			arg = ""
			if (w[1] ~ /^-[A-Za-z]$/ && w[2] ~ /^--/) {
				names = w[1] " " w[2]
				if (n > 2) arg = w[3]
			} else if (n > 1)
				arg = w[2]
			if (arg == "")
				arg = "-"
			if (body != "")
				print names "\t" arg "\t" body
			else
				want = 1
			next
		}
		want && /^ +[^ ]/ { sub(/^ +/, ""); print names "\t" arg "\t" $0; want = 0 }'
}

# squeeze TEXT: TEXT lower-cased, blanks squeezed.
squeeze() {
	tr '[:upper:]' '[:lower:]' <<<"$1" | tr -s ' \t' '  ' | sed 's/^ //; s/ $//'
}

# same_items WHERE HELP_ITEMS MAN_ITEMS: the same options with the same
# argument names, each man item's text beginning with the help's.
same_items() {
	local where=$1 names arg text mnames marg mtext bad=0 h m
	same_set "options in $where" "$(cut -f1 <<<"$2" | sort)" "$(cut -f1 <<<"$3" | sort)" || bad=1
	while IFS=$'\t' read -r names arg text; do
		[[ -n $names ]] || continue
		IFS=$'\t' read -r mnames marg mtext < <(awk -F'\t' -v n="$names" '$1 == n' <<<"$3")
		[[ -n $mnames ]] || continue
		if [[ $(squeeze "$arg") != "$(squeeze "$marg")" ]]; then
			echo "$where: $names takes '$arg' in the help, '$marg' in the man page"
			bad=1
		fi
		h=$(squeeze "$text") m=$(squeeze "$mtext")
		if [[ $m != "$h"* ]]; then
			echo "$where: $names: the man page's text does not begin with the help's:"
			echo "  help: $text"
			echo "  man:  $mtext"
			bad=1
		fi
	done <<<"$2"
	((bad == 0))
}

# zsh_descs [CMD]: OPTION<TAB>DESCRIPTION of each option that _rlock offers
# after CMD (with no CMD, before the subcommand), as _arguments gets them.
zsh_descs() {
	zsh -f -c '
		n=0 want=$2
		_arguments() {
			n=$((n + 1))
			if ((n == want)); then printf "%s\n" "$@"; fi
			state=args
		}
		_describe() { :; }; _message() { :; }
		source "$1" >/dev/null
		n=0
		words=("${3:-}")
		_rlock' zsh "$ZSH_COMP" "$((1 + ($# > 0)))" "${1:-}" |
		sed -nE 's/^(\([^)]*\))?\*?(-[-a-zA-Z0-9]*)[+=]?-?\[([^]]*)\].*/\2\t\3/p'
}

# fish_descs [CMD]: OPTION<TAB>DESCRIPTION of each option that fish
# completes after "rlock [CMD]".
fish_descs() {
	fish -N -c 'source $argv[1]; complete -C "rlock $argv[2] -"; complete -C "rlock $argv[2] --"' \
		"$FISH_COMP" "${1:-}" | grep -E '^-' | sort -u
}

# check_descs CMD: the zsh and fish descriptions of every option that CMD
# takes are the help's: CMD's own help for its own options, the global help
# for the others (an option that is both, --json, may have either text).
check_descs() {
	local cmd=$1 want zsh fish opt text got bad=0
	want=$({
		help_items || exit 1
		[[ -z $cmd || $cmd == help ]] || help_items "$cmd" || exit 1
	} | awk -F'\t' '{ n = split($1, o, " "); for (i = 1; i <= n; i++) print o[i] "\t" $3 }' |
		sort -u) || return 1
	[[ -n $want ]] || { echo "no options in the help of rlock $cmd"; return 1; }
	zsh=$(zsh_descs ${cmd:+"$cmd"})
	fish=$(fish_descs ${cmd:+"$cmd"})
	for opt in $(cut -f1 <<<"$want" | sort -u); do
		got=$(awk -F'\t' -v o="$opt" '$1 == o { print $2 }' <<<"$zsh")
		if ! grep -qxF -- "$opt"$'\t'"$got" <<<"$want"; then
			echo "rlock $cmd $opt: zsh says '$got', the help:"
			grep -F -- "$opt"$'\t' <<<"$want" | grep -E "^$opt"$'\t' | cut -f2
			bad=1
		fi
		got=$(awk -F'\t' -v o="$opt" '$1 == o { print $2 }' <<<"$fish")
		while IFS=$'\t' read -r _ text; do
			[[ $got == "${text^}" ]] && continue 2
		done < <(grep -E "^$opt"$'\t' <<<"$want")
		echo "rlock $cmd $opt: fish says '$got', the help (with a capital):"
		grep -E "^$opt"$'\t' <<<"$want" | cut -f2
		bad=1
	done
	((bad == 0))
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

# check_options CMD: the three completions offer exactly CMD's options, and
# CMD's page or rlock(1) (the global ones) names each one, with its short
# form next to the long one.
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

	[[ $cmd == help ]] || [[ -f $(cmd_page "$cmd") ]] || {
		echo "no man page $(cmd_page "$cmd")"
		return 1
	}
	MAN_TEXT=$(man_text; [[ $cmd == help ]] || man_text "$(cmd_page "$cmd")")
	for opt in $want; do
		if ! man_has "$opt"; then
			echo "man pages do not mention $opt (rlock $cmd)"
			missing=1
		fi
	done
	# "-t, --ttl" in the help is "-t, --ttl" in the man page.
	while IFS= read -r line; do
		pair=$(sed -nE 's/^ +(-[A-Za-z], --[a-z][a-z0-9-]*).*/\1/p' <<<"$line")
		[[ -n $pair ]] || continue
		if ! grep -qF -- "$pair" <<<"$MAN_TEXT"; then
			echo "man pages do not say '$pair'"
			missing=1
		fi
	done < <("$RLOCK" "$cmd" --help)
	((missing == 0))
}

# ---- tests ------------------------------------------------------------------

@test "docs: man/ has rlock(1), a page per subcommand and rlock-formats(5), and no other" {
	need_rlock
	local want cmd
	want=$({
		echo rlock.1
		for cmd in $(option_commands); do echo "rlock-$cmd.1"; done
		echo rlock-formats.5
	} | sort)
	same_set "pages in man/" "$want" "$(man_pages | sed 's,.*/,,' | sort)"
}

@test "docs: mandoc -Tlint reports nothing for any man page" {
	local page bad=0 out
	for page in $(man_pages); do
		out=$(lint "$page")
		if [[ -n $out ]]; then
			echo "$out"
			bad=1
		fi
	done
	((bad == 0))
}

@test "docs: the lint check fails on what mandoc reports" {
	printf '%s\n' .Dd '.Dt X 1' .Os .Sh NAME '.Nm x' '.Nd y' .Sh DESCRIPTION \
		'See' '.Xr rlock-run 1 .' '.Xr rlock-nosuch 1' '.Bogus' >x.1
	run lint x.1
	assert_line --partial 'referenced manual not found: Xr rlock-nosuch 1'
	assert_line --partial 'Bogus'
	refute_line --partial 'Xr rlock-run 1'
}

@test "docs: every .Xr to an rlock page names a page in man/" {
	run xr_missing $(man_pages)
	assert_output ""
	# The check finds one that does not.
	printf '%s\n' '.Xr rlock-run 1 ,' '.Xr rlock-nosuch 1 ,' '.Xr rlock-formats 1' >x.1
	run xr_missing x.1
	assert_output "$(printf '%s\n' 'x.1:2: rlock-nosuch(1)' 'x.1:3: rlock-formats(1)')"
}

@test "docs: every .Sx names a section of its own page" {
	run sx_missing $(man_pages)
	assert_output ""
	printf '%s\n' '.Sh NAME' '.Ss Timings' 'see' '.Sx Timings ,' '.Pq see Sx NAME .' \
		'.Sx SAFETY .' >x.1
	run sx_missing x.1
	assert_output 'x.1:6: SAFETY'
}

@test "docs: man -l renders every man page without a warning at 80 and 60 columns" {
	local w page
	for page in $(man_pages); do
		for w in 80 60; do
			run --separate-stderr env MANWIDTH=$w MANPAGER=cat PAGER=cat \
				man -l "$page"
			echo "$page, width $w, stderr: $stderr"
			[ "$status" -eq 0 ]
			[ -z "$stderr" ]
			[[ $output == *"SEE ALSO"* ]]
		done
	done
}

@test "docs: rlock(1) has the sections, one SYNOPSIS line and one COMMANDS entry per subcommand" {
	need_rlock
	local text sec cmd cmds synopsis listed commands page
	text=$(man_text)
	for sec in NAME SYNOPSIS DESCRIPTION COMMANDS 'GLOBAL OPTIONS' ENVIRONMENT \
		'EXIT STATUS' DIAGNOSTICS 'SEE ALSO' CAVEATS; do
		grep -qx -- "$sec" <<<"$text" || { echo "no section $sec"; return 1; }
	done
	cmds=$(help_commands)
	[ -n "$cmds" ]
	synopsis=$(man_section SYNOPSIS)
	listed=$(sed -nE 's/^ +rlock( \[global-options\])? ([a-z][a-z-]*)( .*)?$/\2/p' <<<"$synopsis" | sort -u)
	same_set "subcommands in rlock(1)'s SYNOPSIS" "$cmds" "$listed"
	commands=$(man_section COMMANDS)
	for cmd in $(option_commands); do
		grep -q "rlock-$cmd(1)" <<<"$commands" || { echo "COMMANDS lacks rlock-$cmd(1)"; return 1; }
	done
	# SEE ALSO names every other page, and the tools it is compared with.
	for page in $(man_pages | sed 's,.*/,,; s/\.\([0-9]\)$/(\1)/' | grep -vxF 'rlock(1)') \
		'flock(1)' 'redis-cli(1)' 'timeout(1)'; do
		grep -qF "$page" <<<"$(man_section 'SEE ALSO')" || { echo "SEE ALSO lacks $page"; return 1; }
	done
}

@test "docs: each subcommand's page has the sections, its SYNOPSIS names it, and SEE ALSO names rlock(1)" {
	need_rlock
	local cmd page text sec
	for cmd in $(option_commands); do
		page=$(cmd_page "$cmd")
		grep -qE "^ +rlock-$cmd " <<<"$(man_section NAME "$page")" ||
			{ echo "$page: NAME is not rlock-$cmd"; return 1; }
		text=$(man_text "$page")
		for sec in NAME SYNOPSIS DESCRIPTION OPTIONS 'EXIT STATUS' EXAMPLES 'SEE ALSO'; do
			grep -qx -- "$sec" <<<"$text" || { echo "$page: no section $sec"; return 1; }
		done
		grep -qE "^ +rlock \[global-options\] $cmd( |\$)" <<<"$(man_section SYNOPSIS "$page")" ||
			{ echo "$page: SYNOPSIS does not name 'rlock [global-options] $cmd'"; return 1; }
		grep -qF 'rlock(1)' <<<"$(man_section 'SEE ALSO' "$page")" ||
			{ echo "$page: SEE ALSO lacks rlock(1)"; return 1; }
	done
}

@test "docs: man pages name only options that the binary has" {
	need_rlock
	local all cmd opt page bad=0
	all=$({
		help_options
		for cmd in $(option_commands); do help_options "$cmd"; done
	} | sort -u)
	[ -n "$all" ]
	for page in $(man_pages); do
		for opt in $(man_text "$page" | grep -oE -- '(^|[^[:alnum:]-])--[a-z][a-z0-9-]*' | sed 's/^[^-]*//' | sort -u); do
			if ! grep -qxF -- "$opt" <<<"$all"; then
				echo "${page##*/} mentions $opt, which no --help lists"
				bad=1
			fi
		done
	done
	((bad == 0))
}

@test "docs: rlock(1) lists every exit status and the environment it reads, rlock-run(1) what run sets" {
	need_rlock
	local exits env code var cmd bad=0
	exits=$(man_section 'EXIT STATUS')
	for code in 0 1 64 69 70 71 75 76 77 126 127; do
		grep -qE "^ +$code( |\$)" <<<"$exits" || { echo "EXIT STATUS lacks $code"; bad=1; }
	done
	env=$(man_section ENVIRONMENT)
	for var in $("$RLOCK" --help | grep -oE '\b(RLOCK_[A-Z_]+|REDIS_URL|REDISCLI_AUTH|NO_COLOR)\b' | sort -u) \
		RLOCK_URL REDIS_URL RLOCK_PREFIX REDISCLI_AUTH RLOCK_VERBOSE NO_COLOR \
		RLOCK_NOTE RLOCK_LOG RLOCK_LOG_MAX RLOCK_LOG_DAYS RLOCK_CACERT RLOCK_CERT \
		RLOCK_CERT_KEY RLOCK_SENTINEL_USER RLOCK_SENTINEL_PASSWORD; do
		grep -qE "^ +$var\$|^ +$var[ ,]" <<<"$env" || { echo "rlock(1) ENVIRONMENT lacks $var"; bad=1; }
	done
	env=$(man_section ENVIRONMENT "$(cmd_page run)")
	# The subcommands' helps name these beside the global options' ones.
	for var in $(comm -23 <(for cmd in $(option_commands); do "$RLOCK" "$cmd" --help; done |
		grep -oE '\bRLOCK_[A-Z_]+\b' | sort -u) <("$RLOCK" --help |
		grep -oE '\bRLOCK_[A-Z_]+\b' | sort -u)) \
		RLOCK_NAME RLOCK_KEY RLOCK_TOKEN RLOCK_FENCE RLOCK_SLOT RLOCK_TTL_MS \
		RLOCK_HELD RLOCK_RESOURCE RLOCK_LOCKS; do
		grep -qE "^ +$var\$|^ +$var[ ,]" <<<"$env" || { echo "rlock-run(1) ENVIRONMENT lacks $var"; bad=1; }
	done
	((bad == 0))
}

@test "docs: each option's help is one line, and the global options' help is the same in every subcommand's" {
	need_rlock
	local cmd global
	global=$(help_items)
	[ -n "$global" ]
	for cmd in $(option_commands); do
		run --separate-stderr help_items "$cmd"
		echo "$stderr"
		[ "$status" -eq 0 ]
		[ -n "$output" ]
		# The global options that it prints after its own.
		run -0 bash -c '"$1" "$2" --help | sed -n "/^Global options:/,/^\$/p" | sed "\$d"' _ "$RLOCK" "$cmd"
		assert_output "$("$RLOCK" --help | sed -n '/^Global options:/,/^$/p' | sed '$d')"
	done
}

@test "docs: each man page's option list has the help's options, arguments and text" {
	need_rlock
	local cmd bad=0
	same_items "rlock(1) GLOBAL OPTIONS" "$(help_items)" "$(man_items "$MAN_PAGE" 'GLOBAL OPTIONS')" || bad=1
	for cmd in $(option_commands); do
		same_items "rlock-$cmd(1) OPTIONS" "$(help_items "$cmd")" \
			"$(man_items "$(cmd_page "$cmd")" OPTIONS)" || bad=1
	done
	((bad == 0))
}

@test "docs: the option checks find a man item or a help text that differs" {
	local help man
	help=$(printf '%s\t%s\t%s\n' '-t --ttl' DUR 'lease length (default 30s)' --renew - 'renew it')
	man=$(printf '%s\t%s\t%s\n' '-t --ttl' dur 'Lease length (default 30s).  More.' --renew - 'Renew it.')
	run same_items x "$help" "$man"
	assert_success
	run same_items x "$help" "${man/default 30s/default 20s}"
	assert_failure
	assert_line --partial 'x: -t --ttl: the man page'
	run same_items x "$help" "${man/dur/n}"
	assert_failure
	assert_line "x: -t --ttl takes 'DUR' in the help, 'n' in the man page"
	run same_items x "$help" "$(head -n 1 <<<"$man")"
	assert_failure
	# An option whose help goes on to a second line.
	printf '#!/bin/sh\nprintf "Options:\\n  -t, --ttl DUR   lease\\n                  length\\n"\n' >fake
	chmod +x fake
	RLOCK=./fake run --separate-stderr help_items run
	assert_failure
	assert_stderr --partial 'not on one line:                   length'
}

@test "docs: the zsh and fish completions describe each option with the help's text" {
	need_rlock
	local cmd bad=0
	check_descs "" || bad=1
	for cmd in $(help_commands); do
		check_descs "$cmd" || bad=1
	done
	((bad == 0))
}

@test "docs: the completions and rlock(1) describe each subcommand with the help's summary" {
	need_rlock
	local cmd summary bad=0 zsh fish commands
	zsh=$(sed -n '/^[[:space:]]*commands=($/,/^[[:space:]]*)$/p' "$ZSH_COMP")
	fish=$(fish -N -c 'source $argv[1]; complete -C "rlock "' "$FISH_COMP")
	commands=$(man_section COMMANDS)
	while read -r cmd summary; do
		grep -qxF -- "		'$cmd:${summary//\'/\'\"\'\"\'}'" <<<"$zsh" || { echo "zsh: $cmd is not '$summary'"; bad=1; }
		grep -qxF -- "$cmd"$'\t'"${summary^}" <<<"$fish" || { echo "fish: $cmd is not '${summary^}'"; bad=1; }
		grep -qiF -- "$summary" <<<"$commands" || { echo "rlock(1) COMMANDS: $cmd is not '$summary'"; bad=1; }
	done < <("$RLOCK" --help | sed -n '/^Commands:/,/^$/p' | sed -n 's/^  \([a-z]*\)  *\(.*\)/\1 \2/p')
	((bad == 0))
}

@test "docs: each --help ends by naming its man page, which exists" {
	need_rlock
	local cmd
	run -0 --separate-stderr "$RLOCK" --help
	assert_equal "${lines[-1]}" "See rlock(1)."
	run -0 --separate-stderr "$RLOCK" help
	assert_equal "${lines[-1]}" "See rlock(1)."
	run -0 --separate-stderr "$RLOCK" help help
	assert_equal "${lines[-1]}" "See rlock(1)."
	for cmd in $(option_commands); do
		[[ -f $(cmd_page "$cmd") ]]
		run -0 --separate-stderr "$RLOCK" "$cmd" --help
		assert_equal "${lines[-1]}" "See rlock-$cmd(1)."
		run -0 --separate-stderr "$RLOCK" help "$cmd"
		assert_equal "${lines[-1]}" "See rlock-$cmd(1)."
		run -0 --separate-stderr "$RLOCK" -q "$cmd" -h
		assert_equal "${lines[-1]}" "See rlock-$cmd(1)."
	done
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
