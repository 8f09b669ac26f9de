#!/usr/bin/env bash
# Proves that scripts/check-repo.sh can fail: builds a tiny tree in a temporary
# folder, checks that it passes as built, then breaks it one way at a time (a
# dead link, a link out of the tree, a stale path in a comment, a missing
# document name, a source file missing from README's Layout or a Layout entry
# with no file, a machine path, a path into the shared folder beside the repo)
# and checks that exactly the check meant to catch it fails, naming file:line.
# The clean tree also carries what must NOT fail: paths in string literals,
# placeholders, globs, line suffixes, /tmp in a script, the planned hw/ folder.
#
#   tests/repo/test-check-repo.sh
#
# Prints "PASS repo/check-repo-<name>" or "FAIL repo/check-repo-<name>: why";
# exit status non-zero if any failed.
set -uo pipefail
cd "$(dirname "$0")/../.."
CHECK=$PWD/scripts/check-repo.sh

failed=0
pass() { echo "PASS repo/check-repo-$1"; }
fail() { echo "FAIL repo/check-repo-$1: $2"; failed=$((failed + 1)); }

TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT

# A small tree that must pass every check.
clean_tree() {
  rm -rf "$TMP/t"
  mkdir -p "$TMP/t/kernel" "$TMP/t/docs" "$TMP/t/scripts" "$TMP/t/user"
  cd "$TMP/t" || exit 2
  printf 'all:\n\ttrue\n' > Makefile
  cat > README.md <<'EOF'
# Tiny

See [the design](docs/DESIGN.md), [its model](docs/DESIGN.md#the-model),
[the kernel](kernel/) and [a site](https://example.org/x). Programs are
user/<name>.c; the kernel is kernel/*.c, mainly kernel/a.c:3-4. hw/ is planned.

## Layout

```
Makefile  README.md
kernel/   a.c (all of it)
user/     b.h; scripts/tmp.sh is elsewhere
hw/       planned: core.sv
```
EOF
  cat > docs/DESIGN.md <<'EOF'
# Design

## The model

Read [the top](../README.md) and kernel/a.c. ABI.md is not needed here.
EOF
  : > docs/ABI.md
  cat > kernel/a.c <<'EOF'
// The kernel (see docs/DESIGN.md and user/b.h).
static const char *f = "kernel/not-a-comment.c";
EOF
  cat > user/b.h <<'EOF'
/* User side: kernel/a.c, kernel/{a,b}.c, $(BUILD)/user/NAME. */
EOF
  cat > scripts/tmp.sh <<'EOF'
#!/usr/bin/env bash
# Scratch files live in /tmp/coral-scratch/ while this runs (kernel/a.c).
echo "$#"
EOF
  # A here-document is data, not a comment; one fed to python holds comments.
  printf 'cat <<END\n# kernel/data-only.c\nEND\npython3 - <<PY\n# see kernel/a.c\nPY\n' \
    > scripts/gen.sh
  cd - > /dev/null || exit 2
}

# run NAME: check-repo.sh on the tree; its output in $TMP/out
run() { bash "$CHECK" "$TMP/t" > "$TMP/out" 2>&1; }

# expect_fail NAME CHECK FILE:LINE: only CHECK fails, and it names FILE:LINE.
expect_fail() {
  local name=$1 check=$2 where=$3
  if run; then
    fail "$name" "check-repo.sh passed: $(tr '\n' ' ' < "$TMP/out")"
  elif ! grep -q "^FAIL repo/$check: .*$where" "$TMP/out"; then
    fail "$name" "no 'FAIL repo/$check' naming $where: $(tr '\n' ' ' < "$TMP/out")"
  elif [ "$(grep -c '^FAIL ' "$TMP/out")" -ne 1 ]; then
    fail "$name" "another check failed too: $(tr '\n' ' ' < "$TMP/out")"
  else
    pass "$name"
  fi
}

clean_tree
if run && [ "$(grep -c '^PASS repo/' "$TMP/out")" -eq 4 ]; then
  pass "clean-tree-passes"
else
  fail "clean-tree-passes" "$(tr '\n' ' ' < "$TMP/out")"
fi

# breaks NAME CHECK FILE:LINE FILE FORMAT [ARGS]: append printf FORMAT ARGS to
# FILE of a clean tree; only CHECK may fail, naming FILE:LINE.
breaks() {
  local name=$1 check=$2 where=$3 file=$4
  shift 4
  clean_tree
  # shellcheck disable=SC2059 # the format is the point
  printf "$@" >> "$TMP/t/$file"
  expect_fail "$name" "$check" "$where"
}

touch "$TMP/outside.md"
breaks detects-broken-link links README.md:15 README.md 'A [dead link](notes/missing.md).\n'
breaks detects-broken-anchor links docs/DESIGN.md:6 docs/DESIGN.md \
  'A [bad anchor](DESIGN.md#no-such-heading).\n'
breaks detects-link-outside links README.md:15 README.md 'A [link out](../outside.md) of the tree.\n'
breaks detects-stale-path paths kernel/a.c:3 kernel/a.c '// Stale: the code moved out of kernel/gone.c:12.\n'
breaks detects-stale-path-in-script paths scripts/tmp.sh:4 scripts/tmp.sh '# Stale: see scripts/gone.sh.\n'
breaks detects-missing-document paths user/b.h:2 user/b.h '/* As MISSING.md says. */\n'
breaks detects-stale-path-in-python-heredoc paths scripts/gen.sh:8 scripts/gen.sh \
  'python3 - <<PY\nx = 1  # from kernel/gone.py\nPY\n'
breaks detects-unlisted-source layout kernel/b.c kernel/b.c '// Not in the Layout.\n'
clean_tree
sed -i 's|^kernel/   a.c|kernel/   a.c, gone.c|' "$TMP/t/README.md"
expect_fail detects-listed-missing-file layout "README.md:11: gone.c"
# Outside paths are built from pieces, so that this file names none itself.
breaks detects-machine-path outside-paths kernel/a.c:3 kernel/a.c '// Written from /%s/notes/plan.md.\n' work
breaks detects-shared-path outside-paths docs/DESIGN.md:6 docs/DESIGN.md \
  'The notes are in %s/%s/NOTES.md.\n' .. shared
breaks detects-tmp-source outside-paths kernel/a.c:3 kernel/a.c '// Copied from /tmp/%s/x.c.\n' build-area

# The same in a git work tree (files come from git ls-files there).
clean_tree
printf '// Stale: kernel/gone.c.\n' >> "$TMP/t/kernel/a.c"
if git -C "$TMP/t" init -q && git -C "$TMP/t" add -A; then
  expect_fail detects-stale-path-git-tree paths "kernel/a.c:3"
else
  fail detects-stale-path-git-tree "git init failed"
fi

[ $failed -eq 0 ]
