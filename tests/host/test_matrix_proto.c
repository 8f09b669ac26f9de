// Host unit tests for user/matrix_proto.c, the matrix-echo protocol engine.
//
// Every parser gets a buffer and a value array malloc'd to exactly the size
// the header asks for, so ASan reports any access past them.
//
// Messages the parser returns are rendered as short strings ("H3/F" is a
// framed handshake with prio 3, "R2:1 2 3 4/U" an unframed 2x2 request,
// "E:not a number/F", "C/F"), and a conversation as those strings joined by
// '|'. The expected strings come from the test itself or, for the fuzz and
// split tests, from ref_line(): a second classifier written with libc
// (strtoull, strcmp) and no code in common with the parser. The answers are
// checked against a naive A*A computed with 128-bit products, and snprintf.
#define _POSIX_C_SOURCE 200809L
#include <stdint.h>
#include "check.h"
#include "../../user/matrix_proto.h"

//
// Fixtures and rendering.
//

struct fx {
  struct mp_parser p;
  char *buf;
  int64_t *vals;
  size_t cap;
  int max_n;
};

static void fx_init(struct fx *f, int max_n) {
  f->max_n = max_n;
  f->cap = MP_REQ_BYTES(max_n);
  f->buf = malloc(f->cap);
  f->vals = malloc(sizeof(int64_t) * (size_t)max_n * (size_t)max_n);
  mp_init(&f->p, f->buf, f->cap, f->vals, max_n);
}

static void fx_free(struct fx *f) {
  free(f->buf);
  free(f->vals);
}

// A growing string.
struct str {
  char *s;
  size_t len, cap;
};

static void str_add(struct str *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void str_add(struct str *b, const char *fmt, ...) {
  va_list ap;
  for (;;) {
    va_start(ap, fmt);
    int n = vsnprintf(b->s ? b->s + b->len : NULL, b->s ? b->cap - b->len : 0, fmt, ap);
    va_end(ap);
    if (b->s && b->len + (size_t)n < b->cap) {
      b->len += (size_t)n;
      return;
    }
    b->cap = (b->cap + (size_t)n + 1) * 2;
    b->s = realloc(b->s, b->cap);
    if (b->len == 0)
      b->s[0] = 0;
  }
}

static void render(struct str *b, const struct mp_msg *m) {
  if (b->len)
    str_add(b, "|");
  switch (m->kind) {
  case MP_HANDSHAKE: str_add(b, "H%d", m->prio); break;
  case MP_CLOSE: str_add(b, "C"); break;
  case MP_ERROR: str_add(b, "E:%s", m->error ? m->error : "(null)"); break;
  case MP_REQUEST:
    str_add(b, "R%d:", m->n);
    for (int i = 0; i < m->n * m->n; i++)
      str_add(b, i ? " %lld" : "%lld", (long long)m->vals[i]);
    break;
  default: str_add(b, "?%d", (int)m->kind); break;
  }
  str_add(b, m->framed ? "/F" : "/U");
}

// Takes every message out of the parser, rendering each into b.
static int drain(struct fx *f, int more_pending, struct str *b) {
  struct mp_msg m;
  int count = 0;
  while (mp_next(&f->p, more_pending, &m) != MP_NEED_MORE) {
    CHECK(m.kind != MP_NEED_MORE);
    render(b, &m);
    count++;
  }
  CHECK_EQ(m.kind, MP_NEED_MORE);
  return count;
}

static int feed_str(struct fx *f, const char *s) {
  size_t n = strlen(s);
  return (int)mp_feed(&f->p, s, n) == (int)n;
}

// Feeds s in one piece and drains with more_pending = mp; returns the rendering.
static char *once(struct fx *f, const char *s, int mp) {
  struct str b = {0};
  CHECK(feed_str(f, s));
  drain(f, mp, &b);
  if (!b.s)
    str_add(&b, "%s", "");
  return b.s;
}

#define CHECK_STR(got, want) do { \
    char *g_ = (got); \
    if (strcmp(g_, (want)) != 0) { \
      char w_[300]; \
      snprintf(w_, sizeof w_, "got \"%.120s\", want \"%.120s\"", g_, (want)); \
      check_note_(__FILE__, __LINE__, w_); \
    } \
    free(g_); \
  } while (0)

//
// Reference classifier and generators.
//

static uint64_t rng = 88172645463325252ULL;
static uint64_t rnd(void) {
  rng ^= rng << 13;
  rng ^= rng >> 7;
  rng ^= rng << 17;
  return rng;
}
static uint64_t rnd_below(uint64_t n) { return rnd() % n; }

