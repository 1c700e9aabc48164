# Bash completion for kctl: subcommands, their options, and session ids
# (from `kctl status -o json`, with the --state given on the line).
# Installed as share/bash-completion/completions/kctl; or: source this file.

_kctl_options() {
	case "$1" in
	start) echo "--rounds --seed --step --no-progress --state --verbose -v --help" ;;
	resume) echo "--set --rounds --step --no-progress --state --verbose -v --help" ;;
	confirm) echo "--passes --candidates --state --verbose -v --help" ;;
	status) echo "-o --output --state --watch --interval --cluster --namespace --all-namespaces --kubeconfig --context --help" ;;
	show) echo "-o --output --state --help" ;;
	report) echo "-o --output --out --state --help" ;;
	brief) echo "--code -o --output --state --help" ;;
	cancel) echo "--force --state --help" ;;
	delete) echo "--force --state --help" ;;
	render) echo "-o --shards --server-version --help" ;;
	eval) echo "--kernel --baseline --backend --threshold --passes -o --output --out --state --verbose -v --help" ;;
	simulate) echo "--strategy --budgets --seeds --batch --spec --no-starts --noise --trace -o --help" ;;
	version) echo "--help" ;;
	export) echo "--format --out --state --merge --help" ;;
	esac
	# the result cache (kctl cache, --no-cache)
	case "$1" in
	start|resume|eval) echo "--no-cache" ;;
	cache) echo "--older-than -o --output --help" ;;
	esac
}

# The session ids that the state database on this command line holds.
_kctl_sessions() {
	local kctl="$1" state="$2"
	local -a args=(status -o json)

	[[ -n "$state" ]] && args+=(--state "$state")
	"$kctl" "${args[@]}" 2>/dev/null |
		sed -n 's/^ *"session": *"\([A-Za-z0-9._-]*\)",\{0,1\}$/\1/p'
}

# The variant ids of session $3.
_kctl_variants() {
	local kctl="$1" state="$2" session="$3"
	local -a args=(show "$session" -o json)

	[[ -n "$state" ]] && args+=(--state "$state")
	"$kctl" "${args[@]}" 2>/dev/null |
		sed -n 's/^    "id": *"\([A-Za-z0-9._-]*\)",\{0,1\}$/\1/p'
}

_kctl() {
	local cur="${COMP_WORDS[COMP_CWORD]}" prev="${COMP_WORDS[COMP_CWORD-1]}"
	local kctl="${COMP_WORDS[0]}" cmd="" state="" session="" npos=0 i w

	COMPREPLY=()
	for ((i = 1; i < COMP_CWORD; i++)); do
		w="${COMP_WORDS[i]}"
		if [[ -z "$cmd" ]]; then
			cmd="$w"
			continue
		fi
		case "$w" in
		--state) state="${COMP_WORDS[i+1]}"; ((i++)) ;;
		--state=*) state="${w#--state=}" ;;
		--set|--rounds|--passes|--candidates|-o|--output|--shards|--server-version|\
		--strategy|--budgets|--seeds|--batch|--spec|--kernel|--baseline|--backend|\
		--threshold|--out|--interval) ((i++)) ;;
		--format) ((i++)) ;;
		--older-than) ((i++)) ;;
		-*) ;;
		*) ((npos++ == 0)) && session="$w" ;;
		esac
	done
	# a --state later on the line counts too
	for ((i = COMP_CWORD + 1; i < ${#COMP_WORDS[@]}; i++)); do
		[[ "${COMP_WORDS[i]}" == --state ]] && state="${COMP_WORDS[i+1]}"
	done
	if [[ -z "$cmd" ]]; then
		COMPREPLY=($(compgen -W "start resume confirm status show report brief cancel
			export
			delete render simulate eval version help --help --version" -- "$cur"))
		COMPREPLY+=($(compgen -W "cache" -- "$cur"))
		return 0
	fi
	# kctl export: --out is a file; --format json or c
	if [[ "$cmd" == export && ( "$prev" == --out || "$prev" == --format ) ]]; then
		[[ "$prev" == --out ]] && COMPREPLY=($(compgen -f -- "$cur"))
		[[ "$prev" == --format ]] && COMPREPLY=($(compgen -W "json c" -- "$cur"))
		return 0
	fi
	case "$prev" in
	--state|--spec|--kernel|--baseline) COMPREPLY=($(compgen -f -- "$cur")); return 0 ;;
	--out)
		if [[ "$cmd" == report ]]; then
			COMPREPLY=($(compgen -f -- "$cur"))
		else
			COMPREPLY=($(compgen -d -- "$cur"))
		fi
		return 0 ;;
	--backend) COMPREPLY=($(compgen -W "local kubernetes" -- "$cur")); return 0 ;;
	-o|--output)
		if [[ "$cmd" == render ]]; then
			COMPREPLY=($(compgen -W "yaml json" -- "$cur"))
		elif [[ "$cmd" == report ]]; then
			COMPREPLY=($(compgen -W "html md json" -- "$cur"))
		else
			COMPREPLY=($(compgen -W "text json" -- "$cur"))
		fi
		return 0 ;;
	--set)
		COMPREPLY=($(compgen -W "limits.compile_timeout_s= limits.run_timeout_s=
			limits.time_timeout_s= limits.log_max_bytes= limits.peak_margin=" -- "$cur"))
		compopt -o nospace 2>/dev/null
		return 0 ;;
	--rounds|--passes|--candidates|--shards|--server-version|--strategy|--budgets|\
	--seeds|--batch|--threshold) return 0 ;;
	--older-than) return 0 ;;
	esac
	if [[ "$cur" == -* ]]; then
		COMPREPLY=($(compgen -W "$(_kctl_options "$cmd")" -- "$cur"))
		return 0
	fi
	case "$cmd" in
	start|render|eval)
		((npos == 0)) && COMPREPLY=($(compgen -f -X '!*.yaml' -- "$cur")
			$(compgen -f -X '!*.yml' -- "$cur") $(compgen -d -- "$cur")) ;;
	simulate)
		((npos == 0)) && COMPREPLY=($(compgen -f -- "$cur")) ;;
	export)
		# sessions, or with --merge the tables (JSON files) to merge
		if [[ " ${COMP_WORDS[*]} " == *" --merge "* ]]; then
			COMPREPLY=($(compgen -f -X '!*.json' -- "$cur") $(compgen -d -- "$cur"))
		else
			COMPREPLY=($(compgen -W "$(_kctl_sessions "$kctl" "$state")" -- "$cur"))
		fi ;;
	cache)
		((npos == 0)) && COMPREPLY=($(compgen -W "stats prune clear" -- "$cur")) ;;
	resume|confirm|status|show|report|brief|cancel|delete)
		if ((npos == 0)); then
			COMPREPLY=($(compgen -W "$(_kctl_sessions "$kctl" "$state")" -- "$cur"))
		elif ((npos == 1)) && [[ "$cmd" == show || "$cmd" == brief ]]; then
			COMPREPLY=($(compgen -W "$(_kctl_variants "$kctl" "$state" "$session")" \
				-- "$cur"))
		fi ;;
	esac
	return 0
}

complete -F _kctl kctl
