# bash completion for rlock(1): run a command while holding a lock in Redis.
# "make install" puts this file in $(BASHCOMPDIR)/rlock.  It needs nothing
# from the bash-completion package, but uses its command completion for the
# COMMAND of "rlock run" when that is loaded.

# Options, by where they are accepted.  The *_args lists take a value.
_rlock_commands='run lead acquire release extend status bench doctor log last pool help'
_rlock_global_flags='--insecure -v --verbose -q --quiet --json --no-log -h --help -V --version'
_rlock_global_args='-u --url --prefix --connect-timeout --io-timeout --password-file'
_rlock_global_args+=' --cacert --cacertdir --cert --key --sni'
_rlock_global_args+=' --sentinel-user --sentinel-password-file'
_rlock_lease_flags='-n --nonblock -s --shared -x --exclusive --supersede'
_rlock_lease_args='-t --ttl -w --timeout -E --conflict-exit-code -l --limit --min-hold'
_rlock_lease_args+=' --label --note --wait-replicas --priority --pool --count --with'
_rlock_lease_args+=' --progress'
_rlock_run_args='-c --command --on-lost -k --kill-after --max-time --once-per'
_rlock_lead_args='-t --ttl --priority --label --note --wait-replicas -k --kill-after'
_rlock_lead_args+=' --restart --restart-delay --leader-file --promote --demote'
_rlock_lead_args+=' --on-promote --on-demote --hook-timeout --health --health-every --health-fails'
_rlock_lead_flags='--standby'
_rlock_acquire_flags='--renew'
_rlock_acquire_args='--pid --format --on-lost'
_rlock_release_flags='--force'
_rlock_release_args='--status'
_rlock_extend_args='-t --ttl'
_rlock_bench_flags='-s --shared --no-ping'
_rlock_bench_args='-c --clients -k --keys -n --cycles -d --duration -t --ttl --hold --gap'
_rlock_bench_args+=' -l --limit'
_rlock_log_flags='-f --follow'
_rlock_log_args='-n --lines --since'
_rlock_last_flags='--prometheus'
_rlock_last_args='--max-age'

# _rlock_reply COMPGEN-ARGS...: set COMPREPLY to compgen's words, one a line.
_rlock_reply()
{
	mapfile -t COMPREPLY < <(compgen "$@")
}

# _rlock_takes_value OPTION [SUBCOMMAND]: succeed if OPTION is followed by
# a value.  "-n" takes one in bench and log only.
_rlock_takes_value()
{
	local args="$_rlock_global_args $_rlock_lease_args $_rlock_run_args $_rlock_acquire_args"
	args+=" $_rlock_release_args $_rlock_last_args $_rlock_lead_args"
	case ${2-} in
	bench) args="$_rlock_global_args $_rlock_bench_args" ;;
	log) args="$_rlock_global_args $_rlock_log_args" ;;
	esac
	case " $args " in
	*" $1 "*) return 0 ;;
	esac
	return 1
}

# _rlock_values OPTION PREFIX: fill COMPREPLY with the values of OPTION.
_rlock_values()
{
	case $1 in
	--on-lost)
		_rlock_reply -W 'term kill ignore' -- "$2" ;;
	--restart)
		_rlock_reply -W 'always on-failure never' -- "$2" ;;
	--promote|--demote)
		_rlock_reply -W 'USR1 USR2 HUP INT QUIT TERM ALRM WINCH CONT' -- "$2" ;;
	--format)
		_rlock_reply -W 'token json env' -- "$2" ;;
	--password-file|--sentinel-password-file|--cacert|--cert|--key|--leader-file)
		compopt -o filenames 2>/dev/null
		_rlock_reply -f -- "$2" ;;
	--cacertdir)
		compopt -o filenames 2>/dev/null
		_rlock_reply -d -- "$2" ;;
	--pid)
		_rlock_reply -W "$(command ps -axo pid= 2>/dev/null)" -- "$2" ;;
	*)
		COMPREPLY=() ;;
	esac
}

