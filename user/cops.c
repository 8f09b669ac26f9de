// The user runtime's scheduler (see cops.h). The executor lives in the
// process's executor page (USER_EXEC_PAGE), where the kernel can read its ready
// bitmap; its code is the shared vDSO image, called through the vDSO's entry
// table. The loop below is the user-mode twin of the kernel's sched_loop.
#include "cops.h"
#include "abi.h"
#include "exec_arch.h"
#include "stackful.h"
#include "ulib.h"
#include "vdso.h"

#define V ((const struct vdso_table *)USER_VDSO)
#define EX ((struct executor *)USER_EXEC_PAGE)
#define LOOP_STACK (16 * 1024)     // top of the process stack, kept for this loop

_Static_assert(sizeof(struct executor) <= EXEC_PAGE_PUBLISHED_PRIO, "the executor must fit its page, below the words the kernel shares there");
_Static_assert(offsetof(struct vdso_table, full_switch) == 96, "user/cops_switch.S uses this offset");

// Per-thread runtime state, found through tp (each thread of the process runs
// the executor loop; alloc_cpu adds threads).
struct cops_thread {
  struct co *cur;                  // the coroutine this thread runs (not RUNNING any more
                                   // during the loop's rotation), NULL during its general
                                   // step, &loop_idle while it has nothing to run
                                   // (run_loop). First: cops.h reads it
  volatile long crit;              // critical-section depth (see below)
  volatile int drain_due;          // the handler found crit > 0, or the loop in its step
  int uintr_on;                    // this thread's user interrupts are enabled
  volatile uint64_t *uintc_claim;  // its receive page's CLAIM word (native N with a
                                   // user-interrupt controller), or 0
  uint32_t lane;                   // its lane in the executor (main: 0)
  uint64_t uintr_entries;          // user interrupts it has taken
  struct exec_lane *one_lane;      // the executor's lane while it has only one (main's thread
                                   // is then its one user: run_loop rotates inline), else 0
  struct co_queue *rot_q;          // the queue run_loop's inner loop rotates: the running
                                   // coroutine's, in one_lane; &no_rotation when it may not
  struct exec_lane *rot_lane;      // one_lane when run_loop's inner loop began
  uint64_t rot_mask;               // vvar_better_mask of the running priority (run_loop's inner loop)
  uint64_t better_masks[COPS_NPRIO];   // vvar_better_mask(p) for each priority (others_better)
};

// rot_q once the inner loop may not rotate any more: a queue no lane's best is.
static struct co_queue no_rotation;

static struct cops_thread main_thread;
#define COPS_MAX_HELPERS 63        // executor threads besides main (lanes are shared past EXEC_MAX_LANES)
static struct cops_thread helper_threads[COPS_MAX_HELPERS];
static int nhelpers;

// tp holds it for the thread's whole life: a global register variable, so
// that its fields are addressed off tp itself (tp is never allocated by the
// compiler anyway).
register struct cops_thread *tp_thread __asm__("tp");

static inline struct cops_thread *me(void) { return tp_thread; }

static inline void set_me(struct cops_thread *t) { tp_thread = t; }

#define current (me()->cur)

// ---- critical sections and the user-interrupt handler ----
// The handler must never touch the executor while the code it interrupted is
// in the middle of changing it (it would deadlock on a lane lock, or, on an
// executor with one lane, which has no lock word at all (user/exec_arch.h),
// corrupt a queue). Every runtime call into the executor runs inside
// crit_enter/crit_exit, or in run_loop's step, during which the thread's
// `cur` is NULL or a coroutine that is not RUNNING; a handler that finds
// crit > 0 or such a cur only notes that a drain is due, and crit_exit or the
// loop does it. No lock, no masking. The
// operation table and the ring need neither: both are lock-free (below), so
// an async call's submit runs outside any critical section.

#define RING ((struct completion_ring *)USER_RING)
#define VVAR ((const struct vvar *)USER_VVAR)
#define RUNNING_PRIO ((volatile uint32_t *)(USER_EXEC_PAGE + EXEC_PAGE_RUNNING_PRIO))
#define PUBLISHED_PRIO ((volatile const uint32_t *)(USER_EXEC_PAGE + EXEC_PAGE_PUBLISHED_PRIO))
#define CSR_UIE_NUM "0x004"
#define CSR_UTVEC_NUM "0x005"
#define CSR_USTATUS_NUM "0x000"

