// Differential testbench: hw/rtl/n_top.sv (NHART ucsr + one uintc) against the
// C models, kernel/nmodel.c (the very code the kernel's emulation runs) and
// hw/model/uintc_model.c. Every step draws a random operation per hart and a
// random MMIO access, drives the RTL, compares every combinational output with
// what the models return, clocks, and compares every architectural register.
// Directed cases then pin the corners random stimulus reaches rarely.
//
//   Vn_top [STEPS [SEED...]]      defaults: 200000 steps, seeds 1 2 3 4
//
// Prints "PASS hw/<name>" or "FAIL hw/<name>: why" per seed and per directed
// case, and ends with "N passed, N failed"; exits non-zero on any failure.
#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>
#include "Vn_top.h"
#include "verilated.h"
extern "C" {
#include "nmodel.h"
#include "uintc_model.h"
#include "uintc_vectors.h"
}

// Must match n_top's parameters (the build passes none, so the defaults).
static const int NHART = 2, NRECV = 8, HIDW = 8;
static const int NDBG = 10;   // dbg_csr entries per hart, in ucsr's order

// ---- access to packed ports, whatever C++ type Verilator gave them ----
static uint64_t mask(int w) { return w >= 64 ? ~0ULL : (1ULL << w) - 1; }
template <class T> static uint64_t get(const T &p, int lsb, int w) {
  return ((uint64_t)p >> lsb) & mask(w);
}
template <class T> static void put(T &p, int lsb, int w, uint64_t v) {
  uint64_t x = (uint64_t)p;
  x = (x & ~(mask(w) << lsb)) | ((v & mask(w)) << lsb);
  p = (T)x;
}
template <std::size_t N> static uint64_t get(const VlWide<N> &p, int lsb, int w) {
  if (lsb % 32 == 0 && w == 64)
    return p.at(lsb / 32) | ((uint64_t)p.at(lsb / 32 + 1) << 32);
  uint64_t v = 0;
  for (int i = 0; i < w; i++)
    v |= (uint64_t)((p.at((lsb + i) / 32) >> ((lsb + i) % 32)) & 1) << i;
  return v;
}
template <std::size_t N> static void put(VlWide<N> &p, int lsb, int w, uint64_t v) {
  for (int i = 0; i < w; i++) {
    int b = lsb + i;
    p.at(b / 32) = (p.at(b / 32) & ~(1u << (b % 32))) | ((uint32_t)((v >> i) & 1) << (b % 32));
  }
}

// ---- random numbers: xorshift64*, fixed seeds ----
static uint64_t rng_state;
static uint64_t rnd() {
  rng_state ^= rng_state >> 12;
  rng_state ^= rng_state << 25;
  rng_state ^= rng_state >> 27;
  return rng_state * 2685821657736338717ULL;
}
static uint64_t below(uint64_t n) { return rnd() % n; }
static bool chance(int one_in) { return below(one_in) == 0; }

// ---- one step's stimulus ----
enum Op { OP_NOP, OP_CSR, OP_EXC, OP_URET, OP_IRQ };
struct HartOp {
  Op op = OP_NOP;
  uint32_t csr = 0;
  int csr_op = 0, write = 0;
  uint64_t src = 0, pc = 0, tval = 0;
  int cause = 0;
};
struct MmioOp {
  bool valid = false, write = false;
  uint64_t addr = 0, wdata = 0;
};

// Expected outputs, from the models.
struct HartOut {
  uint64_t rdata = 0, next_pc = 0, u_ideleg = 0;
  int illegal = 0, exc_to_u = 0, uret_illegal = 0, irq_req = 0, irq_cause = 0, redirect = 0;
};

struct Coverage {
  long irq[9] = {0}, exc_to_u = 0, exc_not = 0, uret = 0, uret_illegal = 0;
  long csr_ok = 0, csr_illegal = 0, mmio_clear = 0, mmio_peek = 0, mmio_err = 0, usip = 0,
       usip_edges = 0, vectored = 0;
};

