/*
 * probe.c: the least a one-thread RESP server can do per request, with two ways of
 * talking to the kernel, to measure whether batching system calls moves the rows of
 * docs/performance.md that the kernel bounds (issue 41: many connections, one command
 * each, both servers ~75% in the kernel).
 *
 *   probe epoll PORT   epoll_wait, then per readable connection one recv() of up to 16 KB,
 *                      the replies of every complete command in it, one send(): what Redis
 *                      and streamd do (two system calls per request, one epoll_wait per
 *                      batch of ready connections).
 *   probe uring PORT   io_uring (kernel 6.0+): one multishot accept, one multishot receive
 *                      per connection into a ring of provided buffers, and one send request
 *                      per connection and batch; a loop iteration hands every send it
 *                      queued to the kernel and waits for completions in one
 *                      io_uring_enter(), with DEFER_TASKRUN so completions are reaped only
 *                      when asked for (no interrupting task work).
 *
 * Every command gets "+PONG\r\n" (the load is `redis-benchmark ... PING`, inline or
 * multibulk); nothing is stored. The command parser is a minimal RESP reader (arrays of
 * bulk strings, inline lines); a malformed request closes the connection. It is a
 * measuring instrument, not a server: no limits beyond the buffer sizes, no timeouts.
 *
 * Build: gcc -O2 -o probe probe.c -luring   (Debian: apt-get install liburing-dev)
 */
#define _GNU_SOURCE
#include <errno.h>
#include <liburing.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#define MAX_CONNS 65536
#define IN_CAP (64 * 1024)
#define OUT_CAP (64 * 1024)

static const char PONG[] = "+PONG\r\n";

/* One client: what it sent that is not a whole command yet, and the replies not sent. */
struct conn {
    int fd;
    size_t in_len;
    char in[IN_CAP];
    size_t out_len;      /* replies waiting */
    size_t out_inflight; /* uring: bytes of `out` a send request owns (0 = none) */
    char out[OUT_CAP];
};

static struct conn *conns[MAX_CONNS];

static struct conn *conn_new(int fd) {
    if (fd >= MAX_CONNS) {
        close(fd);
        return NULL;
    }
    struct conn *c = calloc(1, sizeof *c);
    if (!c) {
        close(fd);
        return NULL;
    }
    c->fd = fd;
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    conns[fd] = c;
    return c;
}

static void conn_free(struct conn *c) {
    conns[c->fd] = NULL;
    close(c->fd);
    free(c);
}

/* Parses a decimal after `p` up to "\r\n" in [p, end); returns the position after the
 * "\r\n", NULL if incomplete, and (char *)1 if malformed. */
static const char *number(const char *p, const char *end, long *out) {
    long n = 0;
    const char *q = p;
    while (q < end && *q >= '0' && *q <= '9') n = n * 10 + (*q++ - '0');
    if (q + 1 >= end) return NULL;
    if (q == p || q[0] != '\r' || q[1] != '\n' || n > IN_CAP) return (const char *)1;
    *out = n;
    return q + 2;
}

/* Answers every whole command in c->in and keeps the rest. -1 on a malformed request or
 * replies that do not fit. */
static int serve(struct conn *c) {
    const char *p = c->in, *end = c->in + c->in_len;
    while (p < end) {
        const char *next;
        if (*p == '*') {
            long argc, len;
            const char *q = number(p + 1, end, &argc);
            if (q == (const char *)1) return -1;
            if (!q) break;
            for (long i = 0; i < argc && q; i++) {
                if (q >= end) {
                    q = NULL;
                    break;
                }
                if (*q != '$') return -1;
                q = number(q + 1, end, &len);
                if (q == (const char *)1) return -1;
                if (q && (end - q) >= len + 2) q += len + 2;
                else q = NULL;
            }
            if (!q) break;
            next = q;
        } else {
            const char *nl = memchr(p, '\n', end - p);
            if (!nl) break;
            next = nl + 1;
        }
        if (c->out_len + sizeof PONG - 1 > OUT_CAP) return -1;
        memcpy(c->out + c->out_len, PONG, sizeof PONG - 1);
        c->out_len += sizeof PONG - 1;
        p = next;
    }
    c->in_len = end - p;
    memmove(c->in, p, c->in_len);
    return 0;
}