// ---- the operation table ----
// An async call in flight waits in the entry of its coroutine's slot (the low
// 32 bits of its cid). A coroutine waits for one call at a time and a slot
// has one coroutine at a time, so the caller owns its entry and writes it
// with no lock, and a completion finds it in O(1):
//   - the caller stores its whole cid there (release) before the ecall;
//   - a drain (on any thread) that finds that same cid there stores the
//     result, takes the call off the count (ninflight), then stores 0
//     (release) and wakes the caller, which waits for the 0 (cops_async,
//     inline in cops.h);
//   - a call that did not wait (any answer but -EINPROGRESS) gets no
//     completion: the caller stores the 0 and takes it off the count itself.
// A completion for a stale cid (its slot reused since) finds another cid or
// 0 and matches nothing. The entries never move (chunks of EXEC_CHUNK_SLOTS,
// the executor's, made on first use and never freed), so a drain may read
// any entry at any time, also while another thread's call makes a chunk.
// (struct cops_op is in cops.h: cops_async, inline there, waits on it.)
// The count and the directory side by side: the submit and the drain touch
// both, from one address formed once.
static struct {
  volatile int ninflight;          // async calls in flight, all threads (run_loop)
  struct cops_op *chunks[EXEC_MAX_CHUNKS];
} optab;

_Static_assert((uint64_t)EXEC_MAX_CHUNKS * EXEC_CHUNK_SLOTS <= UINT32_MAX, "a slot is 32 bits");

// cid's entry, or 0 when its chunk was never made (a cid from the ring may be
// any value). The directory is read relaxed: a completion's own chunk was
// published before its call's ecall, which comes before the kernel's store of
// tail that the drain read with acquire; and a chunk seen through a pointer
// read any later is seen zeroed (RVWMO keeps address dependencies in order).
static inline __attribute__((always_inline)) struct cops_op *op_entry(cid_t cid) {
  uint32_t s = (uint32_t)cid;
  if (s >= EXEC_MAX_CHUNKS * EXEC_CHUNK_SLOTS)
    return 0;
  struct cops_op *ch = __atomic_load_n(&optab.chunks[s / EXEC_CHUNK_SLOTS], __ATOMIC_RELAXED);
  return ch ? &ch[s % EXEC_CHUNK_SLOTS] : 0;
}

// Make the chunk of cid's slot (the first call of any coroutine in it);
// its entry, or 0 without memory.
static __attribute__((noinline)) struct cops_op *op_grow(cid_t cid) {
  uint32_t s = (uint32_t)cid;
  if (s >= EXEC_MAX_CHUNKS * EXEC_CHUNK_SLOTS)
    return 0;                      // (no live coroutine has such a slot)
  struct cops_op *ch = calloc(EXEC_CHUNK_SLOTS, sizeof *ch), *none = 0;
  if (!ch)
    return 0;
  __atomic_thread_fence(__ATOMIC_RELEASE);   // (the zeroes before the pointer: see take_one)
  if (!__atomic_compare_exchange_n(&optab.chunks[s / EXEC_CHUNK_SLOTS], &none, ch, 0,
                                   __ATOMIC_RELAXED, __ATOMIC_RELAXED)) {
    free(ch);                      // a coroutine on another thread made it first
    ch = none;
  }
  return &ch[s % EXEC_CHUNK_SLOTS];
}

static void drain(void);

static inline void crit_enter(void) {
  me()->crit++;
  __asm__ volatile("" ::: "memory");
}

static inline void crit_exit(void) {
  __asm__ volatile("" ::: "memory");
  struct cops_thread *t = me();
  if (--t->crit == 0 && t->drain_due)
    drain();
}

// Take the completion at the ring's head, h (drain saw that there is one),
// and complete it:
// hand the result to the call waiting for it, if any, and wake its coroutine.
// Any thread may drain at any time, several at once: an entry is claimed by
// moving head past it with a compare-and-swap, after it has been copied out
// (the kernel reuses the slot once head has passed it), so each is taken
// once, and no lock is held. The entry's 0 is stored before the wake: a
// caller woken before it could find its cid still there and block for good.
// A leaf but for the wake, its tail call, so that it needs no frame; returns
// what the wake answered, 0 when nothing was woken. (crit is held.)
static __attribute__((noinline)) int take_one(unsigned int h) {
  struct ring_entry e = RING->e[h % RING_ENTRIES];
  // (The copy's loads before the claim's store. An explicit fence: GCC 12's
  // compare-and-swap on RISC-V leaves its own ordering out, lr.w/sc.w bare.)
  __atomic_thread_fence(__ATOMIC_RELEASE);
  if (!__atomic_compare_exchange_n(&RING->head, &h, h + 1, 0, __ATOMIC_RELAXED, __ATOMIC_RELAXED))
    return 0;                      // another thread took it first
  struct cops_op *o = op_entry(e.cid);
  if (!o || __atomic_load_n(&o->cid, __ATOMIC_RELAXED) != e.cid)
    return 0;                      // a stale cid: it matches nothing
  o->result = e.result;
  __atomic_fetch_sub(&optab.ninflight, 1, __ATOMIC_RELAXED);
  __atomic_store_n(&o->cid, 0, __ATOMIC_RELEASE);
  return V->exec_wake(EX, e.cid);
}

