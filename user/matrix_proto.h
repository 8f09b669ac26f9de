// The matrix-echo wire protocol engine (docs/PROTOCOL.md): splits the
// bytes received on one connection into messages, parses them, squares
// matrices and formats answers. Portable C11 with no library calls, so the
// same file builds into the guest server (user/matrixd.c, freestanding) and on
// the host (unit tests, scripts/host/mserver.c and mclient.c). It never
// allocates: the caller hands it a byte buffer and a value array.
//
// Usage on one connection (the server):
//
//   static char buf[MP_REQ_BYTES(MAX_N)];
//   static int64_t vals[MAX_N * MAX_N];
//   struct mp_parser p;  struct mp_msg m;
//   mp_init(&p, buf, sizeof buf, vals, MAX_N);
//   for (;;) {
//     got = recv(fd, tmp, min(sizeof tmp, mp_room(&p)));   // see mp_room
//     mp_feed(&p, tmp, got);
//     while (mp_next(&p, <more bytes already queued on fd?>, &m) != MP_NEED_MORE)
//       answer m (MP_HANDSHAKE: "connect ok", MP_REQUEST: the square of
//       p's vals, MP_ERROR: "error: <m.error>", MP_CLOSE: close, no reply),
//       each answer newline-terminated exactly when m.framed;
//     when the connection stays quiet with mp_buffered(&p) != 0 for the stall
//     timeout: mp_stall(&p, &m) and answer m the same way.
//   }
//
// Framing. A message that ends with '\n' is framed (a '\r' before the '\n' is
// dropped). Once a connection has sent one framed message it is in framed mode
// for good: from then on only '\n' ends a message, so a request that TCP splits
// anywhere can never be mistaken for a shorter one. Until then (the paper's
// base protocol, which has no terminator) the buffered bytes form one message
// when the server says nothing more is pending (more_pending == 0) and they are
// "connect ok?" [" prio=P"], "close connection", or integers whose count is a
// perfect square. Fewer integers than a square, or a proper prefix of one of
// the two phrases, is still incomplete (MP_NEED_MORE: the rest may be in
// flight); anything that can no longer become valid is an MP_ERROR.
//
// Errors never end the connection: the message's bytes are discarded and the
// next message is parsed normally. A blank framed line is ignored (no reply),
// so "\r\n" keep-alives and the '\n' after an unframed-looking handshake that
// was split after its '?' do no harm.
#ifndef MATRIX_PROTO_H
#define MATRIX_PROTO_H
#include <stddef.h>
#include <stdint.h>

#define MP_MAX_N_DEFAULT 32          // default limit on n (a server option may raise it up to MP_MAX_N_LIMIT)
#define MP_MAX_N_LIMIT 64
#define MP_MAX_VALUE 1000000000LL    // request values are integers in [0, MP_MAX_VALUE]

// The buffer a parser needs for max_n: max_n*max_n values of up to 10 digits
// plus a separator each, and slack for "\r\n". A message longer than the
// buffer minus one byte is rejected as "request too long".
#define MP_REQ_BYTES(max_n) ((size_t)(max_n) * (max_n) * 11 + 64)
// An output buffer big enough for any answer for max_n: each value is at most
// 20 characters ("-9223372036854775808") plus a separator; slack for '\n'.
#define MP_ANSWER_BYTES(max_n) ((size_t)(max_n) * (max_n) * 21 + 16)

enum mp_kind { MP_NEED_MORE = 0, MP_HANDSHAKE, MP_REQUEST, MP_CLOSE, MP_ERROR };

struct mp_msg {
  enum mp_kind kind;
  int framed;            // the message ended with '\n': the reply must end with '\n' too
  int prio;              // MP_HANDSHAKE: the prio=P value (saturated at MP_MAX_VALUE), or -1 when absent
  int n;                 // MP_REQUEST: the matrix is n x n, values in vals (row-major)
  const int64_t *vals;   // MP_REQUEST: the parser's vals array (valid until the next mp_next/mp_stall)
  const char *error;     // MP_ERROR: the reason, a static string
};

