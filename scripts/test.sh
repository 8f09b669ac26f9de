#!/usr/bin/env bash
# Coral's whole test suite, as run by `make test` (and by CI through .ci/run):
#   1. host unit tests (native gcc, ASan + UBSan): executor, CES mutex, allocators, DTB parser,
#      ELF and initrd readers, matrix protocol, the N-extension model; the host
#      client against a host server; make eval's report generator, make
#      bench-cost's and bench-flat's reports and the trace converter on fixtures;
#      hw/ (RTL lint, differential test against
#      kernel/nmodel.c, planted bugs: scripts/hw-test.sh)
#   2. kernel tests inside QEMU on 1, 2, 4 and 8 harts (tests/kernel/, bootargs test=all;
#      the KTEST_GUEST_TIME ones by name, under -icount)
#   3. boot matrix: 1..8 harts, 128 MiB..2 GiB, and bootargs harts=N; the banner must report them;
#      the SBI timer fallback (a CPU without Sstc); the console monitor over the UART
#   4. kernel fault report: registers and a backtrace, then a failure shutdown
#   5. nothing the run started is left running
#   (and, between 2 and 3: the scheduler trace in the kernel,
#   tests/trace/test-ktrace.sh; the network end to end: scripts/nettest.sh;
#   a short soak: scripts/soak.sh --test)
# Every check prints "PASS name" or "FAIL name: why"; the last line is
# "N passed, N failed" and the exit status is non-zero if anything failed.
# Logs of every QEMU run are kept in build/test-logs/.
#
#   scripts/test.sh [--host-only]
set -uo pipefail
cd "$(dirname "$0")/.."

source scripts/qemu-lib.sh     # BUILD, QEMU, OPENSBI, QEMU_LIMIT, coral_qemu
LOGS=$BUILD/test-logs
mkdir -p "$LOGS" "$BUILD/host"

source scripts/check-lib.sh    # passed, failed, pass, fail, tally

# How long each part took, for the closing lines (a slower test run shows).
timings=()
part_start=$SECONDS
part_done() { timings+=("$1 $((SECONDS - part_start))s"); part_start=$SECONDS; }
summary() {
  local IFS=,
  echo "time:${timings[*]/#/ } (total $((SECONDS))s)"
  echo "$passed passed, $failed failed"
}

# ---- 1. host unit tests ----
HOSTCC=${HOSTCC:-gcc}
HOSTFLAGS="-std=c11 -D_DEFAULT_SOURCE -Wall -Wextra -Werror -g -O1 -fsanitize=address,undefined -fno-sanitize-recover=all -Itests/host -Ikernel -Ivdso"
declare -A HOST_SRCS=(
  [test_executor]="vdso/executor.c tests/host/test_executor.c"
  [test_ces]="vdso/ces.c tests/host/test_ces.c"
  [test_alloc]="kernel/palloc.c kernel/kmalloc.c tests/host/spinlock_host.c tests/host/test_alloc.c"
  [test_fdt]="kernel/fdt.c kernel/board.c tests/host/test_fdt.c"
  [test_elf]="kernel/elf.c tests/host/test_elf.c"
  [test_initrd]="kernel/initrd.c tests/host/test_initrd.c"
  [test_matrix_proto]="user/matrix_proto.c tests/host/test_matrix_proto.c"
  [test_nmodel]="kernel/nmodel.c tests/host/test_nmodel.c"
  [test_memcopy]="tests/host/test_memcopy.c"
  [test_siphash]="kernel/siphash.c tests/host/test_siphash.c"
)
for t in test_executor test_ces test_alloc test_fdt test_elf test_initrd test_matrix_proto test_nmodel test_memcopy test_siphash; do
  bin=$BUILD/host/$t
  if ! $HOSTCC $HOSTFLAGS ${HOST_SRCS[$t]} -lpthread -o "$bin" > "$LOGS/$t.build.log" 2>&1; then
    fail "host/$t" "does not build (see $LOGS/$t.build.log)"
    continue
  fi
  "$bin" > "$LOGS/$t.log" 2>&1
  rc=$?
  tally "host/" "$LOGS/$t.log" "PASS " "FAIL "
  if [ $rc -ne 0 ] && ! grep -q '^FAIL ' "$LOGS/$t.log"; then
    fail "host/$t" "exited with status $rc without a FAIL line (sanitizer report? see $LOGS/$t.log)"
  fi