// Take every completion out of the ring. Called with crit 0 (from the
// handler, crit_exit or the loop), and holds it at 1 itself: the wakes change
// the executor, and a handler that strikes meanwhile only marks a drain due,
// which the loop below then does.
static void drain(void) {
  me()->crit = 1;
  do {
    me()->drain_due = 0;
    // (The look at the ring is here, not in take_one, so that the last one,
    // which finds it empty, is no call.)
    for (unsigned int h; (h = RING->head) != __atomic_load_n(&RING->tail, __ATOMIC_ACQUIRE);)
      take_one(h);
    // Completions that waited in the kernel for space move in on our next
    // entry to the kernel; uwait returns at once when any wait, and brings
    // them in.
    if (__builtin_expect(RING->waiting, 0)) {
      uwait();
      me()->drain_due = 1;
    }
  } while (me()->drain_due);
  me()->crit = 0;
}

static volatile uint64_t uintr_entry_instret;

// The handler proper, called by user/uintr_entry.S with the interrupted
// code's caller-saved registers saved. On a hart with N the entry has already
// cleared USIP (first: a completion posted after that raises it again, so
// none is missed between the drain and the uret); on an emulated one the
// handler's exit, the SYS_uintr_ret ecall, clears it with the same effect --
// it stays set if a post came after this entry -- where a csrc here would
// cost a trap through M-mode.
void cops_uintr_handler(void) {
  __asm__ volatile("rdinstret %0" : "=r"(uintr_entry_instret));
  struct cops_thread *t = me();
  t->uintr_entries++;
  if (t->uintc_claim)
    (void)*t->uintc_claim;        // take the controller's bits: its USIP line drops
  // In a critical section, or in the loop's step (cur NULL or not RUNNING:
  // see run_loop), the interrupted code may be in the middle of changing the
  // executor: leave the drain to it.
  if (t->crit || !t->cur || t->cur->state != CO_RUNNING)
    t->drain_due = 1;
  else
    drain();
}

extern void cops_uintr_entry(void), cops_uintr_entry_ecall(void);

// A thread's first async call: an entry on the user-interrupt controller if
// there is one, then utvec pointed at the entry and user software interrupts
// enabled in this thread (three emulated CSR writes, so programs that never
// make an async call pay nothing). The u-CSRs are per thread; uintr_on is
// remembered here because reading ustatus would trap.
static __attribute__((noinline)) void uintr_first(struct cops_thread *self) {
  self->uintc_claim = (volatile uint64_t *)uintr_recv();
  int native = kstat(KSTAT_UINTR_NATIVE) == 1;
  void (*entry)(void) = native ? cops_uintr_entry : cops_uintr_entry_ecall;
  __asm__ volatile("csrw " CSR_UTVEC_NUM ", %0" :: "r"((uint64_t)entry));
  __asm__ volatile("csrs " CSR_UIE_NUM ", %0" :: "r"(1UL));
  __asm__ volatile("csrs " CSR_USTATUS_NUM ", %0" :: "r"(1UL));
  self->uintr_on = 1;
}

uint64_t cops_uintr_count(void) {
  uint64_t n = main_thread.uintr_entries;
  for (int i = 0; i < nhelpers; i++)
    n += helper_threads[i].uintr_entries;
  return n;
}

uint64_t cops_uintr_entry_instret(void) { return uintr_entry_instret; }

void cops_hold_completions(int hold) {
  // (On the calling thread; tests use it single-threaded.)
  if (hold)
    crit_enter();
  else
    crit_exit();
}

static long raw_async(uint64_t nr, long a0, long a1, long a2, long prio, cid_t cid) {
  return ecall_raw(nr | SYS_ASYNC, a0, a1, a2, prio, (long)cid);
}

