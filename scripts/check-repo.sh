#!/usr/bin/env bash
# Repository hygiene: what the documents and comments name must be there.
#
#   scripts/check-repo.sh [ROOT]      (ROOT: the tree to check; default this repository)
#
# One line per check, "PASS repo/<name>" or "FAIL repo/<name>: <file:line what>; ...",
# and a non-zero exit status if any check failed:
#
#   repo/links          every relative link in a Markdown file ([text](path),
#                       [ref]: path, with or without #anchor) names a file or folder
#                       inside ROOT; an anchor into a Markdown file names one of
#                       its headings. http(s) and mailto links are not followed.
#   repo/paths          every repository path in a comment (// and /* */ in C, .S
#                       and .ld files; # in shell, Python, make files and .S;
#                       Python docstrings) or anywhere in a Markdown document
#                       exists. A repository path starts with a top-level folder
#                       (kernel/ vdso/ user/ net/ scripts/ tests/ docs/ hw/) or is
#                       README.md, Makefile or linker.ld. A ":12" or ":12-30" line
#                       suffix is allowed; globs (*, ?, [ch]) must match at least
#                       one file; for placeholders (<name>, %, {a,b}, $VAR, ...)
#                       the folder before the placeholder must exist. A bare
#                       document name in capitals (ABI.md) must be in docs/, at
#                       the top, or beside the file that names it.
#   repo/layout         README's Layout block lists every .c, .S and .ld file of
#                       kernel/, vdso/ and net/, and every file name it shows
#                       exists under the folder it is listed for.
#   repo/outside-paths  no file names a place outside the repository: a home,
#                       root or work folder of some machine, the shared folder
#                       beside the repository (a ".." path into it), or
#                       (outside scripts, where temporary files are normal) a
#                       folder under /tmp.
#
# Files checked: those git tracks or would track (untracked, not ignored), or,
# when ROOT is not a git work tree, every file outside .git and build/.
# Needs bash, git (optional) and python3.
set -uo pipefail

ROOT=${1:-$(cd "$(dirname "$0")/.." && pwd)}
if [ ! -d "$ROOT" ]; then
  echo "FAIL repo/root: $ROOT is not a folder"
  exit 2
fi

exec python3 - "$ROOT" <<'PY'
import glob, os, re, subprocess, sys

root = os.path.realpath(sys.argv[1])

# Folders the documents name although they do not exist yet, because the text
# says they are planned. Take a folder out of this list once it exists.
PLANNED = {"hw"}
TOP_DIRS = ("kernel", "vdso", "user", "net", "scripts", "tests", "docs", "hw")
TOP_FILES = ("README.md", "Makefile", "linker.ld")


def list_files():
    try:
        out = subprocess.run(["git", "-C", root, "ls-files", "-z", "--cached", "--others",
                              "--exclude-standard"], capture_output=True, check=True).stdout
        if subprocess.run(["git", "-C", root, "rev-parse", "--show-toplevel"],
                          capture_output=True, text=True).stdout.strip() == root:
            return sorted({f for f in out.decode().split("\0")
                           if f and os.path.isfile(os.path.join(root, f))})
    except (OSError, subprocess.CalledProcessError):
        pass
    files = []
    for d, subdirs, names in os.walk(root):
        rel = os.path.relpath(d, root)
        subdirs[:] = [s for s in subdirs if not (rel == "." and s in (".git", "build"))]
        files += [os.path.normpath(os.path.join(rel, n)) for n in names]
    return sorted(files)


def read_text(rel):
    try:
        with open(os.path.join(root, rel), "rb") as f:
            data = f.read()
    except OSError:
        return None
    if b"\0" in data:
        return None
    return data.decode("utf-8", "replace")


FILES = list_files()
TEXT = {f: t for f in FILES if (t := read_text(f)) is not None}
MARKDOWN = [f for f in TEXT if f.endswith(".md")]


def line_of(text, offset):
    return text.count("\n", 0, offset) + 1


def inside_root(path):
    real = os.path.realpath(path)
    return real == root or real.startswith(root + os.sep)


# ---------------------------------------------------------------------------
# Comments: (offset, text) pieces of a file that are prose, not code.