done

# ---- 1b. host network tools: mclient against mserver (no QEMU) ----
BUILD=$BUILD HOSTCC=$HOSTCC bash scripts/host/test-client.sh > "$LOGS/client.log" 2>&1
tally "" "$LOGS/client.log" "PASS " "FAIL "
grep -q "^PASS client/build" "$LOGS/client.log" || fail "client/run" "no result (see $LOGS/client.log)"

part_done host

# ---- 1c. the repository: links, paths named in comments and docs, README's
#      Layout, no paths outside the tree; and proof that each check can fail;
#      then make eval's report generator and the trace converter ----
bash scripts/check-repo.sh > "$LOGS/repo.log" 2>&1
tally "" "$LOGS/repo.log" "PASS " "FAIL "
grep -q "^\(PASS\|FAIL\) repo/links" "$LOGS/repo.log" || fail "repo/check" "no result (see $LOGS/repo.log)"
bash tests/repo/test-check-repo.sh > "$LOGS/repo-selftest.log" 2>&1
tally "" "$LOGS/repo-selftest.log" "PASS " "FAIL "
grep -q "^PASS repo/check-repo-clean-tree-passes" "$LOGS/repo-selftest.log" || fail "repo/check-repo-selftest" "no result (see $LOGS/repo-selftest.log)"
# The report generators below draw charts with gnuplot, and check them only
# where it is installed: install it, so that every machine runs the same
# checks (one without it ran 4 fewer, and the count differed between hosts).
if ! command -v gnuplot > /dev/null && ! bash scripts/deps.sh --eval > "$LOGS/deps-eval.log" 2>&1; then
  fail "deps/gnuplot" "not installable, so the chart checks are skipped (see $LOGS/deps-eval.log)"
fi
# make eval's report generator on a fixed fixture (no QEMU)
BUILD=$BUILD bash tests/eval/test-eval-report.sh > "$LOGS/eval-report.log" 2>&1
tally "" "$LOGS/eval-report.log" "PASS " "FAIL "
grep -q "^PASS eval/report" "$LOGS/eval-report.log" || fail "eval/run" "no result (see $LOGS/eval-report.log)"
# make bench-cost's category mapping and report on a fixed fixture (no QEMU)
BUILD=$BUILD bash tests/cost/test-cost-report.sh > "$LOGS/cost-report.log" 2>&1
tally "" "$LOGS/cost-report.log" "PASS " "FAIL "
grep -q "^PASS cost/report" "$LOGS/cost-report.log" || fail "cost/run" "no result (see $LOGS/cost-report.log)"
# make bench-flat's report (double differences of snapshots, the verdict) on a fixture (no QEMU)
BUILD=$BUILD bash tests/flat/test-flat-report.sh > "$LOGS/flat-report.log" 2>&1
tally "" "$LOGS/flat-report.log" "PASS " "FAIL "
grep -q "^PASS flat/report" "$LOGS/flat-report.log" || fail "flat/run" "no result (see $LOGS/flat-report.log)"
# the scheduler timeline's host converter on fixed traces (no QEMU)
BUILD=$BUILD bash tests/trace/test-trace.sh > "$LOGS/trace.log" 2>&1
tally "" "$LOGS/trace.log" "PASS " "FAIL "
grep -q "^PASS trace/convert" "$LOGS/trace.log" || fail "trace/run" "no result (see $LOGS/trace.log)"

# ---- 1d. hw/: RTL lint, the differential test against kernel/nmodel.c, planted bugs ----
BUILD=$BUILD bash scripts/hw-test.sh > "$LOGS/hw.log" 2>&1
tally "" "$LOGS/hw.log" "PASS " "FAIL "
grep -q "^[0-9]* passed, [0-9]* failed" "$LOGS/hw.log" || fail "hw/run" "no result (see $LOGS/hw.log)"
part_done hw

if [ "${1:-}" = "--host-only" ]; then
  summary
  [ $failed -eq 0 ]
  exit
fi

# ---- build the kernel ----
if ! make -s all > "$LOGS/kernel.build.log" 2>&1; then
  fail "kernel/build" "see $LOGS/kernel.build.log"
  tail -20 "$LOGS/kernel.build.log"
  summary
  exit 1
fi
part_done build

run_qemu() {   # run_qemu LOG SMP MEM ARGS
  coral_qemu "$2" "$3" "$4" < /dev/null > "$1" 2>&1
}

