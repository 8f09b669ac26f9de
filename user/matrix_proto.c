// The matrix-echo protocol engine: see matrix_proto.h for the interface and
// docs/PROTOCOL.md for the protocol.
//
// Buffer layout. buf[start, len) holds the bytes received and not yet taken,
// which are a sequence of messages: complete framed ones (each ending with
// '\n') followed by the one still being received, which starts at cur.
// A message that outgrows the buffer is replaced by a one-byte marker at cur:
// MARK_OPEN while its bytes are still being dropped, MARK_CLOSED once its '\n'
// has arrived (a complete message by itself, reported as "request too long").
// Markers keep the replies in order when a too-long message sits between good
// ones in the same feed. Received bytes that happen to equal a marker are
// stored as SANITIZED instead: any of the three is "not a number" to the
// parser, so the substitution is invisible.
//
// Jammed. A caller that feeds more than mp_room() can fill the whole buffer
// with complete messages that have not been taken yet; then even a marker does
// not fit. The messages that follow are counted instead: tail counts the
// non-blank framed lines dropped that way and tail_open says one is in
// progress. They are reported as "request too long" once the buffer has been
// drained, and no byte is stored while any of them is pending, so the replies
// stay in order. Well-behaved callers never get there.
#include "matrix_proto.h"

#define MARK_OPEN ((char)0x00)
#define MARK_CLOSED ((char)0x01)
#define SANITIZED ((char)0x7f)

static const char HANDSHAKE[] = "connect ok?";
static const char HANDSHAKE_PRIO[] = "connect ok? prio=";
static const char CLOSE[] = "close connection";
static const char ANSWER_HANDSHAKE[] = "connect ok";

// Reasons (static strings, as struct mp_msg promises).
static const char E_NOT_NUMBER[] = "not a number";
static const char E_NEGATIVE[] = "negative number";
static const char E_TOO_BIG[] = "number too large";
static const char E_NOT_SQUARE[] = "not a square matrix";
static const char E_MATRIX_TOO_LARGE[] = "matrix too large";
static const char E_TOO_LONG[] = "request too long";
static const char E_INCOMPLETE[] = "incomplete request";
static const char E_BAD_PRIO[] = "bad priority";

// ---------------------------------------------------------------------------
// Tiny helpers (no libc in the guest).

static int is_digit(char c) { return c >= '0' && c <= '9'; }
static int is_blank(char c) { return c == ' ' || c == '\t'; }

static size_t cstrlen(const char *s) {
  size_t n = 0;
  while (s[n])
    n++;
  return n;
}

// Does s[0, len) equal the NUL-terminated word w?
static int equals(const char *s, size_t len, const char *w) {
  size_t i;
  for (i = 0; i < len; i++)
    if (w[i] == 0 || w[i] != s[i])
      return 0;
  return w[i] == 0;
}

// Is s[0, len) a proper prefix of w (shorter than w)?
static int proper_prefix(const char *s, size_t len, const char *w) {
  for (size_t i = 0; i < len; i++)
    if (w[i] == 0 || w[i] != s[i])
      return 0;
  return w[len] != 0;
}

static void copy_down(char *buf, size_t from, size_t n) {
  for (size_t i = 0; i < n; i++)
    buf[i] = buf[from + i];
}

// ---------------------------------------------------------------------------
// Receiving

void mp_init(struct mp_parser *p, char *buf, size_t cap, int64_t *vals, int max_n) {
  if (max_n < 1)
    max_n = 1;
  if (max_n > MP_MAX_N_LIMIT)
    max_n = MP_MAX_N_LIMIT;
  p->buf = buf;
  p->cap = cap;
  p->start = p->len = p->cur = 0;
  p->vals = vals;
  p->max_n = max_n;
  p->framed_mode = 0;
  p->discard = 0;
  p->tail_open = 0;
  p->tail = 0;
}

int mp_set_buffers(struct mp_parser *p, char *buf, int64_t *vals) {
  if (mp_buffered(p) != 0 || p->discard)
    return -1;
  p->buf = buf;
  p->vals = vals;
  p->start = p->len = p->cur = 0;
  return 0;
}

// Moves the pending bytes to the front of the buffer.
static void compact(struct mp_parser *p) {
  if (p->start == 0)
    return;
  copy_down(p->buf, p->start, p->len - p->start);
  p->len -= p->start;
  p->cur -= p->start;
  p->start = 0;
}

