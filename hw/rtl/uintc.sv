// uintc: the user-interrupt controller. NRECV receivers, each
// {active, hartid, pending[63:0]}; a hart's USIP line is raised while some
// active receiver that names it has a pending bit. Senders post by writing a
// receiver's SEND register; the receiving thread's handler reads CLAIM, which
// returns the bits and clears them (so each post is seen once). The kernel
// writes HART and ACTIVE on every switch. The C model is
// hw/model/uintc_model.c; hw/tb/tb_diff.cpp compares the two.
//
// MMIO: a 1 MiB window (20 address bits), 64-bit registers, 8-byte aligned,
// the register map of the QEMU device (hw/qemu/0002-hw-intc-coral-uintc.patch),
// which the kernel's driver (kernel/uintc.c) programs: a page per receiver
// for senders and one for the receiver, so that either can be mapped into a
// process alone, and the control words together for the kernel.
//   0x00000 + r * 4 KiB        send page
//     +0x0  SEND     W: pending |= 1 << wdata[5:0]      R: 0
//                    (any other aligned read in a send page: 0 too, no error)
//   0x40000 + r * 4 KiB        receive page
//     +0x0  CLAIM    R: pending, then 0                  W: error
//     +0x8  PENDING  R: pending (kept)                   W: pending |= wdata
//   0x80000 + r * 16           control words
//     +0x0  HART     W: hartid = wdata if wdata < NHART, else error (kept)
//                    R: hartid
//     +0x8  ACTIVE   W: active = wdata[0]                R: active
// A misaligned address, a receiver >= NRECV, an offset with no register or a
// write that is refused sets mmio_err: a read returns 0 and a write does
// nothing.
//
// Planted bug for the testbench's self-check (never define it otherwise):
//   BROKEN_READCLEAR   reading CLAIM does not clear
module uintc #(
    parameter int NRECV = 16,   // at most 64
    parameter int NHART = 4,
    parameter int HIDW  = 8     // hartid bits kept
) (
    input  logic                  clk,
    input  logic                  rst_n,
    input  logic                  mmio_valid,
    input  logic                  mmio_write,
    input  logic [          19:0] mmio_addr,
    input  logic [          63:0] mmio_wdata,
    output logic [          63:0] mmio_rdata,
    output logic                  mmio_err,
    output logic [     NHART-1:0] usip,
    // Architectural state, for the testbench (flat: receiver r at r*width).
    output logic [     NRECV-1:0] dbg_active,
    output logic [NRECV*HIDW-1:0] dbg_hartid,
    output logic [  NRECV*64-1:0] dbg_pending
);
  logic [     NRECV-1:0] active_q;
  logic [NRECV*HIDW-1:0] hartid_q;
  logic [  NRECV*64-1:0] pending_q;

  // ---- decode: which receiver, which register, and whether the access is
  //      one the map allows ----
  typedef enum logic [2:0] {
    R_NONE,
    R_SEND,
    R_SENDPAGE,  // elsewhere in a send page: reads 0
    R_CLAIM,
    R_PENDING,
    R_HART,
    R_ACTIVE
  } reg_e;

  reg_e       rsel;
  logic [5:0] idx;
  logic       ok;  // the access does what the map says (else mmio_err)
  always_comb begin
    rsel = R_NONE;
    idx  = mmio_addr[17:12];
    unique case (mmio_addr[19:18])
      2'b00:
      if (mmio_addr[11:0] == 12'h0) rsel = R_SEND;
      else if (mmio_addr[2:0] == 3'b0) rsel = R_SENDPAGE;
      2'b01:
      if (mmio_addr[11:0] == 12'h0) rsel = R_CLAIM;
      else if (mmio_addr[11:0] == 12'h8) rsel = R_PENDING;
      2'b10: begin
        idx = mmio_addr[9:4];
        if (mmio_addr[17:10] == 8'h0 && mmio_addr[2:0] == 3'b0)
          rsel = mmio_addr[3] ? R_ACTIVE : R_HART;
      end
      default: ;
    endcase
    ok = 1'b0;
    if (32'(idx) < NRECV) begin
      unique case (rsel)
        R_SEND:     ok = 1'b1;
        R_SENDPAGE: ok = !mmio_write;
        R_CLAIM:    ok = !mmio_write;
        R_PENDING:  ok = 1'b1;
        R_HART:     ok = !mmio_write || mmio_wdata < 64'(NHART);
        R_ACTIVE:   ok = 1'b1;
        default:    ok = 1'b0;
      endcase
    end
  end
  assign mmio_err = mmio_valid && !ok;

  // ---- read ----
  always_comb begin
    mmio_rdata = 64'b0;
    for (int r = 0; r < NRECV; r++) begin
      if (mmio_valid && !mmio_write && ok && 32'(idx) == r) begin
        unique case (rsel)
          R_CLAIM, R_PENDING: mmio_rdata = pending_q[r*64+:64];
          R_HART:             mmio_rdata = 64'(hartid_q[r*HIDW+:HIDW]);
          R_ACTIVE:           mmio_rdata = 64'(active_q[r]);
          default:            ;
        endcase
      end
    end
  end

  // ---- receivers: each its own registers, seen through the flat wires ----
  for (genvar r = 0; r < NRECV; r++) begin : g_recv
    logic            sel;
    logic            active;
    logic [HIDW-1:0] hartid;
    logic [    63:0] pending;
    assign sel = mmio_valid && ok && 32'(idx) == r;
    always_ff @(posedge clk or negedge rst_n) begin
      if (!rst_n) begin
        active  <= 1'b0;
        hartid  <= '0;
        pending <= 64'b0;
      end else if (sel && mmio_write) begin
        unique case (rsel)
          R_SEND:    pending <= pending | (64'b1 << mmio_wdata[5:0]);
          R_PENDING: pending <= pending | mmio_wdata;
          R_HART:    hartid <= mmio_wdata[HIDW-1:0];
          R_ACTIVE:  active <= mmio_wdata[0];
          default:   ;
        endcase
      end else if (sel && rsel == R_CLAIM) begin
`ifndef BROKEN_READCLEAR
        pending <= 64'b0;
`endif
      end
    end
    assign active_q[r]            = active;
    assign hartid_q[r*HIDW+:HIDW] = hartid;
    assign pending_q[r*64+:64]    = pending;
  end

  // ---- USIP lines ----
  always_comb begin
    usip = '0;
    for (int r = 0; r < NRECV; r++)
      for (int h = 0; h < NHART; h++)
        if (active_q[r] && pending_q[r*64+:64] != 64'b0 && 32'(hartid_q[r*HIDW+:HIDW]) == h)
          usip[h] = 1'b1;
  end

  assign dbg_active  = active_q;
  assign dbg_hartid  = hartid_q;
  assign dbg_pending = pending_q;
endmodule
