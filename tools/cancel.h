#pragma once
#include <stdatomic.h>
#include <stdbool.h>

/* Polled between units of work; its eventfd lets io_uring wait on it. */
struct cancel {
	atomic_bool set;
	int efd;
};
int cancel_init(struct cancel *c);
void cancel_fire(struct cancel *c);
void cancel_free(struct cancel *c);
static inline bool cancel_is_set(struct cancel *c) { return atomic_load(&c->set); }