size_t mp_room(const struct mp_parser *p) {
  // While jammed, mp_next must report the counted lines first; once the
  // buffer is drained, feeding lets the line still being dropped move back in.
  if (p->tail)
    return 0;
  if (p->tail_open)
    return p->start == p->len ? p->cap : 0;
  // Bytes before start are reclaimed by compaction. A message that fills the
  // whole buffer is already too long: one more byte settles it either way.
  size_t used = p->len - p->start;
  if (used < p->cap)
    return p->cap - used;
  return p->cur == p->start ? 1 : 0;
}

size_t mp_feed(struct mp_parser *p, const char *data, size_t n) {
  for (size_t i = 0; i < n; i++) {
    char c = data[i];
    if (c == MARK_OPEN || c == MARK_CLOSED)
      c = SANITIZED;

    if (p->tail || p->tail_open) {
      // Jammed. Once mp_next has drained the buffer and reported the counted
      // lines, the one still being dropped can move back into the buffer.
      if (p->tail == 0 && p->start == p->len) {
        p->start = p->len = p->cur = 0;
        p->buf[p->len++] = MARK_OPEN;
        p->discard = 1;
        p->tail_open = 0;
      } else {
        if (c == '\n') {
          if (p->tail_open && p->tail < 0xffffffffu)
            p->tail++;
          p->tail_open = 0;
        } else if (!is_blank(c) && c != '\r') {
          p->tail_open = 1;
        }
        continue;
      }
    }

    if (p->discard) {
      // The marker sits at cur; its message ends at the next '\n'.
      if (c == '\n') {
        p->buf[p->cur] = MARK_CLOSED;
        p->cur = p->len;
        p->discard = 0;
      }
      continue;
    }

    if (p->len == p->cap)
      compact(p);
    if (p->len == p->cap) {
      if (p->cur < p->len) {
        // The message being received does not fit: drop it, leave its marker.
        p->len = p->cur;
        if (c == '\n') {
          p->buf[p->len++] = MARK_CLOSED;
          p->cur = p->len;
        } else {
          p->buf[p->len++] = MARK_OPEN;
          p->discard = 1;
        }
      } else if (c != '\n' && !is_blank(c) && c != '\r') {
        p->tail_open = 1;   // jammed (a blank line would be ignored anyway)
      }
      continue;
    }
    p->buf[p->len++] = c;
    if (c == '\n')
      p->cur = p->len;
  }
  return n;
}

int mp_buffered(const struct mp_parser *p) {
  size_t n = p->len - p->start + p->tail + (size_t)p->tail_open;
  return n > 0x7fffffff ? 0x7fffffff : (int)n;
}

// ---------------------------------------------------------------------------
// Parsing one message

static enum mp_kind set_error(struct mp_msg *m, const char *why, int framed) {
  m->kind = MP_ERROR;
  m->error = why;
  m->framed = framed;
  return MP_ERROR;
}

// The largest r with r*r <= x (x is at most a few thousand here).
static int isqrt(size_t x) {
  size_t r = 0;
  while ((r + 1) * (r + 1) <= x)
    r++;
  return (int)r;
}

// What parsing s[0, len) found. PARSE_INCOMPLETE only happens for unframed
// messages: the bytes are a valid beginning of a message.
enum parse_result { PARSE_MSG, PARSE_BLANK, PARSE_INCOMPLETE };