C_LIKE = (".c", ".h", ".S", ".ld", ".lds")
HASH_LIKE = (".sh", ".py", ".mk")


def c_comments(text, hash_comments):
    """// and /* */ comments, skipping string and character literals; in
    assembler (hash_comments) also '#' followed by a blank (not #include)."""
    out, i, n = [], 0, len(text)
    while i < n:
        c = text[i]
        if text.startswith("//", i):
            j = text.find("\n", i)
            j = n if j < 0 else j
            out.append((i, text[i:j]))
            i = j
        elif text.startswith("/*", i):
            j = text.find("*/", i + 2)
            j = n if j < 0 else j + 2
            out.append((i, text[i:j]))
            i = j
        elif hash_comments and c == "#" and (i + 1 == n or text[i + 1] in " \t\n"):
            j = text.find("\n", i)
            j = n if j < 0 else j
            out.append((i, text[i:j]))
            i = j
        elif c in "\"'":
            j = i + 1
            while j < n and text[j] != c and text[j] != "\n":
                j += 2 if text[j] == "\\" else 1
            i = j + 1
        else:
            i += 1
    return out


HEREDOC = re.compile(r"<<-?\s*(['\"]?)([A-Za-z_]\w*)\1")


def hash_comments(text, python):
    """'#' comments of shell, make and Python (quotes tracked per line; in shell
    a '#' starts a comment only at the start of a word), plus Python's
    triple-quoted strings (docstrings). A shell here-document is data and is
    skipped, unless it feeds python, whose comments count."""
    out, offset = [], 0
    in_triple = None
    heredoc = None              # (terminator, strip tabs, body is python)
    for line in text.split("\n"):
        n = len(line)
        if heredoc and not heredoc[2]:
            if (line.lstrip("\t") if heredoc[1] else line) == heredoc[0]:
                heredoc = None
            offset += n + 1
            continue
        if heredoc and (line.lstrip("\t") if heredoc[1] else line) == heredoc[0]:
            heredoc, in_triple = None, None
            offset += n + 1
            continue
        py = python or bool(heredoc)
        i, quote = 0, None
        while i < n:
            if in_triple:
                j = line.find(in_triple, i)
                if j < 0:
                    out.append((offset + i, line[i:]))
                    break
                out.append((offset + i, line[i:j]))
                i = j + 3
                in_triple = None
                continue
            c = line[i]
            if quote:
                if c == "\\" and (quote == '"' or py):
                    i += 2
                    continue
                if c == quote:
                    quote = None
                i += 1
                continue
            if py and line.startswith(('"""', "'''"), i):
                in_triple = line[i:i + 3]
                i += 3
                continue
            m = None if py else HEREDOC.match(line, i)
            if m and not line.startswith("<<<", i):
                heredoc = (m.group(2), line.startswith("<<-", i), "python" in line)
                i = m.end()
                continue
            if c in "\"'":
                quote = c
            elif c == "\\":
                i += 1
            elif c == "#" and (py or i == 0 or line[i - 1] in " \t;|&("):
                out.append((offset + i, line[i:]))
                break
            i += 1
        offset += n + 1
    return out


def prose(rel, text):
    base = os.path.basename(rel)
    if rel.endswith(".md"):
        return [(0, text)]
    if rel.endswith(C_LIKE):
        return c_comments(text, rel.endswith(".S"))
    if rel.endswith(HASH_LIKE) or base == "Makefile" or text.startswith("#!"):
        return hash_comments(text, rel.endswith(".py") or "python" in text.split("\n", 1)[0])
    return []


# ---------------------------------------------------------------------------
# repo/links

FENCE = re.compile(r"^(```|~~~).*?^\1[^\n]*$", re.S | re.M)
CODE_SPAN = re.compile(r"(`+)(?:.|\n)*?\1")
INLINE_LINK = re.compile(r"!?\[(?:[^\]\\]|\\.)*\]\(\s*(<[^>]*>|[^\s)]*)(?:\s+\"[^\"]*\")?\s*\)")
REF_LINK = re.compile(r"^ {0,3}\[[^\]]+\]:\s*(<[^>]*>|\S+)", re.M)


