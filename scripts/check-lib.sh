# The PASS/FAIL bookkeeping shared by the test scripts (scripts/test.sh,
# hw/qemu/test.sh). Sourced, not run. Every check prints "PASS name" or
# "FAIL name: why"; a script ends with "$passed passed, $failed failed".
passed=0
failed=0
pass() { echo "PASS $1"; passed=$((passed + 1)); }
fail() { echo "FAIL $1: $2"; failed=$((failed + 1)); }

# Count PASS/FAIL lines printed by a test binary or the kernel.
tally() {   # tally PREFIX LOGFILE PASS_PATTERN FAIL_PATTERN
  local prefix=$1 log=$2 pp=$3 fp=$4 line
  while IFS= read -r line; do
    case "$line" in
      "$pp"*) pass "$prefix${line#"$pp"}" ;;
      "$fp"*) local rest=${line#"$fp"}; fail "$prefix${rest%%:*}" "${rest#*: }" ;;
    esac
  done < <(tr -d '\r' < "$log")
}