// The rendering the protocol requires for one message s (without its '\n'
// and '\r'); "" for a blank framed line, "INCOMPLETE" for an unframed message
// that may still grow. Written independently of the parser.
static char *ref_line(const char *s, int framed, int max_n) {
  struct str b = {0};
  const char *fr = framed ? "/F" : "/U";
  char *copy = strdup(s), *save = NULL, *tok;
  long long *vals = malloc(sizeof(long long) * (strlen(s) / 2 + 1));
  size_t count = 0;
  const char *err = NULL;

  if (strcmp(s, "connect ok?") == 0) {
    str_add(&b, "H-1%s", fr);
    goto out;
  }
  if (strcmp(s, "close connection") == 0) {
    str_add(&b, "C%s", fr);
    goto out;
  }
  if (strncmp(s, "connect ok? prio=", 17) == 0) {
    const char *d = s + 17;
    if (*d == 0 && !framed) {
      str_add(&b, "INCOMPLETE");
    } else if (*d == 0 || strspn(d, "0123456789") != strlen(d)) {
      str_add(&b, "E:bad priority%s", fr);
    } else {
      unsigned long long v = strlen(d) > 12 ? 2000000000ULL : strtoull(d, NULL, 10);
      str_add(&b, "H%lld%s", v > 1000000000ULL ? 1000000000LL : (long long)v, fr);
    }
    goto out;
  }
  if (!framed && (strncmp("connect ok? prio=", s, strlen(s)) == 0 ||
                  strncmp("close connection", s, strlen(s)) == 0)) {
    str_add(&b, "INCOMPLETE");
    goto out;
  }
  for (tok = strtok_r(copy, " \t", &save); tok; tok = strtok_r(NULL, " \t", &save)) {
    if (strspn(tok, "0123456789") != strlen(tok)) {
      int neg = tok[0] == '-' && tok[1] && strspn(tok + 1, "0123456789") == strlen(tok + 1);
      err = neg ? "negative number" : "not a number";
      break;
    }
    size_t digits = strlen(tok) - strspn(tok, "0");   // without leading zeros
    unsigned long long v = digits > 12 ? 2000000000000ULL : strtoull(tok, NULL, 10);
    if (v > 1000000000ULL) {
      err = "number too large";
      break;
    }
    vals[count++] = (long long)v;
  }
  if (!err && count == 0) {
    str_add(&b, "%s", "");   // blank
    goto out;
  }
  if (!err) {
    size_t n = 0;
    while ((n + 1) * (n + 1) <= count)
      n++;
    size_t lim = (size_t)max_n * (size_t)max_n;
    if (n * n != count)
      err = framed ? "not a square matrix" : count > lim ? "matrix too large" : NULL;
    else if (count > lim)
      err = "matrix too large";
    if (!err && n * n != count) {
      str_add(&b, "INCOMPLETE");
      goto out;
    }
    if (!err) {
      str_add(&b, "R%zu:", n);
      for (size_t i = 0; i < count; i++)
        str_add(&b, i ? " %lld" : "%lld", vals[i]);
      str_add(&b, "%s", fr);
      goto out;
    }
  }
  str_add(&b, "E:%s%s", err, fr);
out:
  free(copy);
  free(vals);
  return b.s;
}

// A random n x n request, values 0..maxv, with single spaces (or, if messy,
// runs of blanks around them), no terminator.
static char *gen_request(int n, long long maxv, int messy) {
  struct str b = {0};
  str_add(&b, "%s", "");
  for (int i = 0; i < n * n; i++) {
    if (messy && rnd_below(4) == 0)
      str_add(&b, rnd_below(2) ? "\t" : "  ");
    str_add(&b, i ? " %lld" : "%lld", (long long)rnd_below((uint64_t)maxv + 1));
  }
  if (messy && rnd_below(3) == 0)
    str_add(&b, " ");
  return b.s;
}

// A random message for the fuzz test: mostly valid, sometimes subtly not.
static char *gen_message(int max_n) {
  struct str b = {0};
  char *r;
  switch (rnd_below(14)) {
  case 0: str_add(&b, "connect ok?"); break;
  case 1: str_add(&b, "connect ok? prio=%d", (int)rnd_below(12)); break;
  case 2: str_add(&b, "close connection"); break;
  case 3: str_add(&b, "%s", rnd_below(2) ? "" : " \t "); break;
  case 4: str_add(&b, "1 2 x 4"); break;
  case 5: str_add(&b, "-%d", (int)rnd_below(50)); break;
  case 6: str_add(&b, "1 2 3"); break;
  case 7: str_add(&b, "1000000001 0 0 0"); break;
  case 8: str_add(&b, "connect ok? prio=z"); break;
  case 9: {   // random printable junk
    int len = (int)rnd_below(30);
    str_add(&b, "%s", "");
    for (int i = 0; i < len; i++)
      str_add(&b, "%c", (char)(32 + rnd_below(95)));
    break;
  }
  case 10:   // above the limit: square and not
    r = gen_request(max_n + 1, 9, 0);
    str_add(&b, "%s", r);
    free(r);
    break;
  default:
    r = gen_request(1 + (int)rnd_below((uint64_t)max_n), rnd_below(3) ? 99 : MP_MAX_VALUE,
                    (int)rnd_below(2));
    str_add(&b, "%s", r);
    free(r);
    break;
  }
  return b.s;
}

