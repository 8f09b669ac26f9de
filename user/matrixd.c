// matrixd: the matrix-echo server of the COPS evaluation (paper section 5).
//
//   matrixd [-m kcuc|kcut|ktut|ktuc] [-p port] [-n max_n] [-P same|mod]
//           [-c max_conns] [-q]
//
//   -m  the model (below; default kcuc)        -p  the TCP port (80)
//   -n  the largest n accepted (32, at most MP_MAX_N_LIMIT)
//   -P  priority of a connection whose handshake names none: `same` (all at
//       COPS_MAIN_PRIO, the default) or `mod` (connection index mod the 7
//       usable priorities, as in the paper's priority tests). "prio=P" in the
//       handshake overrides it (clamped to 1..COPS_NPRIO-1; 0 means 1).
//   -c  connections served at once (1024; the descriptor and thread limits
//       may lower it); more are accepted and closed at once ("refused").
//   -q  print only the lines below (no warnings).
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
// This file holds main and what all models share; matrixd_uc.c and
// matrixd_ut.c hold the two families.
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

struct md_config md_cfg = {
  .model = MD_KCUC, .port = 80, .max_n = MP_MAX_N_DEFAULT, .prio_mod = 0, .max_conns = 1024,
};
struct md_totals md_tot;
struct md_kstat md_baseline;

static const char *const model_names[] = { "KCUC", "KCUT", "KTUT", "KTUC" };

// ---- kernel counters and the idle report ----

void md_kstat_read(struct md_kstat *k) {
  // Without the kernel's grow-once caches (executor slots, timer heaps): a
  // flood of connections grows them for good, which is not a leak.
  k->bytes = kstat(KSTAT_KMALLOC_BYTES) - kstat(KSTAT_CACHE_BYTES);
  k->objects = kstat(KSTAT_KMALLOC_OBJECTS) - kstat(KSTAT_CACHE_OBJECTS);
  k->sockets = kstat(KSTAT_SOCKETS);
  k->pcbs = kstat(KSTAT_TCP_PCBS);
}

int md_kstat_at_baseline(const struct md_kstat *k) {
  return k->bytes == md_baseline.bytes && k->objects == md_baseline.objects &&
         k->sockets == md_baseline.sockets && k->pcbs == md_baseline.pcbs;
}

void md_print_baseline(void (*nap)(long ms)) {
  // Right after start the kernel is still settling (the accept loop on its
  // way into accept, the memory of calls just finished): take the baseline
  // once three readings 50 ms apart agree (at most 2 s).
  struct md_kstat k;
  md_kstat_read(&md_baseline);
  for (int same = 0, i = 0; same < 3 && i < 40; i++) {
    nap(50);
    md_kstat_read(&k);
    same = memcmp(&k, &md_baseline, sizeof k) == 0 ? same + 1 : 0;
    md_baseline = k;
  }
  printf("matrixd: baseline kmalloc_bytes=%ld kmalloc_objects=%ld sockets=%ld pcbs=%ld\n",
         md_baseline.bytes, md_baseline.objects, md_baseline.sockets, md_baseline.pcbs);
}

void md_print_idle(const struct md_kstat *k) {
  printf("matrixd: idle kmalloc_bytes=%ld kmalloc_objects=%ld sockets=%ld pcbs=%ld served=%ld "
         "conns=%ld refused=%ld\n",
         k->bytes, k->objects, k->sockets, k->pcbs, md_get(&md_tot.served), md_get(&md_tot.conns),
         md_get(&md_tot.refused));
}

// ---- priorities ----

static int clamp_prio(int p) {
  // prio=0 asks for the best there is; user work gets at best MD_PRIO_BEST.
  if (p < MD_PRIO_BEST)
    return MD_PRIO_BEST;
  if (p > MD_PRIO_WORST)
    return MD_PRIO_WORST;
  return p;
}

int md_policy_prio(long index) {
  if (md_cfg.prio_mod)
    return MD_PRIO_BEST + (int)(index % MD_NPRIO);
  return COPS_MAIN_PRIO;
}

// ---- messages ----

void md_msg_free(struct md_msg *m) { free(m); }

struct md_msg *md_handle(struct md_msg *req) {
  int n = req->n;
  size_t nn = (size_t)n * (size_t)n;
  // One block: the product (n*n values), then its text.
  size_t cap = MP_ANSWER_BYTES(n);
  struct md_msg *r = malloc(sizeof *r + nn * sizeof(int64_t) + cap);
  if (!r) {
    md_msg_free(req);
    return NULL;
  }
  memset(r, 0, sizeof *r);
  r->kind = MD_REPLY;
  r->answer = 1;
  r->framed = req->framed;
  mp_square(req->vals, n, r->vals);
  r->text = (char *)(r->vals + nn);
  r->len = mp_format_matrix(r->vals, n, req->framed, r->text, cap);
  md_msg_free(req);
  return r;
}

// ---- parsing ----

// The base protocol has no terminator: a request ends where the bytes parse to a
// square count and nothing more is pending. The kernel's recv hands over what
// the socket has buffered, up to the size asked; so a recv that came back short
// emptied the buffer, and we take that as "nothing more pending". One that
// filled the whole buffer may have left bytes behind: read again before
// deciding. (A heuristic: a segment still on the wire is not seen. Framed
// requests, which our client always sends, do not depend on it.)
long md_recv_size(const struct md_parse *ps) {
  size_t room = mp_room(&ps->p);   // never more: see mp_feed
  return room < MD_RECV_BYTES ? (long)room : MD_RECV_BYTES;
}

