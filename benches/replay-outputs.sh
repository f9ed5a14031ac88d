#!/bin/sh
# Compares what two builds of eboard-bridge print for `replay`, byte for byte:
# stdout, stderr and the exit code, in every format, for each log alone and for
# each folder at once. The wall-clock time that starts each line the rules core
# logs on stderr (`2026-11-26T10:55:04.036666Z  WARN ...`) is left out: it is
# the only part of the output that may differ between two runs of one build.
#
#   sh benches/replay-outputs.sh OLD_BIN NEW_BIN FOLDER...
#
# Each FOLDER's `*.esl` files (not its subfolders) are one group. Prints the
# number of outputs compared and every one that differs; exits 1 if any does.
set -u
[ $# -ge 3 ] || { echo "usage: $0 OLD_BIN NEW_BIN FOLDER..." >&2; exit 2; }
old=$1 new=$2
shift 2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
compared=0 differ=0 reruns=0
run() { # which (o or n), binary, the replay arguments
    which=$1 bin=$2
    shift 2
    "$bin" replay "$@" >"$tmp/$which.out" 2>"$tmp/$which.raw"
    echo "exit $?" >>"$tmp/$which.raw"
    sed -E 's/^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9:.]+Z //' "$tmp/$which.raw" >"$tmp/$which.err"
}
same() { cmp -s "$tmp/o.out" "$tmp/n.out" && cmp -s "$tmp/o.err" "$tmp/n.err"; }
one() { # label, then the replay arguments
    label=$1
    shift
    run o "$old" "$@"
    run n "$new" "$@"
    compared=$((compared + 1))
    # A build that replays many logs on several threads may order the lines
    # they log on stderr differently from run to run: the old build is run
    # again (4 times at most) before a difference is called one.
    tries=0
    while ! same && [ $tries -lt 4 ]; do
        tries=$((tries + 1))
        run o "$old" "$@"
    done
    if ! same; then
        differ=$((differ + 1))
        echo "DIFFERS: $label"
    elif [ $tries -gt 0 ]; then
        reruns=$((reruns + 1))
        echo "same after $tries more run(s) of $old: $label"
    fi
}
for dir in "$@"; do
    for format in text jsonl uci pgn sensors; do
        for log in "$dir"/*.esl; do
            one "$format $log" --format "$format" "$log"
        done
        # shellcheck disable=SC2046
        one "$format $dir/*.esl" --format "$format" $(ls "$dir"/*.esl)
    done
done
echo "$compared outputs compared (stdout, stderr, exit code), $differ differ ($reruns the same only after the old build ran again)"
[ "$differ" -eq 0 ]