// Naive reference for A*A: 128-bit products, reduced mod 2^64 at the end.
static void ref_square(const int64_t *a, int n, int64_t *c) {
  for (int i = 0; i < n; i++)
    for (int j = 0; j < n; j++) {
      unsigned __int128 s = 0;
      for (int k = 0; k < n; k++)
        s += (unsigned __int128)(uint64_t)a[i * n + k] * (uint64_t)a[k * n + j];
      uint64_t low = (uint64_t)s;
      memcpy(&c[i * n + j], &low, sizeof low);
    }
}

//
// Tests.
//

static void test_handshake_framed(void) {
  struct fx f;
  fx_init(&f, 4);
  CHECK_STR(once(&f, "connect ok?\n", 0), "H-1/F");
  CHECK_STR(once(&f, "connect ok? prio=3\n", 0), "H3/F");
  CHECK_STR(once(&f, "connect ok? prio=0\r\n", 0), "H0/F");
  CHECK_STR(once(&f, "connect ok? prio=99999999999999999999\n", 0), "H1000000000/F");
  CHECK_STR(once(&f, "connect ok? prio=\n", 0), "E:bad priority/F");
  CHECK_STR(once(&f, "connect ok? prio=-1\n", 0), "E:bad priority/F");
  CHECK_STR(once(&f, "connect ok?  \n", 0), "E:not a number/F");
  CHECK_STR(once(&f, "Connect ok?\n", 0), "E:not a number/F");
  CHECK_STR(once(&f, "close connection\n", 1), "C/F");
  CHECK_EQ(mp_buffered(&f.p), 0);
  fx_free(&f);
}

static void test_handshake_unframed(void) {
  struct fx f;
  fx_init(&f, 4);
  // Prefixes of the phrases are incomplete, not errors.
  CHECK_STR(once(&f, "conn", 0), "");
  CHECK_STR(once(&f, "ect ok", 0), "");
  CHECK_EQ(mp_buffered(&f.p), 10);
  CHECK_STR(once(&f, "?", 1), "");          // more is pending: wait
  CHECK_STR(once(&f, "", 0), "H-1/U");
  CHECK_STR(once(&f, "connect ok? prio=", 0), "");
  CHECK_STR(once(&f, "7", 0), "H7/U");
  CHECK_STR(once(&f, "close", 0), "");
  CHECK_STR(once(&f, " connection", 0), "C/U");
  CHECK_STR(once(&f, "connect ok? prio=x", 0), "E:bad priority/U");
  CHECK_STR(once(&f, "hello", 0), "E:not a number/U");
  CHECK_EQ(mp_buffered(&f.p), 0);
  fx_free(&f);
}

// The paper's base protocol from start to end, requests arriving in pieces.
static void test_base_protocol_session(void) {
  struct fx f;
  fx_init(&f, 20);
  CHECK_STR(once(&f, "connect ok?", 0), "H-1/U");
  CHECK_STR(once(&f, "1 2 3", 0), "");      // 3 values: not square, wait
  CHECK_STR(once(&f, " 4 5 6 7 ", 1), "");  // 7 values, more pending
  CHECK_STR(once(&f, "8 9", 0), "R3:1 2 3 4 5 6 7 8 9/U");
  CHECK_STR(once(&f, "42", 0), "R1:42/U");
  CHECK_STR(once(&f, "   ", 0), "");        // stray blanks are dropped
  CHECK_EQ(mp_buffered(&f.p), 0);
  CHECK_STR(once(&f, "close connection", 0), "C/U");
  fx_free(&f);
}

static void test_requests_framed(void) {
  struct fx f;
  fx_init(&f, 4);
  CHECK_STR(once(&f, "7\n", 0), "R1:7/F");
  CHECK_STR(once(&f, "0\r\n", 0), "R1:0/F");
  CHECK_STR(once(&f, "1 2 3 4\n", 0), "R2:1 2 3 4/F");
  CHECK_STR(once(&f, "  1\t2 \t 3   4  \n", 0), "R2:1 2 3 4/F");
  CHECK_STR(once(&f, "007 1000000000 0 1\n", 0), "R2:7 1000000000 0 1/F");
  // Framed mode is sticky: an unterminated square count is not complete.
  CHECK_STR(once(&f, "1 2 3 4", 0), "");
  CHECK_STR(once(&f, " 5 6 7 8 9\n", 0), "R3:1 2 3 4 5 6 7 8 9/F");
  fx_free(&f);
}

