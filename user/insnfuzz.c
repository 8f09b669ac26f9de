// insnfuzz: random SYSTEM instructions (CSR accesses to every kind of CSR
// number, uret, wfi, ebreak, the privileged and reserved encodings) executed
// in user mode, one after another, each in a child process that may die of
// it. The parent writes a trace line for each: what the instruction left in
// the seven temporaries, or that it killed the child.
//
//   insnfuzz [-n N] [-s SEED]   the first N instructions (default: all the build
//                               made), registers from SEED (default 1)
//
// Two uses (scripts/test.sh):
//   - robustness: whatever a process executes, it dies alone and the kernel
//     goes on (the parent checks that every child ended and that the kernel's
//     process and memory counters are back);
//   - one definition of N: on stock QEMU the kernel emulates the u-CSRs and
//     uret (kernel/uintr_emul.c over kernel/nmodel.c), on our QEMU the hart
//     executes them (hw/qemu), and the two traces must be the same line for
//     line. utrace holds the two to the same well-formed operations;
//     insnfuzz adds the encodings around them: CSR numbers next to the
//     u-CSRs, x0 as source or destination, the immediate forms, reserved
//     funct3 values, uret with stray bits, S-, H- and M-mode CSRs.
//
// How an instruction runs: the instructions are made at build time
// (scripts/insnfuzz-gen.py, from INSNFUZZ_SEED in user/user.mk) as slots in
// this program's text, each the instruction and a return; programs are W^X,
// so none could be written as it runs. The child loads t0-t6 with random
// values (from -s SEED), calls the slot, and stores t0-t6 again. Before each
// instruction it sends the parent a record saying it is about to run it, and
// one after with the registers; a child that dies leaves the first without
// the second. Records go through a pipe that the parent puts on the child's
// descriptor 2. rd and rs1 are always temporaries (or x0), so nothing the C
// code relies on changes.
//
// Left out on purpose: ecall (random system calls are sysfuzz's), and the
// counter CSRs 0xC00-0xCFF (their values differ from run to run).
#include "ulib.h"
#include "utest.h"

#define NTEMPS 7

static const uint8_t temps[NTEMPS] = {5, 6, 7, 28, 29, 30, 31};   // t0-t2, t3-t6

struct insn {
  uint32_t word;
  uint64_t in[NTEMPS];         // t0-t6 before it
};

struct record {
  uint32_t k;                  // which instruction
  uint32_t done;               // 0: about to run it; 1: it ran
  uint64_t out[NTEMPS];        // t0-t6 after it (done only)
};

// ---- instruction k and the registers it starts with, from (seed, k) alone ----

