// The scheduler trace (see trace.h): per-hart rings of binary records, and
// their dump on the console.
#include "trace.h"
#include "abi.h"
#include "hart.h"
#include "kco.h"
#include "klib.h"
#include "palloc.h"
#include "printf.h"
#include "proc.h"
#include "riscv.h"
#include "stats.h"

#define TRACE_DEFAULT_RECORDS 16384   // 512 KiB a hart
#define TRACE_MAX_RECORDS (1u << 20)

// One hart's ring. Its hart is the only writer, so the counters need no lock;
// each ring has a cache line of its own, so harts never write the same line.
struct trace_ring {
  struct trace_rec *rec;        // `size` records, a power of two
  uint32_t size;
  uint32_t next;                // records written since the start: the next seq
  int writing;                  // inside trace_record (trace_stop waits on it)
} __attribute__((aligned(64)));

int trace_enabled;
static struct trace_ring rings[BOARD_MAX_HARTS];
static uint32_t ring_size;      // records per hart of the current allocation
static int dump_at_poweroff;
static uint64_t started_at, stopped_at;

static void record(int type, uint64_t cid, uint32_t prio, int who, uint32_t tid, long arg) {
  // Interrupts off for the few stores of one record: an interrupt's own record
  // would otherwise take the same slot. (Restored as they were: some hooks
  // run in trap handlers, with interrupts already off.)
  uint64_t sie = csr_read(sstatus) & SSTATUS_SIE;
  intr_off();
  struct hart *h = this_hart();
  struct trace_ring *r = &rings[h->index];
  // Announce the write before looking at the flag again; trace_stop clears
  // the flag before it looks at `writing`: one of the two sees the other.
  __atomic_store_n(&r->writing, 1, __ATOMIC_SEQ_CST);
  if (__atomic_load_n(&trace_enabled, __ATOMIC_SEQ_CST)) {
    uint32_t seq = r->next;
    struct trace_rec *e = &r->rec[seq & (r->size - 1)];
    e->ts = rdtime();
    e->cid = cid;
    e->arg = (int32_t)arg;
    e->who = who;
    e->seq = seq;
    e->type = (uint8_t)type;
    e->hart = (uint8_t)h->index;
    e->prio = prio > 255 ? 255 : (uint8_t)prio;
    e->tid = (uint8_t)tid;
    __atomic_store_n(&r->next, seq + 1, __ATOMIC_RELEASE);
  }
  __atomic_store_n(&r->writing, 0, __ATOMIC_RELEASE);
  if (sie)
    intr_on();
}

void trace_co(int type, const struct co *c, long arg) {
  // A dispatch names the code it runs: the poll function, or a stackful
  // coroutine's entry function (the host turns the address into a name with
  // the kernel's symbols; kernel text lies below 4 GiB, so 32 bits hold it).
  if (type == TR_RUN)
    arg = (long)(c->kind == CO_STACKFUL ? (uintptr_t)((const struct stackful *)c->arg)->fn
                                        : (uintptr_t)c->poll);
  record(type, co_cid_inline(c), c->prio, 0, 0, arg);
}

// The priority of what process p runs now, as the kernel sees it: the word
// its runtime keeps in the executor page (untrusted, hence only shown).
static uint32_t user_prio(struct proc *p) {
  const struct executor *ex = __atomic_load_n(&p->exec_page, __ATOMIC_RELAXED);
  if (!ex)
    return 255;
  return *(volatile const uint32_t *)((const char *)ex + EXEC_PAGE_RUNNING_PRIO);
}

void trace_thread(int type, struct thread *t, uint64_t cid, long arg) {
  struct co *cur = this_hart()->cur;
  // Entering user mode, the interesting priority is the switcher's: the rank
  // of the process it runs (prio.c).
  uint32_t prio = type == TR_UENTER ? (cur ? cur->prio : 255) : user_prio(t->proc);
  if ((type == TR_UENTER || type == TR_UEXIT) && cur)
    cid = co_cid_inline(cur);   // the switching coroutine
  if (type == TR_UEXIT)          // scause: its code, and whether it is an interrupt
    arg = (arg & 0xff) | (arg < 0 ? 256 : 0);
  record(type, cid, prio, t->proc->pid, (uint32_t)t->tid, arg);
}

void trace_irq(int type, long arg) {
  struct co *cur = this_hart()->cur;     // what the interrupt struck, if anything
  record(type, cur ? co_cid_inline(cur) : 0, cur ? cur->prio : 255, 0, 0, arg);
}

// Wait until no hart is inside record(). Bounded: a hart that faulted inside
// record() (and is now powering off through this very path) never leaves it.
static void wait_writers(void) {
  for (uint32_t i = 0; i < BOARD_MAX_HARTS; i++)
    for (uint32_t spins = 0; __atomic_load_n(&rings[i].writing, __ATOMIC_SEQ_CST) &&
                             spins < 10000000; spins++)
      ;
}

static void set_flag(int on) { __atomic_store_n(&trace_enabled, on, __ATOMIC_SEQ_CST); }

void trace_stop(void) {
  if (__atomic_load_n(&trace_enabled, __ATOMIC_SEQ_CST))
    stopped_at = rdtime();
  set_flag(0);
  wait_writers();
}

