/* Full reads and writes: EINTR, EAGAIN (by polling), short I/O and EOF. */
#pragma once
#include <stdbool.h>
#include <sys/socket.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* Write all of buf. Returns 0 or a negative errno. */
int fdio_write_full(int fd, const void *buf, size_t len);
/* Read exactly len bytes. Returns 0, -EPIPE on EOF before len, or -errno. */
int fdio_read_full(int fd, void *buf, size_t len);
/* Read up to len bytes, retrying EINTR. Returns bytes read (0 = EOF) or -errno. */
ssize_t fdio_read_some(int fd, void *buf, size_t len);
/* Write up to len bytes, retrying EINTR (non-blocking fds: -EAGAIN when
 * none fit). Returns bytes written or -errno. */
ssize_t fdio_write_some(int fd, const void *buf, size_t len);
/* Read a whole file of at most cap bytes into a NUL-terminated buffer.
 * -EFBIG if larger. *ret_buf is set only on success. */
int fdio_read_file(int dirfd, const char *path, size_t cap, char **ret_buf, size_t *ret_len);
/* The same from an open fd, read to its end. */
int fdio_read_fd(int fd, size_t cap, char **ret_buf, size_t *ret_len);
/* Open path (relative) beneath dirfd for reading, with no symbolic link
 * anywhere on the way and no ".." out: a file of a tree the user's project
 * controls. The fd (O_NONBLOCK, O_CLOEXEC), or -errno (-ELOOP: a link;
 * -EXDEV: out of dirfd). */
int fdio_open_beneath(int dirfd, const char *path);
/* A small file, whole or not at all: written to path.tmp, fsynced, renamed
 * over path, and the rename made durable (the directory fsynced). */
int fdio_write_atomic(const char *path, const void *data, size_t n, mode_t mode);
/* Write a small string to a file that must already exist (sysfs, procfs). */
int fdio_write_str(int dirfd, const char *path, const char *s);
int fdio_set_nonblock(int fd, bool on);
/* Pass one descriptor over a unix socket (SCM_RIGHTS, with one byte). */
int fdio_send_fd(int sock, int fd);
/* Receive one (CLOEXEC), waiting until until_ms (monotonic; <0: no bound).
 * Any other descriptors that came with it are closed. The fd, -EPIPE on
 * EOF, -ETIMEDOUT, -EBADMSG when no descriptor came, or -errno. */
int fdio_recv_fd(int sock, int64_t until_ms);
/* A unix stream socket listening on path (an old file there is removed
 * first), or -errno (-ENAMETOOLONG when the path does not fit). CLOEXEC;
 * non-blocking when nonblock. */
int fdio_unix_listen(const char *path, int backlog, bool nonblock);
/* A CLOEXEC unix stream socket connected to path, or -errno. nonblock:
 * the socket is non-blocking, and a listener whose queue is full is
 * -EAGAIN at once rather than waited for. */
int fdio_unix_connect(const char *path, bool nonblock);
/* accept4 (CLOEXEC, NONBLOCK) on a level-triggered listener that must not
 * spin when the process is out of descriptors: then the reserve (an open
 * descriptor kept for this, e.g. of /dev/null) is given up for a moment to
 * take the connection and close it, so the peer sees it refused, and is
 * opened again. The new fd, -EMFILE after such a shedding, or -errno. */
int fdio_accept(int lfd, struct sockaddr *sa, socklen_t *len, int *reserve);
/* Whether the peer of a unix socket runs as uid, or as root (SO_PEERCRED). */
bool fdio_peer_is(int fd, uid_t uid);
/* Close every fd >= lowfd except those in keep[0..n). */
void fdio_close_all_but(int lowfd, const int *keep, size_t n);
/* Open /dev/null on each of fds 0, 1 and 2 that is closed, so that the next
 * descriptor a program opens is not taken for its standard input, output
 * or error (`ward run >&-` would send what it prints into the first socket
 * it makes). First thing in every main. 0, or -errno when /dev/null cannot
 * be opened (a VM's /init before /dev is mounted: call again after). */
int fdio_std_open(void);
/* A memfd (close-on-exec, at offset 0) holding data, sealed so that
 * nothing changes it: how a helper program is handed what it must not find
 * in its command line or environment. The fd, or -errno. */
int fdio_sealed_memfd(const char *name, const void *data, size_t n);