struct Bench {
  Vn_top *top;
  nm_hart h[NHART];
  nm_env env[NHART];
  uintc_model uc;
  Coverage cov;
  std::string why;       // first mismatch
  long step = 0;
  // The RTL's outputs in the last step, before its clock edge.
  HartOut got[NHART];
  uint64_t got_usip = 0, got_mrdata = 0, got_merr = 0;
  uint64_t last_usip = 0;     // the lines at the step before (coverage of their edges)

  explicit Bench(Vn_top *t) : top(t) { reset(); }

  void reset() {
    for (int i = 0; i < NHART; i++) {
      h[i] = nm_hart{};
      env[i] = nm_env{};
      env[i].priv = NM_PRIV_U;
    }
    uintc_reset(&uc, NRECV, NHART, HIDW);
    cov = Coverage{};
    last_usip = 0;
    why.clear();
    step = 0;
    clear_inputs();
    top->rst_n = 0;
    top->clk = 0;
    top->eval();
    top->rst_n = 1;
    top->eval();
  }

  void clear_inputs() {
    top->csr_valid = 0;
    top->exc_valid = 0;
    top->uret_valid = 0;
    top->irq_take = 0;
    top->mmio_valid = 0;
  }

  // what[index]: index is the hart, or the receiver for uintc state, or -1.
  void mismatch(const char *what, int index, uint64_t dut, uint64_t model) {
    if (!why.empty())
      return;
    char buf[256];
    snprintf(buf, sizeof buf, "step %ld: %s[%d]: rtl %#" PRIx64 ", model %#" PRIx64,
             step, what, index, dut, model);
    why = buf;
  }
  void expect(const char *what, int index, uint64_t dut, uint64_t model) {
    if (dut != model)
      mismatch(what, index, dut, model);
  }