_rlock()
{
	local IFS=$' \t\n'
	local -a words map
	local i w n=-1 glue=0 cword=0 cur prev line rest track=1 adj

	# Bash splits words at the characters in COMP_WORDBREAKS, so that
	# "--format=json" and "redis://h:6379" arrive in pieces.  Join a "="
	# or ":" to the words it touches again (COMP_LINE tells whether they
	# touch), remembering where each word starts in COMP_WORDS.
	line=${COMP_LINE:-}
	[[ -n $line ]] && line=${line:0:${COMP_POINT:-${#line}}} || track=0
	for ((i = 0; i < ${#COMP_WORDS[@]}; i++)); do
		w=${COMP_WORDS[i]}
		adj=1
		if ((track)); then
			rest=${line#"${line%%[![:space:]]*}"}
			((${#rest} == ${#line})) || adj=0
			if [[ $rest == "$w"* ]]; then
				line=${rest:${#w}}
			else
				track=0 adj=1
			fi
		fi
		if ((n >= 0 && adj)) && { ((glue)) || [[ $w == [=:] ]]; }; then
			words[n]+=$w
		else
			words[++n]=$w
			map[n]=$i
		fi
		[[ $w == [=:] ]] && glue=1 || glue=0
		((i == COMP_CWORD)) && cword=$n
	done
	cur=${words[cword]}
	prev=
	((cword > 0)) && prev=${words[cword - 1]}

	# The subcommand is the first word that is neither an option nor the
	# value of a global option.
	local sub='' subi=0
	for ((i = 1; i < cword; i++)); do
		w=${words[i]}
		case $w in
		--*=*|-) ;;
		-*) _rlock_takes_value "$w" && ((i++)) ;;
		*) sub=$w; subi=$i; break ;;
		esac
	done

	# "run" and "lead" take their options before and after NAME; the
	# first word after NAME that is not an option, or what follows a "--",
	# is the command, unless -c gave one.  "-- NAME" ends the options at
	# NAME.
	if [[ $sub == run || $sub == lead ]]; then
		local namei=0 cmdi=0 has_c=0
		for ((i = subi + 1; i < cword; i++)); do
			w=${words[i]}
			case $w in
			--)
				if ((namei)); then
					cmdi=$((i + 1))
				else
					namei=$((i + 1))
					cmdi=$((i + 2))
					[[ ${words[cmdi]-} == -- ]] && ((cmdi++))
				fi
				break ;;
			-c|--command|--command=*|-c?*) has_c=1
				[[ $w == -c || $w == --command ]] && ((i++)) ;;
			--*=*) ;;
			-*) _rlock_takes_value "$w" && ((i++)) ;;
			*)
				if ((namei)); then
					cmdi=$i
					break
				fi
				namei=$i ;;
			esac
		done
		# After NAME, before any command: an option, or the command.
		((namei && namei < cword && !cmdi)) && [[ $cur == -* ]] && namei=0
		if ((namei && namei < cword)); then
			((has_c)) && { COMPREPLY=(); return 0; }
			((cmdi)) || cmdi=$cword
			((cmdi > cword)) && { COMPREPLY=(); return 0; }
			if declare -F _comp_command_offset >/dev/null; then
				_comp_command_offset "${map[cmdi]}"
			elif declare -F _command_offset >/dev/null; then
				_command_offset "${map[cmdi]}"
			elif ((cword == cmdi)); then
				_rlock_reply -c -- "$cur"
			else
				compopt -o filenames 2>/dev/null
				_rlock_reply -f -- "$cur"
			fi
			return 0
		fi
	fi

	# A value, after "--opt=" or after an option that takes one.
	if [[ $cur == --*=* ]]; then
		_rlock_values "${cur%%=*}" "${cur#*=}"
		return 0
	fi
	if _rlock_takes_value "$prev" "$sub"; then
		_rlock_values "$prev" "$cur"
		return 0
	fi

	local opts="$_rlock_global_flags $_rlock_global_args"
	case $sub in
	'')
		if [[ $cur == -* ]]; then
			_rlock_reply -W "$opts" -- "$cur"
		else
			_rlock_reply -W "$_rlock_commands" -- "$cur"
		fi
		return 0 ;;
	run)
		opts+=" $_rlock_lease_flags $_rlock_lease_args $_rlock_run_args" ;;
	lead)
		opts+=" $_rlock_lead_flags $_rlock_lead_args" ;;
	acquire)
		opts+=" $_rlock_lease_flags $_rlock_lease_args $_rlock_acquire_flags $_rlock_acquire_args" ;;
	release)
		opts+=" $_rlock_release_flags $_rlock_release_args" ;;
	extend)
		opts+=" $_rlock_extend_args" ;;
	status|doctor|pool) ;;
	bench)
		opts+=" $_rlock_bench_flags $_rlock_bench_args" ;;
	log)
		opts+=" $_rlock_log_flags $_rlock_log_args" ;;
	last)
		opts+=" $_rlock_last_flags $_rlock_last_args" ;;
	help)
		if [[ $cur != -* ]]; then
			_rlock_reply -W "$_rlock_commands" -- "$cur"
			return 0
		fi ;;
	*)
		COMPREPLY=()
		return 0 ;;
	esac

	# Lock names and tokens cannot be guessed; offer options only, before
	# the operands and after them (rlock takes them anywhere; "--" ends
	# them).
	for ((i = subi + 1; i < cword; i++)); do
		[[ ${words[i]} == -- ]] && { COMPREPLY=(); return 0; }
	done
	if [[ $cur == -* ]]; then
		_rlock_reply -W "$opts" -- "$cur"
	else
		COMPREPLY=()
	fi
	return 0
}

complete -F _rlock rlock
