#!/usr/bin/env bash
# Tests of scripts/flat-report.py, the data side of `make bench-flat`, on a
# fixed fixture (tests/flat/fixture/, with tests/cost/fixture/symbols.tsv as
# the symbol table): the five snapshots of one boot per N, written as boot +
# the idle connections' set-up + 2 s of idle work + three runs of 2
# connections with 4, 4 and 14 requests each, lasting 1, 1 and 1.6 s (each
# with its background: the idle work for that long), so the figures are known
# (net of the background; trap_user stands for the kernel's tick, 100 Hz: the
# host's 2.5 s handed over for the idle window must not be used):
#   per request   3,600 at N=0 and 100, 3,660 at N=1000, 4,600 at N=10000
#                 (tcp_input grows: 500, 500, 560, 1,500);
#   set-up        30 per connection (copyout), and in the first run 0.1 more
#                 per idle connection (md_handle): cold 1,030 at N=10000;
#   idle          100 instructions/s + 2 per connection (tcp_input);
#   raw           per request with the background: 3,603 at N=0, 5,203 at
#                 N=10000 (20,100/s x 0.6 s over 20 requests).
# Checks the BENCH figures, the verdict (flat up to N=1000: 1.7%; not flat
# with N=10000, TCP/IP growing), that the set-up and boot cancel, and that
# notes written by hand in the document survive a new report. Then the
# snapshots handed over in the wrong order must fail the checks.
#
#   tests/flat/test-flat-report.sh     (BUILD=build; output in $BUILD/test-flat/)
#
# Prints "PASS flat/<name>" or "FAIL flat/<name>: why".
set -uo pipefail
cd "$(dirname "$0")/../.."
BUILD=${BUILD:-build}
OUT=$BUILD/test-flat
FIX=tests/flat/fixture
rm -rf "$OUT"
mkdir -p "$OUT"

pass() { echo "PASS flat/$1"; }
fail() { echo "FAIL flat/$1: $2"; }

# arg N [ORDER]: the report's argument for N; ORDER "swap" hands the two
# active runs' snapshots over the wrong way round.
arg() {
  local b=$FIX/n$1 a1=k4 a2=k14
  [ "${2:-}" = swap ] && { a1=k14; a2=k4; }
  echo "$1:$b.0.prof:$b.1.prof:2.5:$b.w.prof:$b.$a1.prof:$b.$a2.prof:2:4:14"
}

# report NAME ARGS...: run the report into $OUT/NAME.*
report() {
  local name=$1 png=()
  shift
  command -v gnuplot > /dev/null && png=(--png "$OUT/$name.png")
  python3 scripts/flat-report.py --symbols tests/cost/fixture/symbols.tsv --doc "$OUT/$name.md" "${png[@]}" \
    --tick 80207000 --hz 100 "$@" > "$OUT/$name.out" 2> "$OUT/$name.err"
}

# check NAME LINES...: every line (BENCH name and value, or a line of the
# document after "doc:") is there; prints the first one missing and returns 1.
check() {
  local name=$1 line
  shift
  for line in "$@"; do
    case $line in
      doc:*) grep -qF -- "${line#doc:}" "$OUT/$name.md" || { echo "no '${line#doc:}' in $OUT/$name.md"; return 1; } ;;
      *) grep -qx "BENCH name=${line% *} ${line#* } unit=[a-z/]*" "$OUT/$name.out" ||
           { echo "no '$line' in $OUT/$name.out"; return 1; } ;;
    esac
  done
}

all=("flat_0 value=3600" "flat_100 value=3600" "flat_1000 value=3660" "flat_10000 value=4600"
     "flat_ratio_10000 value=1.278" "flat_idle_0 value=100" "flat_idle_10000 value=20100"
     "flat_setup_cold_0 value=30" "flat_setup_cold_10000 value=1030" "flat_setup_warm_10000 value=30"
     "flat_raw_0 value=3603" "flat_raw_10000 value=5203"
     "flat_idle_per_conn_100 value=2.0" "flat_idle_per_conn_10000 value=2.0" "flat_verdict value=0"
     "doc:| TCP/IP | 500 | 500 | 560 | 1,500 |"
     "doc:**not flat** by the 15% criterion. The part that grows most is *TCP/IP* (+1,000"
     "doc:| \`tcp_input\` | kernel | build/lwip-2.1.3/src/core/tcp_in.c | 1,000 |"
     "doc:| cold | 30 | 40 | 130 | 1,030 |" "doc:| warm | 30 | 30 | 30 | 30 |"
     "doc:| window, guest s | 2.00 | 2.00 | 2.00 | 2.00 |")
if report all "$(arg 0)" "$(arg 100)" "$(arg 1000)" "$(arg 10000)"; then
  pass report
  if why=$(check all "${all[@]}"); then pass figures; else fail figures "$why"; fi
  # The idle connections' set-up (exec_next) and the boot (_entry) cancel.
  if grep -q '`_entry`\|`exec_next`\|`fdt_walk`' "$OUT/all.md"; then fail cancel "boot or set-up in $OUT/all.md"
  else pass cancel; fi
  if command -v gnuplot > /dev/null; then
    if [ -s "$OUT/all.png" ] && grep -q "(all.png)" "$OUT/all.md"; then pass chart; else
      fail chart "no $OUT/all.png or no link to it"; fi
  fi
else
  fail report "exit status $? (see $OUT/all.err)"
fi

if report upto1000 "$(arg 0)" "$(arg 100)" "$(arg 1000)" &&
   why=$(check upto1000 "flat_verdict value=1" "doc:moves by at most +1.7% of its N=100 value (at N=1000): **flat**"); then
  pass flat-verdict
else
  fail flat-verdict "${why:-the report failed (see $OUT/upto1000.err)}"
fi

# Notes written by hand below the marker survive a new report.
echo "A note by hand." >> "$OUT/upto1000.md"
if report upto1000 "$(arg 0)" "$(arg 100)" && grep -qx "A note by hand." "$OUT/upto1000.md" &&
   [ "$(grep -c "^<!-- Notes below" "$OUT/upto1000.md")" = 1 ]; then
  pass notes-kept
else
  fail notes-kept "the note or the marker is not there once (see $OUT/upto1000.md)"
fi

# The planted fault: the two active runs' snapshots swapped. The figures
# come out wrong and the checks must notice.
if ! report swapped "$(arg 0 swap)" "$(arg 100)" "$(arg 1000)" "$(arg 10000)"; then
  fail planted "the report failed on the planted input (see $OUT/swapped.err)"
elif check swapped "${all[@]}" > /dev/null; then
  fail planted "snapshots in the wrong order passed the checks"
else
  pass planted
fi
