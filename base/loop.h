/* A small epoll loop: fds with callbacks; timers are the caller's deadline
 * passed to loop_run_once. Signals arrive as an fd (signalfd). */
#pragma once
#include <stdint.h>
#include <sys/epoll.h>

struct loop;
typedef void loop_fd_cb(struct loop *l, int fd, uint32_t events, void *data);

int loop_new(struct loop **ret_loop);
void loop_free(struct loop *l);
int loop_add(struct loop *l, int fd, uint32_t events, loop_fd_cb *cb, void *data);
int loop_mod(struct loop *l, int fd, uint32_t events);
void loop_del(struct loop *l, int fd);
/* Wait until fd activity or until deadline (monotonic ms; <0 = none) and
 * dispatch. Returns number dispatched or negative errno. */
int loop_run_once(struct loop *l, int64_t deadline_ms);
/* The loop's epoll descriptor: readable when one of its fds has an event,
 * so a loop can be one fd of another (loop_run_once(l, 0) then). */
int loop_fd(const struct loop *l);