// Random requests of the sizes the clients use, and the limit, in both
// framings; each checked against the reference classifier.
static void test_request_sizes(void) {
  int sizes[] = {1, 15, 20, 32, 64};
  for (size_t k = 0; k < sizeof sizes / sizeof sizes[0]; k++) {
    int n = sizes[k];
    int max_n = n == 64 ? MP_MAX_N_LIMIT : n <= 20 ? MP_MAX_N_DEFAULT : n;
    for (int framed = 0; framed < 2; framed++) {
      for (int big = 0; big < 2; big++) {
        struct fx f;
        fx_init(&f, max_n);
        char *req = gen_request(n, big ? MP_MAX_VALUE : 99, 0);
        char *want = ref_line(req, framed, max_n);
        struct str line = {0};
        str_add(&line, "%s%s", req, framed ? "\n" : "");
        CHECK(strlen(line.s) < f.cap);
        CHECK_STR(once(&f, line.s, 0), want);
        check_context(" [n=%d framed=%d big=%d]", n, framed, big);
        free(want);
        free(req);
        free(line.s);
        fx_free(&f);
      }
    }
  }
}

// One stream, every split: two pieces at every position, then byte by byte.
// Framed: the handshake establishes framing, so later messages may be taken
// with more_pending = 0 after every byte and must still never be cut short.
static void split_everywhere(const char *stream, int framed, const char *want, int max_n) {
  size_t len = strlen(stream);
  for (size_t k = 0; k <= len; k++) {
    struct fx f;
    struct str b = {0};
    fx_init(&f, max_n);
    mp_feed(&f.p, stream, k);
    drain(&f, 1, &b);
    mp_feed(&f.p, stream + k, len - k);
    drain(&f, 0, &b);
    if (!b.s)
      str_add(&b, "%s", "");
    CHECK_STR(b.s, want);
    check_context(" [split at %zu, framed=%d]", k, framed);
    CHECK_EQ(mp_buffered(&f.p), 0);
    fx_free(&f);
    if (check_failed_)
      return;
  }
  struct fx f;
  struct str b = {0};
  fx_init(&f, max_n);
  for (size_t i = 0; i < len; i++) {
    mp_feed(&f.p, stream + i, 1);
    // Unframed: more is pending until the last byte. Framed: only the first
    // line (the handshake) needs it.
    int first_line = framed && memchr(stream, '\n', i + 1) == NULL;
    drain(&f, framed ? first_line : i + 1 < len, &b);
  }
  if (!b.s)
    str_add(&b, "%s", "");
  CHECK_STR(b.s, want);
  check_context(" [byte by byte, framed=%d]", framed);
  fx_free(&f);
}

static void test_split_every_byte(void) {
  char *req = gen_request(15, 99, 0);
  char *r1 = ref_line(req, 1, 32), *r0 = ref_line(req, 0, 32);
  struct str s = {0}, w = {0};

  // Framed session: handshake, a 15x15 request, a 2x2 one, an error, close.
  str_add(&s, "connect ok? prio=2\n%s\r\n16 0 1 2\n1 x\nclose connection\n", req);
  str_add(&w, "H2/F|%s|R2:16 0 1 2/F|E:not a number/F|C/F", r1);
  split_everywhere(s.s, 1, w.s, 32);

  // Unframed: just the request (the server sees each base-protocol message
  // separately, because the client waits for the answer in between).
  split_everywhere(req, 0, r0, 32);
  split_everywhere("connect ok? prio=12", 0, "H12/U", 32);
  split_everywhere("close connection", 0, "C/U", 32);
  free(req);
  free(r1);
  free(r0);
  free(s.s);
  free(w.s);
}

static void test_several_in_one_feed(void) {
  struct fx f;
  fx_init(&f, 4);
  CHECK_STR(once(&f, "connect ok? prio=2\n1 2 3 4\n\n\r\n5\n1 2\nclose connection\n", 0),
            "H2/F|R2:1 2 3 4/F|R1:5/F|E:not a square matrix/F|C/F");
  // The tail of one feed completes in the next.
  CHECK_STR(once(&f, "9\n8 7", 0), "R1:9/F");
  CHECK_STR(once(&f, " 6 5\n3\n", 0), "R2:8 7 6 5/F|R1:3/F");
  fx_free(&f);
}