// Parses the message s[0, len) ('\n' and '\r' already removed) into m.
static enum parse_result parse(struct mp_parser *p, const char *s, size_t len, int framed,
                               struct mp_msg *m) {
  m->framed = framed;

  // The two phrases.
  if (equals(s, len, HANDSHAKE)) {
    m->kind = MP_HANDSHAKE;
    return PARSE_MSG;
  }
  if (equals(s, len, CLOSE)) {
    m->kind = MP_CLOSE;
    return PARSE_MSG;
  }
  size_t hp = cstrlen(HANDSHAKE_PRIO);
  if (len >= hp && equals(s, hp, HANDSHAKE_PRIO)) {
    long long prio = 0;
    if (len == hp)
      return framed ? (set_error(m, E_BAD_PRIO, framed), PARSE_MSG) : PARSE_INCOMPLETE;
    for (size_t i = hp; i < len; i++) {
      if (!is_digit(s[i])) {
        set_error(m, E_BAD_PRIO, framed);
        return PARSE_MSG;
      }
      if (prio <= MP_MAX_VALUE)
        prio = prio * 10 + (s[i] - '0');
    }
    m->kind = MP_HANDSHAKE;
    m->prio = prio > MP_MAX_VALUE ? (int)MP_MAX_VALUE : (int)prio;
    return PARSE_MSG;
  }
  if (!framed && (proper_prefix(s, len, HANDSHAKE_PRIO) || proper_prefix(s, len, CLOSE)))
    return PARSE_INCOMPLETE;

  // A matrix: integers separated by runs of blanks. The first bad token
  // decides the error; values beyond max_n*max_n are only counted.
  size_t count = 0, limit = (size_t)p->max_n * (size_t)p->max_n;
  size_t i = 0;
  while (i < len) {
    if (is_blank(s[i])) {
      i++;
      continue;
    }
    size_t t = i;
    long long v = 0;
    while (i < len && !is_blank(s[i])) {
      if (!is_digit(s[i])) {
        // "-5" gets the more helpful reason; anything else is not a number.
        int neg = s[t] == '-' && i == t && i + 1 < len && is_digit(s[i + 1]);
        for (i++; neg && i < len && !is_blank(s[i]); i++)
          if (!is_digit(s[i]))
            neg = 0;
        set_error(m, neg ? E_NEGATIVE : E_NOT_NUMBER, framed);
        return PARSE_MSG;
      }
      if (v <= MP_MAX_VALUE)
        v = v * 10 + (s[i] - '0');
      i++;
    }
    if (v > MP_MAX_VALUE) {
      set_error(m, E_TOO_BIG, framed);
      return PARSE_MSG;
    }
    if (count < limit)
      p->vals[count] = v;
    count++;
  }
  if (count == 0)
    return PARSE_BLANK;

  int n = isqrt(count);
  if ((size_t)n * (size_t)n != count) {
    if (framed)
      set_error(m, E_NOT_SQUARE, framed);
    else if (count > limit)
      set_error(m, E_MATRIX_TOO_LARGE, framed);   // more values cannot make it fit
    else
      return PARSE_INCOMPLETE;                     // the rest may be in flight
    return PARSE_MSG;
  }
  if (count > limit) {
    set_error(m, E_MATRIX_TOO_LARGE, framed);
    return PARSE_MSG;
  }
  m->kind = MP_REQUEST;
  m->n = n;
  m->vals = p->vals;
  return PARSE_MSG;
}

static void clear_msg(struct mp_msg *m) {
  m->kind = MP_NEED_MORE;
  m->framed = 0;
  m->prio = -1;
  m->n = 0;
  m->vals = 0;
  m->error = 0;
}

enum mp_kind mp_next(struct mp_parser *p, int more_pending, struct mp_msg *m) {
  clear_msg(m);
  for (;;) {
    if (p->start == p->len) {
      p->start = p->len = p->cur = 0;   // free compaction
      if (p->tail) {
        p->tail--;
        p->framed_mode = 1;
        return set_error(m, E_TOO_LONG, 1);
      }
      return MP_NEED_MORE;
    }

    char *s = p->buf + p->start;
    if (s[0] == MARK_CLOSED) {
      p->start++;
      p->framed_mode = 1;
      return set_error(m, E_TOO_LONG, 1);
    }
    if (s[0] == MARK_OPEN) {
      // An overflowing message still being dropped (always the last one).
      // Without framing it ends when nothing more is pending.
      if (p->framed_mode || more_pending)
        return MP_NEED_MORE;
      p->start = p->len = p->cur = 0;
      p->discard = 0;
      return set_error(m, E_TOO_LONG, 0);
    }

    size_t avail = p->len - p->start, e = 0;
    while (e < avail && s[e] != '\n')
      e++;
    if (e < avail) {
      // A framed message: s[0, e) without a trailing '\r'.
      p->start += e + 1;
      p->framed_mode = 1;
      if (e > 0 && s[e - 1] == '\r')
        e--;
      if (parse(p, s, e, 1, m) == PARSE_BLANK) {
        clear_msg(m);
        continue;   // blank lines get no reply
      }
      return m->kind;
    }

    // Unterminated: the message being received (cur == start).
    if (p->framed_mode || more_pending)
      return MP_NEED_MORE;
    switch (parse(p, s, avail, 0, m)) {
    case PARSE_INCOMPLETE:
      clear_msg(m);
      return MP_NEED_MORE;
    case PARSE_BLANK:
      clear_msg(m);   // stray blanks between base-protocol messages
      p->start = p->len = p->cur = 0;
      return MP_NEED_MORE;
    case PARSE_MSG:
      p->start = p->len = p->cur = 0;
      return m->kind;
    }
  }
}

