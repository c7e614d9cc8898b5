/* A vm box's fork, the parent's side: its machine stands still while its
 * RAM and devices go to a file (QEMU's migration, as a hibernate's) and
 * its own disk is copied beside it (a clone where the file system can,
 * else the extents it holds); then it goes on where it stopped, its
 * channels connected again and its guest given fresh entropy and the
 * host's clock. The fork's keeper resumes the same state over the copy
 * (the backend's resume), so both run the same processes from there,
 * each with an RNG of its own. */
#include "sandbox/backend.h"
#include "sandbox/vm-int.h"
#include "base/fdio.h"
#include "base/timeutil.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

/* The VMM's channel and network port again: QEMU's socket chardevs listen
 * for a new client once the old one went. */
static int vm_fork_reconnect(const struct box_spec *s, const struct vm_paths *p, struct box_inst *b, struct err *e)
{
	int64_t until = now_ms() + VM_CONNECT_MS;
	int chan, net = -1;
	while ((chan = fdio_unix_connect(p->sock, false)) < 0 && now_ms() < until)
		usleep(1000);
	while (chan >= 0 && (net = fdio_unix_connect(p->net, false)) < 0 && now_ms() < until)
		usleep(1000);
	if (chan < 0 || net < 0) {
		if (chan >= 0)
			close(chan);
		return err_set(e, -ETIMEDOUT, "the VMM's channels did not take the keeper back");
	}
	b->chan_fd = chan;
	b->net_fd = net;
	b->hello_done = false;
	int r = vm_resume_hello(s->opts, b, NULL, e);
	if (r < 0) {
		close(b->chan_fd);
		close(b->net_fd);
		b->chan_fd = b->net_fd = -1;
	}
	return r;
}

/* What a hibernate says of a VM that cannot be saved ends with what
 * becomes of its processes there: the cause alone, here. */
static int vm_fork_refuse(const struct box_inst *b, struct err *e)
{
	const char *why = b->ram_why ? b->ram_why : "its machine cannot be saved whole";
	const char *cut = strstr(why, ": its processes end");
	return err_set(e, -ENOTSUP, "%.*s, so its running machine cannot be forked", cut ? (int)(cut - why) : (int)strlen(why),
		       why);
}

int vm_fork(const struct box_spec *s, struct box_inst *b, const char *state, const char *disk, struct err *e)
{
	if (!b->keeps_ram)
		return vm_fork_refuse(b, e);
	struct vm_paths p;
	vm_paths(s, &p);
	if (b->chan_fd >= 0)
		close(b->chan_fd);
	if (b->net_fd >= 0)
		close(b->net_fd);
	b->chan_fd = b->net_fd = -1;
	/* Not saved, the VM runs on already (vm_snapshot_save). */
	int r = vm_snapshot_save(&p, state, e);
	if (r >= 0) {
		r = vm_disk_copy_file(s->disk_path, disk, e);
		struct err ce = { 0 };
		int c = vm_snapshot_cont(&p, r >= 0 ? e : &ce);
		if (r >= 0)
			r = c;
	}
	if (r < 0) {
		unlink(state);
		unlink(disk);
	}
	struct err re = { 0 };
	int c = vm_fork_reconnect(s, &p, b, r >= 0 ? e : &re);
	return r < 0 ? r : c;
}
