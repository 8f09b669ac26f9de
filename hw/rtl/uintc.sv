// uintc: the user-interrupt controller. NRECV receivers, each
// {active, hartid, pending[63:0]}; a hart's USIP line is raised while some
// active receiver that names it has a pending bit. Senders post by writing the
// receiver's SEND register; the receiving thread's handler reads PENDING, which
// returns the bits and clears them (so each post is seen once). The kernel
// writes HARTID and ACTIVE on every switch. The C model is
// hw/model/uintc_model.c; hw/tb/tb_diff.cpp compares the two.
//
// MMIO: one 64-bit port, 8-byte aligned registers, receiver r at r * 0x20:
//   +0x00 SEND     W: pending |= 1 << wdata[5:0]          R: 0
//   +0x08 HARTID   W: hartid = wdata[HIDW-1:0]            R: hartid
//   +0x10 PENDING  W: pending |= wdata                    R: pending, then 0
//   +0x18 ACTIVE   W: active = wdata[0]                   R: active
// A misaligned address or a receiver >= NRECV sets mmio_err: the read
// returns 0 and a write does nothing.
//
// Planted bug for the testbench's self-check (never define it otherwise):
//   BROKEN_READCLEAR   reading PENDING does not clear it
module uintc #(
    parameter int NRECV = 16,
    parameter int NHART = 4,
    parameter int HIDW  = 8,   // hartid bits kept
    parameter int AW    = 12   // address bits decoded (window 2^AW bytes)
) (
    input  logic                  clk,
    input  logic                  rst_n,
    input  logic                  mmio_valid,
    input  logic                  mmio_write,
    input  logic [        AW-1:0] mmio_addr,
    input  logic [          63:0] mmio_wdata,
    output logic [          63:0] mmio_rdata,
    output logic                  mmio_err,
    output logic [     NHART-1:0] usip,
    // Architectural state, for the testbench (flat: receiver r at r*width).
    output logic [     NRECV-1:0] dbg_active,
    output logic [NRECV*HIDW-1:0] dbg_hartid,
    output logic [  NRECV*64-1:0] dbg_pending
);
  localparam int IW = AW - 5;  // receiver index bits in the address

  logic [     NRECV-1:0] active_q;
  logic [NRECV*HIDW-1:0] hartid_q;
  logic [  NRECV*64-1:0] pending_q;

  // ---- decode ----
  logic [IW-1:0] idx;
  logic [   1:0] regsel;
  logic          hit;
  assign idx      = mmio_addr[AW-1:5];
  assign regsel   = mmio_addr[4:3];
  assign hit      = mmio_addr[2:0] == 3'b0 && 32'(idx) < NRECV;
  assign mmio_err = mmio_valid && !hit;

  // ---- read ----
  always_comb begin
    mmio_rdata = 64'b0;
    for (int r = 0; r < NRECV; r++) begin
      if (mmio_valid && !mmio_write && hit && 32'(idx) == r) begin
        unique case (regsel)
          2'd1: mmio_rdata = 64'(hartid_q[r*HIDW+:HIDW]);
          2'd2: mmio_rdata = pending_q[r*64+:64];
          2'd3: mmio_rdata = 64'(active_q[r]);
          default: ;
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
    assign sel = mmio_valid && hit && 32'(idx) == r;
    always_ff @(posedge clk or negedge rst_n) begin
      if (!rst_n) begin
        active  <= 1'b0;
        hartid  <= '0;
        pending <= 64'b0;
      end else if (sel && mmio_write) begin
        unique case (regsel)
          2'd0: pending <= pending | (64'b1 << mmio_wdata[5:0]);
          2'd1: hartid <= mmio_wdata[HIDW-1:0];
          2'd2: pending <= pending | mmio_wdata;
          default: active <= mmio_wdata[0];
        endcase
      end else if (sel && regsel == 2'd2) begin
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
