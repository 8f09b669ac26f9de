// Kernel TCP sockets over lwIP's raw API (net/socket.c).
//
// Every operation here is non-blocking: one that would have to wait returns
// -EAGAIN, and the system-call layer (kernel/sys_net.c) decides how to wait:
// as a stackless kernel coroutine, a blocking kernel thread, or through the
// process's polling thread (the server models of COPS section 5). Each socket
// has one wait queue, woken on every event (data, space, a new connection, an
// error, a close); waiters re-test with sock_ready.
//
// Lifetime: a socket is reference-counted. The descriptor holds one reference
// and every call in flight holds one, so a call that waits can never find its
// socket freed. Closing the descriptor (sock_close) shuts the connection down
// at once and wakes every waiter, which then fails with -EBADF.
#ifndef SOCKET_H
#define SOCKET_H
#include <stdint.h>
#include "abi.h"
#include "uvm.h"
#include "waitq.h"
#include "net.h"                   // enum net_wait

#define SOCK_MAX (2 * NOFILE_MAX + 1024)  // sockets in the whole kernel (listening + connections): two full processes (a server and its client over loopback) and more
#define SOCK_BACKLOG_MAX 1024        // connections a listener keeps waiting for accept

struct socket;

enum sock_op { SOCK_ACCEPT, SOCK_RECV, SOCK_SEND, SOCK_CONNECT };

int sock_create(struct socket **out);                 // 0, -ENOMEM, -EMFILE (SOCK_MAX reached), -ENODEV
int sock_bind(struct socket *s, int port);            // 0, -EINVAL, -EADDRINUSE
int sock_listen(struct socket *s, int backlog);       // 0, -EINVAL, -ENOMEM
int sock_accept(struct socket *s, struct socket **out);   // 0, -EAGAIN, -EINVAL, -EBADF
// The caller cannot take a connection (no descriptor for it): reset the
// oldest one waiting on listener s, so that its peer learns at once instead
// of waiting in the queue. 0 (one refused), -EAGAIN (none waits), -EINVAL, -EBADF.
int sock_refuse(struct socket *s);
// Transfers between the socket and user memory at uva in page table pt (already
// validated by the caller). recv: bytes, 0 when the peer has closed, -EAGAIN,
// -ECONNRESET... send: bytes queued (at least 1), -EAGAIN, -EPIPE, -ECONNRESET...
// how: what the caller does if the network lock is held (net_run in
// net/net.h); with NET_TRY the result may be SOCK_LOCK_BUSY: nothing was done.
#define SOCK_LOCK_BUSY (-1100)     // internal, like WOULD_BLOCK (kernel/sysargs.h)
long sock_recv(struct socket *s, pte_t *pt, uint64_t uva, long n, enum net_wait how);
long sock_send(struct socket *s, pte_t *pt, uint64_t uva, long n, enum net_wait how);
// Start a connection to ip:port (ip in host order), or report on the one
// started: -EAGAIN while the handshake runs, then 0 (once; -EISCONN after),
// or -ECONNREFUSED / -ETIMEDOUT (the socket is spent), -ENETUNREACH, -EINVAL.
int sock_connect(struct socket *s, uint32_t ip, int port);
int sock_shutdown(struct socket *s, int how);         // 0, -EINVAL, -ENOTCONN
void sock_close(struct socket *s);                    // the descriptor is gone: shut down, drop its reference

// net/net.c, at the end of every section of the network lock: give lwIP's
// windows the bytes receives took without the lock, and lwIP the bytes of
// sends that found the lock held (socket.c says how).
void sock_section_end(void);
int sock_later_waiting(void);        // a socket waits for that (net_later, net/netlock.c)
// Bootargs netrecv=locked: every receive takes the network lock, as before
// receives that find data took it without (for comparison).
void sock_recv_always_locked(int on);
long sock_window_held(void);         // bytes read and not yet given back to lwIP's windows
// Bootargs netsend=locked: every send waits for the network lock, as before
// sends that find it held left their bytes to its holder (for comparison).
void sock_send_always_locked(int on);
long sock_send_held(void);           // bytes sent that lwIP has not been given yet
uint64_t sock_sends_later(void);     // sends that left their bytes to the lock's holder, so far
void sock_get(struct socket *s);
void sock_put(struct socket *s);
struct waitq *sock_waitq(struct socket *s);
int sock_ready(struct socket *s, enum sock_op op);    // would op make progress (or fail) now?

int sock_count(void);                                 // sockets alive
int sock_tcp_pcbs(void);                              // lwIP TCP control blocks alive
int sock_tcp_hash_bad(void);                          // how far lwIP's hash is out of step with its lists (0)

struct sock_stats {
  uint64_t accepted, refused;        // connections queued for accept / refused with a reset
  uint64_t resets;                   // connections that ended with an error (reset by the peer, ...)
  uint64_t bytes_in, bytes_out;
};
void sock_get_stats(struct sock_stats *st);
#endif