// One connection's parser. Concrete so that it can be embedded; the fields are
// private to matrix_proto.c.
struct mp_parser {
  char *buf;             // pending bytes are buf[start, len)
  size_t cap;
  size_t start;          // first byte not taken by mp_next yet
  size_t len;
  size_t cur;            // start of the message still being received (after the last '\n')
  int64_t *vals;
  int max_n;
  int framed_mode;       // a framed message has been taken: only '\n' ends messages now
  int discard;           // the message being received overflowed: drop bytes until its '\n'
  int tail_open;         // see "jammed" in matrix_proto.c
  unsigned tail;
};

// buf: cap bytes, cap = MP_REQ_BYTES(max_n) (at least 2); vals: room for
// max_n*max_n values. max_n is clamped to [1, MP_MAX_N_LIMIT].
void mp_init(struct mp_parser *p, char *buf, size_t cap, int64_t *vals, int max_n);

// A parser with nothing buffered (mp_buffered 0) needs its buffers only for
// the next bytes: a server with many idle connections lends them out.
// mp_set_buffers gives an empty parser new ones (buf of the cap given to
// mp_init, vals as there), or none (NULL, NULL: feed nothing until it has
// some again); the parser's mode (framing) is kept. Returns -1, and changes
// nothing, if the parser is not empty.
int mp_set_buffers(struct mp_parser *p, char *buf, int64_t *vals);

// Appends received bytes. Always consumes all n bytes and returns n. A message
// that outgrows the buffer is remembered, its bytes dropped, and reported as
// "request too long" when it ends (framed: at its '\n'; base protocol: when
// mp_next is told nothing more is pending).
// Take every message out with mp_next after each mp_feed. Messages that arrive
// pipelined (several in one feed) share the buffer until they are taken: feed
// at most mp_room(p) bytes at a time and none is ever rejected for lack of room
// (a larger feed is still safe, but the message that does not fit is answered
// "request too long").
size_t mp_feed(struct mp_parser *p, const char *data, size_t n);

// How many bytes mp_feed can take now without running out of room. After the
// messages have been taken with mp_next it is never 0.
size_t mp_room(const struct mp_parser *p);

// Takes the next complete message out of the buffer, or returns MP_NEED_MORE
// (m->kind is set to the value returned). Call it until it returns
// MP_NEED_MORE: one feed may complete several framed messages.
// more_pending: non-zero when more bytes are known to be queued on the
// connection (not received yet), so an unterminated base-protocol message is
// not complete yet. Pass 0 when the receive queue is empty; it only matters
// before the connection is in framed mode.
enum mp_kind mp_next(struct mp_parser *p, int more_pending, struct mp_msg *m);

// The server's stall timer fired: the connection has been quiet with bytes
// buffered. Returns the next complete message as mp_next(p, 0, m) would if
// there is one; otherwise turns whatever is buffered into MP_ERROR
// "incomplete request" ("request too long" if it had overflowed), discarding
// it, with framed set if the connection is in framed mode; m->kind is
// MP_NEED_MORE when nothing was buffered.
void mp_stall(struct mp_parser *p, struct mp_msg *m);

// Bytes currently buffered (0 = idle: no stall timer needed).
int mp_buffered(const struct mp_parser *p);

// c = a*a for n x n row-major matrices, with 64-bit wrapping arithmetic
// (computed in uint64_t). c must not overlap a.
void mp_square(const int64_t *a, int n, int64_t *c);

// "v v ... v" (+ '\n' if framed), values in decimal (signed). Returns the
// length (no NUL is written), or 0 if cap is too small.
size_t mp_format_matrix(const int64_t *c, int n, int framed, char *out, size_t cap);

// "error: <reason>" (+ '\n' if framed). Returns the length, or 0 if cap is too small.
size_t mp_format_error(const char *reason, int framed, char *out, size_t cap);

// "connect ok" (+ '\n' if framed). Returns the length, or 0 if cap is too small.
size_t mp_format_handshake(int framed, char *out, size_t cap);

// Parses an answer "v v ... v" (optionally ending with '\n') into at most
// max_vals signed 64-bit values; for clients. Returns the number of values,
// or -1 if a token is not a signed decimal integer or there are more than
// max_vals values.
int mp_parse_answer(const char *s, size_t len, int64_t *vals, int max_vals);

#endif