static uint64_t mix(uint64_t x) {   // splitmix64's finalizer
  x ^= x >> 30;
  x *= 0xbf58476d1ce4e5b9ULL;
  x ^= x >> 27;
  x *= 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

struct rng {
  uint64_t s;
};

static uint64_t next(struct rng *r) { return mix(r->s += 0x9e3779b97f4a7c15ULL); }
static uint32_t below(struct rng *r, uint32_t n) { return (uint32_t)(next(r) % n); }

static uint64_t value(struct rng *r) {
  switch (below(r, 6)) {
  case 0: return 0;
  case 1: return ~0ULL;
  case 2: {                                 // one bit, but never an address in this
    uint32_t bit = below(r, 44);             // program (12-31: where its image, heap
    return 1ULL << (bit < 12 ? bit : bit + 20);   // and stack are), so that a utvec or
  }                                          // uepc written here cannot land in its code
  case 3: return below(r, 32);               // small: the low (UIE, USIE, mode) bits
  default: return next(r);
  }
}

extern const uint32_t insnfuzz_slots[];      // scripts/insnfuzz-gen.py: 2 words a slot
extern const uint32_t insnfuzz_nslots, insnfuzz_code_seed;

// Instruction k and the registers it starts with (seed and k alone decide them).
static struct insn make_insn(uint64_t seed, uint32_t k) {
  struct rng r = {mix(seed) ^ mix(k + 1)};
  struct insn in;
  in.word = insnfuzz_slots[2 * k];
  for (int i = 0; i < NTEMPS; i++)
    in.in[i] = value(&r);
  return in;
}

// ---- the child: run instructions from `from` on, until one kills it ----

static void run_one(uint32_t k, const struct insn *in, uint64_t out[NTEMPS]) {
  register const uint64_t *src __asm__("a0") = in->in;
  register uint64_t *dst __asm__("a1") = out;
  register const uint32_t *fn __asm__("a2") = &insnfuzz_slots[2 * k];
  __asm__ volatile("ld t0, 0(a0)\n ld t1, 8(a0)\n ld t2, 16(a0)\n ld t3, 24(a0)\n"
                   "ld t4, 32(a0)\n ld t5, 40(a0)\n ld t6, 48(a0)\n"
                   "jalr ra, 0(a2)\n"
                   "sd t0, 0(a1)\n sd t1, 8(a1)\n sd t2, 16(a1)\n sd t3, 24(a1)\n"
                   "sd t4, 32(a1)\n sd t5, 40(a1)\n sd t6, 48(a1)\n"
                   : "+r"(src), "+r"(dst), "+r"(fn)
                   :
                   : "ra", "t0", "t1", "t2", "t3", "t4", "t5", "t6", "memory");
}

static void send_record(const struct record *rec) {
  if (write(2, rec, sizeof *rec) != (long)sizeof *rec)
    exit(2);
}

static int child(uint64_t seed, uint32_t from, uint32_t n) {
  for (uint32_t k = from; k < n; k++) {
    struct insn in = make_insn(seed, k);
    struct record rec = {k, 0, {0}};
    send_record(&rec);
    run_one(k, &in, rec.out);
    rec.done = 1;
    send_record(&rec);
  }
  return 0;
}

// ---- the parent ----

static uint32_t n_insns;
static uint64_t seed = 1;

// Start a child at instruction `from` with its descriptor 2 on the pipe's
// write end, and give the parent's own 2 back.
static int start_child(uint32_t from, int pipe_w) {
  char s_seed[24], s_from[16], s_n[16];
  snprintf(s_seed, sizeof s_seed, "%lu", (unsigned long)seed);
  snprintf(s_from, sizeof s_from, "%u", from);
  snprintf(s_n, sizeof s_n, "%u", n_insns);
  const char *argv[] = {"insnfuzz", "--child", s_seed, s_from, s_n, 0};
  int saved = dup(2);
  close(2);
  if (dup(pipe_w) != 2)
    return -1;
  int pid = spawn("insnfuzz", argv);
  close(2);
  dup(saved);
  close(saved);
  return pid;
}

static int read_record(int fd, struct record *rec) {
  char *p = (char *)rec;
  long got = 0;
  while (got < (long)sizeof *rec) {
    long r = read(fd, p + got, (long)sizeof *rec - got);
    if (r <= 0)
      return got == 0 ? 0 : -1;
    got += r;
  }
  return 1;
}

static uint64_t fnv(const uint64_t *v, int n) {
  uint64_t h = 0xcbf29ce484222325ULL;
  for (int i = 0; i < n; i++)
    for (int b = 0; b < 64; b += 8)
      h = (h ^ ((v[i] >> b) & 0xff)) * 0x100000001b3ULL;
  return h;
}

int main(int argc, char **argv) {
  utest_prog = "insnfuzz";
  if (argc == 5 && strcmp(argv[1], "--child") == 0)
    return child((uint64_t)atoi(argv[2]), (uint32_t)atoi(argv[3]), (uint32_t)atoi(argv[4]));
  n_insns = insnfuzz_nslots;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (strcmp(argv[i], "-n") == 0)
      n_insns = (uint32_t)atoi(argv[i + 1]) < insnfuzz_nslots ? (uint32_t)atoi(argv[i + 1])
                                                              : insnfuzz_nslots;
    else if (strcmp(argv[i], "-s") == 0)
      seed = (uint64_t)atoi(argv[i + 1]);
  }
  long objs0, bytes0, procs0 = kstat(KSTAT_NPROCS);
  utest_kmalloc(&objs0, &bytes0);
  uint32_t ran = 0, killed = 0, children = 0, bad_ends = 0, k = 0;
  while (k < n_insns) {
    int p[2];
    if (pipe(p) < 0) {
      printf("insnfuzz: FAIL pipe\n");
      return 1;
    }
    int pid = start_child(k, p[1]);
    close(p[1]);
    if (pid < 0) {
      printf("insnfuzz: FAIL spawn: %d\n", pid);
      return 1;
    }
    children++;
    struct record rec;
    int pending = 0;                  // an instruction announced, not yet done
    uint32_t last = k;
    int r;
    while ((r = read_record(p[0], &rec)) == 1) {
      last = rec.k;
      pending = !rec.done;
      if (rec.done) {
        struct insn in = make_insn(seed, rec.k);
        // rd's value, and a hash of all seven: a write anywhere else shows
        uint32_t rd = (in.word >> 7) & 31;
        uint64_t rdv = 0;
        for (int i = 0; i < NTEMPS; i++)
          if (temps[i] == rd)
            rdv = rec.out[i];
        printf("insnfuzz: %u %08x rd=%lx regs=%016lx\n", rec.k, in.word, (unsigned long)rdv,
               (unsigned long)fnv(rec.out, NTEMPS));
        ran++;
      }
    }
    close(p[0]);
    int status = 0;
    wait(pid, &status);
    if (r == 0 && pending && status == -1) {
      printf("insnfuzz: %u %08x killed\n", last, make_insn(seed, last).word);
      killed++;
      k = last + 1;
    } else if (r == 0 && !pending && status == 0 && last + 1 >= n_insns) {
      k = n_insns;                    // the child ran to the end
    } else {
      printf("insnfuzz: FAIL child from %u ended with status %d after instruction %u "
             "(record %s)\n", k, status, last, r < 0 ? "cut short" : pending ? "open" : "closed");
      bad_ends++;
      k = last + 1;
    }
  }
  printf("insnfuzz: %u instructions (made from seed %u), registers from seed %lu: %u ran, "
         "%u killed their process, %u processes\n", n_insns, insnfuzz_code_seed,
         (unsigned long)seed, ran, killed, children);
  check("every-child-ended-as-its-records-say", bad_ends, 0);
  check("every-instruction-accounted-for", ran + killed + bad_ends >= n_insns, 1);
  // Both outcomes must be common, or the run tested little (the build makes
  // nine in ten instructions u-CSR accesses, most of which a process survives).
  check("most-instructions-ran", ran >= n_insns / 2, 1);
  check("some-instructions-killed", killed >= n_insns / 40, 1);
  check("processes-back", kstat(KSTAT_NPROCS | KSTAT_QUIET), procs0);
  utest_check_kmalloc_baseline(objs0, bytes0);
  return utest_summary() ? 1 : 0;
}
