#!/usr/bin/env bash
# cpu-snap.sh NAME: one line of host CPU counters, for the QEMU started with
# `-name NAME,debug-threads=on` (bench-light.sh) and for the whole host. Two
# snapshots around a run, subtracted, say where the host's two cores went:
#
#   seconds vcpu_ticks vcpu_wait_ns qemu_other_ticks busy_ticks idle_ticks steal_ticks [cpuN=run_ns ...]
#
# seconds: the wall clock. vcpu_ticks: CPU time (user and system, clock
# ticks) of QEMU's vCPU threads ("CPU n/TCG"); vcpu_wait_ns: their time
# runnable but waiting for a host core (/proc/.../schedstat). qemu_other_ticks:
# QEMU's other threads (the main loop, which runs the network's host side, and
# its helpers). busy, idle, steal: the host's, from /proc/stat, all cores.
# A vCPU thread neither running nor waiting for a core is asleep: its hart
# halted in wfi, or the thread blocked in QEMU (on its global lock, held by
# the main loop).
set -u
pid=$(pgrep -n -f -- "-name $1,debug-threads=on" || true)
vcpu=0 wait=0 other=0 each=""
if [ -n "$pid" ]; then
  for t in /proc/"$pid"/task/*; do
    read -r comm < "$t/comm" 2> /dev/null || continue
    stat=$(sed 's/.*) //' "$t/stat" 2> /dev/null) || continue
    read -r -a f <<< "$stat"
    ticks=$((f[11] + f[12]))      # utime, stime (fields 14 and 15 of stat)
    if [[ $comm == CPU\ * ]]; then
      read -r run w _ < "$t/schedstat"
      vcpu=$((vcpu + ticks)) wait=$((wait + w))
      n=${comm#CPU } each+=" cpu${n%%/*}=$run"
    else
      other=$((other + ticks))
    fi
  done
fi
read -r _ user nice system idle iowait irq softirq steal _ < <(grep '^cpu ' /proc/stat)
echo "$(date +%s.%N) $vcpu $wait $other $((user + nice + system + irq + softirq)) $((idle + iowait)) $steal$each"