static uint32_t round_records(uint32_t n) {
  if (n == 0)
    n = TRACE_DEFAULT_RECORDS;
  if (n > TRACE_MAX_RECORDS)
    n = TRACE_MAX_RECORDS;
  uint32_t p = 16;
  while (p < n)
    p <<= 1;
  return p;
}

int trace_start(uint32_t records) {
  trace_stop();
  uint32_t n = round_records(records);
  size_t pages = ALIGN_UP((uint64_t)n * sizeof(struct trace_rec), PAGE_SIZE) / PAGE_SIZE;
  if (n != ring_size) {
    // Kept from one start to the next (a trace is started again and again
    // from the monitor); only a different size gives them back.
    size_t old = ALIGN_UP((uint64_t)ring_size * sizeof(struct trace_rec), PAGE_SIZE) / PAGE_SIZE;
    for (uint32_t i = 0; i < BOARD_MAX_HARTS; i++) {
      if (rings[i].rec)
        pfree(rings[i].rec, old);
      rings[i].rec = 0;
    }
    ring_size = 0;
    for (uint32_t i = 0; i < nharts_online; i++)
      if (!(rings[i].rec = palloc(pages)))
        return -1;
    ring_size = n;
  }
  for (uint32_t i = 0; i < BOARD_MAX_HARTS; i++) {
    rings[i].size = rings[i].rec ? n : 0;
    rings[i].next = 0;
  }
  started_at = rdtime();
  stopped_at = 0;
  set_flag(1);                  // (seq_cst: the rings are set up before any hart sees it)
  return 0;
}

static uint32_t kept(const struct trace_ring *r) { return r->next < r->size ? r->next : r->size; }

void trace_status(void) {
  kprintf("trace: %s, %u records a hart\n", trace_enabled ? "on" : "off", ring_size);
  for (uint32_t i = 0; i < nharts_online; i++)
    if (rings[i].rec)
      kprintf("  hart %u: written %u, kept %u, lost %u\n", i, rings[i].next, kept(&rings[i]),
              rings[i].next - kept(&rings[i]));
}

static const char b64[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

// n bytes (a multiple of 3) as base64 into out (4 * n / 3 + 1 bytes).
static void base64(const uint8_t *in, uint32_t n, char *out) {
  for (uint32_t i = 0; i < n; i += 3) {
    uint32_t v = (uint32_t)in[i] << 16 | (uint32_t)in[i + 1] << 8 | in[i + 2];
    *out++ = b64[v >> 18];
    *out++ = b64[(v >> 12) & 63];
    *out++ = b64[(v >> 6) & 63];
    *out++ = b64[v & 63];
  }
  *out = 0;
}

// Three records a line: 96 bytes, 128 characters, no padding.
#define RECS_PER_LINE 3

void trace_dump(void) {
  trace_stop();
  kprintf("TRACE-BEGIN version=1 timebase=%lu harts=%u records=%u recsize=%u start=%lu stop=%lu\n",
          (unsigned long)board.timebase_hz, nharts_online, ring_size,
          (unsigned)sizeof(struct trace_rec), (unsigned long)started_at,
          (unsigned long)stopped_at);
  for (uint32_t i = 0; i < nharts_online; i++) {
    struct trace_ring *r = &rings[i];
    if (!r->rec)
      continue;
    uint32_t k = kept(r), first = r->next - k;
    kprintf("TRACE-HART %u written=%u kept=%u lost=%u\n", i, r->next, k, first);
    struct trace_rec line[RECS_PER_LINE];
    char text[RECS_PER_LINE * sizeof(struct trace_rec) * 4 / 3 + 1];
    for (uint32_t s = first; s != r->next;) {
      uint32_t n = 0;
      while (n < RECS_PER_LINE && s != r->next)
        line[n++] = r->rec[s++ & (r->size - 1)];
      // A short last line is padded with zero records (type 0: skipped).
      memset(&line[n], 0, (RECS_PER_LINE - n) * sizeof line[0]);
      base64((const uint8_t *)line, sizeof line, text);
      kprintf("TD %u %s\n", i, text);
    }
  }
  kprintf("TRACE-END\n");
}

void trace_boot(const char *records) {
  uint32_t n = 0;
  for (const char *p = records; *p >= '0' && *p <= '9'; p++)
    n = n * 10 + (uint32_t)(*p - '0');
  if (trace_start(n) != 0) {
    kprintf("trace: cannot allocate the rings\n");
    return;
  }
  dump_at_poweroff = 1;
  kprintf("trace: on, %u records a hart; dumped at poweroff\n", ring_size);
}

void trace_at_poweroff(void) {
  if (__atomic_exchange_n(&dump_at_poweroff, 0, __ATOMIC_SEQ_CST))
    trace_dump();
}

static void print_stats(stats_out_fn *out) {
  uint64_t written = 0, lost = 0;
  for (uint32_t i = 0; i < nharts_online; i++) {
    written += rings[i].next;
    lost += rings[i].next - kept(&rings[i]);
  }
  out("trace: %s, %u records a hart, written %lu, lost %lu\n", trace_enabled ? "on" : "off",
      ring_size, written, lost);
}
STATS_SOURCE(90, "trace", print_stats);