int md_more_pending(long asked, long got) { return got >= asked; }

int md_parse_init(struct md_parse *ps) {
  int n = md_cfg.max_n;
  ps->buf = malloc(MP_REQ_BYTES(n));
  ps->vals = malloc((size_t)n * (size_t)n * sizeof(int64_t));
  if (!ps->buf || !ps->vals) {
    md_parse_free(ps);
    return -1;
  }
  mp_init(&ps->p, ps->buf, MP_REQ_BYTES(n), ps->vals, n);
  ps->last_rx = uptime();
  return 0;
}

void md_parse_free(struct md_parse *ps) {
  free(ps->buf);
  free(ps->vals);
  ps->buf = 0;
  ps->vals = 0;
}

// The reply to a handshake or a bad message.
static int emit_line(const struct mp_msg *mm, void (*emit)(void *, struct md_msg *), void *ctx) {
  const char *why = mm->error ? mm->error : "bad request";
  size_t cap = strlen(why) + 32;
  struct md_msg *m = malloc(sizeof *m + cap);
  if (!m)
    return MD_FEED_NOMEM;
  memset(m, 0, sizeof *m);
  m->kind = MD_REPLY;
  m->framed = mm->framed;
  m->text = (char *)m->vals;
  m->len = mm->kind == MP_HANDSHAKE ? mp_format_handshake(mm->framed, m->text, cap)
                                    : mp_format_error(why, mm->framed, m->text, cap);
  emit(ctx, m);
  return MD_FEED_OK;
}

// Act on one message from the parser.
static int take(const struct mp_msg *mm, void (*emit)(void *, struct md_msg *), void *ctx,
                int *prio) {
  switch (mm->kind) {
  case MP_NEED_MORE:
    return MD_FEED_OK;
  case MP_HANDSHAKE:
    if (mm->prio >= 0)
      *prio = clamp_prio(mm->prio);
    return emit_line(mm, emit, ctx);
  case MP_REQUEST: {
    size_t nn = (size_t)mm->n * (size_t)mm->n;
    struct md_msg *m = malloc(sizeof *m + nn * sizeof(int64_t));
    if (!m)
      return MD_FEED_NOMEM;
    memset(m, 0, sizeof *m);
    m->kind = MD_REQUEST;
    m->n = mm->n;
    m->framed = mm->framed;
    memcpy(m->vals, mm->vals, nn * sizeof(int64_t));
    emit(ctx, m);
    return MD_FEED_OK;
  }
  case MP_CLOSE:
    // "close connection": no reply; whatever follows it is ignored.
    return MD_FEED_CLOSE;
  case MP_ERROR:
    return emit_line(mm, emit, ctx);
  }
  return MD_FEED_OK;
}

static int drain(struct md_parse *ps, int more_pending, void (*emit)(void *, struct md_msg *),
                 void *ctx, int *prio) {
  struct mp_msg mm;
  while (mp_next(&ps->p, more_pending, &mm) != MP_NEED_MORE) {
    int r = take(&mm, emit, ctx, prio);
    if (r != MD_FEED_OK)
      return r;
  }
  return MD_FEED_OK;
}

int md_parse_feed(struct md_parse *ps, const char *data, size_t n, int more_pending,
                  void (*emit)(void *ctx, struct md_msg *m), void *ctx, int *prio) {
  ps->last_rx = uptime();
  mp_feed(&ps->p, data, n);
  return drain(ps, more_pending, emit, ctx, prio);
}

int md_parse_stall(struct md_parse *ps, void (*emit)(void *ctx, struct md_msg *m), void *ctx,
                   int *prio) {
  struct mp_msg mm;
  ps->last_rx = uptime();
  mp_stall(&ps->p, &mm);
  if (mm.kind == MP_NEED_MORE)
    return MD_FEED_OK;
  // The stall may complete a base-protocol message rather than reject it;
  // either way the connection was quiet, so nothing more is pending.
  int r = take(&mm, emit, ctx, prio);
  return r != MD_FEED_OK ? r : drain(ps, 0, emit, ctx, prio);
}

// ---- main ----

static void usage(void) {
  fprintf(STDERR, "usage: matrixd [-m kcuc|kcut|ktut|ktuc] [-p port] [-n max_n] [-P same|mod] "
                  "[-c max_conns] [-q]\n");
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
    case 'c':
      if ((x = number(v, 1, NOFILE)) < 0)
        return -1;
      md_cfg.max_conns = (int)x;
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
  // UT connection three of the process's threads.
  int limit = uc ? NOFILE - 8 : MD_UT_MAX_CONNS;
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
  // lwIP keeps the backlog in a byte; a flood beyond it is refused by TCP.
  if ((r = listen(lfd, 255)) < 0)
    return fail("listen", r);
  printf("matrixd: listening on port %d, model %s\n", md_cfg.port, model_names[md_cfg.model]);
  return uc ? md_run_uc(lfd) : md_run_ut(lfd);
}