  // Drive one step: ops per hart and one MMIO op. Returns false on mismatch.
  bool run(const HartOp *ops, const MmioOp &m) {
    // The models' view before the clock: the controller's lines feed uip.
    uint64_t usip = uintc_usip(&uc);
    HartOut want[NHART];
    for (int i = 0; i < NHART; i++) {
      env[i].lines = (env[i].lines & ~NM_USIP) | ((usip >> i) & 1);
      HartOut &w = want[i];
      const HartOp &o = ops[i];
      w.u_ideleg = nm_u_ideleg(&h[i], &env[i]);
      int irq = nm_pending_irq(&h[i], &env[i]);
      w.irq_req = irq >= 0;
      w.irq_cause = irq >= 0 ? irq : 4;   // the RTL's idle value
      switch (o.op) {
      case OP_NOP:
        break;
      case OP_CSR: {
        uint64_t old = 0;
        w.illegal = nm_csr_access(&h[i], &env[i], o.csr, o.csr_op, o.src, o.write, &old) != 0;
        w.rdata = w.illegal ? 0 : old;
        (w.illegal ? cov.csr_illegal : cov.csr_ok)++;
        break;
      }
      case OP_EXC:
        w.exc_to_u = nm_exception_to_u(&h[i], &env[i], (uint64_t)o.cause);
        if (w.exc_to_u) {
          w.next_pc = nm_trap(&h[i], (uint64_t)o.cause, o.pc, o.tval);
          w.redirect = 1;
        }
        (w.exc_to_u ? cov.exc_to_u : cov.exc_not)++;
        break;
      case OP_URET: {
        uint64_t pc = 0;
        w.uret_illegal = nm_uret(&h[i], &env[i], &pc) != 0;
        if (!w.uret_illegal) {
          w.next_pc = pc;
          w.redirect = 1;
        }
        (w.uret_illegal ? cov.uret_illegal : cov.uret)++;
        break;
      }
      case OP_IRQ:
        if (irq >= 0) {
          if (h[i].utvec & 1)
            cov.vectored++;
          w.next_pc = nm_trap(&h[i], NM_CAUSE_INTERRUPT | (uint64_t)irq, o.pc, 0);
          w.redirect = 1;
          cov.irq[irq]++;
        }
        break;
      }
    }
    int merr = 0;
    uint64_t mrdata = 0;
    if (m.valid) {
      mrdata = uintc_mmio(&uc, m.write, m.addr, m.wdata, &merr);
      if (merr)
        cov.mmio_err++;
      // (a read in a receive page that found bits: CLAIM at +0, PENDING at +8)
      if (!m.write && !merr && (m.addr >> 18) == 1 && mrdata)
        ((m.addr & 0xfff) == 0 ? cov.mmio_clear : cov.mmio_peek)++;
    }
    if (usip)
      cov.usip++;
    if (usip != last_usip)
      cov.usip_edges++;
    last_usip = usip;

    // Drive the RTL.
    for (int i = 0; i < NHART; i++) {
      const HartOp &o = ops[i];
      put(top->priv, 2 * i, 2, env[i].priv);
      put(top->mideleg, 64 * i, 64, env[i].mideleg);
      put(top->medeleg, 64 * i, 64, env[i].medeleg);
      put(top->utip, i, 1, (env[i].lines >> 4) & 1);
      put(top->ueip, i, 1, (env[i].lines >> 8) & 1);
      put(top->pc, 64 * i, 64, o.pc);
      put(top->csr_valid, i, 1, o.op == OP_CSR);
      put(top->csr_addr, 12 * i, 12, o.csr);
      put(top->csr_op, 2 * i, 2, (uint64_t)o.csr_op);
      put(top->csr_write, i, 1, (uint64_t)o.write);
      put(top->csr_src, 64 * i, 64, o.src);
      put(top->exc_valid, i, 1, o.op == OP_EXC);
      put(top->exc_cause, 6 * i, 6, (uint64_t)o.cause);
      put(top->exc_tval, 64 * i, 64, o.tval);
      put(top->uret_valid, i, 1, o.op == OP_URET);
      put(top->irq_take, i, 1, o.op == OP_IRQ);
    }
    top->mmio_valid = m.valid;
    top->mmio_write = m.write;
    top->mmio_addr = (uint32_t)(m.addr & 0xfffff);
    top->mmio_wdata = m.wdata;
    top->eval();

    // Combinational outputs.
    expect("usip", -1, top->usip, usip);
    expect("mmio_rdata", -1, top->mmio_rdata, mrdata);
    expect("mmio_err", -1, top->mmio_err, (uint64_t)merr);
    for (int i = 0; i < NHART; i++) {
      const HartOut &w = want[i];
      expect("csr_rdata", i, get(top->csr_rdata, 64 * i, 64), w.rdata);
      expect("csr_illegal", i, get(top->csr_illegal, i, 1), (uint64_t)w.illegal);
      expect("exc_to_u", i, get(top->exc_to_u, i, 1), (uint64_t)w.exc_to_u);
      expect("uret_illegal", i, get(top->uret_illegal, i, 1), (uint64_t)w.uret_illegal);
      expect("irq_req", i, get(top->irq_req, i, 1), (uint64_t)w.irq_req);
      expect("irq_cause", i, get(top->irq_cause, 4 * i, 4), (uint64_t)w.irq_cause);
      expect("redirect", i, get(top->redirect, i, 1), (uint64_t)w.redirect);
      expect("next_pc", i, get(top->next_pc, 64 * i, 64), w.next_pc);
      expect("u_ideleg", i, get(top->u_ideleg, 64 * i, 64), w.u_ideleg);
    }

    for (int i = 0; i < NHART; i++) {
      HartOut &g = got[i];
      g.rdata = get(top->csr_rdata, 64 * i, 64);
      g.next_pc = get(top->next_pc, 64 * i, 64);
      g.illegal = (int)get(top->csr_illegal, i, 1);
      g.exc_to_u = (int)get(top->exc_to_u, i, 1);
      g.uret_illegal = (int)get(top->uret_illegal, i, 1);
      g.irq_req = (int)get(top->irq_req, i, 1);
    }
    got_usip = top->usip;
    got_mrdata = top->mmio_rdata;
    got_merr = top->mmio_err;

    // Clock, then the state.
    top->clk = 1;
    top->eval();
    top->clk = 0;
    top->eval();
    static const char *names[NDBG] = {"ustatus", "uie", "uip", "utvec", "uscratch",
                                      "uepc", "ucause", "utval", "sedeleg", "sideleg"};
    for (int i = 0; i < NHART; i++) {
      const nm_hart &s = h[i];
      uint64_t model[NDBG] = {s.ustatus, s.uie, s.uip, s.utvec, s.uscratch,
                              s.uepc, s.ucause, s.utval, s.sedeleg, s.sideleg};
      for (int k = 0; k < NDBG; k++)
        expect(names[k], i, get(top->dbg_csr, 64 * (NDBG * i + k), 64), model[k]);
    }
    for (int r = 0; r < NRECV; r++) {
      expect("uintc active", r, get(top->dbg_active, r, 1), uc.active[r]);
      expect("uintc hartid", r, get(top->dbg_hartid, HIDW * r, HIDW), uc.hartid[r]);
      expect("uintc pending", r, get(top->dbg_pending, 64 * r, 64), uc.pending[r]);
    }
    step++;
    return why.empty();
  }
};

