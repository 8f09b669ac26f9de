// Kernel-perceived priorities (see prio.h). Values read from user pages are
// untrusted: the bitmap is masked to the priorities that exist, the running
// priority is clamped, and a process can never rank above USER_PRIO_CEILING.
#include "prio.h"
#include "abi.h"
#include "kco.h"
#include "palloc.h"
#include "proc.h"

static struct vvar *vvar;
_Static_assert(NPRIO_DEFAULT == VVAR_NPRIO, "the vvar page counts every priority");
_Static_assert(NPROC < (1 << VVAR_RANK_BITS), "a count of processes fits its field of ranks");
_Static_assert(VVAR_NPRIO * VVAR_RANK_BITS <= VVAR_KERNEL_SHIFT, "the counts stay below the kernel's byte");

int prio_init(void) {
  vvar = palloc_zero(1);
  return vvar ? 0 : -1;
}

uint64_t prio_vvar_page(void) { return (uint64_t)vvar; }

// The page also carries the one fact user mode needs to read the clock itself
// (abi.h): set at boot, before any process runs.
void prio_vvar_timebase(uint64_t hz) { vvar->timebase_hz = hz; }

// (static inline: prio_publish, on every kernel entry, uses it without a call)
static inline uint32_t rank(struct proc *p) {
  // Read exec_page once: prio_publish may run for p on one hart while p's
  // slot is cleared (exec_page = 0) on another. A page already freed only yields a stale priority.
  const struct executor *ex = __atomic_load_n(&p->exec_page, __ATOMIC_RELAXED);
  if (!ex)
    return NPRIO_DEFAULT - 1;
  uint64_t bm = __atomic_load_n(&ex->bitmap, __ATOMIC_RELAXED) & ((1ULL << NPRIO_DEFAULT) - 1);
  // (nothing ready and nothing running: the lowest priority; the masked
  // bitmap's lowest bit is always below NPRIO_DEFAULT)
  uint32_t best = bm ? exec_ctz64(bm) : NPRIO_DEFAULT - 1;
  uint32_t running = *(volatile const uint32_t *)((const char *)ex + EXEC_PAGE_RUNNING_PRIO);
  if (running < best)
    best = running;
  if (best < USER_PRIO_CEILING)
    best = USER_PRIO_CEILING;
  return best;
}

uint32_t prio_of(struct proc *p) { return rank(p); }

int prio_user_has_ready(struct proc *p) {
  const struct executor *ex = __atomic_load_n(&p->exec_page, __ATOMIC_RELAXED);
  return ex && (__atomic_load_n(&ex->bitmap, __ATOMIC_ACQUIRE) & ((1ULL << NPRIO_DEFAULT) - 1));
}

static inline uint32_t deserved(struct proc *p) {
  return __atomic_load_n(&p->nactive, __ATOMIC_RELAXED) > 0 ? rank(p) : PRIO_UNRANKED;
}

// The kernel's bitmap into the vvar page, and its low byte into ranks (see
// abi.h). A byte store: the counts, which publish_moved changes by atomic
// adds on the whole word, are not touched (an AMO is atomic against every
// overlapping store). Like kernel_bitmap, last writer wins, and every kernel
// entry writes again. (Relaxed atomic rather than volatile: GCC 12 then
// stores the byte without zero-extending it first.)
// (vv is vvar, read once by the caller: as far as GCC knows, the byte store
// may change vvar, which it then loaded again at each later use.)
static inline void publish_kernel_bitmap(struct vvar *vv, uint64_t kbm) {
  vv->kernel_bitmap = kbm;
  __atomic_store_n((uint8_t *)&vv->ranks + VVAR_KERNEL_SHIFT / 8, (uint8_t)kbm, __ATOMIC_RELAXED);
}

void prio_publish_kernel(void) {
  struct vvar *vv = vvar;
  if (vv)
    publish_kernel_bitmap(vv, __atomic_load_n(&kexec.bitmap, __ATOMIC_RELAXED));
}

// p's rank moved from old to now (returns now). Inline: it needs no frame,
// and the call cost the async round trip, whose rank moves each way, 11
// instructions (native; 22 emulated).
static inline __attribute__((always_inline)) uint32_t publish_moved(struct vvar *vv, struct proc *p,
                                                                    uint32_t old, uint32_t now) {
  // (An empty asm: GCC would form &p->pub_prio before publish's test, one
  // instruction on every kernel entry, most of which move nothing.)
  __asm__ volatile("" : "+r"(p));
  // Two harts may publish p at once (two of its threads): only the one that
  // moves pub_prio moves the counts, so each process is counted once.
  if (!__atomic_compare_exchange_n(&p->pub_prio, &old, now, 0, __ATOMIC_ACQ_REL, __ATOMIC_RELAXED))
    return now;
  // One add moves p from old's count to now's: concurrent moves of other
  // processes are adds too, so every order gives the same counts.
  uint64_t delta = (now != PRIO_UNRANKED ? 1UL << (VVAR_RANK_BITS * now) : 0) -
                   (old != PRIO_UNRANKED ? 1UL << (VVAR_RANK_BITS * old) : 0);
  __atomic_fetch_add(&vv->ranks, delta, __ATOMIC_SEQ_CST);
  struct executor *ex = __atomic_load_n(&p->exec_page, __ATOMIC_RELAXED);
  if (ex)                         // tell the runtime which count holds it
    *(volatile uint32_t *)((char *)ex + EXEC_PAGE_PUBLISHED_PRIO) = now;
  return now;
}

// (inline: on every kernel entry) Returns now. (vv: vvar, as above.)
static inline uint32_t publish(struct vvar *vv, struct proc *p, uint32_t now) {
  uint32_t old = __atomic_load_n(&p->pub_prio, __ATOMIC_RELAXED);
  if (vv && now != old)           // (the common case: no change)
    return publish_moved(vv, p, old, now);
  return now;
}

void prio_publish(struct proc *p) {
  struct vvar *vv = vvar;
  if (vv)
    publish_kernel_bitmap(vv, __atomic_load_n(&kexec.bitmap, __ATOMIC_RELAXED));
  publish(vv, p, deserved(p));
}

uint32_t prio_publish_unless_kernel(struct proc *p) {
  uint64_t kbm = __atomic_load_n(&kexec.bitmap, __ATOMIC_RELAXED);
  uint32_t now = deserved(p);
  if (kbm && exec_ctz64(kbm) <= now)
    return PRIO_KERNEL_FIRST;
  struct vvar *vv = vvar;
  if (vv)
    publish_kernel_bitmap(vv, kbm);
  return publish(vv, p, now);
}