// The entries of the calls the runtime refuses (cops_async_submit).
static const struct cops_op op_enomem = { .result = -ENOMEM }, op_einval = { .result = -EINVAL };

// A thread's first async call, or the first of a coroutine whose slot's
// chunk of the operation table is not there yet: set that up, then the call.
// (Out of line, so that cops_async_submit keeps its arguments where they came
// until its ecall.)
static __attribute__((noinline)) uintptr_t async_first(uint64_t nr, long a0, long a1, long a2) {
  struct cops_thread *self = me();
  if (!self->uintr_on)
    uintr_first(self);
  cid_t cid = co_cid_inline(current);
  if (!op_entry(cid) && !op_grow(cid))
    return (uintptr_t)&op_enomem | 1;
  return cops_async_submit(nr, a0, a1, a2);
}

// cops_async's first half (its second, the wait, is inline in cops.h, so
// that its switch is written in its caller and saves only what is live
// there: a function of its own that switches must save every callee-saved
// register for its caller, 24 instructions a call). A leaf but for the
// rare async_first, its tail call. Returns the call's entry, with bit 0 set
// when the call is over already (its result in the entry: the caller's own,
// or a constant one for the runtime's refusals).
uintptr_t cops_async_submit(uint64_t nr, long a0, long a1, long a2) {
  struct co *c = current;
  if (!c || c->kind != CO_STACKFUL)
    return (uintptr_t)&op_einval | 1;    // the caller must be able to block
  struct cops_thread *self = me();
  cid_t cid = co_cid_inline(c);
  struct cops_op *o = op_entry(cid);
  if (__builtin_expect(!o || !self->uintr_on, 0))
    return async_first(nr, a0, a1, a2);
  // Counted (run_loop sleeps in uwait while calls are out) until the call
  // completes, which a drain on any thread may take: hence an atomic.
  __atomic_fetch_add(&optab.ninflight, 1, __ATOMIC_RELAXED);
  __atomic_store_n(&o->cid, cid, __ATOMIC_RELEASE);
  long r = raw_async(nr, a0, a1, a2, c->prio, cid);
  if (__builtin_expect(r == -EINPROGRESS, 1))
    return (uintptr_t)o;
  o->result = r;                   // done at once (fast path) or refused
  __atomic_store_n(&o->cid, 0, __ATOMIC_RELAXED);
  __atomic_fetch_sub(&optab.ninflight, 1, __ATOMIC_RELAXED);
  return (uintptr_t)o | 1;
}

static int main_status;
static volatile int main_done;

struct stackful *stackful_self(void) { return current->arg; }

void stackful_overflow(struct stackful *sf) {
  fprintf(STDERR, "cops: stack overflow in coroutine %p\n", (void *)sf);
  exit(-1);
  for (;;)
    ;
}

int stackful_poll(void *arg) { return stackful_resume(arg); }

int64_t cops_spawn(co_poll_fn poll, void *arg, uint32_t prio) {
  if (poll == stackful_poll)
    return EXEC_EINVAL;            // (the loop takes that poll to mean a stackful coroutine)
  crit_enter();
  int64_t cid = V->exec_spawn_on(EX, me()->lane, poll, arg, prio, CO_STACKLESS);
  crit_exit();
  return cid;
}

// A stackful coroutine's record and the size of its stack (cops_stack_used).
struct sized_stackful {
  struct stackful sf;                  // first: release_stackful frees it as the whole
  size_t size;
  uint32_t magic;                      // SIZED_MAGIC: main's stackful record is not one of these
};
#define SIZED_MAGIC 0x5a1ed5u

static void release_stackful(struct stackful *sf) {
  free(sf->stack_lo);
  free(sf);
}

#define STACK_PAINT 0xa5
int cops_paint_stacks;

int64_t cops_spawn_stackful(void (*fn)(void *), void *arg, uint32_t prio) {
  return cops_spawn_stackful_sized(fn, arg, prio, COPS_STACK_SIZE);
}

int64_t cops_spawn_stackful_sized(void (*fn)(void *), void *arg, uint32_t prio, size_t size) {
  if (size < COPS_STACK_MIN)
    return EXEC_EINVAL;
  struct sized_stackful *ss = malloc(sizeof *ss);
  void *stack = malloc(size);
  if (!ss || !stack) {
    free(ss);
    free(stack);
    return EXEC_ENOMEM;
  }
  if (cops_paint_stacks)
    memset(stack, STACK_PAINT, size);
  ss->size = size;
  ss->magic = SIZED_MAGIC;
  struct stackful *sf = &ss->sf;
  V->stackful_init(sf, stack, size, fn, arg, 0, release_stackful);
  crit_enter();
  int64_t cid = V->exec_spawn_on(EX, me()->lane, stackful_poll, sf, prio, CO_STACKFUL);
  crit_exit();
  if (cid < 0)
    release_stackful(sf);
  return cid;
}

