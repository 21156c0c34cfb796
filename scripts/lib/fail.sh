# shellcheck shell=bash
# Sourced first by every entry script (scripts/*.sh, .ci/run): a script that `set -e` stops says
# which command stopped it, where, and with what status, instead of exiting without a word.
# The ERR trap only records (it also runs in subshells and functions: errtrace); the EXIT handler
# prints the record when the script ends with a failure that no message of its own explained.
# A script with an EXIT trap of its own calls `nf_exit_report "$rc"` from it.
set -E
NF_STOPPED_AT=""
trap 'NF_STOPPED_AT="${BASH_SOURCE[0]#"${NF_ROOT:-}/"}:${LINENO}: ${BASH_COMMAND}"' ERR
nf_exit_report() { # RC
    if [ "$1" -ne 0 ] && [ -n "$NF_STOPPED_AT" ]; then
        printf '%s: stopped (exit status %s) by a failing command at %s\n' "${0##*/}" "$1" "$NF_STOPPED_AT" >&2
    fi
    return 0
}
trap 'nf_exit_report "$?"' EXIT
