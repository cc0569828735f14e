#!/bin/sh
# Writes one program's manual page, gzipped as Debian wants it (gzip -9n),
# from the program's own --help with help2man (man/man_pages.cmake runs it at
# build time, so the page always says what the installed program says).
#
#   help2man.sh OUT.gz SECTION PROGRAM VERSION WHATIS INCLUDE [--commands]
#
# PROGRAM is the path of the built program; it runs by its bare name (its
# folder first in PATH) so that its usage line names it as a user types it.
# INCLUDE is a help2man include file (man/*.h2m: SEE ALSO, FILES, ...).
# --commands: the program is a CLI11 tree of subcommands (vipu SUBCOMMAND
# OBJECT ...); every leaf command's --help goes into a COMMANDS section.
set -eu
out=$1 section=$2 program=$3 version=$4 whatis=$5 include=$6
commands=${7:-}
name=$(basename "$program")
dir=$(cd "$(dirname "$program")" && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# A clean environment: the page must not depend on who builds it. A build
# with AddressSanitizer must not fail a page on a leak at exit.
run() {
  env -i PATH="$dir:/usr/bin:/bin" HOME="$tmp" LC_ALL=C.UTF-8 ASAN_OPTIONS=detect_leaks=0 \
    ${SOURCE_DATE_EPOCH:+SOURCE_DATE_EPOCH=$SOURCE_DATE_EPOCH} "$@"
}

# The names of the subcommands in a CLI11 help text (the first of each
# entry's aliases), one a line.
subcommands() {
  awk '/^Subcommands:$/ { on = 1; next }
       /^[^ ]/ { on = 0 }
       on && /^  [^ ]/ { sub(/^  /, ""); sub(/[ ,].*/, ""); print }'
}

# A CLI11 help text as roff: the first line (what the command does), the
# usage line as a subsection title, every "Positionals:" and "Options:"
# entry as a tagged paragraph (without the -h,--help every command has).
# $1: the command's words; a usage line that starts with the subcommand's own
# name only (CLI11 does that for some programs) gets its parents in front.
to_roff() {
  awk -v cmd="$1" '
    function esc(s) { gsub(/\\/, "\\e", s); gsub(/-/, "\\-", s); return s }
    function flush() {
      if (term != "" && term !~ /^-h,--help$/) {
        # The flags in bold (a positional in italics), then their argument.
        name = term; rest = ""
        if (match(term, / /)) { name = substr(term, 1, RSTART - 1); rest = substr(term, RSTART) }
        font = name ~ /^-/ ? "B" : "I"
        printf ".TP\n\\f%s%s\\fR%s\n%s\n", font, esc(name), esc(rest), esc(desc)
      }
      term = ""; desc = ""
    }
    NR == 1 { what = $0; next }
    /^Usage: / {
      sub(/^Usage: /, "")
      n = split(cmd, word, " ")
      if (index($0, word[1] " ") != 1) {
        for (i = n - 1; i >= 1; i--) $0 = word[i] " " $0
      }
      printf ".SS \"%s\"\n%s\n", esc($0), esc(what); next }
    /^   +[^ ]/ { sub(/^ +/, ""); desc = desc == "" ? $0 : desc " " $0; next }
    /^  [^ ]/ {
      flush()
      line = substr($0, 3)
      if (match(line, /  +/)) {
        term = substr(line, 1, RSTART - 1); desc = substr(line, RSTART + RLENGTH)
      } else {
        term = line
      }
      next
    }
    { flush() }
    END { flush() }'
}

# Every leaf below "$@" (the program and the subcommands so far), depth first.
walk() {
  help=$(run "$@" --help)
  subs=$(printf '%s\n' "$help" | subcommands)
  if [ -z "$subs" ]; then
    printf '%s\n' "$help" | to_roff "$*"
    return
  fi
  for sub in $subs; do
    walk "$@" "$sub"
  done
}

set -- --no-info --section="$section" --version-string="$version" \
  --name="$whatis" --include="$include" --output="$tmp/page"
if [ "$commands" = --commands ]; then
  {
    printf '%s\n' "[COMMANDS]" "Each command also prints its own help with \\fB\\-\\-help\\fR."
    for sub in $(run "$name" --help | subcommands); do
      walk "$name" "$sub"
    done
  } >"$tmp/commands.h2m"
  set -- "$@" --include="$tmp/commands.h2m"
fi
run help2man "$@" "$name"
gzip -9n <"$tmp/page" >"$out.tmp"
mv "$out.tmp" "$out"
