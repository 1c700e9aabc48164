#!/usr/bin/env bash
# ci/kernel-eval.sh - runs `kctl eval` for the kernels a change touches, each
# against its version on the base ref.  What .github/workflows/kernel-eval.yml
# and .github/actions/kctl-eval run; works the same in any git clone.
#
#   ci/kernel-eval.sh --list [--base REF] [FILE...]
#   ci/kernel-eval.sh [--base REF] [--backend B] [--threshold PCT] [--passes N] [--out DIR] [FILE...]
#   ci/kernel-eval.sh --spec SPEC [--kernel FILE] [--base REF] [...]
#
# Change detection: the changed files are FILE... when given, else
# `git diff --name-only --diff-filter=AMR REF...HEAD` (REF defaults to
# origin/main).  Each spec matched by $KCTL_EVAL_SPECS (default
# examples/*.yaml, globs separated by spaces) whose kernel.template is a
# changed .cl file is evaluated: `kctl eval SPEC --kernel TEMPLATE
# [--baseline BASE_COPY]`, where BASE_COPY is `git show REF:TEMPLATE`; a
# template new on this branch has no baseline and runs without --baseline.
# --spec SPEC names the spec instead (workflow_dispatch); its template is the
# kernel unless --kernel says otherwise, and is compared with the base ref's
# version only when --base is given.
#
# --list prints the evaluations as a JSON array of {"name","spec","kernel"}
# (the workflow's matrix) and runs nothing.  Otherwise each evaluation
# writes to DIR/NAME (DIR defaults to kctl-eval, NAME is the spec's file name
# without .yaml): baseline/FILE, the base version given to --baseline (so
# kctl's summary names a path that the artifact holds), kctl's own files,
# then exit-code (kctl eval's status).  With $GITHUB_STEP_SUMMARY set each
# evaluation's summary is headed by its spec; with $GITHUB_OUTPUT set this
# script writes evals=N, exit_code=S, verdict=WORD and out=DIR there (kctl's
# own outputs of each run go to DIR/NAME/outputs.txt, so several runs do not
# overwrite one another's).
#
# kctl is $KCTL, else `kctl` on PATH.  Exit status: 0 when nothing needs
# evaluating or every evaluation exited 0; else one of kctl eval's statuses,
# in the order kctl eval itself decides one evaluation's: 64 (usage), then
# any status it does not define (130: interrupted, or killed by a signal),
# then 3 (infrastructure), 1 (a kernel failed), 2 (a regression).  verdict=
# is kctl's word for it: usage, error, infra_error, incorrect, regression,
# pass.  64 for a usage error of this script.
set -euo pipefail
shopt -s inherit_errexit

usage() {
	sed -n '6,8p' "$0" | sed 's/^#   /usage: /' >&2
	exit 64
}

base="" spec="" kernel="" backend="" threshold="" passes="" out="kctl-eval" list=0
files=()
while [ $# -gt 0 ]; do
	case "$1" in
	--base) [ $# -ge 2 ] || usage; base="$2"; shift 2 ;;
	--spec) [ $# -ge 2 ] || usage; spec="$2"; shift 2 ;;
	--kernel) [ $# -ge 2 ] || usage; kernel="$2"; shift 2 ;;
	--backend) [ $# -ge 2 ] || usage; backend="$2"; shift 2 ;;
	--threshold) [ $# -ge 2 ] || usage; threshold="$2"; shift 2 ;;
	--passes) [ $# -ge 2 ] || usage; passes="$2"; shift 2 ;;
	--out) [ $# -ge 2 ] || usage; out="$2"; shift 2 ;;
	--list) list=1; shift ;;
	--) shift; files+=("$@"); break ;;
	-*) echo "kernel-eval.sh: unknown option '$1'" >&2; usage ;;
	*) files+=("$1"); shift ;;
	esac
done
case "$backend" in "" | local | kubernetes) ;; *)
	echo "kernel-eval.sh: --backend must be local or kubernetes, not '$backend'" >&2; exit 64 ;;
esac
kctl="${KCTL:-kctl}"
git rev-parse --show-toplevel >/dev/null || { echo "kernel-eval.sh: not in a git clone" >&2; exit 64; }
# A shallow clone lacks the base commit: say so rather than find no baseline.
if [ -n "$base" ] && ! git rev-parse -q --verify "$base^{commit}" >/dev/null; then
	echo "kernel-eval.sh: base '$base' is not a commit here (a shallow clone? fetch-depth: 0)" >&2
	exit 64
fi

