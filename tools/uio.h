/* File I/O through io_uring that waits on a cancel token too: a read that
 * blocks (a stalled file system, a FIFO) is cancelled with
 * IORING_OP_ASYNC_CANCEL when the token fires, not waited out. */
#pragma once
#include <stddef.h>
#include <sys/types.h>

struct uio;
int uio_new(struct uio **ret, int cancel_efd);
void uio_free(struct uio *u);
/* Point a ring at another call's token (a worker keeps its ring between
 * calls): the old token's poll is withdrawn and the fired state cleared. */
int uio_rebind(struct uio *u, int cancel_efd);
/* Like pread/pwrite; -ECANCELED once the token has fired. off -1: current. */
ssize_t uio_read(struct uio *u, int fd, void *buf, size_t len, off_t off);
ssize_t uio_write(struct uio *u, int fd, const void *buf, size_t len, off_t off);
/* Read a whole file of at most cap bytes (-EFBIG past it). NUL-terminated. */
int uio_read_file(struct uio *u, int fd, size_t cap, char **ret, size_t *ret_len);
int uio_write_all(struct uio *u, int fd, const void *buf, size_t len);
