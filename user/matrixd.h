// matrixd, the matrix-echo server of the COPS evaluation (paper section 5):
// what its four source files share.
//
//   user/matrixd.c       main and the options
//   user/matrixd_uc.c    KCUC and KTUC: three user coroutines per connection,
//                        socket calls through cops_async
//   user/matrixd_ut.c    KCUT and KTUT: three user threads per connection,
//                        synchronous socket calls, pipes as queues
//   user/matrixd_core.c  the per-message work every model does (parse, square,
//                        format), the priority policy, counters, the idle report
// Calls go down that list: matrixd.c starts a model, the models use the core,
// and the core calls none of them.
//
// The wire protocol is docs/PROTOCOL.md; user/matrix_proto.c parses and
// formats it.
#ifndef MATRIXD_H
#define MATRIXD_H
#include "ulib.h"
#include "cops.h"
#include "matrix_proto.h"

// The four models of the paper: K = kernel, U = user, C = coroutines, T = threads.
enum md_model { MD_KCUC, MD_KCUT, MD_KTUT, MD_KTUC };

struct md_config {
  enum md_model model;
  int port;
  int max_n;          // largest request the parser takes (-n)
  int prio_mod;       // -P mod: connection index mod the usable priorities
  int max_conns;      // -c: more are accepted and closed at once
  int max_inflight;   // -F: UC requests in flight at once (0: no limit)
  int quiet;          // -q: only the lines tests parse
  int stack_report;   // -S: measure the coroutines' stacks, report with each idle line
  long report_every;  // -R N: report memory at every N-th connection open at once
  int threads;        // -t: UC executor threads (0: one per hart online)
};
extern struct md_config md_cfg;
#define MD_MAX_THREADS 8    // -t: UC executor threads (the executor's lanes)

// Usable user priorities: COPS priority 0 belongs to the kernel (the kernel
// clamps async calls to [1, COPS_NPRIO-1]), so connections get 1..COPS_NPRIO-1.
#define MD_PRIO_BEST 1
#define MD_PRIO_WORST (COPS_NPRIO - 1)
#define MD_NPRIO (MD_PRIO_WORST - MD_PRIO_BEST + 1)

// Bytes asked of one recv at most (md_recv_size: fewer when the parser has less
// room). A recv that returns fewer bytes than asked emptied the socket's
// buffer: "nothing more pending" (see md_more_pending in matrixd_core.c).
#define MD_RECV_BYTES 4096
// Replies a connection may have outstanding (queued to handle or send) before
// its receiver stops reading: a peer that sends but never reads can cost only
// this much memory.
#define MD_MAX_OUTSTANDING 16
// The bad-input rule for a request that stops mid-way (docs/PROTOCOL.md, "Timing rules").
#define MD_STALL_MS 2000
// A send that has not moved for this long (the peer does not read, or is gone
// without a word) ends its connection.
#define MD_SEND_TIMEOUT_MS 30000

// Totals since start. The UT models change them from several threads: always
// through the md_count_* helpers (atomic).
struct md_totals {
  long served;        // matrices answered (the whole reply handed to send)
  long conns;         // connections accepted and served
  long refused;       // connections accepted and closed at once (limit, no memory)
  long open;          // connections open now
};
extern struct md_totals md_tot;
static inline void md_count(long *v, long d) { __atomic_fetch_add(v, d, __ATOMIC_SEQ_CST); }
static inline long md_get(long *v) { return __atomic_load_n(v, __ATOMIC_SEQ_CST); }

// Stacks of a UC connection's three coroutines: the runtime's smallest
// (COPS_STACK_MIN). Measured with -S (paint the stacks, report the deepest
// each part went) under closed-loop load at n = 15 and 32 and with
// priorities: 792, 584 and 616 bytes (the receiver's buffer is not on its
// stack: user/matrixd_uc.c). User interrupts run on whatever stack they
// interrupt, which the margin covers; an overflow is caught by the stack's
// canary at the next switch.
#define MD_STACK_RECEIVER 2048
#define MD_STACK_HANDLER 2048
#define MD_STACK_SENDER 2048
// -S: the deepest stack seen per part (0 receiver, 1 handler, 2 sender).
extern long md_stack_peak[3];
void md_stack_note(int part);            // the calling part is ending: note its depth