# ---- 2. kernel tests on 1, 2, 4 and 8 harts (the executor's lanes: ordering,
# migration, the steal bound; 8 harts on a 2-core host is a correctness point,
# not a speed point) ----
for smp in 1 2 4 8; do
  log=$LOGS/ktest-smp$smp.log
  run_qemu "$log" "$smp" 256M "test=all"
  rc=$?
  tally "kernel-smp$smp/" "$log" "KTEST PASS " "KTEST FAIL "
  if ! grep -q "^KTEST DONE" "$log"; then
    why="no KTEST DONE line"
    [ $rc -eq 124 ] && why="hung: killed after ${QEMU_LIMIT}s"
    grep -q "PANIC" "$log" && why="kernel panic: $(grep -m1 PANIC "$log" | tr -d '\r')"
    fail "kernel-smp$smp/run" "$why (see $log)"
  elif grep -q "^KTEST DONE passed=[0-9]* failed=0" "$log"; then
    [ $rc -eq 0 ] && pass "kernel-smp$smp/exit-status-success" ||
      fail "kernel-smp$smp/exit-status-success" "QEMU exited with $rc after a passing run"
  fi
done

# ---- the verdict is QEMU's exit status too: a failing job exits non-zero, and
#      a test name that matches nothing is a failure that lists the names ----
log=$LOGS/ktest-no-such-test.log
run_qemu "$log" 1 128M "test=no_such_test"
rc=$?
if [ $rc -eq 1 ] && grep -q "^KTEST FAIL no-such-test" "$log" && grep -q "^  stale_cid_rejected" "$log"; then
  pass "kernel/unknown-test-name-fails-and-lists"
else
  fail "kernel/unknown-test-name-fails-and-lists" "want status 1 and the list of tests, got status $rc (see $log)"
fi
# The tests whose verdict would depend on how the host runs the vCPUs
# (KTEST_GUEST_TIME in tests/kernel/ktest.h; test=all leaves them out) run
# under -icount, where time is the guest's instructions, on 1, 2, 4 and 8 harts
for smp in 1 2 4 8; do
  log=$LOGS/ktest-icount-smp$smp.log
  QEMU_EXTRA="-icount shift=0,sleep=off" run_qemu "$log" "$smp" 128M "test=idle_harts_take_no_ticks"
  tally "kernel-icount-smp$smp/" "$log" "KTEST PASS " "KTEST FAIL "
  grep -q "^KTEST DONE passed=1 failed=0" "$log" ||
    fail "kernel-icount-smp$smp/run" "no passing KTEST DONE line (see $log)"
done
# ... and such a test still catches what it is for: with the periodic tick
# kept on idle harts (bootargs idle_tick=1), idle_harts_take_no_ticks fails
log=$LOGS/ktest-idle-tick-kept.log
QEMU_EXTRA="-icount shift=0,sleep=off" run_qemu "$log" 2 128M "idle_tick=1 test=idle_harts_take_no_ticks"
if grep -q "^KTEST FAIL idle_harts_take_no_ticks" "$log"; then
  pass "kernel/idle-ticks-caught-when-kept"
else
  fail "kernel/idle-ticks-caught-when-kept" "idle_harts_take_no_ticks passed with idle_tick=1 (see $log)"
fi
part_done kernel

