// The vDSO: the shared scheduler image that every process has mapped read+exec
// at USER_VDSO (kernel/abi.h). It is built once from the same executor,
// stackful and CES mutex sources the kernel links (vdso/executor.c,
// stackful.c, switch.S, ces.c), linked at its fixed user address, and
// starts with this versioned table of
// entry points. The user runtime (user/cops.c) calls the scheduler only through
// the table, so a newer kernel can ship a newer image behind the same table.
#ifndef VDSO_H
#define VDSO_H
#include <stdint.h>
#include "executor.h"
#include "stackful.h"
#include "ces.h"

#define VDSO_MAGIC 0x4f53445643524f43ULL   // "CORCVDSO"
#define VDSO_VERSION 6                 // 2: executor lanes (exec_*_on, exec_init_lanes), CES
                                       // 3: the lane layout is shared (exec_rotate, inline)
                                       // 4: struct stackful: full-save contexts on the stack
                                       // 5: the CACS switch links into t2 (stackful.h, switch.S)
                                       // 6: ready rings and the resident (executor.h)

struct vdso_table {
  uint64_t magic;
  uint32_t version;
  uint32_t size;                     // sizeof(struct vdso_table) of this version
  int (*exec_init)(struct executor *, uint32_t, void *(*)(size_t), void (*)(void *));
  int64_t (*exec_spawn)(struct executor *, co_poll_fn, void *, uint32_t, enum co_kind);
  int (*exec_wake)(struct executor *, cid_t);
  int (*exec_reprio)(struct executor *, cid_t, uint32_t);
  struct co *(*exec_next)(struct executor *, struct co *, int);
  uint32_t (*exec_best_prio)(const struct executor *);
  struct co *(*exec_lookup)(struct executor *, cid_t);
  void (*exec_get_stats)(struct executor *, struct exec_stats *);
  int (*exec_check)(struct executor *, char *, size_t);
  void (*stackful_init)(struct stackful *, void *, size_t, void (*)(void *), void *, int,
                        void (*)(struct stackful *));
  void (*full_switch)(struct full_ctx *, const struct full_ctx *);
  // version 2
  int (*exec_init_lanes)(struct executor *, uint32_t, uint32_t, void *(*)(size_t), void (*)(void *));
  int64_t (*exec_spawn_on)(struct executor *, uint32_t, co_poll_fn, void *, uint32_t, enum co_kind);
  struct co *(*exec_next_on)(struct executor *, uint32_t, struct co *, int);
  int (*exec_set_lanes)(struct executor *, uint32_t);
  // CES mutexes (vdso/ces.h), after the lanes: a caller checks that `size`
  // covers them
  void (*ces_init)(struct ces_mutex *, const struct ces_env *, uint32_t);
  void (*ces_run)(struct ces_mutex *, void (*)(void *), void *);
  void (*ces_lock)(struct ces_mutex *, struct ces_node *);
  void (*ces_unlock)(struct ces_mutex *, struct ces_node *);
  int (*ces_submit)(struct ces_mutex *, struct ces_node *, void (*)(void *), void *);
  int (*ces_poll)(struct ces_mutex *, struct ces_node *);
};

#endif