static void test_bad_tokens(void) {
  struct fx f;
  fx_init(&f, 4);
  const char *bad[][2] = {
    {"1 2 x 4\n", "E:not a number/F"},   {"abc\n", "E:not a number/F"},
    {"1.5\n", "E:not a number/F"},       {"0x10\n", "E:not a number/F"},
    {"+3\n", "E:not a number/F"},        {"1,2,3,4\n", "E:not a number/F"},
    {"-5\n", "E:negative number/F"},     {"1 -2 3 4\n", "E:negative number/F"},
    {"-\n", "E:not a number/F"},         {"1 2-3\n", "E:not a number/F"},
    {"1000000001\n", "E:number too large/F"},
    {"99999999999999999999999999\n", "E:number too large/F"},
    {"1 2 3\n", "E:not a square matrix/F"},
    {"1\0002\n", "E:not a number/F"},    // NUL bytes are just bad bytes
    {"\001\n", "E:not a number/F"},
  };
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    const char *s = bad[i][0];
    size_t len = strlen(s) + (s[1] == 0 ? strlen(s + 2) + 1 : 0);   // the NUL case
    struct str b = {0};
    mp_feed(&f.p, s, len);
    drain(&f, 0, &b);
    CHECK_STR(b.s ? b.s : strdup(""), bad[i][1]);
    check_context(" [case %zu]", i);
    // The connection stays usable.
    CHECK_STR(once(&f, "3\n", 0), "R1:3/F");
  }
  // Unframed: errors only once nothing more is pending.
  struct fx u;
  fx_init(&u, 4);
  CHECK_STR(once(&u, "1 x", 1), "");
  CHECK_STR(once(&u, " 3", 0), "E:not a number/U");
  CHECK_STR(once(&u, "-7", 0), "E:negative number/U");
  CHECK_STR(once(&u, "2000000000", 0), "E:number too large/U");
  CHECK_STR(once(&u, "4", 0), "R1:4/U");
  fx_free(&u);
  fx_free(&f);
}

static void test_matrix_too_large(void) {
  struct fx f;
  fx_init(&f, 4);
  char *r5 = gen_request(5, 9, 0), *r4 = gen_request(4, 9, 0);
  struct str s = {0};
  str_add(&s, "%s\n", r5);
  CHECK_STR(once(&f, s.s, 0), "E:matrix too large/F");
  char *want = ref_line(r4, 1, 4);
  s.len = 0;
  str_add(&s, "%s\n", r4);
  CHECK_STR(once(&f, s.s, 0), want);   // exactly max_n is fine
  free(want);
  fx_free(&f);

  // Unframed: 25 values (square, too large) and 17 values (not square yet,
  // but no square count above 16 can fit) are both final.
  fx_init(&f, 4);
  CHECK_STR(once(&f, r5, 0), "E:matrix too large/U");
  CHECK_STR(once(&f, "1 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1", 0), "E:matrix too large/U");
  CHECK_STR(once(&f, "1 1 1 1 1 1 1 1 1 1 1 1 1 1 1", 0), "");   // 15 < 16: wait
  fx_free(&f);
  free(r5);
  free(r4);
  free(s.s);
}

static void test_too_long(void) {
  struct fx f;
  fx_init(&f, 2);   // cap = 108 bytes
  size_t cap = f.cap;
  char *big = malloc(4 * cap + 2);

  // Framed: far too long, then a good request on the same parser.
  memset(big, '1', 4 * cap);
  big[4 * cap] = '\n';
  big[4 * cap + 1] = 0;
  CHECK_STR(once(&f, big, 0), "E:request too long/F");
  CHECK_STR(once(&f, "1 2 3 4\n", 0), "R2:1 2 3 4/F");

  // In pieces, with good messages around it in the same feeds.
  CHECK_STR(once(&f, "5\n1 1 1", 0), "R1:5/F");
  mp_feed(&f.p, big, 2 * cap);
  CHECK_STR(once(&f, "", 0), "");
  CHECK(mp_buffered(&f.p) > 0);   // still dropping: the stall timer must run
  CHECK_STR(once(&f, "1\n6\n", 0), "E:request too long/F|R1:6/F");

  // The limit: cap - 1 bytes plus '\n' fit, cap bytes do not.
  memset(big, ' ', cap);
  memcpy(big, "1 2 3 4", 7);
  big[cap - 1] = '\n';
  big[cap] = 0;
  CHECK_STR(once(&f, big, 0), "R2:1 2 3 4/F");
  big[cap - 1] = ' ';
  big[cap] = '\n';
  big[cap + 1] = 0;
  CHECK_STR(once(&f, big, 0), "E:request too long/F");
  CHECK_EQ(mp_buffered(&f.p), 0);
  fx_free(&f);

  // Unframed: reported once nothing more is pending; then the parser is fresh.
  fx_init(&f, 2);
  memset(big, '1', 4 * cap);
  for (size_t i = 1; i < 4 * cap; i += 2)
    big[i] = ' ';
  big[4 * cap] = 0;
  CHECK_STR(once(&f, big, 1), "");
  CHECK_STR(once(&f, "", 0), "E:request too long/U");
  CHECK_STR(once(&f, "5", 0), "R1:5/U");
  fx_free(&f);
  free(big);
}