def blank_out(text, pattern):
    """text with every match of pattern replaced by spaces (newlines kept), so
    offsets and line numbers stay valid."""
    return pattern.sub(lambda m: re.sub(r"[^\n]", " ", m.group(0)), text)


def slug(heading):
    """GitHub's anchor for a heading."""
    h = re.sub(r"[`*_]|<[^>]*>", "", heading.strip().lower())
    h = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", h)
    return re.sub(r"[^\w\- ]", "", h).replace(" ", "-")


def anchors(rel):
    text = blank_out(TEXT.get(rel, ""), FENCE)
    seen, out = {}, set()
    for m in re.finditer(r"^#{1,6}\s+(.*?)\s*#*\s*$", text, re.M):
        s = slug(m.group(1))
        k = seen.get(s, 0)
        seen[s] = k + 1
        out.add(s if k == 0 else f"{s}-{k}")
    return out


def check_links():
    bad = []
    for rel in MARKDOWN:
        text = TEXT[rel]
        scan = blank_out(blank_out(text, FENCE), CODE_SPAN)
        targets = [(m.start(), m.group(1)) for m in INLINE_LINK.finditer(scan)]
        targets += [(m.start(), m.group(1)) for m in REF_LINK.finditer(scan)]
        for off, target in targets:
            where = f"{rel}:{line_of(text, off)}"
            target = target.strip("<>")
            if not target or re.match(r"(?i)(https?|mailto):", target):
                continue
            if re.match(r"(?i)[a-z][a-z0-9+.-]*:", target):
                bad.append(f"{where}: {target}: not a repository path or http(s) link")
                continue
            path, _, anchor = target.partition("#")
            if path.startswith("/"):
                bad.append(f"{where}: {target}: absolute path")
                continue
            dest = os.path.join(root, os.path.dirname(rel), path) if path else os.path.join(root, rel)
            if not inside_root(dest):
                bad.append(f"{where}: {target}: points outside the repository")
            elif not os.path.exists(dest):
                bad.append(f"{where}: {target}: no such file or folder")
            elif anchor and dest.endswith(".md") and os.path.isfile(dest):
                if anchor not in anchors(os.path.relpath(os.path.realpath(dest), root)):
                    bad.append(f"{where}: {target}: no heading with anchor #{anchor}")
    return bad


# ---------------------------------------------------------------------------
# repo/paths

PATH_RE = re.compile(
    r"(?<![\w./<~$-])((?:%s)/[\w.*?\[\]<>%%{}$+=/-]*|(?:%s)(?![\w.-]))"
    % ("|".join(TOP_DIRS), "|".join(re.escape(f) for f in TOP_FILES)))
DOC_RE = re.compile(r"(?<![\w./-])([A-Z][A-Z0-9_-]*\.md)(?![\w-])")
# <name>, %, {a,b}, $VAR, ... and a file name in capitals other than a
# document (user/NAME.c).
PLACEHOLDER = re.compile(r"[<>%{}$]|\.\.\.|(?<=/)[A-Z][A-Z0-9_]*\.(?!md\b)\w+$")
GLOB = re.compile(r"[*?\[]")


def path_problem(p):
    """None if the repository path p is fine, else why not."""
    if PLACEHOLDER.search(p):
        head = PLACEHOLDER.split(p, 1)[0]
        folder = head[:head.rfind("/") + 1] if "/" in head else ""
        if folder and not os.path.isdir(os.path.join(root, folder)):
            return f"{p}: no folder {folder}"
        return None
    if p.split("/", 1)[0] in PLANNED and not os.path.exists(os.path.join(root, p.split("/")[0])):
        return None
    if GLOB.search(p):
        return None if glob.glob(os.path.join(root, p)) else f"{p}: matches nothing"
    return None if os.path.exists(os.path.join(root, p)) else f"{p}: no such file or folder"


def clean(p):
    """p without trailing punctuation and :line suffixes ("[ch]" keeps its "]")."""
    for _ in range(2):
        p = p.rstrip(".,:;!?'\")")
        if p.endswith("]") and p.count("[") < p.count("]"):
            p = p[:-1]
        p = re.sub(r"(:\d+(-\d+)?(,\d+(-\d+)?)*)+$", "", p)
    return p