// The deepest the calling coroutine's stack has been: the painted bytes at
// its bottom that are still the paint (the first word is the canary).
size_t cops_stack_used(void) {
  if (!cops_paint_stacks || !current || current->kind != CO_STACKFUL)
    return 0;
  struct sized_stackful *ss = current->arg;
  if (ss->magic != SIZED_MAGIC)
    return 0;
  const unsigned char *lo = (const unsigned char *)(ss->sf.stack_lo + 1);
  size_t untouched = 0;
  while (untouched < ss->size - 8 && lo[untouched] == STACK_PAINT)
    untouched++;
  return ss->size - 8 - untouched;
}

cid_t cops_current(void) { return current ? co_cid_inline(current) : CID_NONE; }
int cops_wake(cid_t cid) {
  crit_enter();
  int r = V->exec_wake(EX, cid);
  crit_exit();
  return r;
}

int cops_reprio(cid_t cid, uint32_t prio) {
  crit_enter();
  int r = V->exec_reprio(EX, cid, prio);
  // Any change stops run_loop's rotation: of the running coroutine, whose
  // queue it was (and which leaves its ring), or of the last other ready
  // coroutine there, which takes the running one out of the ring with it
  // (executor.h, struct co_queue).
  me()->rot_q = &no_rotation;
  // The running coroutine's priority is what the kernel ranks this process by:
  // publish a change to it at once, not at the next dispatch.
  if (r == 0 && current && cid == co_cid_inline(current))
    *RUNNING_PRIO = prio;
  crit_exit();
  return r;
}
int cops_check(char *why, size_t len) {
  crit_enter();
  int r = V->exec_check(EX, why, len);
  crit_exit();
  return r;
}

void cops_stats(struct exec_stats *st) {
  crit_enter();
  V->exec_get_stats(EX, st);
  crit_exit();
}

struct main_args { int argc; char **argv; };
extern int main(int argc, char **argv);

static void main_body(void *arg) {
  struct main_args *a = arg;
  main_status = main(a->argc, a->argv);
  main_done = 1;
}

// Has the kernel, or another process, work better than priority prio? (COPS:
// cooperation through the ranks word of the read-only vvar page, abi.h.) Our
// own process is counted too, at the priority the kernel last ranked it
// (PUBLISHED_PRIO); a count that is only us is no reason to step aside.
// (mask: vvar_better_mask(prio))
static inline __attribute__((always_inline)) int others_better_exact(uint64_t mask) {
  uint64_t w = VVAR->ranks;
  uint32_t own = *PUBLISHED_PRIO;
  if (own < VVAR_NPRIO && vvar_rank_count(w, own))
    w -= 1UL << (VVAR_RANK_BITS * own);
  return (w & mask) != 0;
}

// Usually neither has anything better: one load from the vvar page and an and
// with vvar_better_mask(prio), which run_loop's inner loop keeps in a
// register; only when that finds something is our own count taken out.
static inline __attribute__((always_inline)) int others_better_mask(const struct vvar *vv,
                                                                   uint64_t mask) {
  if (__builtin_expect(!(vv->ranks & mask), 1))
    return 0;
  return others_better_exact(mask);
}

// vvar_better_mask(p) for each priority, in every thread's record (filled in
// by set_masks): a load instead of the eight instructions that form it, at
// every dispatch, addressed off tp (two instructions fewer than a global
// table's address).
_Static_assert((COPS_NPRIO & (COPS_NPRIO - 1)) == 0, "better_masks is indexed by prio & (COPS_NPRIO - 1)");

static void set_masks(struct cops_thread *t) {
  for (uint64_t p = 0; p < COPS_NPRIO; p++)
    t->better_masks[p] = vvar_better_mask(p);
}

static inline __attribute__((always_inline)) int others_better(const struct vvar *vv,
                                                              uint64_t prio) {
  // (The mask keeps a priority the program wrote over its own executor
  // page inside the table.)
  return others_better_mask(vv, me()->better_masks[prio & (COPS_NPRIO - 1)]);
}

