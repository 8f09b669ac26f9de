// matrixd: the matrix-echo server of the COPS evaluation (paper section 5).
//
//   matrixd [-m kcuc|kcut|ktut|ktuc] [-p port] [-n max_n] [-P same|mod]
//           [-c max_conns] [-F max_inflight] [-t threads] [-q] [-S] [-R N]
//
//   -m  the model (below; default kcuc)        -p  the TCP port (80)
//   -n  the largest n accepted (32, at most MP_MAX_N_LIMIT)
//   -P  priority of a connection whose handshake names none: `same` (all at
//       COPS_MAIN_PRIO, the default) or `mod` (connection index mod the 7
//       usable priorities, as in the paper's priority tests). "prio=P" in the
//       handshake overrides it (clamped to 1..COPS_NPRIO-1; 0 means 1).
//   -c  connections served at once (1024; the descriptor and thread limits
//       may lower it); more are accepted and closed at once ("refused"). The
//       kernel's descriptor limit is bootargs nofile=N (kstat KSTAT_NOFILE).
//   -F  UC models: requests in flight at once (64; 0: no limit). A
//       connection whose next request would exceed it waits, before reading
//       it, for one to finish: memory for requests (receive and parse
//       buffers, request, reply) is then bounded by this, not by the
//       connections, and a new connection is refused while free memory is
//       below what that many requests need (user/matrixd_uc.c).
//   -t  UC models: executor threads (default: one per hart online, kstat
//       KSTAT_HARTS; at most 8). Coroutines then run on several harts at
//       once; user/matrixd_uc.c says how its state stays consistent.
//   -q  print only the lines below (no warnings).
//   -R N  print "matrixd: open=C free_pages=F kmalloc_bytes=B heap_bytes=H"
//       at start (C = 0) and whenever C, the connections open, reaches a
//       multiple of N (scripts/bench-conn.sh: memory per connection).
//   -S  measure the UC models' coroutine stacks: each idle line is followed by
//       "matrixd: stack peak receiver=B handler=B sender=B of R/H/S bytes".
//
// A client connects, says "connect ok?", and sends n x n integer matrices; the
// server answers each with its square (docs/PROTOCOL.md). Every connection is served
// by three parts, as in the paper: a receiver (socket -> requests), a handler
// (request -> answer) and a sender (answers -> socket), linked by two queues.
// The model, picked at run time, says what the parts are and how the kernel
// serves their socket calls:
//   KCUC  user coroutines, async calls, a kernel coroutine per waiting call
//   KTUC  user coroutines, async calls, one polling kernel thread per process
//   KCUT  user threads, sync calls, a kernel coroutine per waiting call
//   KTUT  user threads, sync calls, a kernel thread per waiting call
// This file holds main and the options; matrixd_core.c the per-message work
// all models share; matrixd_uc.c and matrixd_ut.c the two families.
//
// Output, kept stable because scripts/nettest.sh parses it:
//   matrixd: listening on port 80, model KCUC
//   matrixd: baseline kmalloc_bytes=B kmalloc_objects=O sockets=S pcbs=P
//   matrixd: idle kmalloc_bytes=... kmalloc_objects=... sockets=... pcbs=... served=R conns=C refused=X
// The baseline is taken once the server's standing parts (the accept loop, ...)
// wait for work; an idle line follows every time the last open connection is
// gone and the kernel's counters are back at the baseline (or 15 s passed;
// the kernel keeps closed connections in TIME_WAIT for a few seconds). served
// counts matrices answered, conns connections served, refused connections
// closed at once; all since start.
#include "matrixd.h"

static const char *const model_names[] = { "KCUC", "KCUT", "KTUT", "KTUC" };


static void usage(void) {
  fprintf(STDERR, "usage: matrixd [-m kcuc|kcut|ktut|ktuc] [-p port] [-n max_n] [-P same|mod] "
                  "[-c max_conns] [-F max_inflight] [-t threads] [-q] [-S] [-R N]\n");
}

static int lower_eq(const char *a, const char *b) {
  for (; *a && *b; a++, b++) {
    char c = *a >= 'A' && *a <= 'Z' ? (char)(*a - 'A' + 'a') : *a;
    if (c != *b)
      return 0;
  }
  return *a == *b;
}