static int listener(int port) {
    int fd = socket(AF_INET, SOCK_STREAM, 0), one = 1;
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons(port),
                            .sin_addr.s_addr = htonl(0x7f000001)};
    if (bind(fd, (struct sockaddr *)&a, sizeof a) || listen(fd, 4096)) {
        perror("listen");
        exit(1);
    }
    return fd;
}

/* ---- epoll ------------------------------------------------------------------------ */

static void run_epoll(int lfd) {
    int ep = epoll_create1(0);
    struct epoll_event ev = {.events = EPOLLIN, .data.fd = lfd};
    epoll_ctl(ep, EPOLL_CTL_ADD, lfd, &ev);
    struct epoll_event evs[1024];
    for (;;) {
        int n = epoll_wait(ep, evs, 1024, -1);
        for (int i = 0; i < n; i++) {
            int fd = evs[i].data.fd;
            if (fd == lfd) {
                int cfd = accept4(lfd, NULL, NULL, SOCK_NONBLOCK);
                if (cfd >= 0 && conn_new(cfd)) {
                    struct epoll_event cev = {.events = EPOLLIN, .data.fd = cfd};
                    epoll_ctl(ep, EPOLL_CTL_ADD, cfd, &cev);
                }
                continue;
            }
            struct conn *c = conns[fd];
            if (!c) continue;
            ssize_t r = recv(fd, c->in + c->in_len, IN_CAP - c->in_len, 0);
            if (r == 0 || (r < 0 && errno != EAGAIN) || (r > 0 && (c->in_len += r, serve(c)))) {
                conn_free(c);
                continue;
            }
            if (c->out_len) {
                /* Loopback sends of a few bytes complete at once; a partial one would
                 * need EPOLLOUT, which a probe answering 7-byte replies never meets. */
                ssize_t w = send(fd, c->out, c->out_len, MSG_NOSIGNAL);
                if (w != (ssize_t)c->out_len) {
                    conn_free(c);
                    continue;
                }
                c->out_len = 0;
            }
        }
    }
}

/* ---- io_uring ---------------------------------------------------------------------- */

#define BUF_GROUP 1
#define BUF_COUNT 4096
#define BUF_SIZE 4096
#define TAG_ACCEPT 0
#define TAG_RECV 1
#define TAG_SEND 2
#define UD(tag, fd) (((__u64)(tag) << 32) | (__u32)(fd))

static struct io_uring ring;
static struct io_uring_buf_ring *bufs;
static char *buf_mem;

static struct io_uring_sqe *sqe(void) {
    struct io_uring_sqe *s = io_uring_get_sqe(&ring);
    if (!s) {
        io_uring_submit(&ring);
        s = io_uring_get_sqe(&ring);
    }
    return s;
}

static void arm_recv(int fd) {
    struct io_uring_sqe *s = sqe();
    io_uring_prep_recv_multishot(s, fd, NULL, 0, 0);
    s->flags |= IOSQE_BUFFER_SELECT;
    s->buf_group = BUF_GROUP;
    io_uring_sqe_set_data64(s, UD(TAG_RECV, fd));
}

static void arm_accept(int lfd) {
    struct io_uring_sqe *s = sqe();
    io_uring_prep_multishot_accept(s, lfd, NULL, NULL, 0);
    io_uring_sqe_set_data64(s, UD(TAG_ACCEPT, lfd));
}

/* Queues a send of everything waiting, unless one is in flight (it is sent after). */
static void flush(struct conn *c) {
    if (c->out_inflight || !c->out_len) return;
    struct io_uring_sqe *s = sqe();
    io_uring_prep_send(s, c->fd, c->out, c->out_len, MSG_NOSIGNAL);
    io_uring_sqe_set_data64(s, UD(TAG_SEND, c->fd));
    c->out_inflight = c->out_len;
}

