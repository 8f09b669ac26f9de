// ucsr: one hart's N-extension state (the RISC-V user-level interrupt CSRs)
// with its trap-entry and uret logic. The rules are kernel/nmodel.c's, line for
// line; hw/tb/tb_diff.cpp checks the two agree after every clock.
//
// The hart around it says, each cycle, at most one of: a CSR instruction, an
// exception, a uret, or "take the requested interrupt" (if several are
// raised, exception > interrupt > uret > CSR: the exception wins because
// the instruction never completes, and an interrupt is taken before the
// instruction at pc). Outputs are combinational from the current state and
// inputs; the state changes at the clock edge.
//
// State kept (FFs): UIE/UPIE; uie as 3 bits (USIE, UTIE, UEIE); the software
// USIP bit; utvec (a write with a reserved MODE is ignored); uscratch; uepc[63:1];
// ucause; utval; sedeleg as the 11 exception bits U can own; sideleg as 3 bits.
//
// Planted bugs for the testbench's self-check (never define these otherwise):
//   BROKEN_VECTOR   vectored interrupts jump to BASE + cause, not BASE + 4*cause
//   BROKEN_SIDELEG  sideleg is not masked by mideleg when written
module ucsr (
    input  logic        clk,
    input  logic        rst_n,
    // The rest of the hart: privilege (0 U, 1 S, 3 M), M's delegation, lines.
    input  logic [ 1:0] priv,
    input  logic [63:0] mideleg,
    input  logic [63:0] medeleg,
    input  logic        usip_ext,   // from the user-interrupt controller
    input  logic        utip,
    input  logic        ueip,
    // The instruction trapping or interrupted. Bit 0 is unused: uepc keeps
    // bit 0 at 0 (instructions are 2-byte aligned with C).
    /* verilator lint_off UNUSEDSIGNAL */
    input  logic [63:0] pc,
    /* verilator lint_on UNUSEDSIGNAL */
    // A CSR instruction: op 1 rw, 2 rs, 3 rc; write = rw, or rs1 != x0.
    input  logic        csr_valid,
    input  logic [11:0] csr_addr,
    input  logic [ 1:0] csr_op,
    input  logic        csr_write,
    input  logic [63:0] csr_src,
    output logic [63:0] csr_rdata,  // 0 unless the access is legal
    output logic        csr_illegal,
    // An exception raised by the instruction at pc.
    input  logic        exc_valid,
    input  logic [ 5:0] exc_cause,
    input  logic [63:0] exc_tval,
    output logic        exc_to_u,   // delegated: handled here, in U
    // uret.
    input  logic        uret_valid,
    output logic        uret_illegal,  // not in U-mode
    // Interrupts: the request, and the hart's decision to take it.
    output logic        irq_req,
    output logic [ 3:0] irq_cause,
    input  logic        irq_take,
    // Where the hart goes next, when redirect is set.
    output logic        redirect,
    output logic [63:0] next_pc,
    // Interrupts that are U's: the S-level logic must not take them.
    output logic [63:0] u_ideleg,
    // Architectural state, for the testbench.
    output logic [63:0] dbg_ustatus,
    output logic [63:0] dbg_uie,
    output logic [63:0] dbg_uip,      // the software bits only
    output logic [63:0] dbg_utvec,
    output logic [63:0] dbg_uscratch,
    output logic [63:0] dbg_uepc,
    output logic [63:0] dbg_ucause,
    output logic [63:0] dbg_utval,
    output logic [63:0] dbg_sedeleg,
    output logic [63:0] dbg_sideleg
);
  localparam logic [1:0] PRIV_U = 2'd0;
  localparam logic [15:0] U_EXCS = 16'hB1FF;  // as NM_U_EXCS

  // The three user interrupts sit at bits 0, 4, 8 of uie/uip/sideleg/mideleg.
  function automatic logic [63:0] spread3(input logic [2:0] b);
    spread3 = 64'(b[0]) | (64'(b[1]) << 4) | (64'(b[2]) << 8);
  endfunction
  // Takes a whole CSR value and keeps the three U bits: the rest are unused
  // on purpose.
  /* verilator lint_off UNUSEDSIGNAL */
  function automatic logic [2:0] pick3(input logic [63:0] v);
    pick3 = {v[8], v[4], v[0]};
  endfunction
  /* verilator lint_on UNUSEDSIGNAL */

  // ---- state ----
  logic        st_uie, st_upie;
  logic [ 2:0] uie_q;
  logic        usip_q;
  logic [63:0] utvec_q;
  logic [63:0] uscratch_q, ucause_q, utval_q;
  logic [63:1] uepc_q;
  logic [15:0] sedeleg_q;
  logic [ 2:0] sideleg_q;

  // ---- views ----
  logic [ 2:0] ideleg;  // sideleg & mideleg
  logic [ 2:0] uip_vis;
  logic [63:0] uepc_full;
  assign ideleg    = sideleg_q & pick3(mideleg);
  assign uip_vis   = {ueip, utip, usip_q | usip_ext} & ideleg;
  assign uepc_full = {uepc_q, 1'b0};
  assign u_ideleg  = spread3(ideleg);

  // ---- CSR read and access check ----
  logic        known;
  logic [63:0] rval;
  always_comb begin
    known = 1'b1;
    rval  = 64'b0;
    unique case (csr_addr)
      12'h000: rval = (64'(st_upie) << 4) | 64'(st_uie);
      12'h004: rval = spread3(uie_q & ideleg);
      12'h005: rval = utvec_q;
      12'h040: rval = uscratch_q;
      12'h041: rval = uepc_full;
      12'h042: rval = ucause_q;
      12'h043: rval = utval_q;
      12'h044: rval = spread3(uip_vis);
      12'h102: rval = 64'(sedeleg_q);
      12'h103: rval = spread3(sideleg_q);
      default: known = 1'b0;
    endcase
  end
  logic csr_ok;
  assign csr_ok      = known && priv >= csr_addr[9:8] && csr_op != 2'd0;
  assign csr_illegal = csr_valid && !csr_ok;
  assign csr_rdata   = (csr_valid && csr_ok) ? rval : 64'b0;

  // The value written: for uip, only the software USIP takes part (as mip.SEIP).
  logic [63:0] rmw_old, wval;
  always_comb begin
    rmw_old = rval;
    if (csr_addr == 12'h044) rmw_old[0] = usip_q & ideleg[0];
    unique case (csr_op)
      2'd1:    wval = csr_src;
      2'd2:    wval = rmw_old | csr_src;
      default: wval = rmw_old & ~csr_src;
    endcase
  end

  // ---- interrupt request: in U, UIE set; UEI > USI > UTI ----
  logic [2:0] pend;  // {UEI, UTI, USI}
  assign pend      = (priv == PRIV_U && st_uie) ? (uip_vis & uie_q) : 3'b0;
  assign irq_req   = |pend;
  assign irq_cause = pend[2] ? 4'd8 : pend[0] ? 4'd0 : 4'd4;

  // ---- events, in priority order ----
  logic [63:0] sedeleg_eff;
  logic        irq_fire, uret_fire, csr_fire;
  assign sedeleg_eff  = 64'(sedeleg_q) & medeleg;
  assign exc_to_u     = exc_valid && priv == PRIV_U && sedeleg_eff[exc_cause];
  assign irq_fire     = !exc_valid && irq_take && irq_req;
  assign uret_illegal = uret_valid && priv != PRIV_U;
  assign uret_fire    = !exc_valid && !irq_fire && uret_valid && priv == PRIV_U;
  assign csr_fire     = !exc_valid && !irq_fire && !uret_valid && csr_valid && csr_ok
                        && csr_write;

  // ---- next pc ----
  logic [63:0] base, vec_off;
`ifdef BROKEN_VECTOR
  assign vec_off = 64'(irq_cause);
`else
  assign vec_off = 64'(irq_cause) << 2;
`endif
  assign base = {utvec_q[63:2], 2'b00};
  assign redirect = exc_to_u || irq_fire || uret_fire;
  always_comb begin
    if (exc_to_u) next_pc = base;
    else if (irq_fire) next_pc = utvec_q[0] ? base + vec_off : base;
    else if (uret_fire) next_pc = uepc_full;
    else next_pc = 64'b0;
  end

  // ---- state update ----
  always_ff @(posedge clk or negedge rst_n) begin
    if (!rst_n) begin
      st_uie     <= 1'b0;
      st_upie    <= 1'b0;
      uie_q      <= 3'b0;
      usip_q     <= 1'b0;
      utvec_q    <= 64'b0;
      uscratch_q <= 64'b0;
      uepc_q     <= 63'b0;
      ucause_q   <= 64'b0;
      utval_q    <= 64'b0;
      sedeleg_q  <= 16'b0;
      sideleg_q  <= 3'b0;
    end else if (exc_to_u || irq_fire) begin
      st_upie  <= st_uie;
      st_uie   <= 1'b0;
      uepc_q   <= pc[63:1];
      ucause_q <= exc_to_u ? 64'(exc_cause) : {1'b1, 59'b0, irq_cause};
      utval_q  <= exc_to_u ? exc_tval : 64'b0;
    end else if (uret_fire) begin
      st_uie  <= st_upie;
      st_upie <= 1'b1;
    end else if (csr_fire) begin
      unique case (csr_addr)
        12'h000: begin
          st_uie  <= wval[0];
          st_upie <= wval[4];
        end
        12'h004: uie_q <= (uie_q & ~ideleg) | (pick3(wval) & ideleg);
        12'h005: if (!wval[1]) utvec_q <= wval;   // reserved MODE 2, 3: ignored
        12'h040: uscratch_q <= wval;
        12'h041: uepc_q <= wval[63:1];
        12'h042: ucause_q <= wval;
        12'h043: utval_q <= wval;
        12'h044: if (ideleg[0]) usip_q <= wval[0];
        12'h102: sedeleg_q <= wval[15:0] & medeleg[15:0] & U_EXCS;
`ifdef BROKEN_SIDELEG
        12'h103: sideleg_q <= pick3(wval);
`else
        12'h103: sideleg_q <= pick3(wval) & pick3(mideleg);
`endif
        default: ;
      endcase
    end
  end

  assign dbg_ustatus  = (64'(st_upie) << 4) | 64'(st_uie);
  assign dbg_uie      = spread3(uie_q);
  assign dbg_uip      = 64'(usip_q);
  assign dbg_utvec    = utvec_q;
  assign dbg_uscratch = uscratch_q;
  assign dbg_uepc     = uepc_full;
  assign dbg_ucause   = ucause_q;
  assign dbg_utval    = utval_q;
  assign dbg_sedeleg  = 64'(sedeleg_q);
  assign dbg_sideleg  = spread3(sideleg_q);
endmodule