static void test_stall(void) {
  struct fx f;
  struct mp_msg m;
  fx_init(&f, 4);
  mp_stall(&f.p, &m);
  CHECK_EQ(m.kind, MP_NEED_MORE);   // nothing buffered

  // Base protocol: 3 values never become a square.
  CHECK_STR(once(&f, "1 2 3", 0), "");
  CHECK_EQ(mp_buffered(&f.p), 5);
  mp_stall(&f.p, &m);
  CHECK_EQ(m.kind, MP_ERROR);
  CHECK(m.error && strcmp(m.error, "incomplete request") == 0);
  CHECK_EQ(m.framed, 0);
  CHECK_EQ(mp_buffered(&f.p), 0);
  CHECK_STR(once(&f, "8", 0), "R1:8/U");

  // Framed mode: the request without its '\n'; the error is framed.
  CHECK_STR(once(&f, "connect ok?\n1 2 3 4", 0), "H-1/F");
  mp_stall(&f.p, &m);
  CHECK_EQ(m.kind, MP_ERROR);
  CHECK(m.error && strcmp(m.error, "incomplete request") == 0);
  CHECK_EQ(m.framed, 1);
  CHECK_STR(once(&f, "2\n", 0), "R1:2/F");

  // A complete message still waiting is returned, not thrown away.
  mp_feed(&f.p, "3\n4", 3);
  mp_stall(&f.p, &m);
  CHECK_EQ(m.kind, MP_REQUEST);
  CHECK_EQ(m.n, 1);
  mp_stall(&f.p, &m);
  CHECK_EQ(m.kind, MP_ERROR);
  mp_stall(&f.p, &m);
  CHECK_EQ(m.kind, MP_NEED_MORE);

  // Stalled in the middle of a too-long message.
  char junk[400];
  memset(junk, '7', sizeof junk);
  mp_feed(&f.p, junk, sizeof junk);
  mp_stall(&f.p, &m);
  CHECK_EQ(m.kind, MP_ERROR);
  CHECK(m.error && strcmp(m.error, "request too long") == 0);
  CHECK_EQ(mp_buffered(&f.p), 0);
  CHECK_STR(once(&f, "1\n", 0), "R1:1/F");
  fx_free(&f);
}

static void test_format_exact_bytes_and_parse_back(void) {
  char out[256];
  int64_t c[4] = {1, -2, 30, INT64_MIN};
  CHECK_EQ(mp_format_matrix(c, 2, 0, out, sizeof out), 28);
  CHECK(memcmp(out, "1 -2 30 -9223372036854775808", 28) == 0);
  CHECK_EQ(mp_format_matrix(c, 2, 1, out, sizeof out), 29);
  CHECK(memcmp(out, "1 -2 30 -9223372036854775808\n", 29) == 0);
  CHECK_EQ(mp_format_matrix(c, 2, 1, out, 10), 0);   // too small
  int64_t z = 0;
  CHECK_EQ(mp_format_matrix(&z, 1, 1, out, sizeof out), 2);
  CHECK(memcmp(out, "0\n", 2) == 0);

  CHECK_EQ(mp_format_error("not a number", 1, out, sizeof out), 20);
  CHECK(memcmp(out, "error: not a number\n", 20) == 0);
  CHECK_EQ(mp_format_error("not a number", 0, out, sizeof out), 19);
  CHECK_EQ(mp_format_error("not a number", 1, out, 19), 0);
  CHECK_EQ(mp_format_error("not a number", 1, out, 20), 20);
  CHECK_EQ(mp_format_handshake(0, out, sizeof out), 10);
  CHECK(memcmp(out, "connect ok", 10) == 0);
  CHECK_EQ(mp_format_handshake(1, out, sizeof out), 11);
  CHECK(memcmp(out, "connect ok\n", 11) == 0);

  // mp_parse_answer reads what mp_format_matrix writes.
  int64_t back[4];
  mp_format_matrix(c, 2, 1, out, sizeof out);
  CHECK_EQ(mp_parse_answer(out, 29, back, 4), 4);
  CHECK(memcmp(back, c, sizeof c) == 0);
  CHECK_EQ(mp_parse_answer(out, 29, back, 3), -1);
  CHECK_EQ(mp_parse_answer("1 x", 3, back, 4), -1);
  CHECK_EQ(mp_parse_answer("1 -", 3, back, 4), -1);
  CHECK_EQ(mp_parse_answer("error: x\n", 9, back, 4), -1);
  CHECK_EQ(mp_parse_answer("", 0, back, 4), 0);

  // The worst case fits MP_ANSWER_BYTES exactly as promised.
  static int64_t worst[MP_MAX_N_LIMIT * MP_MAX_N_LIMIT];
  for (size_t i = 0; i < sizeof worst / sizeof worst[0]; i++)
    worst[i] = INT64_MIN;
  size_t cap = MP_ANSWER_BYTES(MP_MAX_N_LIMIT);
  char *big = malloc(cap);
  size_t len = mp_format_matrix(worst, MP_MAX_N_LIMIT, 1, big, cap);
  CHECK_EQ(len, (size_t)MP_MAX_N_LIMIT * MP_MAX_N_LIMIT * 21);
  free(big);
}