// The values run_loop's inner loop keeps in registers (see there).
static inline __attribute__((always_inline)) void keep_in_registers(uint64_t *one, uint64_t *resident,
                                                                    const struct vvar **vv,
                                                                    co_poll_fn *sfpoll) {
  uint64_t o = CO_YIELD, r = EXEC_RESIDENT_WORD;
  const struct vvar *v = VVAR;
  co_poll_fn f = stackful_poll;
  __asm__("" : "+r"(o), "+r"(r), "+r"(v), "+r"(f));
  *one = o;
  *resident = r;
  *vv = v;
  *sfpoll = f;
}

_Static_assert(EXEC_READY_WORD == CO_YIELD, "run_loop's `one` is both");

// stackful_after_switch out of line, called with sf and r where the switch
// left them (a0, a1), so that the inner loop keeps no copy of sf for it.
static __attribute__((noinline)) int after_switch_out(struct stackful *sf, long r) {
  return stackful_after_switch(sf, (int)r + CO_YIELD);
}

// A drain the handler left to the loop (it struck during the loop's step),
// done as soon as the step is over; unless a coroutine that yielded holds
// completions off (cops_hold_completions), when its crit_exit will.
static __attribute__((noinline)) void drain_deferred(void) {
  if (!me()->crit)
    drain();
}

// The executor loop, run by the main thread and by every thread alloc_cpu adds.
//
// The step (settle the coroutine that came back, fetch the next) runs with
// the thread's `cur` NULL: no coroutine runs then, and a user-interrupt
// handler that finds cur NULL leaves the executor alone and only marks a
// drain due, which the loop does right after the step (cur is set again
// first, so a handler from then on drains by itself). One store each way,
// instead of a counter to read, raise, restore and test. The inline rotation
// (below) saves the first: it begins by storing the yielding coroutine's
// state (READY), before it reads or changes the ring (exec_resident_ready),
// and the handler also stays out while cur is not RUNNING. Until that store
// the handler may drain, which only queues coroutines: the rotation, whose
// test came before, is still right (a coroutine queued just then is as one
// that came just after).
//
// A yield to an equal on one lane (the common switch) is the executor's own
// rotation, inline from executor.h, with no call into the vDSO: prev goes to
// the tail of its queue and the head runs. That coroutine has prev's
// priority, which RUNNING_PRIO already says (the loop stored it when prev was
// dispatched; cops_reprio stores a running coroutine's new one), so only the
// question "has the kernel or another process better work" is asked again.
// Anything else is exec_next_on through the vDSO's table.
//
// Every user coroutine switches by CACS (cops_spawn_stackful and cops_start
// make them so), so the loop resumes them by CACS without asking: it is their
// one call site, and spills only what it has live. The coroutine that ran is
// found through tp afterwards rather than kept in a register across the
// switch, which would be spilled and reloaded.
// What cur points at while the loop has nothing to run (never dispatched;
// RUNNING, so that the handler drains by itself meanwhile: see run_loop).
static struct co loop_idle = { .state = CO_RUNNING };

// The loop's step begins: from here the handler leaves the executor alone.
static inline __attribute__((always_inline)) void step_begin(void) {
  me()->cur = 0;
  __asm__ volatile("" ::: "memory");
}

// The step is over: c is what the thread runs now (or &loop_idle), and a
// drain the handler left meanwhile is done.
static inline __attribute__((always_inline)) void step_end(struct co *c) {
  __asm__ volatile("" ::: "memory");
  me()->cur = c;
  __asm__ volatile("" ::: "memory");
  if (__builtin_expect(me()->drain_due, 0))
    drain_deferred();
}