void mp_stall(struct mp_parser *p, struct mp_msg *m) {
  if (mp_next(p, 0, m) != MP_NEED_MORE || mp_buffered(p) == 0)
    return;
  // Only the message being received is left: it will not be completed.
  int overflowed = p->discard || p->tail_open || p->tail;
  p->start = p->len = p->cur = 0;
  p->discard = p->tail_open = 0;
  p->tail = 0;
  set_error(m, overflowed ? E_TOO_LONG : E_INCOMPLETE, p->framed_mode);
}

// ---------------------------------------------------------------------------
// Computing and answering

void mp_square(const int64_t *a, int n, int64_t *c) {
  for (int i = 0; i < n; i++) {
    for (int j = 0; j < n; j++) {
      uint64_t sum = 0;
      for (int k = 0; k < n; k++)
        sum += (uint64_t)a[i * n + k] * (uint64_t)a[k * n + j];
      c[i * n + j] = (int64_t)sum;   // two's complement wrap (GCC defines it)
    }
  }
}

// Writes v in decimal at out (room for 20 characters); returns the length.
static size_t put_int(int64_t v, char *out) {
  char tmp[20];
  size_t n = 0, len = 0;
  // Negate in unsigned arithmetic: -INT64_MIN does not exist as an int64_t.
  uint64_t u = v < 0 ? 0 - (uint64_t)v : (uint64_t)v;
  do {
    tmp[n++] = (char)('0' + u % 10);
    u /= 10;
  } while (u);
  if (v < 0)
    out[len++] = '-';
  while (n)
    out[len++] = tmp[--n];
  return len;
}

size_t mp_format_matrix(const int64_t *c, int n, int framed, char *out, size_t cap) {
  size_t len = 0, count = n > 0 ? (size_t)n * (size_t)n : 0;
  for (size_t i = 0; i < count; i++) {
    if (cap - len < 21 + 1)   // separator + longest value + room for '\n'
      return 0;
    if (i > 0)
      out[len++] = ' ';
    len += put_int(c[i], out + len);
  }
  if (framed) {
    if (len == cap)
      return 0;
    out[len++] = '\n';
  }
  return len;
}

static size_t put_line(const char *a, const char *b, int framed, char *out, size_t cap) {
  size_t la = cstrlen(a), lb = b ? cstrlen(b) : 0;
  if (la + lb + (framed ? 1 : 0) > cap)
    return 0;
  size_t len = 0;
  for (size_t i = 0; i < la; i++)
    out[len++] = a[i];
  for (size_t i = 0; i < lb; i++)
    out[len++] = b[i];
  if (framed)
    out[len++] = '\n';
  return len;
}

size_t mp_format_error(const char *reason, int framed, char *out, size_t cap) {
  return put_line("error: ", reason, framed, out, cap);
}

size_t mp_format_handshake(int framed, char *out, size_t cap) {
  return put_line(ANSWER_HANDSHAKE, 0, framed, out, cap);
}

int mp_parse_answer(const char *s, size_t len, int64_t *vals, int max_vals) {
  int count = 0;
  size_t i = 0;
  if (len > 0 && s[len - 1] == '\n')
    len--;
  if (len > 0 && s[len - 1] == '\r')
    len--;
  while (i < len) {
    if (is_blank(s[i])) {
      i++;
      continue;
    }
    int neg = s[i] == '-';
    if (neg)
      i++;
    if (i == len || !is_digit(s[i]))
      return -1;
    uint64_t u = 0;
    for (; i < len && is_digit(s[i]); i++)
      u = u * 10 + (uint64_t)(s[i] - '0');   // wraps on absurd lengths: then it mismatches
    if (i < len && !is_blank(s[i]))
      return -1;
    if (count == max_vals)
      return -1;
    vals[count++] = (int64_t)(neg ? 0 - u : u);
  }
  return count;
}