// mp_square against the 128-bit reference, and the formatted answer against
// snprintf, on random matrices including values that make the sums wrap.
static void test_square(void) {
  static int64_t a[64 * 64], c[64 * 64], r[64 * 64];
  static char out[MP_ANSWER_BYTES(64)];
  for (int iter = 0; iter < 60 && !check_failed_; iter++) {
    int n = 1 + (int)rnd_below(64);
    int64_t maxv = iter % 3 == 0 ? 99 : iter % 3 == 1 ? MP_MAX_VALUE : INT64_MAX;
    for (int i = 0; i < n * n; i++)
      a[i] = (int64_t)(rnd() % (uint64_t)maxv) * (iter % 5 == 4 ? -1 : 1);
    mp_square(a, n, c);
    ref_square(a, n, r);
    CHECK(memcmp(c, r, sizeof(int64_t) * (size_t)(n * n)) == 0);
    size_t len = mp_format_matrix(c, n, iter & 1, out, sizeof out);
    struct str want = {0};
    for (int i = 0; i < n * n; i++)
      str_add(&want, i ? " %lld" : "%lld", (long long)r[i]);
    if (iter & 1)
      str_add(&want, "\n");
    CHECK_EQ(len, want.len);
    CHECK(len == want.len && memcmp(out, want.s, len) == 0);
    check_context(" [iteration %d, n=%d]", iter, n);
    free(want.s);
  }
  // A known product.
  int64_t m2[4] = {1, 2, 3, 4}, sq[4];
  mp_square(m2, 2, sq);
  CHECK(sq[0] == 7 && sq[1] == 10 && sq[2] == 15 && sq[3] == 22);
}

// Pipelined framed messages fed by a server that respects mp_room: every
// message gets exactly the reply the reference classifier predicts, in order,
// whatever the chunk sizes.
static void test_fuzz_framed(void) {
  for (int iter = 0; iter < 300 && !check_failed_; iter++) {
    int max_n = 1 + (int)rnd_below(iter % 4 == 0 ? 8 : 20);
    struct fx f;
    fx_init(&f, max_n);
    struct str stream = {0}, want = {0}, got = {0};
    // The handshake arrives whole (a server cannot tell "connect ok?" split
    // before its '\n' from the unframed handshake); it turns framing on.
    CHECK_STR(once(&f, "connect ok?\n", 0), "H-1/F");
    str_add(&stream, "%s", "");
    int msgs = 1 + (int)rnd_below(12);
    for (int i = 0; i < msgs; i++) {
      char *msg = gen_message(max_n);
      char *w = ref_line(msg, 1, max_n);
      const char *eol = rnd_below(4) ? "\n" : "\r\n";
      if (strlen(msg) + strlen(eol) > f.cap) {   // too long for the buffer
        free(w);
        w = strdup("E:request too long/F");
      }
      str_add(&stream, "%s%s", msg, eol);
      if (w[0])
        str_add(&want, want.len ? "|%s" : "%s", w);
      free(msg);
      free(w);
    }
    size_t pos = 0;
    while (pos < stream.len) {
      size_t room = mp_room(&f.p);
      CHECK(room > 0);
      if (room == 0)
        break;
      size_t k = 1 + rnd_below(rnd_below(2) ? 8 : 3000);
      if (k > room)
        k = room;
      if (k > stream.len - pos)
        k = stream.len - pos;
      mp_feed(&f.p, stream.s + pos, k);
      pos += k;
      drain(&f, (int)rnd_below(2), &got);
    }
    CHECK_STR(got.s ? got.s : strdup(""), want.s ? want.s : "");
    check_context(" [iteration %d, max_n %d]", iter, max_n);
    CHECK_EQ(mp_buffered(&f.p), 0);
    free(stream.s);
    free(want.s);
    fx_free(&f);
  }
}

// A caller that ignores mp_room and feeds a long pipeline at once (more than
// the buffer holds): replies stay one per message and in order; each is the
// right one or "request too long".
static void test_pipeline_overfed(void) {
  for (int iter = 0; iter < 40 && !check_failed_; iter++) {
    struct fx f;
    fx_init(&f, 2);
    struct str stream = {0};
    int msgs = 20 + (int)rnd_below(200);
    char **want = malloc(sizeof(char *) * (size_t)msgs);
    for (int i = 0; i < msgs; i++) {
      char *msg = i % 7 == 3 ? strdup("x x x") : gen_request(1 + (int)rnd_below(2), 99, 0);
      want[i] = ref_line(msg, 1, 2);
      str_add(&stream, "%s\n", msg);
      free(msg);
    }
    // Feed it all at once, or in chunks larger than the room, draining between.
    struct str got = {0};
    size_t chunk = iter % 2 ? stream.len : 50 + rnd_below(400);
    for (size_t pos = 0; pos < stream.len; pos += chunk) {
      size_t k = stream.len - pos < chunk ? stream.len - pos : chunk;
      mp_feed(&f.p, stream.s + pos, k);
      drain(&f, 0, &got);
    }
    CHECK_EQ(mp_buffered(&f.p), 0);
    // Compare reply by reply.
    int i = 0;
    char *save = NULL;
    for (char *r = strtok_r(got.s, "|", &save); r; r = strtok_r(NULL, "|", &save), i++) {
      if (i < msgs && strcmp(r, want[i]) != 0 && strcmp(r, "E:request too long/F") != 0) {
        CHECK(!"reply is neither the right one nor 'request too long'");
        check_context(" [message %d: got %s, want %s]", i, r, want[i]);
      }
    }
    CHECK_EQ(i, msgs);
    check_context(" [iteration %d]", iter);
    // And the parser is still in working order.
    CHECK_STR(once(&f, "1 2 3 4\n", 0), "R2:1 2 3 4/F");
    for (int j = 0; j < msgs; j++)
      free(want[j]);
    free(want);
    free(stream.s);
    free(got.s);
    fx_free(&f);
  }
}