static int run_loop(void) {
  struct co *prev = 0, *c;
  int res = CO_PENDING;
  for (;;) {
  top:
    // main ends as a coroutine that is done, on the thread that ran it (the
    // others go on until that thread ends the process).
    if (res == CO_DONE && main_done) {
      if (me() != &main_thread)
        exit(main_status);           // main finished on a helper: end the process here
      return main_status;            // returning from main ends the program
    }
  step:
    // The general step, through the vDSO.
    step_begin();
    c = V->exec_next_on(EX, me()->lane, prev, res);
    step_end(c);
    if (!c) {
      // Nothing to run. The loop is out of its step, so the handler must
      // drain by itself again, as it does while a coroutine runs: a drain
      // left to the loop now could come after the look below and before
      // uwait, whose kernel side would then see nothing pending and sleep
      // with the completion in the ring. So cur is not NULL while idle;
      // then a drain the handler left before that is done here.
      step_end(&loop_idle);
      prev = 0;
      res = CO_PENDING;
      *RUNNING_PRIO = COPS_NPRIO;
      // (That drain may have woken a coroutine.)
      if (__atomic_load_n(&EX->bitmap, __ATOMIC_ACQUIRE))
        continue;
      if (optab.ninflight > 0 || nhelpers > 0) {
        // Nothing ready: sleep in the kernel until a completion raises a user
        // interrupt in this thread or, with several executor threads, until
        // another of them enters the kernel while coroutines are ready (it
        // may have woken them with no system call: sys_uwait). No polling.
        // (With one thread, every call out is this thread's, and its
        // completion comes here.)
        uwait();
        continue;
      }
      // The handler may have drained the last completions after the look
      // at the bitmap above: ninflight read 0 only once it had (with one
      // thread, only its handler drains), and it wakes the waiters before it
      // returns, so their bits are set by now.
      if (__atomic_load_n(&EX->bitmap, __ATOMIC_ACQUIRE))
        continue;
      struct exec_stats st;
      cops_stats(&st);
      fprintf(STDERR, "cops: deadlock: %u coroutines blocked, none ready, no async call pending\n",
              st.blocked);
      return -1;
    }
    // Tell the kernel what we run (it ranks processes by it), and step
    // aside if the kernel or another process has better work than c.
    uint64_t prio = c->prio;
    *RUNNING_PRIO = prio;
    if (others_better(VVAR, prio))
      yield();
    if (c->kind == CO_STACKLESS) {
      prev = c;
      res = c->poll(c->arg);
      if (res != CO_YIELD)
        continue;
    } else {
      // A coroutine that blocks (the common result here) goes straight to
      // the step: only one that is done meets the test for main's end.
      // One that yields with nothing of its priority or better ready and no
      // wake pending (and not the lane's resident: no flags) is switched
      // back into at once: exec_next_on would hand it straight back (it
      // keeps a yielder running then), so the step, the store of the
      // running priority (it is still prev's) and the kind test are left
      // out; the COPS check is not. Read outside the step: a handler may
      // queue a coroutine or mark a wake just after the look, as if it came
      // just after the yield, and the next switch sees it. (best is 0 or a
      // ring after prev's: best - 1 is at or past prev's ring.) A loop of
      // its own around this switch, not a jump back to the dispatch above,
      // which made the compiler lay out the rotation below worse (a
      // stackful switch there cost one instruction more).
      struct stackful *sf = c->arg;
      for (;;) {
        long r = cacs_enter_raw(&sf);     // (result - CO_YIELD)
        stackful_check_canary(sf);
        prev = me()->cur;
        if (__builtin_expect(r != 0, 0)) {
          res = (int)r + CO_YIELD;
          if (res != CO_DONE)
            goto step;
          if (sf->release)
            sf->release(sf);
          goto top;
        }
        struct exec_lane *l = me()->one_lane;
        if (!l || prev->flags ||
            (uintptr_t)l->best - 1 < (uintptr_t)&l->ready[prev->prio])
          break;
        if (others_better(VVAR, prev->prio))
          yield();
        sf = prev->arg;
      }
      res = CO_YIELD;
    }
    struct cops_thread *t = me();
    struct exec_lane *l = t->one_lane;
    if (!l || !(prev->flags & CO_RESIDENT))
      continue;                      // (several lanes, or prev was popped: the general step)
    // prev yielded, and it is the lane's resident (executor.h, struct
    // co_queue: the general step's rotation took it, and left it linked):
    // while each yields to an equal, rotate inline (below), each rotation
    // taking the next resident. The queue to rotate is prev's, in the one
    // lane. rot_q names it for as long as that holds and prev stays the
    // resident (cops_alloc_cpu and cops_reprio replace it by &no_rotation,
    // which no lane's best ever equals), so that one load and one compare
    // with the lane's best decide. The thread keeps l and
    // the COPS check's mask too: a stackful coroutine's switch takes every register, so the
    // loop loads them again after it, and a stackless one's poll keeps them
    // where they are (were they live across the switch, the compiler would
    // keep them on the stack for both kinds). All this is set up here, at
    // the first yield, not at each dispatch: a coroutine that blocks or
    // ends (the general step) pays none of it.
    prio = prev->prio;
    t->rot_q = &l->ready[prio];
    t->rot_lane = l;
    uint64_t mask = vvar_better_mask(prio);
    t->rot_mask = mask;
    // The constants the inner loop stores and compares, the vvar page's
    // address and stackful_poll's (the kind test: below), in registers too,
    // by the same rule: hidden from the compiler (an empty asm), which would
    // otherwise form them again on every turn.
    uint64_t one, resident;
    const struct vvar *vv;
    co_poll_fn sfpoll;
    keep_in_registers(&one, &resident, &vv, &sfpoll);
    for (;;) {
      // (No step_begin: cur, prev, is RUNNING until the rotation's first
      // store, which the handler then sees; see above.)
      // prev's queue is the lane's best: it goes to its tail, the head runs.
      struct co_queue *q = me()->rot_q;
      if (l->best != q)
        break;                       // (the general step above sets cur again)
      c = exec_rotate_k(q, prev, one, resident);   // (c has prev's priority: mask holds)
      step_end(c);
      if (others_better_mask(vv, mask))
        yield();
      // The kind, asked of the poll function, which the call loads anyway:
      // in this runtime a coroutine is stackful exactly when its poll is
      // stackful_poll (cops_spawn refuses that one for a stackless coroutine).
      co_poll_fn poll = c->poll;
      void *arg = c->arg;
      if (poll != sfpoll) {
        prev = c;
        int r = poll(arg);
        if ((uint64_t)(int64_t)r != one) {     // (one is CO_YIELD)
          res = r;
          break;
        }
      } else {
        // run_once's stackful half, with the state above loaded again.
        struct stackful *sf = arg;
        long r = cacs_enter_raw(&sf);   // (0 for a yield)
        if (__builtin_expect(r != 0, 0)) {
          res = after_switch_out(sf, r);
          prev = me()->cur;
          break;
        }
        stackful_check_canary(sf);
        prev = me()->cur;
        l = me()->rot_lane;
        mask = me()->rot_mask;
        keep_in_registers(&one, &resident, &vv, &sfpoll);
      }
    }
  }
}

