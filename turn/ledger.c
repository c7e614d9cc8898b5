#include "turn/ledger.h"

#include <errno.h>
#include <stdatomic.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

/* Cost in micro-USD: an integer adds atomically. */
struct ledger_page {
	_Atomic int64_t tokens, calls, cost_micro;
	/* Held for requests in flight, and the largest reply so far. */
	_Atomic int64_t held_tokens, held_micro, max_tokens, max_micro;
	uint32_t magic;
};
#define LEDGER_MAGIC 0x77617264u

static int ledger_map(int fd, struct ledger *ret, struct err *e)
{
	void *p = mmap(NULL, sizeof(struct ledger_page), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (p == MAP_FAILED)
		return err_setc(e, -errno, "cannot map the task's spend ledger");
	ret->p = p;
	ret->fd = fd;
	return 0;
}

int ledger_new(struct ledger *ret, struct err *e)
{
	/* Not CLOEXEC: a subagent is given it as its fd 3 (child_start). */
	int fd = memfd_create("ward-ledger", MFD_CLOEXEC);
	if (fd < 0)
		return err_setc(e, -errno, "cannot make the task's spend ledger");
	if (ftruncate(fd, sizeof(struct ledger_page)) < 0) {
		int r = -errno;
		close(fd);
		return err_setc(e, r, "cannot size the task's spend ledger");
	}
	int r = ledger_map(fd, ret, e);
	if (r < 0) {
		close(fd);
		return r;
	}
	ret->p->magic = LEDGER_MAGIC;
	return 0;
}

int ledger_attach(int fd, struct ledger *ret, struct err *e)
{
	struct stat st;
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) || st.st_size != (off_t)sizeof(struct ledger_page))
		return err_set(e, -EBADF, "--agent-ledger %d: not a ward ledger", fd);
	struct ledger l = { .fd = -1 };
	int r = ledger_map(fd, &l, e);
	if (r < 0)
		return r;
	if (l.p->magic != LEDGER_MAGIC) {
		munmap(l.p, sizeof(*l.p));
		return err_set(e, -EBADF, "--agent-ledger %d: not a ward ledger", fd);
	}
	l.shared = true;
	*ret = l;
	return 0;
}

void ledger_free(struct ledger *l)
{
	ledger_release(l);
	if (l->p)
		munmap(l->p, sizeof(*l->p));
	if (l->fd >= 0)
		close(l->fd);
	l->p = NULL;
	l->fd = -1;
}

static void raise_to(_Atomic int64_t *v, int64_t x)
{
	int64_t n = atomic_load(v);
	while (n < x && !atomic_compare_exchange_weak(v, &n, x))
		;
}

void ledger_add(struct ledger *l, int64_t tokens, int64_t calls, double cost)
{
	if (!l || !l->p)
		return;
	ledger_release(l);
	int64_t micro = cost > 0 ? (int64_t)(cost * 1e6 + 0.5) : 0;
	atomic_fetch_add(&l->p->tokens, tokens);
	atomic_fetch_add(&l->p->calls, calls);
	atomic_fetch_add(&l->p->cost_micro, micro);
	if (tokens)
		raise_to(&l->p->max_tokens, tokens);
	raise_to(&l->p->max_micro, micro);
}

bool ledger_reserve(struct ledger *l, int64_t max_tokens, double max_cost)
{
	if (!l || !l->p)
		return true;
	ledger_release(l);
	struct ledger_page *p = l->p;
	int64_t et = atomic_load(&p->max_tokens), em = atomic_load(&p->max_micro);
	int64_t mm = max_cost > 0 ? (int64_t)(max_cost * 1e6 + 0.5) : 0;
	/* Held first, then checked: two agents that hold at once each see
	 * the other's. */
	atomic_fetch_add(&p->held_tokens, et);
	atomic_fetch_add(&p->held_micro, em);
	bool over = (max_tokens > 0 && atomic_load(&p->tokens) + atomic_load(&p->held_tokens) > max_tokens) ||
		    (mm > 0 && atomic_load(&p->cost_micro) + atomic_load(&p->held_micro) > mm);
	if (over) {
		atomic_fetch_sub(&p->held_tokens, et);
		atomic_fetch_sub(&p->held_micro, em);
		return false;
	}
	l->held_tokens = et;
	l->held_micro = em;
	return true;
}

void ledger_largest(const struct ledger *l, int64_t *ret_tokens, double *ret_cost)
{
	*ret_tokens = l && l->p ? atomic_load(&l->p->max_tokens) : 0;
	*ret_cost = l && l->p ? (double)atomic_load(&l->p->max_micro) / 1e6 : 0;
}

void ledger_release(struct ledger *l)
{
	if (!l || !l->p || (!l->held_tokens && !l->held_micro))
		return;
	atomic_fetch_sub(&l->p->held_tokens, l->held_tokens);
	atomic_fetch_sub(&l->p->held_micro, l->held_micro);
	l->held_tokens = l->held_micro = 0;
}

bool ledger_take_call(struct ledger *l, int64_t max)
{
	if (!l || !l->p)
		return true;
	int64_t n = atomic_load(&l->p->calls);
	do {
		if (max > 0 && n >= max)
			return false;
	} while (!atomic_compare_exchange_weak(&l->p->calls, &n, n + 1));
	return true;
}

int64_t ledger_tokens(const struct ledger *l)
{
	return l && l->p ? atomic_load(&l->p->tokens) : 0;
}

int64_t ledger_calls(const struct ledger *l)
{
	return l && l->p ? atomic_load(&l->p->calls) : 0;
}

double ledger_cost(const struct ledger *l)
{
	return l && l->p ? (double)atomic_load(&l->p->cost_micro) / 1e6 : 0;
}
