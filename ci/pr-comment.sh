#!/usr/bin/env bash
# ci/pr-comment.sh - puts the summaries of ci/kernel-eval.sh's evaluations on
# a pull request as one comment, edited in place on later runs.
#
#   ci/pr-comment.sh [--repo OWNER/NAME --pr N] [--run-url URL] DIR
#
# DIR holds one folder per evaluation (kernel-eval.sh's --out, or the
# workflow's downloaded artifacts): NAME/summary.md (kctl eval's Markdown)
# and NAME/exit-code.  The body starts with the hidden marker
# $KCTL_COMMENT_MARKER (default <!-- kctl-eval -->); the first comment by a
# bot that carries it is edited (PATCH), else one is created (POST), through
# `gh api` with $GH_TOKEN.  Without --repo and --pr the body is printed and
# nothing is sent.  GitHub refuses bodies over 65,536 characters: a longer
# one is cut with a note that the artifacts hold the rest.
set -euo pipefail
shopt -s inherit_errexit

repo="" pr="" run_url="" dir=""
while [ $# -gt 0 ]; do
	case "$1" in
	--repo) [ $# -ge 2 ] || exit 64; repo="$2"; shift 2 ;;
	--pr) [ $# -ge 2 ] || exit 64; pr="$2"; shift 2 ;;
	--run-url) [ $# -ge 2 ] || exit 64; run_url="$2"; shift 2 ;;
	-*) echo "pr-comment.sh: unknown option '$1'" >&2; exit 64 ;;
	*) [ -z "$dir" ] || { echo "pr-comment.sh: one DIR only" >&2; exit 64; }; dir="$1"; shift ;;
	esac
done
if [ -z "$dir" ] || [ ! -d "$dir" ]; then
	echo "usage: ci/pr-comment.sh [--repo OWNER/NAME --pr N] [--run-url URL] DIR" >&2
	exit 64
fi
if { [ -n "$repo" ] && [ -z "$pr" ]; } || { [ -z "$repo" ] && [ -n "$pr" ]; }; then
	echo "pr-comment.sh: --repo and --pr go together" >&2
	exit 64
fi
if [ -n "$pr" ] && ! [[ "$pr" =~ ^[0-9]+$ ]]; then
	echo "pr-comment.sh: --pr '$pr' is not a number" >&2
	exit 64
fi
marker="${KCTL_COMMENT_MARKER:-<!-- kctl-eval -->}"
# It goes into a jq string below: plain characters only.
if ! [[ "$marker" =~ ^\<!--\ [A-Za-z0-9_.:\ -]+\ --\>$ ]]; then
	echo "pr-comment.sh: KCTL_COMMENT_MARKER must look like <!-- name -->" >&2
	exit 64
fi
limit=65536

verdict_of() {
	case "$1" in 0) echo "pass" ;; 1) echo "incorrect: a kernel failed" ;; 2) echo "regression" ;;
	3) echo "infrastructure error" ;; 64) echo "usage error" ;; 130) echo "interrupted" ;;
	"") echo "did not finish" ;; *) echo "exit $1" ;; esac
}

body="$(mktemp)"
trap 'rm -f "$body"' EXIT
{
	echo "$marker"
	for d in "$dir"/*/; do
		[ -d "$d" ] || continue
		name="$(basename "$d")"
		rc="$(cat "$d/exit-code" 2>/dev/null || true)"
		# kctl's summary has its own verdict heading, one level down.
		echo "## kctl eval: $name"
		echo
		if [ -s "$d/summary.md" ]; then
			cat "$d/summary.md"
		else
			echo "**$(verdict_of "$rc")**: kctl eval wrote no summary; the job's log says why."
		fi
		echo
	done
	if [ -n "$run_url" ]; then
		echo "---"
		echo "Results, logs and each evaluation's folder (artifacts): $run_url"
	fi
} >"$body"
if [ "$(wc -c <"$body")" -gt "$limit" ]; then
	cut="$(mktemp)"
	head -c $((limit - 200)) "$body" >"$cut"
	printf '\n\n(cut at %d characters: the artifacts hold every summary)\n' "$((limit - 200))" >>"$cut"
	mv "$cut" "$body"
fi

if [ -z "$repo" ]; then
	cat "$body"
	exit 0
fi
# The marker may be quoted by people: only a bot's comment is ours.
id="$(gh api --paginate "repos/$repo/issues/$pr/comments" \
	--jq ".[] | select(.user.type == \"Bot\" and (.body | contains(\"$marker\"))) | .id" | head -n 1)"
if [ -n "$id" ]; then
	gh api -X PATCH "repos/$repo/issues/comments/$id" -F "body=@$body" --silent
	echo "pr-comment.sh: updated comment $id on $repo#$pr"
else
	gh api -X POST "repos/$repo/issues/$pr/comments" -F "body=@$body" --silent
	echo "pr-comment.sh: commented on $repo#$pr"
fi