// ---- random stimulus ----
static const uint32_t good_csrs[] = {0x000, 0x004, 0x005, 0x040, 0x041,
                                     0x042, 0x043, 0x044, 0x102, 0x103};
static const uint32_t bad_csrs[] = {0x001, 0x003, 0x041 | 0x300, 0x045, 0x100, 0x104,
                                    0x105, 0x141, 0x300, 0x303, 0xc00, 0x7ff};

static uint64_t random_value() {
  switch (below(6)) {
  case 0: return rnd();
  case 1: return ~0ULL;
  case 2: return rnd() & 0x1ff;                  // the U interrupt bits' region
  case 3: return 1ULL << (4 * below(3));         // one of USI/UTI/UEI
  case 4: return NM_USTATUS_UIE | (chance(2) ? NM_USTATUS_UPIE : 0);
  default: return (rnd() & ~0xfULL) | below(4);  // a utvec: every MODE
  }
}

static uint64_t random_deleg(uint64_t interesting) {
  switch (below(4)) {
  case 0: return rnd();
  case 1: return interesting;
  case 2: return rnd() & interesting;
  default: return ~0ULL;
  }
}

static HartOp random_op() {
  HartOp o;
  o.pc = rnd();
  int k = (int)below(100);
  if (k < 45) {
    o.op = OP_CSR;
    o.csr = chance(5) ? (chance(2) ? bad_csrs[below(12)] : (uint32_t)below(4096))
                      : good_csrs[below(10)];
    o.csr_op = chance(40) ? 0 : 1 + (int)below(3);
    o.write = o.csr_op == NM_CSRRW ? 1 : !chance(4);
    o.src = random_value();
  } else if (k < 60) {
    o.op = OP_EXC;
    o.cause = chance(4) ? (int)below(64) : (int)below(16);
    o.tval = rnd();
  } else if (k < 70) {
    o.op = OP_URET;
  } else if (k < 92) {
    o.op = OP_IRQ;   // taken only if requested; sometimes it is not
  }
  return o;
}

// An access to the controller half the time, from the generator the QEMU
// replay uses too (hw/model/uintc_vectors.c), over the whole 1 MiB window,
// misaligned addresses included.
static uintc_vectors mmio_gen;

static MmioOp random_mmio() {
  MmioOp m;
  if (chance(2))
    return m;
  uintc_access a = uintc_vectors_access(&mmio_gen);
  m.valid = true;
  m.write = a.write != 0;
  m.addr = a.addr;
  m.wdata = a.wdata;
  return m;
}

