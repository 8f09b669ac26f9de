// The user runtime's scheduler (see cops.h). The executor lives in the
// process's executor page (USER_EXEC_PAGE), where the kernel can read its ready
// bitmap; its code is the shared vDSO image, called through the vDSO's entry
// table. The loop below is the user-mode twin of the kernel's sched_loop.
#include "cops.h"
#include "abi.h"
#include "stackful.h"
#include "ulib.h"
#include "vdso.h"

#define V ((const struct vdso_table *)USER_VDSO)
#define EX ((struct executor *)USER_EXEC_PAGE)
#define LOOP_STACK (16 * 1024)     // top of the process stack, kept for this loop

_Static_assert(sizeof(struct executor) <= 4096, "the executor must fit its page");
_Static_assert(offsetof(struct vdso_table, full_switch) == 96, "user/cops_switch.S uses this offset");

static struct co *current;         // the coroutine this (only) thread is running
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
  return V->exec_spawn(EX, poll, arg, prio, CO_STACKLESS);
}

static void release_stackful(struct stackful *sf) {
  free(sf->stack_lo);
  free(sf);
}

int64_t cops_spawn_stackful(void (*fn)(void *), void *arg, uint32_t prio) {
  struct stackful *sf = malloc(sizeof *sf);
  void *stack = malloc(COPS_STACK_SIZE);
  if (!sf || !stack) {
    free(sf);
    free(stack);
    return EXEC_ENOMEM;
  }
  V->stackful_init(sf, stack, COPS_STACK_SIZE, fn, arg, 0, release_stackful);
  int64_t cid = V->exec_spawn(EX, stackful_poll, sf, prio, CO_STACKFUL);
  if (cid < 0)
    release_stackful(sf);
  return cid;
}

cid_t cops_current(void) { return current ? co_cid_inline(current) : CID_NONE; }
int cops_wake(cid_t cid) { return V->exec_wake(EX, cid); }
int cops_reprio(cid_t cid, uint32_t prio) { return V->exec_reprio(EX, cid, prio); }
void cops_yield(void) { stackful_suspend(CO_YIELD); }
void cops_block(void) { stackful_suspend(CO_PENDING); }
int cops_check(char *why, size_t len) { return V->exec_check(EX, why, len); }
void cops_stats(struct exec_stats *st) { V->exec_get_stats(EX, st); }

struct main_args { int argc; char **argv; };
extern int main(int argc, char **argv);

static void main_body(void *arg) {
  struct main_args *a = arg;
  main_status = main(a->argc, a->argv);
  main_done = 1;
}

int cops_start(int argc, char **argv) {
  if (V->magic != VDSO_MAGIC || V->version != VDSO_VERSION) {
    fprintf(STDERR, "cops: no usable vDSO at %p\n", (void *)USER_VDSO);
    return -1;
  }
  if (V->exec_init(EX, COPS_NPRIO, malloc, free) != 0)
    return -1;
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
  struct co *prev = 0;
  int res = 0;
  for (;;) {
    struct co *c = V->exec_next(EX, prev, res);
    if (!c) {
      // Nothing ready, and nothing outside this process can wake a coroutine
      // yet (async system calls come next): that is a deadlock.
      struct exec_stats st;
      V->exec_get_stats(EX, &st);
      fprintf(STDERR, "cops: deadlock: %u coroutines blocked, none ready\n", st.blocked);
      return -1;
    }
    current = c;
    res = c->kind == CO_STACKFUL ? stackful_resume(c->arg) : c->poll(c->arg);
    current = 0;
    prev = c;
    if (main_done)
      return main_status;          // returning from main ends the program
  }
}