// The kernel counters the leak check compares.
struct md_kstat {
  long bytes, objects, sockets, pcbs;
};
extern struct md_kstat md_baseline;
void md_kstat_read(struct md_kstat *k);
int md_kstat_at_baseline(const struct md_kstat *k);
void md_print_baseline(void (*nap)(long ms));   // nap: wait without blocking the server
void md_print_idle(const struct md_kstat *k);
void md_report_open(long open);
// A connection opened (accept loops): the -R report when it is due.
static inline void md_opened(void) {
  long open = md_get(&md_tot.open);
  if (md_cfg.report_every && open % md_cfg.report_every == 0)
    md_report_open(open);
}
// The idle wait: at most this long, polling every MD_IDLE_POLL_MS.
#define MD_IDLE_WAIT_MS 15000
#define MD_IDLE_POLL_MS 200

// A message between a connection's three parts. The receiver makes REQUESTs
// and REPLYs (handshake answers, errors); the handler turns a REQUEST into a
// REPLY and passes REPLYs on in order; the sender sends them. The end of the
// stream is the queue's own business (UC: closed, UT: end of file).
enum md_msg_kind { MD_REQUEST, MD_REPLY };
struct md_msg {
  struct md_msg *next;      // link in a coroutine queue (UC)
  enum md_msg_kind kind;
  int framed;
  int n;                    // REQUEST: the matrix is n x n
  int answer;               // REPLY: a matrix (counts as served once sent)
  size_t len;               // REPLY: bytes in text
  char *text;               // REPLY: points into this allocation
  int64_t vals[];           // REQUEST: n*n values, row-major
};

// One connection's parser state (both model families embed it).
struct md_parse {
  struct mp_parser p;
  char *buf;
  int64_t *vals;
  long last_rx;             // uptime of the last bytes received
};
int md_parse_init(struct md_parse *ps);
// Holds the parser nothing (no part of a message buffered, its buffers lent back)?
static inline int md_parse_idle(const struct md_parse *ps) { return ps->vals == 0; }
void md_parse_free(struct md_parse *ps);

// What md_parse_feed found besides messages.
#define MD_FEED_OK 0
#define MD_FEED_CLOSE 1     // "close connection": read no further, close when all is sent
#define MD_FEED_NOMEM -1    // out of memory: end the connection

// Feed n received bytes and emit every complete message, in order, through
// emit(ctx, msg). *prio is set when a handshake carries prio=P (clamped).
int md_parse_feed(struct md_parse *ps, const char *data, size_t n, int more_pending,
                  void (*emit)(void *ctx, struct md_msg *m), void *ctx, int *prio);
// The stall rule: bytes have waited MD_STALL_MS for the rest of their request.
// Emits the "incomplete request" error reply (or the message the bytes make
// once nothing more is pending). Returns MD_FEED_*.
int md_parse_stall(struct md_parse *ps, void (*emit)(void *ctx, struct md_msg *m), void *ctx,
                   int *prio);
// How much to ask of the next recv, and whether more is pending after it.
long md_recv_size(const struct md_parse *ps);
int md_more_pending(long asked, long got);

// A REQUEST becomes a REPLY (the request is freed); NULL if out of memory.
struct md_msg *md_handle(struct md_msg *req);
void md_msg_free(struct md_msg *m);

// The priority of connection number `index` under the configured policy.
int md_policy_prio(long index);

// Each model: run the server on the listening socket; never returns unless it
// cannot start (then the return value is main's exit status).
int md_run_uc(int lfd);
int md_run_ut(int lfd);
#define MD_UT_MAX_CONNS ((MAXTHREADS_ABI - 2) / 3)

#define md_log(...) do { if (!md_cfg.quiet) printf(__VA_ARGS__); } while (0)

#endif
