// The vDSO's entry table (see vdso.h); vdso/vdso.ld places it at offset 0.
#include "vdso.h"

__attribute__((section(".vdso.table"), used))
const struct vdso_table vdso_table = {
  .magic = VDSO_MAGIC,
  .version = VDSO_VERSION,
  .size = sizeof(struct vdso_table),
  .exec_init = exec_init,
  .exec_spawn = exec_spawn,
  .exec_wake = exec_wake,
  .exec_reprio = exec_reprio,
  .exec_next = exec_next,
  .exec_best_prio = exec_best_prio,
  .exec_lookup = exec_lookup,
  .exec_get_stats = exec_get_stats,
  .exec_check = exec_check,
  .stackful_init = stackful_init,
  .full_switch = full_switch,
  .exec_init_lanes = exec_init_lanes,
  .exec_spawn_on = exec_spawn_on,
  .exec_next_on = exec_next_on,
  .exec_set_lanes = exec_set_lanes,
  .ces_init = ces_init,
  .ces_run = ces_run,
  .ces_lock = ces_lock,
  .ces_unlock = ces_unlock,
  .ces_submit = ces_submit,
  .ces_poll = ces_poll,
};
