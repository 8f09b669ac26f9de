// insnprof: a QEMU TCG plugin that counts how often each guest instruction
// address is executed, for scripts/profile.sh. At exit it writes one line per
// address, "vaddr count" in hex and decimal, to the file named by out=PATH.
//
// Each instruction gets a 64-bit counter and an inline add (no helper call),
// so a profiled guest runs a few times slower, not hundreds of times. Under
// -icount shift=0 the counts are exact and repeatable; scripts/profile.sh runs
// a scenario twice with different repeat counts and subtracts, which cancels
// boot and set-up and leaves the cost of one repetition.
//
// snap=PATH takes snapshots while QEMU runs, for scenarios that cannot be
// rebooted cheaply (make bench-flat: 10,000 connections take minutes to set
// up). A thread looks for PATH every 20 ms; a script that wants a snapshot
// writes the name of a file into PATH, the plugin writes the profile so far
// there (complete when renamed into place) and deletes PATH, which is the
// script's signal. The guest keeps running meanwhile: a snapshot is exact only
// while the guest is idle, so the script asks for one when nothing is happening.
//
// hart=N counts only what vCPU N executes (a callback per instruction instead
// of the inline add: much slower, for multi-hart questions such as where a
// remote delivery's receiving hart spends its instructions).
//
// Built against the qemu-plugin.h of the QEMU 7.2 source (make qemu-n fetches
// it); Debian's qemu-system-riscv64 loads it with -plugin.
#include <glib.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <qemu-plugin.h>

QEMU_PLUGIN_EXPORT int qemu_plugin_version = QEMU_PLUGIN_VERSION;

static GHashTable *counters;   // vaddr -> uint64_t counter (never freed while running)
static GMutex lock;            // translation may run on several vCPU threads
static char *out_path;
static int only_hart = -1;     // hart=N: count vCPU N alone
static char *snap_path;        // snap=PATH: the request file (see the top)

static void count_if_hart(unsigned int vcpu, void *counter) {
  if ((int)vcpu == only_hart)
    (*(uint64_t *)counter)++;
}

static uint64_t *counter_for(uint64_t vaddr) {
  g_mutex_lock(&lock);
  uint64_t *c = g_hash_table_lookup(counters, (gconstpointer)(uintptr_t)vaddr);
  if (!c) {
    c = g_new0(uint64_t, 1);
    g_hash_table_insert(counters, (gpointer)(uintptr_t)vaddr, c);
  }
  g_mutex_unlock(&lock);
  return c;
}

static void on_translate(qemu_plugin_id_t id, struct qemu_plugin_tb *tb) {
  (void)id;
  size_t n = qemu_plugin_tb_n_insns(tb);
  for (size_t i = 0; i < n; i++) {
    struct qemu_plugin_insn *insn = qemu_plugin_tb_get_insn(tb, i);
    uint64_t *c = counter_for(qemu_plugin_insn_vaddr(insn));
    // Inline adds from two vCPUs may race and lose a count; profile on one
    // hart (or under -icount, where QEMU runs the harts in turn on one thread).
    if (only_hart >= 0)
      qemu_plugin_register_vcpu_insn_exec_cb(insn, count_if_hart, QEMU_PLUGIN_CB_NO_REGS, c);
    else
      qemu_plugin_register_vcpu_insn_exec_inline(insn, QEMU_PLUGIN_INLINE_ADD_U64, c, 1);
  }
}

// Write every nonzero counter to PATH. The lock keeps translation from
// growing the table while it is walked; the counters themselves are read as
// they are (aligned 64-bit loads: a count is at worst one add behind).
static void dump(const char *path) {
  FILE *f = fopen(path, "w");
  if (!f) {
    fprintf(stderr, "insnprof: cannot write %s\n", path);
    return;
  }
  g_mutex_lock(&lock);
  GHashTableIter it;
  gpointer key, value;
  g_hash_table_iter_init(&it, counters);
  while (g_hash_table_iter_next(&it, &key, &value))
    if (*(volatile uint64_t *)value)
      fprintf(f, "%" PRIx64 " %" PRIu64 "\n", (uint64_t)(uintptr_t)key, *(volatile uint64_t *)value);
  g_mutex_unlock(&lock);
  fclose(f);
}

static void write_profile(qemu_plugin_id_t id, void *data) {
  (void)id;
  (void)data;
  dump(out_path);
}

// The snap=PATH thread: one request at a time; the file named in PATH appears
// whole (written under another name, then renamed), and PATH goes only after.
static gpointer snapshots(gpointer data) {
  (void)data;
  for (;;) {
    g_usleep(20000);
    gchar *target = NULL;
    if (!g_file_get_contents(snap_path, &target, NULL, NULL))
      continue;
    g_strstrip(target);
    if (*target) {
      gchar *tmp = g_strconcat(target, ".part", NULL);
      dump(tmp);
      if (rename(tmp, target) != 0)
        fprintf(stderr, "insnprof: cannot rename %s\n", tmp);
      g_free(tmp);
    }
    g_free(target);
    unlink(snap_path);
  }
  return NULL;
}

QEMU_PLUGIN_EXPORT int qemu_plugin_install(qemu_plugin_id_t id, const qemu_info_t *info,
                                           int argc, char **argv) {
  (void)info;
  for (int i = 0; i < argc; i++)
    if (strncmp(argv[i], "out=", 4) == 0)
      out_path = g_strdup(argv[i] + 4);
    else if (strncmp(argv[i], "hart=", 5) == 0)
      only_hart = atoi(argv[i] + 5);
    else if (strncmp(argv[i], "snap=", 5) == 0)
      snap_path = g_strdup(argv[i] + 5);
  if (!out_path) {
    fprintf(stderr, "insnprof: usage: -plugin insnprof.so,out=PATH\n");
    return -1;
  }
  counters = g_hash_table_new(g_direct_hash, g_direct_equal);
  qemu_plugin_register_vcpu_tb_trans_cb(id, on_translate);
  qemu_plugin_register_atexit_cb(id, write_profile, NULL);
  if (snap_path)
    g_thread_unref(g_thread_new("insnprof-snap", snapshots, NULL));
  return 0;
}