def check_paths():
    bad = []
    for rel, text in TEXT.items():
        for off, piece in prose(rel, text):
            for m in PATH_RE.finditer(piece):
                p = clean(m.group(1))
                why = path_problem(p)
                if why:
                    bad.append(f"{rel}:{line_of(text, off + m.start())}: {why}")
            for m in DOC_RE.finditer(piece):
                name = m.group(1)
                if not any(os.path.isfile(os.path.join(root, d, name))
                           for d in ("docs", "", os.path.dirname(rel))):
                    bad.append(f"{rel}:{line_of(text, off + m.start())}: {name}: no such document "
                               "in docs/, at the top or beside the file")
    return bad


# ---------------------------------------------------------------------------
# repo/outside-paths

SEP = "/"
OUTSIDE = re.compile("|".join([
    SEP + "work" + SEP, SEP + "home" + SEP, SEP + "root" + SEP, SEP + "Users" + SEP,
    r"\.\." + SEP + "shared\\b",
]))
TMP_DIR = re.compile(SEP + "tmp" + SEP + r"[\w.-]+" + SEP)


def is_script(rel, text):
    return (rel.endswith((".sh", ".py", ".mk")) or os.path.basename(rel) == "Makefile"
            or text.startswith("#!"))


def check_outside():
    bad = []
    for rel, text in TEXT.items():
        script = is_script(rel, text)
        for i, line in enumerate(text.split("\n"), 1):
            m = OUTSIDE.search(line) or (None if script else TMP_DIR.search(line))
            if m:
                bad.append(f"{rel}:{i}: names {m.group(0)}, outside the repository")
    return bad


# ---------------------------------------------------------------------------
# repo/layout

LAYOUT_DIRS = ("kernel", "vdso", "net")       # every .c, .S and .ld file here is listed
EXTRA_EXT = re.compile(r"/\.(\w+)")
LAYOUT_NAME = re.compile(r"(?<![\w./-])([\w-]+(?:\.[\w-]+)*\.(?:c|h|S|ld|md|sh|py|mk))(?![\w])")


def check_layout():
    """README's Layout block names every source file of LAYOUT_DIRS, and every
    file name it mentions exists under the folder whose entry mentions it."""
    text = TEXT.get("README.md", "")
    head = text.find("\n## Layout\n")
    start = text.find("\n```", head) if head >= 0 else -1
    start = text.find("\n", start + 1) + 1 if start >= 0 else -1
    end = text.find("\n```", start) if start > 0 else -1
    if end < 0:
        return ["README.md: no Layout section with a code block"]
    block, first = text[start:end], line_of(text, start)
    bad, folder, named = [], "", set()
    for i, line in enumerate(block.split("\n")):
        top = re.match(r"([\w-]+)/\s", line)
        if top:
            folder = top.group(1)
        for n in LAYOUT_NAME.finditer(line):
            name = n.group(1)
            # "stackful.c/.h" names stackful.h too
            names, pos = [name], n.end()
            while (more := EXTRA_EXT.match(line, pos)):
                names.append(name.rsplit(".", 1)[0] + "." + more.group(1))
                pos = more.end()
            for nm in names:
                named.add((folder, nm))
                here = [f for f in FILES if os.path.basename(f) == nm
                        and (f.startswith(folder + "/") if folder else "/" not in f)]
                if not here and not (folder in PLANNED and not os.path.isdir(os.path.join(root, folder))):
                    bad.append(f"README.md:{first + i}: {nm} is not in {folder or 'the top folder'}")
    for f in FILES:
        d = f.split("/", 1)[0]
        if d in LAYOUT_DIRS and f.count("/") == 1 and f.endswith((".c", ".S", ".ld")):
            if (d, os.path.basename(f)) not in named:
                bad.append(f"README.md:{first}: Layout does not list {f}")
    return bad


failed = 0
for name, check in (("links", check_links), ("paths", check_paths),
                    ("outside-paths", check_outside), ("layout", check_layout)):
    problems = check()
    if problems:
        failed += 1
        print(f"FAIL repo/{name}: " + "; ".join(problems))
    else:
        print(f"PASS repo/{name}")
sys.exit(1 if failed else 0)
PY
