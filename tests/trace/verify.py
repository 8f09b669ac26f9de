#!/usr/bin/env python3
"""Checks a converted trace (Chrome trace-event JSON) independently of
scripts/trace2json.py's own --check: valid JSON, begin/end events that nest
per hart, timestamps that never go back per hart. With --alternation, also
that prodcons's consumer (c2) and producer (c3) take turns on hart 0 (the
hand-made fixture, tests/trace/prodcons.trace). Prints one line per problem,
nothing if there is none.

  verify.py JSON [--alternation]
"""
import json
import sys

try:
    doc = json.load(open(sys.argv[1]))
except ValueError as e:
    print("not valid JSON: %s" % e)
    sys.exit(0)
stack, last, runs = {}, {}, []
for e in doc["traceEvents"]:
    if e["ph"] == "M":
        continue
    h, ts = e["tid"], e["ts"]
    if ts < last.get(h, ts):
        print("hart %s: %s at %s after %s" % (h, e["name"], ts, last[h]))
    last[h] = ts
    if e["ph"] == "B":
        stack.setdefault(h, []).append(e["name"])
        if h == 0 and e.get("cat") == "process" and not e["args"].get("resumed"):
            runs.append(e["name"])
    elif e["ph"] == "E":
        if not stack.get(h) or stack[h].pop() != e["name"]:
            print("hart %s: end of %s does not close the innermost slice" % (h, e["name"]))
for h, s in stack.items():
    if s:
        print("hart %s: %s never end" % (h, s))
if "--alternation" in sys.argv[2:]:
    # prodcons: after main, the consumer (c2) and the producer (c3) take turns.
    work = [r for r in runs if r in ("pid 3 c2", "pid 3 c3")]
    if len(work) < 6 or any(a == b for a, b in zip(work, work[1:])):
        print("no alternation of consumer and producer: %s" % work)