static bool run_seed(Bench &b, uint64_t seed, long steps, std::string &why) {
  rng_state = seed * 0x9E3779B97F4A7C15ULL + 1;
  mmio_gen = uintc_vectors{seed * 0xD1B54A32D192ED03ULL + 1, NRECV, 1ULL << 20, 1};
  b.reset();
  for (long s = 0; s < steps; s++) {
    for (int i = 0; i < NHART; i++) {
      nm_env &e = b.env[i];
      if (chance(8))
        e.priv = chance(4) ? (chance(3) ? NM_PRIV_M : NM_PRIV_S) : NM_PRIV_U;
      if (chance(500)) {
        e.mideleg = random_deleg(NM_U_INTS);
        e.medeleg = random_deleg(NM_U_EXCS);
      }
      if (chance(16))
        e.lines ^= NM_UTIP;
      if (chance(16))
        e.lines ^= NM_UEIP;
    }
    HartOp ops[NHART];
    for (int i = 0; i < NHART; i++)
      ops[i] = random_op();
    if (!b.run(ops, random_mmio())) {
      why = b.why;
      return false;
    }
  }
  // Stimulus that never reached a case would prove nothing about it.
  const Coverage &c = b.cov;
  const struct { const char *name; long n; } need[] = {
    {"USI taken", c.irq[NM_IRQ_USI]}, {"UTI taken", c.irq[NM_IRQ_UTI]},
    {"UEI taken", c.irq[NM_IRQ_UEI]}, {"vectored", c.vectored},
    {"exception to U", c.exc_to_u}, {"exception not to U", c.exc_not},
    {"uret", c.uret}, {"illegal uret", c.uret_illegal}, {"csr ok", c.csr_ok},
    {"csr illegal", c.csr_illegal}, {"CLAIM read-clear", c.mmio_clear},
    {"PENDING peek", c.mmio_peek},
    {"mmio error", c.mmio_err}, {"usip raised", c.usip}, {"usip edge", c.usip_edges},
  };
  for (const auto &n : need)
    if (n.n == 0) {
      why = std::string("coverage: no ") + n.name;
      return false;
    }
  printf("INFO hw/diff-seed-%" PRIu64 ": irq USI %ld UTI %ld UEI %ld (vectored %ld), "
         "exc to U %ld, uret %ld, csr ok %ld illegal %ld, claims %ld, peeks %ld, mmio errors %ld, "
         "usip steps %ld (edges %ld)\n",
         seed, c.irq[0], c.irq[4], c.irq[8], c.vectored, c.exc_to_u, c.uret, c.csr_ok,
         c.csr_illegal, c.mmio_clear, c.mmio_peek, c.mmio_err, c.usip, c.usip_edges);
  return true;
}

// ---- directed cases: hart 0 only, absolute expectations as well ----
struct Directed {
  Bench &b;
  bool ok = true;
  std::string why;
  explicit Directed(Bench &bench) : b(bench) { b.reset(); }

  void env(unsigned priv, uint64_t mideleg, uint64_t medeleg, uint64_t lines = 0) {
    b.env[0].priv = priv;
    b.env[0].mideleg = mideleg;
    b.env[0].medeleg = medeleg;
    b.env[0].lines = lines;
  }
  // One op on hart 0 (others idle); the RTL's outputs are then in b.got.
  void step(const HartOp &o, MmioOp m = MmioOp()) {
    HartOp ops[NHART];
    ops[0] = o;
    if (!b.run(ops, m) && ok) {
      ok = false;
      why = b.why;
    }
  }
  uint64_t csr(uint32_t addr, int op, uint64_t src) {
    HartOp o;
    o.op = OP_CSR;
    o.csr = addr;
    o.csr_op = op;
    o.write = 1;
    o.src = src;
    step(o);
    return b.got[0].rdata;
  }
  uint64_t read(uint32_t addr) {
    HartOp o;
    o.op = OP_CSR;
    o.csr = addr;
    o.csr_op = NM_CSRRS;
    o.write = 0;
    step(o);
    return b.got[0].rdata;
  }
  void want(const char *what, uint64_t got, uint64_t expected) {
    if (got != expected && ok) {
      ok = false;
      char buf[200];
      snprintf(buf, sizeof buf, "%s: got %#" PRIx64 ", want %#" PRIx64, what, got, expected);
      why = buf;
    }
  }
};

