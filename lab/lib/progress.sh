# shellcheck shell=bash
# Progress lines for the lab's long steps (sourced by lab/lib/go.sh and lab/lib/cargo.sh).
#
#   line_awk ARGS...   awk that reads its input a line at a time: Debian's mawk reads a pipe in
#                      blocks, which holds a progress line back until the block is full (a Go build
#                      of a few hundred packages then reported once, at its end)
line_awk() { if awk -W version 2>&1 | grep -q mawk; then awk -W interactive "$@"; else awk "$@"; fi; }
