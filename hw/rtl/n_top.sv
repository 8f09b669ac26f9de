// n_top: the unit under test. NHART u-CSR files (ucsr) and one user-interrupt
// controller (uintc) whose USIP lines feed them, as a multi-hart core would
// wire them. Per-hart ports are packed arrays indexed by hart. Not meant for
// synthesis as a whole (hw/synth/ synthesizes ucsr and uintc separately).
module n_top #(
    parameter int NHART = 2,
    parameter int NRECV = 8,
    parameter int HIDW  = 8
) (
    input  logic                         clk,
    input  logic                         rst_n,
    input  logic [NHART-1:0][       1:0] priv,
    input  logic [NHART-1:0][      63:0] mideleg,
    input  logic [NHART-1:0][      63:0] medeleg,
    input  logic [NHART-1:0]             utip,
    input  logic [NHART-1:0]             ueip,
    input  logic [NHART-1:0][      63:0] pc,
    input  logic [NHART-1:0]             csr_valid,
    input  logic [NHART-1:0][      11:0] csr_addr,
    input  logic [NHART-1:0][       1:0] csr_op,
    input  logic [NHART-1:0]             csr_write,
    input  logic [NHART-1:0][      63:0] csr_src,
    output logic [NHART-1:0][      63:0] csr_rdata,
    output logic [NHART-1:0]             csr_illegal,
    input  logic [NHART-1:0]             exc_valid,
    input  logic [NHART-1:0][       5:0] exc_cause,
    input  logic [NHART-1:0][      63:0] exc_tval,
    output logic [NHART-1:0]             exc_to_u,
    input  logic [NHART-1:0]             uret_valid,
    output logic [NHART-1:0]             uret_illegal,
    output logic [NHART-1:0]             irq_req,
    output logic [NHART-1:0][       3:0] irq_cause,
    input  logic [NHART-1:0]             irq_take,
    output logic [NHART-1:0]             redirect,
    output logic [NHART-1:0][      63:0] next_pc,
    output logic [NHART-1:0][      63:0] u_ideleg,
    output logic [NHART-1:0][9:0][ 63:0] dbg_csr,  // ustatus .. sideleg, as ucsr
    input  logic                         mmio_valid,
    input  logic                         mmio_write,
    input  logic [          19:0]        mmio_addr,
    input  logic [          63:0]        mmio_wdata,
    output logic [          63:0]        mmio_rdata,
    output logic                         mmio_err,
    output logic [     NHART-1:0]        usip,
    output logic [     NRECV-1:0]        dbg_active,
    output logic [NRECV*HIDW-1:0]        dbg_hartid,
    output logic [  NRECV*64-1:0]        dbg_pending
);
  uintc #(
      .NRECV(NRECV),
      .NHART(NHART),
      .HIDW (HIDW)
  ) u_intc (
      .clk,
      .rst_n,
      .mmio_valid,
      .mmio_write,
      .mmio_addr,
      .mmio_wdata,
      .mmio_rdata,
      .mmio_err,
      .usip,
      .dbg_active,
      .dbg_hartid,
      .dbg_pending
  );

  for (genvar h = 0; h < NHART; h++) begin : g_hart
    ucsr u_csr (
        .clk,
        .rst_n,
        .priv        (priv[h]),
        .mideleg     (mideleg[h]),
        .medeleg     (medeleg[h]),
        .usip_ext    (usip[h]),
        .utip        (utip[h]),
        .ueip        (ueip[h]),
        .pc          (pc[h]),
        .csr_valid   (csr_valid[h]),
        .csr_addr    (csr_addr[h]),
        .csr_op      (csr_op[h]),
        .csr_write   (csr_write[h]),
        .csr_src     (csr_src[h]),
        .csr_rdata   (csr_rdata[h]),
        .csr_illegal (csr_illegal[h]),
        .exc_valid   (exc_valid[h]),
        .exc_cause   (exc_cause[h]),
        .exc_tval    (exc_tval[h]),
        .exc_to_u    (exc_to_u[h]),
        .uret_valid  (uret_valid[h]),
        .uret_illegal(uret_illegal[h]),
        .irq_req     (irq_req[h]),
        .irq_cause   (irq_cause[h]),
        .irq_take    (irq_take[h]),
        .redirect    (redirect[h]),
        .next_pc     (next_pc[h]),
        .u_ideleg    (u_ideleg[h]),
        .dbg_ustatus (dbg_csr[h][0]),
        .dbg_uie     (dbg_csr[h][1]),
        .dbg_uip     (dbg_csr[h][2]),
        .dbg_utvec   (dbg_csr[h][3]),
        .dbg_uscratch(dbg_csr[h][4]),
        .dbg_uepc    (dbg_csr[h][5]),
        .dbg_ucause  (dbg_csr[h][6]),
        .dbg_utval   (dbg_csr[h][7]),
        .dbg_sedeleg (dbg_csr[h][8]),
        .dbg_sideleg (dbg_csr[h][9])
    );
  end
endmodule