// A decimal number in [lo, hi], or -1.
static long number(const char *s, long lo, long hi) {
  if (!s || !*s)
    return -1;
  long v = 0;
  for (; *s; s++) {
    if (*s < '0' || *s > '9' || v > hi)
      return -1;
    v = v * 10 + (*s - '0');
  }
  return v < lo || v > hi ? -1 : v;
}

static int parse_args(int argc, char **argv) {
  for (int i = 1; i < argc; i++) {
    const char *o = argv[i];
    if (strcmp(o, "-q") == 0) {
      md_cfg.quiet = 1;
      continue;
    }
    if (strcmp(o, "-S") == 0) {
      md_cfg.stack_report = 1;
      cops_paint_stacks = 1;
      continue;
    }
    if (o[0] != '-' || !o[1] || o[2] || i + 1 >= argc)
      return -1;
    const char *v = argv[++i];
    long x;
    switch (o[1]) {
    case 'm':
      if (lower_eq(v, "kcuc"))
        md_cfg.model = MD_KCUC;
      else if (lower_eq(v, "kcut"))
        md_cfg.model = MD_KCUT;
      else if (lower_eq(v, "ktut"))
        md_cfg.model = MD_KTUT;
      else if (lower_eq(v, "ktuc"))
        md_cfg.model = MD_KTUC;
      else
        return -1;
      break;
    case 'p':
      if ((x = number(v, 1, 65535)) < 0)
        return -1;
      md_cfg.port = (int)x;
      break;
    case 'n':
      if ((x = number(v, 1, MP_MAX_N_LIMIT)) < 0)
        return -1;
      md_cfg.max_n = (int)x;
      break;
    case 'P':
      if (lower_eq(v, "same"))
        md_cfg.prio_mod = 0;
      else if (lower_eq(v, "mod"))
        md_cfg.prio_mod = 1;
      else
        return -1;
      break;
    case 'R':
      if ((x = number(v, 1, NOFILE_MAX)) < 0)
        return -1;
      md_cfg.report_every = x;
      break;
    case 'c':
      if ((x = number(v, 1, NOFILE_MAX)) < 0)
        return -1;
      md_cfg.max_conns = (int)x;
      break;
    case 'F':
      if ((x = number(v, 0, NOFILE_MAX)) < 0)
        return -1;
      md_cfg.max_inflight = (int)x;
      break;
    case 't':
      if ((x = number(v, 1, MD_MAX_THREADS)) < 0)
        return -1;
      md_cfg.threads = (int)x;
      break;
    default:
      return -1;
    }
  }
  return 0;
}

static int fail(const char *what, long err) {
  printf("matrixd: %s failed: %ld %s\n", what, err, errname(err));
  return 1;
}

int main(int argc, char **argv) {
  if (parse_args(argc, argv) < 0) {
    usage();
    return 2;
  }
  int uc = md_cfg.model == MD_KCUC || md_cfg.model == MD_KTUC;
  // Every connection holds a descriptor (UT: five, with its two pipes), and a
  // UT connection three of the process's threads. (The kernel refuses a
  // connection it has no descriptor for, so this only keeps the count honest.)
  long nofile = kstat(KSTAT_NOFILE);
  int limit = uc ? (int)(nofile > 16 ? nofile - 8 : 8) : MD_UT_MAX_CONNS;
  if (md_cfg.max_conns > limit) {
    md_log("matrixd: model %s serves at most %d connections\n", model_names[md_cfg.model], limit);
    md_cfg.max_conns = limit;
  }
  int kmode = md_cfg.model == MD_KTUT ? KMODE_THREAD
              : md_cfg.model == MD_KTUC ? KMODE_POLLER
                                        : KMODE_COROUTINE;
  long r = setkmode(kmode);
  if (r < 0)
    return fail("setkmode", r);
  int lfd = socket();
  if (lfd < 0)
    return fail("socket", lfd);
  if ((r = bind(lfd, md_cfg.port)) < 0)
    return fail("bind", r);
  // The kernel's accept queue holds up to 1,024 finished handshakes (lwIP's own
  // backlog, a byte, bounds only half-open ones). A burst over loopback
  // finishes handshakes as fast as they are asked for: with 255 here a
  // 1,000-connection burst was refused by the hundreds whenever the accept
  // loop fell behind (make bench-burst).
  if ((r = listen(lfd, 1024)) < 0)
    return fail("listen", r);
  printf("matrixd: listening on port %d, model %s\n", md_cfg.port, model_names[md_cfg.model]);
  return uc ? md_run_uc(lfd) : md_run_ut(lfd);
}
