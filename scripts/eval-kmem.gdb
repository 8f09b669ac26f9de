# The kernel's memory counters, read through QEMU's gdb stub (scripts/eval.sh,
# Table 3): the same counters the console monitor's `stats` prints (palloc's
# and kmalloc's), plus matrixd's heap (brk) and live threads from its struct
# proc. The monitor and a user= boot cannot share the console (kernel/job.c),
# so the evaluation reads them here instead. Prints one line:
#   KMEM free_pages=... total_pages=... kmalloc_bytes=... ... user_heap_bytes=...
# Run as: gdb-multiarch -batch -nx -ex 'target remote HOST:PORT' -x THIS -ex detach kernel.elf
set pagination off
set confirm off
python
import gdb

def value(expr):
    return int(gdb.parse_and_eval(expr))

pa = "'palloc.c'::pa.st"
km = "'kmalloc.c'::km.st"
out = {
    "free_pages": value(pa + ".free_pages"),
    "total_pages": value(pa + ".total_pages"),
    "kmalloc_bytes": value(km + ".live_bytes"),
    "kmalloc_objects": value(km + ".live_objects"),
    "slab_pages": value(km + ".slab_pages"),
    "large_pages": value(km + ".large_pages"),
    "thread_struct_bytes": value("sizeof(struct thread)"),
}
procs = gdb.parse_and_eval("procs")
for i in range(procs.type.sizeof // procs[0].type.sizeof):
    p = procs[i]
    if int(p["state"]) != 0 and p["name"].string() == "matrixd":
        out["user_heap_bytes"] = int(p["brk"]) - int(p["heap_base"])
        out["user_threads"] = int(p["live_threads"])
print("KMEM " + " ".join("%s=%d" % kv for kv in out.items()))
end
