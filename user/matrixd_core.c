// matrixd's shared per-message work (matrixd.h), the layer every model calls:
// the configuration and totals, the kernel counters and the idle report, the
// connection priority policy, turning a request into its reply, and the
// parser that turns received bytes into messages. It calls neither main
// (matrixd.c) nor the models (matrixd_uc.c, matrixd_ut.c).
#include "matrixd.h"

struct md_config md_cfg = {
  .model = MD_KCUC, .port = 80, .max_n = MP_MAX_N_DEFAULT, .prio_mod = 0, .max_conns = 1024,
  .max_inflight = 64,
};
struct md_totals md_tot;
struct md_kstat md_baseline;

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
  if (md_cfg.report_every)
    md_report_open(0);
}

// -R: what the machine has left with `open` connections (benchmarks divide
// the change by the connections: scripts/bench-conn.sh).
void md_report_open(long open) {
  static long heap0;
  long heap = brk(0);
  if (!heap0)
    heap0 = heap;
  printf("matrixd: open=%ld free_pages=%ld kmalloc_bytes=%ld heap_bytes=%ld\n", open,
         kstat(KSTAT_FREE_PAGES), kstat(KSTAT_KMALLOC_BYTES), heap - heap0);
}

void md_print_idle(const struct md_kstat *k) {
  printf("matrixd: idle kmalloc_bytes=%ld kmalloc_objects=%ld sockets=%ld pcbs=%ld served=%ld "
         "conns=%ld refused=%ld\n",
         k->bytes, k->objects, k->sockets, k->pcbs, md_get(&md_tot.served), md_get(&md_tot.conns),
         md_get(&md_tot.refused));
  if (md_cfg.stack_report)
    printf("matrixd: stack peak receiver=%ld handler=%ld sender=%ld of %d/%d/%d bytes\n",
           md_get(&md_stack_peak[0]), md_get(&md_stack_peak[1]), md_get(&md_stack_peak[2]),
           MD_STACK_RECEIVER, MD_STACK_HANDLER, MD_STACK_SENDER);
}

long md_stack_peak[3];

void md_stack_note(int part) {
  long used = (long)cops_stack_used();
  long seen = md_get(&md_stack_peak[part]);
  while (used > seen && !__atomic_compare_exchange_n(&md_stack_peak[part], &seen, used, 0,
                                                     __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST))
    ;
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

// A connection's parser holds its buffers (MP_REQ_BYTES(n) + 8 n^2 bytes,
// 19 KiB at n = 32) only while part of a message is buffered: an idle
// connection costs none of that (10,000 idle connections would need 190 MiB).
// They are lent from a pool, not malloc'd each time: freed, they would leave a
// hole beside every idle connection's other memory, and umalloc's free walks
// its address-ordered list of holes (it made each request cost O(idle
// connections)). The pool keeps as many as were ever lent at once.
struct lent {
  struct lent *next;                 // while in the pool
};
static struct lent *pool;
static volatile int pool_lock;       // UT models lend from several threads

static void pool_acquire(void) { ulock_acquire(&pool_lock); }
static void pool_release(void) { ulock_release(&pool_lock); }

static size_t vals_bytes(void) { return (size_t)md_cfg.max_n * (size_t)md_cfg.max_n * sizeof(int64_t); }

int md_parse_init(struct md_parse *ps) {
  ps->buf = 0;
  ps->vals = 0;
  mp_init(&ps->p, 0, MP_REQ_BYTES(md_cfg.max_n), 0, md_cfg.max_n);
  ps->last_rx = uptime();
  return 0;
}

static int parse_lend(struct md_parse *ps) {
  if (ps->vals)
    return 0;
  pool_acquire();
  struct lent *l = pool;
  if (l)
    pool = l->next;
  pool_release();
  // One block: the values (8-byte aligned) first, then the text.
  int64_t *vals = l ? (int64_t *)l : malloc(vals_bytes() + MP_REQ_BYTES(md_cfg.max_n));
  if (!vals)
    return -1;
  ps->vals = vals;
  ps->buf = (char *)vals + vals_bytes();
  mp_set_buffers(&ps->p, ps->buf, ps->vals);
  return 0;
}

void md_parse_free(struct md_parse *ps) {
  struct lent *l = (struct lent *)ps->vals;
  ps->buf = 0;
  ps->vals = 0;
  if (!l)
    return;
  pool_acquire();
  l->next = pool;
  pool = l;
  pool_release();
}

// The parser is empty again: give its buffers back.
static void parse_return(struct md_parse *ps) {
  if (ps->vals && mp_set_buffers(&ps->p, 0, 0) == 0)
    md_parse_free(ps);
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
  if (parse_lend(ps) < 0)
    return MD_FEED_NOMEM;
  mp_feed(&ps->p, data, n);
  int r = drain(ps, more_pending, emit, ctx, prio);
  parse_return(ps);
  return r;
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
  r = r != MD_FEED_OK ? r : drain(ps, 0, emit, ctx, prio);
  parse_return(ps);
  return r;
}
