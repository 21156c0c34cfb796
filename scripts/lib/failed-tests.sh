# shellcheck shell=bash
# The e2e tier's failed tests, printed at the end of its output: CI keeps an excerpt of a run's last
# lines, where the tests that failed after the first (a scenario starts from what the one before it
# left) would hide the one that failed first. Reads node's spec reporter in the tier's log: each
# failed test once, in the order it ran, then the first one's error (40 lines at most).
nf_failed_tests() { # LOG
    awk '
        /^✖ failing tests:/ { exit }
        /^ *✖ / {
            line = $0
            sub(/^ */, "", line)
            if (!(line in seen)) { seen[line] = 1; order[++n] = line }
            if (first == "") { first = line; keep = 40; next }
        }
        keep > 0 { if ($0 ~ /^ *(✔|✖|▶) /) keep = 0; else { err[++m] = $0; keep-- } }
        END {
            if (n == 0) exit
            print "the tests that failed, in the order they ran:"
            for (i = 1; i <= n; i++) print "  " order[i]
            print "the first one'"'"'s error:"
            for (i = 1; i <= m; i++) print err[i]
        }' "$1"
}