static int helper_entry(void *arg) {
  set_me((struct cops_thread *)arg);
  return run_loop();
}

int cops_thread_index(void) {
  struct cops_thread *t = me();
  return t == &main_thread ? 0 : (int)(t - helper_threads) + 1;
}

int cops_alloc_cpu(int n) {
  int made = 0;
  for (; made < n && nhelpers < COPS_MAX_HELPERS; made++) {
    struct cops_thread *t = &helper_threads[nhelpers];
    set_masks(t);
    // Its own lane (shared round-robin past EXEC_MAX_LANES threads), in use
    // before the thread can queue anything there.
    uint32_t lanes = (uint32_t)nhelpers + 2;
    me()->one_lane = 0;            // (only this thread can have it: the only one so far)
    me()->rot_q = &no_rotation;    // (a coroutine calls this: stop the loop's rotation)
    t->lane = (uint32_t)(nhelpers + 1) % EXEC_MAX_LANES;
    V->exec_set_lanes(EX, lanes < EXEC_MAX_LANES ? lanes : EXEC_MAX_LANES);
    // Counted before it starts: its run_loop, finding nothing ready at once,
    // must know that other threads exist (or it would call it a deadlock).
    nhelpers++;
    int tid = uthread_create(helper_entry, t);
    if (tid < 0) {
      nhelpers--;
      break;
    }
  }
  return made;
}

int cops_start(int argc, char **argv) {
  set_me(&main_thread);
  if (V->magic != VDSO_MAGIC || V->version != VDSO_VERSION) {
    fprintf(STDERR, "cops: no usable vDSO at %p\n", (void *)USER_VDSO);
    return -1;
  }
  if (V->exec_init_lanes(EX, COPS_NPRIO, 1, malloc, free) != 0)
    return -1;
  set_masks(&main_thread);
  main_thread.one_lane = (struct exec_lane *)EX->lanes;   // (lanes never move)
  // main() runs on the process stack itself (below the part this loop uses),
  // so the guard page under it still catches a runaway recursion.
  static struct stackful main_sf;
  static struct main_args args;
  args.argc = argc;
  args.argv = argv;
  V->stackful_init(&main_sf, (void *)(USER_STACK_TOP - USER_STACK_SIZE), USER_STACK_SIZE - LOOP_STACK,
                   main_body, &args, 0, 0);
  if (V->exec_spawn(EX, stackful_poll, &main_sf, COPS_MAIN_PRIO, CO_STACKFUL) < 0)
    return -1;
  return run_loop();
}