static void directed_sideleg(Directed &d) {
  d.env(NM_PRIV_S, NM_USIP | (1ULL << 5), 0);       // STIP in mideleg: not a U bit
  d.csr(NM_CSR_SIDELEG, NM_CSRRW, ~0ULL);
  d.want("sideleg", d.b.h[0].sideleg, NM_USIP);
  d.env(NM_PRIV_U, NM_USIP | (1ULL << 5), 0, NM_UTIP | NM_UEIP);
  d.csr(NM_CSR_UIE, NM_CSRRW, NM_U_INTS);
  d.csr(NM_CSR_USTATUS, NM_CSRRW, NM_USTATUS_UIE);
  d.want("uie", d.read(NM_CSR_UIE), NM_USIP);
  d.want("uip", d.read(NM_CSR_UIP), 0);
  d.want("irq_req", d.b.got[0].irq_req, 0);
  d.env(NM_PRIV_U, 0, 0);                            // M takes USI back
  d.csr(NM_CSR_UIP, NM_CSRRW, NM_USIP);              // not writable now
  d.want("usip", d.b.h[0].uip, 0);
}

static void directed_utvec_modes(Directed &d) {
  d.env(NM_PRIV_S, NM_U_INTS, 0);
  d.csr(NM_CSR_SIDELEG, NM_CSRRW, NM_U_INTS);
  d.env(NM_PRIV_U, NM_U_INTS, 0);
  d.csr(NM_CSR_UTVEC, NM_CSRRW, 0x80002001);
  d.csr(NM_CSR_UTVEC, NM_CSRRW, 0x90004002);
  d.want("utvec mode 2 ignored", d.read(NM_CSR_UTVEC), 0x80002001);
  d.csr(NM_CSR_UTVEC, NM_CSRRW, 0x90004003);
  d.want("utvec mode 3 ignored", d.read(NM_CSR_UTVEC), 0x80002001);
  d.csr(NM_CSR_UIE, NM_CSRRW, NM_UTIP);
  d.csr(NM_CSR_USTATUS, NM_CSRRW, NM_USTATUS_UIE);
  d.env(NM_PRIV_U, NM_U_INTS, 0, NM_UTIP);
  HartOp take;
  take.op = OP_IRQ;
  take.pc = 0x80000101;
  d.step(take);
  d.want("vectored UTI pc", d.b.got[0].next_pc, 0x80002010);
  d.want("uepc", d.b.h[0].uepc, 0x80000100);
}

static void directed_uret_upie0(Directed &d) {
  d.env(NM_PRIV_U, 0, 0);
  d.csr(NM_CSR_UEPC, NM_CSRRW, 0x80000400);
  d.csr(NM_CSR_USTATUS, NM_CSRRW, NM_USTATUS_UIE);   // UIE 1, UPIE 0
  HartOp u;
  u.op = OP_URET;
  d.step(u);
  d.want("uret pc", d.b.got[0].next_pc, 0x80000400);
  d.want("ustatus", d.read(NM_CSR_USTATUS), NM_USTATUS_UPIE);
  d.env(NM_PRIV_S, 0, 0);
  d.step(u);
  d.want("uret from S illegal", d.b.got[0].uret_illegal, 1);
}

static void directed_stale_sedeleg(Directed &d) {
  d.env(NM_PRIV_S, 0, 1ULL << 8);
  d.csr(NM_CSR_SEDELEG, NM_CSRRW, ~0ULL);
  d.want("sedeleg", d.b.h[0].sedeleg, 1ULL << 8);
  d.env(NM_PRIV_U, 0, 0);                            // M un-delegates ecall-from-U
  d.csr(NM_CSR_UTVEC, NM_CSRRW, 0x80003001);
  HartOp e;
  e.op = OP_EXC;
  e.cause = 8;
  e.pc = 0x80000200;
  d.step(e);
  d.want("stale: not to U", d.b.got[0].exc_to_u, 0);
  d.env(NM_PRIV_U, 0, 1ULL << 8);
  d.step(e);
  d.want("to U", d.b.got[0].exc_to_u, 1);
  d.want("exception pc (never vectored)", d.b.got[0].next_pc, 0x80003000);
  d.want("ucause", d.b.h[0].ucause, 8);
}