# ---- 2b. user programs that test the system from user space, on 1 and 2 harts:
#      usertests (every system call with bad input, faults, kills, leaks),
#      sysfuzz (random system calls from fixed seeds: each child ends as its
#      seed says or is killed by a watchdog, and nothing leaks),
#      coptest (the COPS API on the vDSO executor), asynctest (async calls,
#      completion ring, user interrupts), threadtest, socktest, conntest
#      (connect and loopback), priotest,
#      cputest, cestest (CES mutexes) and the paper's two examples. Each
#      prints "<prog>: PASS|FAIL name". user_suite runs them all on the QEMU in $QEMU with -cpu $QEMU_CPU;
#      it runs once on stock QEMU (emulated user interrupts) and once on ours
#      with the N extension (native), check names prefixed by PREFIX ----
# user_prog PREFIX NAME SMP ARGS [BOOTARGS]: boot with user=ARGS (and more
# bootargs); tally the program's lines.
user_prog() {
  local prefix=$1 name=$2 smp=$3 args=$4 prog=${4%%,*}
  local log=$LOGS/${prefix//\//-}$name.log
  run_qemu "$log" "$smp" 256M "user=$args${5:+ $5}"
  tally "$prefix$name/" "$log" "$prog: PASS " "$prog: FAIL "
  grep -q "coral: init (pid 1) exited with status 0" "$log" ||
    fail "$prefix$name/run" "$prog did not end with status 0 (see $log)"
  grep -q "^uintr: user interrupts $WANT_UINTR" "$log" ||
    fail "$prefix$name/backend" "the banner does not say 'user interrupts $WANT_UINTR' (see $log)"
}

user_suite() {   # user_suite PREFIX
  local prefix=$1 prog smp kmode
  for prog in usertests sysfuzz coptest asynctest threadtest socktest conntest; do
    for smp in 1 2; do
      user_prog "$prefix" "$prog-smp$smp" $smp $prog
    done
  done
  # the network lock (net/netlock.c) with four harts calling into the stack
  # at once: its sections check that none overlaps another (the kernel stops
  # at the first), and the programs that every request got its answer; and
  # once with the spinlock it replaced (bootargs netlock=spin, kept for
  # comparison), on two
  for prog in socktest conntest; do
    user_prog "$prefix" "$prog-smp4" 4 $prog
  done
  user_prog "$prefix" "conntest-netlock-spin-smp2" 2 conntest netlock=spin
  # a receive ring of 8 buffers (bootargs vnet_rx=8) instead of 256: the card
  # finds it empty again and again and waits to be told of new buffers, a
  # path the default ring seldom takes (matrixd's closed loop with it: about
  # 19,000 such notifications a second, no frame dropped)
  user_prog "$prefix" "conntest-vnet-rx8-smp2" 2 conntest vnet_rx=8
  # every try of the lock failing (bootargs netlock=busy): a send that fits
  # leaves its bytes to the lock's holder (net/socket.c; conntest,busy checks
  # that some did), and every recv, and every send that does not fit, that a
  # KMODE_THREAD call tries goes on in a stackful kernel coroutine (what such
  # a call does when it finds the lock held: kernel/sys_net.c); then once with
  # every send waiting for the lock as before (bootargs netsend=locked), so
  # that each of conntest's sends takes that way too
  user_prog "$prefix" "socktest-netlock-busy-smp2" 2 socktest netlock=busy
  user_prog "$prefix" "conntest-netlock-busy-smp2" 2 conntest,busy netlock=busy
  user_prog "$prefix" "conntest-netlock-busy-netsend-locked-smp2" 2 conntest "netlock=busy netsend=locked"
  # async calls served by the other kernel modes: stackful kernel coroutines
  # (KMODE_THREAD) and the per-process polling thread (KMODE_POLLER)
  for kmode in 1 2; do
    user_prog "$prefix" "asynctest-kmode$kmode" 2 "asynctest,-k,$kmode"
  done
  # user interrupts landing inside the runtime's switch loop (its inline
  # rotation, which the handler must leave alone): under -icount, where QEMU
  # can take an interrupt between any two instructions (without it only
  # between its translated blocks, and the rotation is one block; asynctest's
  # full runs above cover that case on 1 and 2 harts). One hart: under
  # -icount with two, QEMU starves the hart that is not spinning in user
  # mode (docs/ARCHITECTURE.md, Timers), and the sleeps' completions stop.
  QEMU_EXTRA="-icount shift=0,sleep=off" user_prog "$prefix" asynctest-loop-icount 1 "asynctest,--loop"
  # priorities across processes: one hart, and instruction counting (-icount),
  # so that guest time is the same on every host: the test asks which process
  # finishes first, and that must not depend on host speed
  QEMU_EXTRA="-icount shift=0,sleep=off" user_prog "$prefix" priotest 1 priotest
  # ulock's waiters give the hart back to the holder: how long the holder's
  # 20 ms sleep took, timed in guest time (-icount, one hart), which a
  # loaded host cannot stretch
  QEMU_EXTRA="-icount shift=0,sleep=off" user_prog "$prefix" threadtest-ulock-icount 1 "threadtest,--ulock-timed"
  # 200 connections at once to matrixd over loopback (user/burst.c starts it
  # in the same boot): every one served, the answers checked, none hangs
  user_prog "$prefix" burst-200 2 "burst,-s,200,8080"
  if tr -d '\r' < "$LOGS/${prefix//\//-}burst-200.log" | grep -q "^burst: N=200 served 200 refused 0 failed 0;"; then
    pass "${prefix}burst-200/all-served"
  else
    fail "${prefix}burst-200/all-served" "not every connection was served (see $LOGS/${prefix//\//-}burst-200.log)"
  fi
  # connect gives up on a SYN nobody answers after lwIP's retransmissions
  # (about 20 s of guest time, which -icount sleep=off skips): -ETIMEDOUT
  QEMU_EXTRA="-icount shift=0,sleep=off" user_prog "$prefix" conntest-timeout 1 conntest,timeout
  # connections idle long enough that lwIP's timers stop visiting them
  # (net/patches/) still answer data, see FINs, and still reach TIME_WAIT's
  # end and the FIN-WAIT-2 timeout (20 s of guest time, under -icount too)
  QEMU_EXTRA="-icount shift=0,sleep=off" user_prog "$prefix" conntest-idle 1 conntest,idle
  # waves of connections opened and closed (TIME_WAIT on either side, resets),
  # reconnects on the same ports: lwIP's hash of connections (net/patches/)
  # stays in step with its lists (TIME_WAIT and SYN retries in guest time)
  QEMU_EXTRA="-icount shift=0,sleep=off" user_prog "$prefix" conntest-churn 1 conntest,churn
  # alloc_cpu: one process's executor on two threads (needs 2 harts or more)
  for smp in 2 4; do
    user_prog "$prefix" "cputest-smp$smp" $smp cputest
  done
  # ... and with idle threads kicked at the first kernel entry that sees
  # ready coroutines (the kernel before the kick delay), for comparison
  user_prog "$prefix" cputest-smp2-eager 2 cputest,--eager kick_us=0
  # the completion path under churn on two executor threads, with a
  # watchdog for a lost wake (user/wakestress.c): coroutine and poller modes
  user_prog "$prefix" wakestress-smp2 2 "wakestress,15"
  user_prog "$prefix" wakestress-poller-smp2 2 "wakestress,15,2"
  # ... and while hart 1 keeps parking and being started again (park_ms=1:
  # about ten folds and grows of the kernel's lanes in 10 s, kernel/park.c)
  user_prog "$prefix" wakestress-park-smp2 2 "wakestress,10" park_ms=1
  # the CES mutex from coroutines on two threads (alloc_cpu)
  for smp in 2 4; do
    user_prog "$prefix" "cestest-smp$smp" $smp cestest
  done
  # the paper's two example programs run to completion
  local demo want log
  for demo in "prodcons:prodcons: produced 12, consumed 12" "asyncread:(fast path, interrupts:"; do
    prog=${demo%%:*} want=${demo#*:}
    log=$LOGS/${prefix//\//-}$prog.log
    run_qemu "$log" 2 256M "user=$prog"
    if grep -qF "$want" "$log" && grep -q "coral: init (pid 1) exited with status 0" "$log"; then
      pass "${prefix}demo/$prog"
    else
      fail "${prefix}demo/$prog" "did not finish as expected (see $log)"
    fi
  done
}

WANT_UINTR=emulated user_suite ""

# fencecost (what a fence and an atomic cost the host under QEMU: a
# diagnostic, its figures wall-clock) runs and reports every kind
log=$LOGS/fencecost.log
run_qemu "$log" 2 128M "user=fencecost"
if [ "$(tr -d '\r' < "$log" | grep -c '^BENCH name=fencecost_[a-z_]* value=[0-9.]* unit=ns$')" = 7 ]; then
  pass "fencecost/reports"
else
  fail "fencecost/reports" "want 7 BENCH lines (see $log)"
fi

# ---- the scheduler trace in the kernel (tests/trace/test-ktrace.sh): prodcons
#      traced from boot (nesting, order, no record lost, the consumer and the
#      producer alternate), a ring that overflows (counted and reported), and
#      the monitor's trace commands ----
BUILD=$BUILD QEMU=$QEMU OPENSBI=$OPENSBI QEMU_LIMIT=$QEMU_LIMIT bash tests/trace/test-ktrace.sh > "$LOGS/ktrace.log" 2>&1
tally "" "$LOGS/ktrace.log" "PASS " "FAIL "
grep -q "^\(PASS\|FAIL\) ktrace/monitor-commands" "$LOGS/ktrace.log" || fail "ktrace/run" "no result (see $LOGS/ktrace.log)"
part_done user

# ---- 2c. native user interrupts: our QEMU with the N extension (hw/qemu,
#      built once into build/qemu-n and cached): its own tests (a bare-metal
#      M/S/U program, the device tree, OpenSBI's mideleg), then every user
#      program above again, with the kernel on its native backend ----
bash hw/qemu/test.sh > "$LOGS/qemu-n.log" 2>&1
tally "" "$LOGS/qemu-n.log" "PASS " "FAIL "
grep -q "^[0-9]* passed, [0-9]* failed" "$LOGS/qemu-n.log" || fail "qemu-n/run" "no result (see $LOGS/qemu-n.log)"
if [ -x "$BUILD/qemu-n/qemu-system-riscv64" ]; then
  QEMU=$BUILD/qemu-n/qemu-system-riscv64 QEMU_CPU=rv64,n=on WANT_UINTR=native user_suite native/
  # One definition of N: the same program must leave the same trace on the
  # kernel's emulation (kernel/nmodel.c) and on our QEMU's hardware N: its
  # numbered lines, and the kernel's lines for its processes killed (with
  # the pids left out). utrace: 400 well-formed u-CSR instructions, urets and user
  # interrupts; insnfuzz: 1,500 random SYSTEM instructions around them,
  # processes dying of them.
  same_trace() {   # same_trace PROG MIN_LINES
    local prog=$1 b log
    WANT_UINTR=emulated user_prog "" "$prog" 1 "$prog"
    QEMU=$BUILD/qemu-n/qemu-system-riscv64 QEMU_CPU=rv64,n=on WANT_UINTR=native user_prog native/ "$prog" 1 "$prog"
    for b in emulated native; do
      log=$LOGS/$prog.log
      [ $b = native ] && log=$LOGS/native-$prog.log
      # (each kind in its own order: the kernel's lines and the program's
      # interleave on the console as the host's timing has it)
      { tr -d '\r' < "$log" | grep "^$prog: [0-9]"
        tr -d '\r' < "$log" | grep "^coral: pid [0-9]* ($prog)" | sed 's/^coral: pid [0-9]*/coral: pid N/'
      } > "$LOGS/$prog.$b.txt" 2> /dev/null
    done
    if [ "$(wc -l < "$LOGS/$prog.emulated.txt")" -gt "$2" ] &&
       diff "$LOGS/$prog.emulated.txt" "$LOGS/$prog.native.txt" > "$LOGS/$prog.diff"; then
      pass "native/$prog-same-trace-as-emulated"
    else
      fail "native/$prog-same-trace-as-emulated" "$(head -3 "$LOGS/$prog.diff" | tr '\n' ' ') (see $LOGS/$prog.diff)"
    fi
  }
  same_trace utrace 400
  same_trace insnfuzz 1500
  # The network in the two models whose user side runs on user interrupts
  # (KCUC: kernel coroutines; KTUC: the polling kernel thread).
  mkdir -p "$LOGS/native"
  BUILD=$BUILD QEMU=$BUILD/qemu-n/qemu-system-riscv64 QEMU_CPU=rv64,n=on NET_LOGS=$LOGS/native \
    OPENSBI=$OPENSBI QEMU_LIMIT=$QEMU_LIMIT bash scripts/nettest.sh kcuc ktuc > "$LOGS/native/nettest.log" 2>&1
  tally "native/" "$LOGS/native/nettest.log" "PASS " "FAIL "
  grep -q "^PASS net/kcuc/load" "$LOGS/native/nettest.log" ||
    fail "native/net/run" "no result for the KCUC load (see $LOGS/native/nettest.log)"
else
  fail "native/run" "no patched QEMU (see $LOGS/qemu-n.log)"
fi
part_done native

# ---- 2d. the network, end to end: matrixd in its four models, driven from the
#      host by mclient and tests/net/badinput.py (scripts/nettest.sh) ----
BUILD=$BUILD QEMU=$QEMU OPENSBI=$OPENSBI QEMU_LIMIT=$QEMU_LIMIT bash scripts/nettest.sh > "$LOGS/nettest.log" 2>&1
tally "" "$LOGS/nettest.log" "PASS " "FAIL "
grep -q "^PASS net/kcuc/load" "$LOGS/nettest.log" || fail "net/run" "no result for the KCUC load (see $LOGS/nettest.log)"
part_done net

# ---- 2e. the soak machinery (make soak, scripts/soak.sh), short: four
#      matrixd in four models in one boot, 128 connections for three rounds of
#      15 s with bad input in each, every answer checked, and the kernel's
#      counters at the end equal to the start. Then the same with one
#      connection held open from the start to the end: the comparison must
#      catch it (sockets and TCP control blocks), or it proves nothing ----
BUILD=$BUILD QEMU=$QEMU OPENSBI=$OPENSBI bash scripts/soak.sh --test > "$LOGS/soak.log" 2>&1
tally "" "$LOGS/soak.log" "PASS " "FAIL "
grep -q "^PASS soak/boot" "$LOGS/soak.log" || fail "soak/run" "no result (see $LOGS/soak.log)"
MINUTES=0.1 ROUND=5 BUILD=$BUILD QEMU=$QEMU OPENSBI=$OPENSBI bash scripts/soak.sh --test soak-planted \
  --plant-open-conn --settle 10 > "$LOGS/soak-planted.log" 2>&1
rc=$?
if [ $rc -eq 1 ] && grep -q "^FAIL soak/counter/sockets: start [0-9]*, end [0-9]*" "$LOGS/soak-planted.log" &&
   grep -q "^FAIL soak/counter/tcp_pcbs" "$LOGS/soak-planted.log" && grep -q "^PASS soak/answers" "$LOGS/soak-planted.log"; then
  pass "soak/planted-open-connection-caught"
else
  fail "soak/planted-open-connection-caught" "want status 1 and FAIL lines for sockets and tcp_pcbs, got status $rc (see $LOGS/soak-planted.log)"
fi
# A failed soak ends with the status key (Ctrl-T, kernel/status.c): its
# listing must show the connection held open, established and waited on by
# the KCUC server's receive.
if grep -q "^  port 80 peer [0-9]* ESTABLISHED | unread 0 err 0 refs [0-9]* | waited on" "$LOGS/soak-planted-qemu.log" &&
   grep -q "^status: end" "$LOGS/soak-planted-qemu.log"; then
  pass "soak/planted-connection-in-status-listing"
else
  fail "soak/planted-connection-in-status-listing" "the status key's listing after the failed run must show port 80's open connection waited on (see $LOGS/soak-planted-qemu.log)"
fi
part_done soak

# ---- 3. boot matrix: the kernel must find harts and memory in the DTB ----
for cfg in 1:128M 2:512M 3:256M 4:1G 8:2G; do
  smp=${cfg%%:*} mem=${cfg#*:}
  mib=$(( ${mem%[MG]} * $( [ "${mem: -1}" = G ] && echo 1024 || echo 1) ))
  log=$LOGS/boot-smp$smp-$mem.log
  run_qemu "$log" "$smp" "$mem" "poweroff"
  if grep -q "Coral: $smp harts online, $mib MiB memory" "$log" && grep -q "poweroff: boot complete" "$log"; then
    pass "boot/smp$smp-$mem"
  else
    fail "boot/smp$smp-$mem" "banner missing or wrong: $(grep -m1 'Coral:' "$log" | tr -d '\r') (see $log)"
  fi
done
# bootargs harts=N: fewer harts than the board has (and a value past it: all)
for cfg in 4:2:2 2:1:1 2:9:2; do
  IFS=: read -r smp n want <<< "$cfg"
  log=$LOGS/boot-smp$smp-harts$n.log
  run_qemu "$log" "$smp" 256M "harts=$n poweroff"
  if grep -q "Coral: $want harts online" "$log" && grep -q "poweroff: boot complete" "$log" &&
     ! grep -q "only .* harts came online" "$log"; then
    pass "boot/smp$smp-harts$n"
  else
    fail "boot/smp$smp-harts$n" "want $want harts online: $(grep -m1 'Coral:' "$log" | tr -d '\r') (see $log)"
  fi
done

# ---- 3b. without Sstc the kernel falls back to SBI timer calls ----
log=$LOGS/sbi-timer.log
timeout "$QEMU_LIMIT" "$QEMU" -machine virt -cpu rv64,sstc=off -bios "$OPENSBI" \
  -kernel "$BUILD/kernel.elf" -nographic -smp 2 -m 256M -append "test=timer" < /dev/null > "$log" 2>&1
if grep -q "timer sbi" "$log" && grep -q "^KTEST DONE passed=[1-9][0-9]* failed=0" "$log"; then
  pass "timer/sbi-fallback"
else
  fail "timer/sbi-fallback" "banner must say 'timer sbi' and the timer tests must pass (see $log)"
fi

# ---- 3c. the console monitor, typed at through the UART (interrupt-driven
#      input). scripts/console-drive.py types each line after the answer to the
#      previous one has appeared: it waits for events, never for a time. ----
QEMU_CONSOLE=(timeout "$QEMU_LIMIT" "$QEMU" -machine virt -bios "$OPENSBI" -kernel "$BUILD/kernel.elf"
              -nographic -smp 2 -m 256M)
log=$LOGS/console.log
if python3 scripts/console-drive.py "$log" --end exit \
     --expect "coral> " --send 'stats\r' --expect "hart 1 (id" \
     --expect "coral> " --send 'check\r' --expect "executor invariants hold" \
     --expect "coral> " --send 'sleep 20\r' --expect "slept 20 ms" \
     --expect "coral> " --send 'procs\r' --expect "procs: pid name state kmode" \
     --expect "coral> " --send 'bogus\r' --expect "unknown command 'bogus'" \
     --expect "coral> " --send 'poweroff\r' --expect "bye" \
     -- "${QEMU_CONSOLE[@]}" -append monitor 2> "$log.why"; then
  pass "console/monitor"
else
  fail "console/monitor" "$(cat "$log.why") (see $log)"
fi

# ---- 3d. the default boot: init starts the shell, which runs programs by name;
#      the status key (Ctrl-T) lists the shell's process and never reaches it ----
log=$LOGS/shell.log
if python3 scripts/console-drive.py "$log" \
     --expect '$ ' --send 'hello a b\r' --expect 'argv[2] = "b"' \
     --expect '$ ' --send 'echo one two\r' --expect 'one two' \
     --expect '$ ' --send 'nosuchprog\r' --expect "nosuchprog: no such program" \
     --expect '$ ' --send 'pipetest\r' --expect 'pipetest: moved' --expect ' failed' --expect '$ ' \
     --send $'\x14' --expect 'status (Ctrl-T):' --expect ' sh running kmode coroutine' \
     --expect 'status: end' --send 'hello after-status\r' --expect 'argv[1] = "after-status"' \
     -- "${QEMU_CONSOLE[@]}" 2> "$log.why" && ! grep -q "pipetest.*FAIL" "$log"; then
  pass "shell/programs"
else
  fail "shell/programs" "$(cat "$log.why" 2> /dev/null) the shell did not run hello/echo/pipetest or answer Ctrl-T as expected (see $log)"
fi

# ---- 4. a kernel fault prints a full report and shuts the machine down ----
log=$LOGS/fault.log
run_qemu "$log" 2 128M "fault"
rc=$?
if [ $rc -ne 124 ] && grep -q "KERNEL FAULT on hart .*: load page fault" "$log" &&
   grep -q "stval 0x0000000000001000" "$log" && grep -q "  #0 0x" "$log" &&
   grep -q "^PANIC: unexpected trap" "$log"; then
  pass "fault/report"
else
  fail "fault/report" "fault report incomplete or machine did not stop (status $rc, see $log)"
fi

# ---- 4b. a run that never ends (the default boot, with no console input)
#      meets the safety net: scripts/qemu-watchdog.py prints both harts'
#      backtraces, taken through QEMU's gdb stub, then stops QEMU with 124 ----
log=$LOGS/watchdog.log
QEMU_LIMIT=10 run_qemu "$log" 2 128M ""
rc=$?
if [ $rc -eq 124 ] && grep -q "^qemu-watchdog: QEMU still running after 10 s" "$log" &&
   grep -q "^Thread 2 (Thread 1.2 (CPU#1" "$log" && grep -q "^#[0-9].* in sched_loop ()\|^#[0-9]  sched_loop ()" "$log" &&
   grep -q "^qemu-watchdog: stopping QEMU" "$log"; then
  pass "watchdog/backtraces-on-hang"
else
  fail "watchdog/backtraces-on-hang" "want status 124 and both harts' backtraces from the watchdog, got status $rc (see $log)"
fi
part_done boot

# ---- 5. nothing this run started is still running (QEMU, servers, clients) ----
left=$(leftover_processes)
if [ -z "$left" ]; then
  pass "run/no-processes-left"
else
  fail "run/no-processes-left" "still running: $(echo "$left" | tr '\n' ';')"
  kill_leftovers
fi

summary
[ $failed -eq 0 ]