// Random bytes in random chunks, random more_pending, stalls: nothing may
// crash or read out of bounds, every message is well formed, the buffered
// count stays within the buffer, and the parser answers normally afterwards.
static void test_fuzz_garbage(void) {
  static const char alphabet[] = "0123456789 \t\n\r-x?connectlosprio=ok\0\001";
  for (int iter = 0; iter < 400 && !check_failed_; iter++) {
    struct fx f;
    fx_init(&f, 1 + (int)rnd_below(6));
    char chunk[700];
    for (int round = 0; round < 30; round++) {
      size_t k = rnd_below(sizeof chunk);
      for (size_t i = 0; i < k; i++)
        chunk[i] = rnd_below(50) ? alphabet[rnd_below(sizeof alphabet)] : (char)rnd();
      mp_feed(&f.p, chunk, k);
      struct mp_msg m;
      while (mp_next(&f.p, (int)rnd_below(2), &m) != MP_NEED_MORE) {
        CHECK(m.kind >= MP_HANDSHAKE && m.kind <= MP_ERROR);
        CHECK(m.kind != MP_ERROR || (m.error && m.error[0]));
        CHECK(m.kind != MP_REQUEST || (m.n >= 1 && m.n <= f.max_n && m.vals == f.vals));
        if (m.kind == MP_REQUEST)
          for (int i = 0; i < m.n * m.n; i++)
            CHECK(m.vals[i] >= 0 && m.vals[i] <= MP_MAX_VALUE);
      }
      CHECK(mp_buffered(&f.p) >= 0 && (size_t)mp_buffered(&f.p) <= f.cap + 1);
      if (rnd_below(5) == 0) {
        mp_stall(&f.p, &m);
        if (m.kind == MP_NEED_MORE || m.kind == MP_ERROR) {
          mp_stall(&f.p, &m);
        }
      }
    }
    // Drain whatever is left, then the parser must work.
    struct mp_msg m;
    for (int i = 0; i < 100000; i++) {
      mp_stall(&f.p, &m);
      if (m.kind == MP_NEED_MORE)
        break;
    }
    CHECK_EQ(mp_buffered(&f.p), 0);
    CHECK_STR(once(&f, "5\n", 0), "R1:5/F");
    check_context(" [iteration %d]", iter);
    fx_free(&f);
  }
}

static void test_room(void) {
  struct fx f;
  fx_init(&f, 1);   // cap = 75
  CHECK_EQ(mp_room(&f.p), f.cap);
  mp_feed(&f.p, "1 2", 3);
  CHECK_EQ(mp_room(&f.p), f.cap - 3);
  // A message that fills the buffer: room is 1, and that byte decides.
  char fill[200];
  memset(fill, ' ', sizeof fill);
  mp_feed(&f.p, fill, f.cap - 3);
  CHECK_EQ(mp_room(&f.p), 1);
  CHECK_STR(once(&f, "\n", 0), "E:request too long/F");
  CHECK_EQ(mp_room(&f.p), f.cap);
  // Complete messages not taken yet use room until mp_next takes them.
  mp_feed(&f.p, "1\n2\n", 4);
  CHECK_EQ(mp_room(&f.p), f.cap - 4);
  CHECK_STR(once(&f, "", 0), "R1:1/F|R1:2/F");
  CHECK_EQ(mp_room(&f.p), f.cap);
  fx_free(&f);
}

CHECK_MAIN_BEGIN("test_matrix_proto")
  RUN_TEST(test_handshake_framed);
  RUN_TEST(test_handshake_unframed);
  RUN_TEST(test_base_protocol_session);
  RUN_TEST(test_requests_framed);
  RUN_TEST(test_request_sizes);
  RUN_TEST(test_split_every_byte);
  RUN_TEST(test_several_in_one_feed);
  RUN_TEST(test_bad_tokens);
  RUN_TEST(test_matrix_too_large);
  RUN_TEST(test_too_long);
  RUN_TEST(test_stall);
  RUN_TEST(test_format_exact_bytes_and_parse_back);
  RUN_TEST(test_square);
  RUN_TEST(test_room);
  RUN_TEST(test_fuzz_framed);
  RUN_TEST(test_pipeline_overfed);
  RUN_TEST(test_fuzz_garbage);
CHECK_MAIN_END