static void directed_uintc(Directed &d) {
  d.env(NM_PRIV_U, NM_U_INTS, 0);
  auto mmio = [&](bool write, uint64_t addr, uint64_t data) {
    MmioOp m;
    m.valid = true;
    m.write = write;
    m.addr = addr;
    m.wdata = data;
    d.step(HartOp(), m);
    return d.b.got_mrdata;
  };
  mmio(true, UINTC_CTRL(3), 1);                     // receiver 3 -> hart 1
  mmio(true, UINTC_CTRL(3), NHART);                 // no such hart: refused, kept
  d.want("HART refused", d.b.got_merr, 1);
  d.want("HART kept", mmio(false, UINTC_CTRL(3), 0), 1);
  mmio(true, UINTC_SEND_PAGE(3), 5);                // SEND vector 5
  d.want("inactive: no usip", d.b.got_usip, 0);
  mmio(true, UINTC_CTRL(3) + 8, 1);                 // ACTIVE
  d.step(HartOp());
  d.want("usip hart 1", d.b.got_usip, 2);
  d.want("PENDING peek", mmio(false, UINTC_RECV_PAGE(3) + 8, 0), 1ULL << 5);
  d.step(HartOp());
  d.want("usip after a peek", d.b.got_usip, 2);
  mmio(true, UINTC_RECV_PAGE(3), 1);                // CLAIM is read-only
  d.want("CLAIM write refused", d.b.got_merr, 1);
  d.want("CLAIM", mmio(false, UINTC_RECV_PAGE(3), 0), 1ULL << 5);
  d.step(HartOp());
  d.want("usip after the claim", d.b.got_usip, 0);
  d.want("CLAIM again", mmio(false, UINTC_RECV_PAGE(3), 0), 0);
  d.want("send page reads 0", mmio(false, UINTC_SEND_PAGE(3) + 0x10, 0), 0);
  d.want("send page read no error", d.b.got_merr, 0);
}

int main(int argc, char **argv) {
  Verilated::commandArgs(argc, argv);
  long steps = argc > 1 ? atol(argv[1]) : 200000;
  std::vector<uint64_t> seeds;
  for (int i = 2; i < argc; i++)
    seeds.push_back(strtoull(argv[i], nullptr, 0));
  if (seeds.empty())
    seeds = {1, 2, 3, 4};

  Vn_top top;
  Bench b(&top);
  int passed = 0, failed = 0;
  auto report = [&](const std::string &name, bool ok, const std::string &why) {
    if (ok) {
      printf("PASS hw/%s\n", name.c_str());
      passed++;
    } else {
      printf("FAIL hw/%s: %s\n", name.c_str(), why.c_str());
      failed++;
    }
    fflush(stdout);
  };
  for (uint64_t seed : seeds) {
    std::string why;
    bool ok = run_seed(b, seed, steps, why);
    report("diff-seed-" + std::to_string(seed), ok, why);
  }
  const struct { const char *name; void (*fn)(Directed &); } cases[] = {
    {"directed-sideleg-outside-mideleg", directed_sideleg},
    {"directed-utvec-mode-2-3", directed_utvec_modes},
    {"directed-uret-upie0", directed_uret_upie0},
    {"directed-stale-sedeleg", directed_stale_sedeleg},
    {"directed-uintc-read-clear", directed_uintc},
  };
  for (const auto &c : cases) {
    Directed d(b);
    c.fn(d);
    report(c.name, d.ok, d.why);
  }
  printf("%d passed, %d failed\n", passed, failed);
  top.final();
  return failed ? 1 : 0;
}