static void run_uring(int lfd) {
    struct io_uring_params p = {0};
    p.flags = IORING_SETUP_SINGLE_ISSUER | IORING_SETUP_DEFER_TASKRUN;
    if (io_uring_queue_init_params(4096, &ring, &p) < 0) {
        p.flags = 0;
        if (io_uring_queue_init_params(4096, &ring, &p) < 0) {
            perror("io_uring_queue_init");
            exit(1);
        }
        fprintf(stderr, "probe: no DEFER_TASKRUN on this kernel\n");
    }
    size_t ring_bytes = BUF_COUNT * sizeof(struct io_uring_buf);
    if (posix_memalign((void **)&bufs, 4096, ring_bytes) ||
        posix_memalign((void **)&buf_mem, 4096, (size_t)BUF_COUNT * BUF_SIZE)) {
        perror("alloc");
        exit(1);
    }
    io_uring_buf_ring_init(bufs);
    struct io_uring_buf_reg reg = {.ring_addr = (unsigned long)bufs,
                                   .ring_entries = BUF_COUNT, .bgid = BUF_GROUP};
    if (io_uring_register_buf_ring(&ring, &reg, 0)) {
        fprintf(stderr, "probe: provided buffer rings unsupported\n");
        exit(1);
    }
    int mask = io_uring_buf_ring_mask(BUF_COUNT);
    for (int i = 0; i < BUF_COUNT; i++)
        io_uring_buf_ring_add(bufs, buf_mem + (size_t)i * BUF_SIZE, BUF_SIZE, i, mask, i);
    io_uring_buf_ring_advance(bufs, BUF_COUNT);
    arm_accept(lfd);
    for (;;) {
        io_uring_submit_and_wait(&ring, 1);
        struct io_uring_cqe *cqe;
        unsigned head, seen = 0, returned = 0;
        io_uring_for_each_cqe(&ring, head, cqe) {
            seen++;
            __u64 ud = io_uring_cqe_get_data64(cqe);
            int tag = (int)(ud >> 32), fd = (int)(__u32)ud, res = cqe->res;
            if (tag == TAG_ACCEPT) {
                if (res >= 0 && conn_new(res)) arm_recv(res);
                if (!(cqe->flags & IORING_CQE_F_MORE)) arm_accept(lfd);
                continue;
            }
            struct conn *c = conns[fd];
            if (tag == TAG_RECV) {
                if (cqe->flags & IORING_CQE_F_BUFFER) {
                    int bid = cqe->flags >> IORING_CQE_BUFFER_SHIFT;
                    if (c && res > 0 && c->in_len + res <= IN_CAP) {
                        memcpy(c->in + c->in_len, buf_mem + (size_t)bid * BUF_SIZE, res);
                        c->in_len += res;
                    } else if (c) {
                        res = -1;
                    }
                    io_uring_buf_ring_add(bufs, buf_mem + (size_t)bid * BUF_SIZE, BUF_SIZE,
                                          bid, mask, returned++);
                }
                if (!c) continue;
                if (res <= 0 && res != -ENOBUFS) {
                    if (!c->out_inflight) conn_free(c);
                    else c->fd = -c->fd - 1; /* closed once its send completes */
                    continue;
                }
                if (res > 0 && serve(c)) {
                    conn_free(c);
                    continue;
                }
                if (!(cqe->flags & IORING_CQE_F_MORE)) arm_recv(fd);
                flush(c);
            } else if (c) { /* TAG_SEND */
                size_t sent = c->out_inflight;
                c->out_inflight = 0;
                if (c->fd < 0 || res != (int)sent) {
                    c->fd = c->fd < 0 ? -c->fd - 1 : c->fd;
                    conn_free(c);
                    continue;
                }
                c->out_len -= sent;
                memmove(c->out, c->out + sent, c->out_len);
                flush(c);
            }
        }
        io_uring_cq_advance(&ring, seen);
        if (returned) io_uring_buf_ring_advance(bufs, returned);
    }
}

int main(int argc, char **argv) {
    if (argc != 3 || (strcmp(argv[1], "epoll") && strcmp(argv[1], "uring"))) {
        fprintf(stderr, "usage: probe epoll|uring PORT\n");
        return 2;
    }
    signal(SIGPIPE, SIG_IGN);
    int lfd = listener(atoi(argv[2]));
    if (!strcmp(argv[1], "epoll")) run_epoll(lfd);
    else run_uring(lfd);
    return 0;
}
