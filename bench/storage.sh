#!/usr/bin/env bash
# bench/storage.sh - what object storage costs (prints figures).
#
# Against a real S3 store on loopback (Swift s3api, tests/peers/with-s3.sh),
# measured side by side in one run:
#   transfer   a 64 MiB artifact uploaded and downloaded by kctl's client
#              (SHA-256 of the payload signed, streamed from the file)
#              against plain curl on a presigned URL of the same store
#   session    `kctl start` on the small affine spec (tests/data/kctl), two
#              rounds, with evaluator.storage file:// (the session folder)
#              and s3:// (presigned hand-off): wall time of each and ratio
set -euo pipefail
cd "$(dirname "$0")/.."

b=${BUILD_DIR:-build}
if [ -z "${S3_ENDPOINT:-}" ]; then
	cmake -S . -B "$b" -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
	cmake --build "$b" -j"$(nproc)" --target kctl evalpod s3tool >/dev/null
	exec bash tests/peers/with-s3.sh bash "$0" "$@"
fi

tmp=$(mktemp -d "${TMPDIR:-/tmp}/kctl-bench-storage.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
export AWS_ACCESS_KEY_ID=$S3_ACCESS_KEY AWS_SECRET_ACCESS_KEY=$S3_SECRET_KEY
export AWS_REGION=$S3_REGION AWS_SHARED_CREDENTIALS_FILE=/nonexistent AWS_CONFIG_FILE=/nonexistent
tool=$b/tests/s3tool
bucket=s3://kctl-bench
$tool mb $bucket

now() { date +%s.%N; }
ratio() { python3 -c "import sys; print(f'{float(sys.argv[1]) / float(sys.argv[2]):.2f}')" "$1" "$2"; }

head -c $((64 << 20)) /dev/urandom >"$tmp/blob"
t0=$(now); $tool put $bucket bench/blob "$tmp/blob"; t1=$(now)
$tool get $bucket bench/blob >"$tmp/back"; t2=$(now)
cmp -s "$tmp/blob" "$tmp/back" || { echo "download differs from upload" >&2; exit 1; }
put_url=$($tool presign $bucket PUT bench/blob-curl 600)
get_url=$($tool presign $bucket GET bench/blob-curl 600)
t3=$(now); curl -sfS -T "$tmp/blob" "$put_url" >/dev/null; t4=$(now)
curl -sfS -o "$tmp/back2" "$get_url"; t5=$(now)
up=$(python3 -c "print(f'{$t1 - $t0:.2f}')"); down=$(python3 -c "print(f'{$t2 - $t1:.2f}')")
cup=$(python3 -c "print(f'{$t4 - $t3:.2f}')"); cdown=$(python3 -c "print(f'{$t5 - $t4:.2f}')")
echo "== transfer, 64 MiB"
echo "   kctl client: put ${up} s ($(python3 -c "print(f'{64 / ($t1 - $t0):.0f}')") MiB/s), get ${down} s"
echo "   curl on presigned URLs: put ${cup} s, get ${cdown} s"
echo "   ratio kctl/curl: put $(ratio "$up" "$cup"), get $(ratio "$down" "$cdown")"

cp tests/data/kctl/affine* "$tmp/"
sed "s|^session:|evaluator:\n  storage: $bucket/runs\n  s3: {endpoint: \"$S3_ENDPOINT\"}\nsession:|" \
	"$tmp/affine.yaml" >"$tmp/s3.yaml"
export KCTL_STATE_DIR=$tmp/state KCTL_EVALPOD=$PWD/$b/evalpod/evalpod
t0=$(now); "$b"/controller/kctl start "$tmp/affine.yaml" --rounds 2 --no-cache >/dev/null 2>"$tmp/file.log"; t1=$(now)
"$b"/controller/kctl start "$tmp/s3.yaml" --rounds 2 --no-cache >/dev/null 2>"$tmp/s3.log"; t2=$(now)
f=$(python3 -c "print(f'{$t1 - $t0:.1f}')"); s=$(python3 -c "print(f'{$t2 - $t1:.1f}')")
echo "== session, affine spec, 3 rounds (0-2), 7 evaluations each"
echo "   file:// ${f} s, s3:// ${s} s, ratio s3/file $(ratio "$s" "$f")"