# kernel.template of a spec, as written (relative to the spec's folder).
# Block style (`kernel:` then an indented `template:`) or flow style
# (`kernel: {template: x}`); quotes and trailing comments stripped.
spec_template() {
	awk '
		function clean(v) {
			sub(/[ \t]+#.*$/, "", v); sub(/^[ \t]+/, "", v); sub(/[ \t]+$/, "", v)
			gsub(/^["'\'']|["'\'']$/, "", v); return v
		}
		/^kernel:[ \t]*\{/ {
			if (match($0, /template:[ \t]*[^,}]+/)) {
				v = substr($0, RSTART, RLENGTH); sub(/^template:/, "", v); print clean(v)
			}
			exit
		}
		/^kernel:[ \t]*(#.*)?$/ { inkernel = 1; next }
		inkernel && /^[^ \t#]/ { exit }
		inkernel && /^[ \t]+template:/ { v = $0; sub(/^[ \t]+template:/, "", v); print clean(v); exit }
	' "$1"
}

# A path relative to the repository's top, with ./ and a/../ segments gone.
normalize() {
	local IFS=/ part
	local -a parts=() kept=()
	read -r -a parts <<<"$1"
	for part in "${parts[@]}"; do
		case "$part" in
		"" | .) ;;
		..) [ ${#kept[@]} -gt 0 ] && unset 'kept[${#kept[@]}-1]' ;;
		*) kept+=("$part") ;;
		esac
	done
	echo "${kept[*]}"
}

# The evaluations, one "NAME<TAB>SPEC<TAB>KERNEL" line each.
plan() {
	local g s t
	if [ -n "$spec" ]; then
		[ -f "$spec" ] || { echo "kernel-eval.sh: no spec '$spec'" >&2; exit 64; }
		t="$kernel"
		if [ -z "$t" ]; then
			t="$(spec_template "$spec")"
			[ -n "$t" ] && t="$(normalize "$(dirname "$spec")/$t")"
		fi
		printf '%s\t%s\t%s\n' "$(basename "$spec" .yaml)" "$spec" "$t"
		return
	fi
	local -A changed=()
	if [ ${#files[@]} -eq 0 ]; then
		local diff
		diff="$(git diff --name-only --diff-filter=AMR "${base:-origin/main}...HEAD" --)"
		[ -n "$diff" ] && mapfile -t files <<<"$diff"
	fi
	for t in "${files[@]}"; do
		case "$t" in *.cl) changed["$(normalize "$t")"]=1 ;; esac
	done
	[ ${#changed[@]} -gt 0 ] || return 0
	local -a globs
	read -r -a globs <<<"${KCTL_EVAL_SPECS:-examples/*.yaml}"
	for g in "${globs[@]}"; do
		# shellcheck disable=SC2086 # each entry is a glob
		for s in $g; do
			[ -f "$s" ] || continue
			t="$(spec_template "$s")"
			[ -n "$t" ] || continue
			t="$(normalize "$(dirname "$s")/$t")"
			if [ -n "${changed[$t]:-}" ]; then
				printf '%s\t%s\t%s\n' "$(basename "$s" .yaml)" "$s" "$t"
			fi
		done
	done
}

json_str() {
	local s="${1//\\/\\\\}"
	s="${s//\"/\\\"}"
	printf '"%s"' "$s"
}

planned="$(plan)"
evals=()
[ -n "$planned" ] && mapfile -t evals <<<"$planned"

if [ "$list" -eq 1 ]; then
	sep=""
	printf '['
	for e in "${evals[@]}"; do
		IFS=$'\t' read -r name s t <<<"$e"
		printf '%s{"name":%s,"spec":%s,"kernel":%s}' "$sep" "$(json_str "$name")" \
			"$(json_str "$s")" "$(json_str "$t")"
		sep=","
	done
	printf ']\n'
	exit 0
fi

# The most telling status first (see the header).
rank() {
	case "$1" in 0) echo 0 ;; 2) echo 1 ;; 1) echo 2 ;; 3) echo 3 ;; 64) echo 5 ;; *) echo 4 ;; esac
}
verdict_of() {
	case "$1" in 0) echo pass ;; 1) echo incorrect ;; 2) echo regression ;; 3) echo infra_error ;;
	64) echo usage ;; *) echo error ;; esac
}

status=0
mkdir -p "$out"
out_abs="$(cd "$out" && pwd)"
for e in "${evals[@]}"; do
	IFS=$'\t' read -r name s t <<<"$e"
	dir="$out/$name"
	rm -rf "$dir"
	mkdir -p "$dir"
	args=(eval "$s")
	# --spec without --kernel evaluates the spec's template as kctl finds it.
	if [ -n "$t" ] && { [ -z "$spec" ] || [ -n "$kernel" ]; }; then
		args+=(--kernel "$t")
	fi
	baseline=""
	if [ -n "$t" ] && { [ -z "$spec" ] || [ -n "$base" ]; }; then
		ref="${base:-origin/main}"
		if git cat-file -e "$ref:$t" 2>/dev/null; then
			mkdir -p "$dir/baseline"
			baseline="$dir/baseline/$(basename "$t")"
			git show "$ref:$t" >"$baseline"
			args+=(--baseline "$baseline")
		else
			echo "kernel-eval.sh: $t is new since $ref: no baseline"
		fi
	fi
	[ -n "$backend" ] && args+=(--backend "$backend")
	[ -n "$threshold" ] && args+=(--threshold "$threshold")
	[ -n "$passes" ] && args+=(--passes "$passes")
	args+=(--out "$dir")
	if [ -n "${GITHUB_STEP_SUMMARY:-}" ]; then
		printf '\n## %s\n\n' "$s" >>"$GITHUB_STEP_SUMMARY"
	fi
	echo "+ $kctl ${args[*]}"
	rc=0
	GITHUB_OUTPUT="$out_abs/$name/outputs.txt" "$kctl" "${args[@]}" || rc=$?
	mkdir -p "$dir"
	echo "$rc" >"$dir/exit-code"
	echo "kernel-eval.sh: $s: kctl eval exited $rc ($(verdict_of "$rc"))"
	if [ "$(rank "$rc")" -gt "$(rank "$status")" ]; then
		status=$rc
	fi
done

if [ ${#evals[@]} -eq 0 ]; then
	echo "kernel-eval.sh: no spec's kernel changed: nothing to evaluate"
fi
if [ -n "${GITHUB_OUTPUT:-}" ]; then
	{
		echo "evals=${#evals[@]}"
		echo "exit_code=$status"
		echo "verdict=$(verdict_of "$status")"
		echo "out=$out"
	} >>"$GITHUB_OUTPUT"
fi
exit "$status"
