#include "sandbox/cgroup.h"
#include "base/cleanup.h"
#include "base/fdio.h"
#include "base/timeutil.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <unistd.h>

#ifndef CGROUP2_SUPER_MAGIC
#define CGROUP2_SUPER_MAGIC 0x63677270
#endif
#ifndef CGROUP_SUPER_MAGIC
#define CGROUP_SUPER_MAGIC 0x27e0eb
#endif

static bool in_list(const char *list, const char *w, char sep)
{
	size_t n = strlen(w);
	for (const char *p = list; (p = strstr(p, w)); p += n)
		if ((p == list || p[-1] == sep) && (p[n] == 0 || p[n] == sep))
			return true;
	return false;
}

/* A process's path in a hierarchy, from /proc/PID/cgroup (pid 0: the
 * caller's), as this process's cgroup namespace sees it: "0::/x" for v2,
 * "N:memory:/x" for v1. */
static int cgroup_pid_path(pid_t pid, const char *controller, char *out, size_t n)
{
	_cleanup_free_ char *s = NULL;
	char file[64];
	if (pid)
		snprintf(file, sizeof(file), "/proc/%d/cgroup", pid);
	else
		snprintf(file, sizeof(file), "/proc/self/cgroup");
	if (fdio_read_file(AT_FDCWD, file, 65536, &s, NULL) < 0)
		return -ENOENT;
	for (char *line = s, *next; line && *line; line = next) {
		next = strchr(line, '\n');
		if (next)
			*next++ = 0;
		char *c1 = strchr(line, ':');
		char *c2 = c1 ? strchr(c1 + 1, ':') : NULL;
		if (!c2)
			continue;
		*c1 = 0;
		*c2 = 0;
		const char *ctrls = c1 + 1, *path = c2 + 1;
		bool match;
		if (!controller)
			match = !strcmp(line, "0") && !*ctrls;
		else {
			match = in_list(ctrls, controller, ',');
		}
		if (match) {
			snprintf(out, n, "%s", path);
			return 0;
		}
	}
	return -ENOENT;
}

static int cgroup_own_path(const char *controller, char *out, size_t n)
{
	return cgroup_pid_path(0, controller, out, n);
}

static bool fs_is(const char *path, long magic)
{
	struct statfs sf;
	return statfs(path, &sf) == 0 && sf.f_type == magic;
}

/* Where the v2 hierarchy is mounted: alone, or beside v1 (hybrid). */
static const char *cgroup_v2_mount(void)
{
	return fs_is("/sys/fs/cgroup", CGROUP2_SUPER_MAGIC)	    ? "/sys/fs/cgroup" :
	       fs_is("/sys/fs/cgroup/unified", CGROUP2_SUPER_MAGIC) ? "/sys/fs/cgroup/unified" :
								      NULL;
}

/* Whether pid is in the group at dir (a hierarchy mounted at mnt). */
static bool cgroup_pid_in(pid_t pid, const char *controller, const char *mnt, const char *dir)
{
	char p[PATH_MAX], full[PATH_MAX * 2];
	if (!mnt || !dir[0] || cgroup_pid_path(pid, controller, p, sizeof(p)) < 0)
		return false;
	snprintf(full, sizeof(full), "%s%s", mnt, strcmp(p, "/") ? p : "");
	return !strcmp(full, dir);
}

static bool dir_writable(const char *path)
{
	return access(path, W_OK) == 0;
}

void cgroup_probe(struct cgroup_caps *c)
{
	*c = (struct cgroup_caps){ 0 };
	char own[PATH_MAX];
	const char *v2mnt = cgroup_v2_mount();
	if (v2mnt && cgroup_own_path(NULL, own, sizeof(own)) == 0) {
		/* ward's own leaf (cgroup_leave) is not where boxes go: its
		 * parent, the delegated group, is. */
		char *slash = strrchr(own, '/');
		if (slash && slash != own && !strcmp(slash + 1, CGROUP_LEAF))
			*slash = 0;
		snprintf(c->v2_base, sizeof(c->v2_base), "%s%s", v2mnt, strcmp(own, "/") ? own : "");
		c->v2_writable = dir_writable(c->v2_base);
		/* Not ours: the nearest ancestor delegated to this user (its
		 * directory and cgroup.procs writable; a box placed below it
		 * then has a common ancestor the kernel lets us move into). */
		char up[PATH_MAX];
		snprintf(up, sizeof(up), "%s", c->v2_base);
		while (!c->v2_writable && strlen(up) > strlen(v2mnt) && (slash = strrchr(up, '/'))) {
			*slash = 0;
			char procs[PATH_MAX + 16];
			snprintf(procs, sizeof(procs), "%s/cgroup.procs", up);
			if (strlen(up) > strlen(v2mnt) && dir_writable(up) && access(procs, W_OK) == 0) {
				snprintf(c->v2_base, sizeof(c->v2_base), "%s", up);
				c->v2_writable = true;
			}
		}
		char p[PATH_MAX + 32];
		snprintf(p, sizeof(p), "%s/cgroup.kill", c->v2_base);
		c->v2_kill = access(p, F_OK) == 0;
		if (!c->v2_kill && c->v2_writable) {
			/* The root group has no cgroup.kill; a child shows whether
			 * this kernel has it (5.14+). */
			char probe[PATH_MAX + 64];
			snprintf(probe, sizeof(probe), "%s/ward-probe-%d", c->v2_base, getpid());
			if (mkdir(probe, 0755) == 0) {
				snprintf(p, sizeof(p), "%s/cgroup.kill", probe);
				c->v2_kill = access(p, F_OK) == 0;
				rmdir(probe);
			}
		}
		snprintf(p, sizeof(p), "%s/cgroup.freeze", c->v2_base);
		c->v2_freeze = access(p, F_OK) == 0 || c->v2_kill;
		_cleanup_free_ char *ctl = NULL, *sub = NULL, *procs = NULL;
		snprintf(p, sizeof(p), "%s/cgroup.controllers", c->v2_base);
		if (fdio_read_file(AT_FDCWD, p, 4096, &ctl, NULL) == 0) {
			ctl[strcspn(ctl, "\n")] = 0;
			snprintf(c->v2_controllers, sizeof(c->v2_controllers), "%s", ctl);
		}
		snprintf(p, sizeof(p), "%s/cgroup.subtree_control", c->v2_base);
		if (fdio_read_file(AT_FDCWD, p, 4096, &sub, NULL) == 0) {
			sub[strcspn(sub, "\n")] = 0;
			snprintf(c->v2_subtree, sizeof(c->v2_subtree), "%s", sub);
		}
		/* The no-internal-process rule: a group (but the root) enables
		 * controllers for its children only while it holds no process.
		 * ward moves itself out (cgroup_leave); others stay. */
		snprintf(p, sizeof(p), "%s/cgroup.procs", c->v2_base);
		c->v2_is_root = !strcmp(c->v2_base, v2mnt);
		if (!c->v2_is_root && fdio_read_file(AT_FDCWD, p, 1 << 20, &procs, NULL) == 0)
			for (char *q = procs, *end; *q; q = end) {
				long pid = strtol(q, &end, 10);
				if (end == q)
					break;
				end += strspn(end, "\n");
				if (pid != getpid())
					c->v2_others++;
			}
	}
	if (fs_is("/sys/fs/cgroup/memory", CGROUP_SUPER_MAGIC) && cgroup_own_path("memory", own, sizeof(own)) == 0) {
		snprintf(c->mem1_base, sizeof(c->mem1_base), "/sys/fs/cgroup/memory%s", strcmp(own, "/") ? own : "");
		c->mem1_writable = dir_writable(c->mem1_base);
	}
	if (fs_is("/sys/fs/cgroup/pids", CGROUP_SUPER_MAGIC) && cgroup_own_path("pids", own, sizeof(own)) == 0) {
		snprintf(c->pids1_base, sizeof(c->pids1_base), "/sys/fs/cgroup/pids%s", strcmp(own, "/") ? own : "");
		c->pids1_writable = dir_writable(c->pids1_base);
	}
}

static bool has_word(const char *list, const char *w)
{
	return in_list(list, w, ' ');
}

bool cgroup_can_v2(const struct cgroup_caps *c, const char *ctl)
{
	if (!c->v2_writable)
		return false;
	if (!strcmp(ctl, "kill"))
		return c->v2_kill;
	return has_word(c->v2_controllers, ctl) &&
	       (c->v2_is_root || has_word(c->v2_subtree, ctl) || !c->v2_others);
}

bool cgroup_can(const struct cgroup_caps *c, const char *ctl)
{
	bool v2 = cgroup_can_v2(c, ctl);
	return v2 || (!strcmp(ctl, "memory") && c->mem1_writable) || (!strcmp(ctl, "pids") && c->pids1_writable);
}

void cgroup_gap(const struct cgroup_caps *c, const char *ctl, char *out, size_t n)
{
	*out = 0;
	if (cgroup_can(c, ctl))
		return;
	int k = 0;
	if (!c->v2_base[0])
		k = snprintf(out, n, "no cgroup v2");
	else if (!c->v2_writable)
		k = snprintf(out, n, "cgroup v2 %s is not delegated to uid %u (not writable)", c->v2_base,
			     (unsigned)geteuid());
	else if (!strcmp(ctl, "kill"))
		k = snprintf(out, n, "cgroup v2 %s has no cgroup.kill (Linux 5.14+)", c->v2_base);
	else if (has_word(c->v2_controllers, ctl))
		k = snprintf(out, n, "cgroup v2 %s holds %u other processes, so the kernel cannot enable %s below it "
			     "(no internal processes): run ward in a scope of its own", c->v2_base, c->v2_others, ctl);
	else
		k = snprintf(out, n, "cgroup v2 %s has no %s controller delegated (controllers: [%s])", c->v2_base, ctl,
			     c->v2_controllers);
	const char *base1 = !strcmp(ctl, "memory") ? c->mem1_base : !strcmp(ctl, "pids") ? c->pids1_base : NULL;
	if (base1 && base1[0] && k >= 0 && (size_t)k < n)
		snprintf(out + k, n - (size_t)k, "; cgroup v1 %s is not writable by uid %u", base1, (unsigned)geteuid());
	else if (base1 && !base1[0] && k >= 0 && (size_t)k < n)
		snprintf(out + k, n - (size_t)k, "; no cgroup v1 %s hierarchy", ctl);
}

static int write_file(const char *dir, const char *file, const char *fmt, unsigned long long v)
{
	char path[PATH_MAX + 64], val[64];
	snprintf(path, sizeof(path), "%s/%s", dir, file);
	snprintf(val, sizeof(val), fmt, v);
	return fdio_write_str(AT_FDCWD, path, val);
}

int cgroup_leave(void)
{
	struct cgroup_caps c;
	cgroup_probe(&c);
	const char *mnt = cgroup_v2_mount();
	if (!c.v2_writable || c.v2_is_root || !cgroup_pid_in(0, NULL, mnt, c.v2_base))
		return 0;	/* nothing delegated, the root, or out of the way already */
	bool want = false;
	static const char *const ctls[] = { "memory", "pids", "cpu" };
	for (size_t i = 0; i < sizeof(ctls) / sizeof(ctls[0]); i++)
		want |= has_word(c.v2_controllers, ctls[i]) && !has_word(c.v2_subtree, ctls[i]);
	/* Others in the group (a shell that ran ward) keep it from enabling
	 * them whatever ward does: then ward stays where it is. */
	if (!want || c.v2_others)
		return 0;
	char leaf[PATH_MAX + 32];
	snprintf(leaf, sizeof(leaf), "%s/" CGROUP_LEAF, c.v2_base);
	if (mkdir(leaf, 0755) < 0 && errno != EEXIST)
		return -errno;
	/* "0": the writer, all its threads. */
	return fdio_write_str(AT_FDCWD, strcat(leaf, "/cgroup.procs"), "0") < 0 ? -errno : 1;
}

int cgroup_create(const char *name, const struct limits *lim, struct cgroup_set *ret, struct err *e)
{
	cgroup_leave();	/* a keeper started by other means than box_create */
	struct cgroup_caps caps;
	cgroup_probe(&caps);
	struct cgroup_set cg = { 0 };
	if (caps.v2_writable) {
		snprintf(cg.v2, sizeof(cg.v2), "%s/%s", caps.v2_base, name);
		if (mkdir(cg.v2, 0755) < 0 && errno != EEXIST) {
			cg.v2[0] = 0;
		} else {
			char kp[PATH_MAX + 16];
			snprintf(kp, sizeof(kp), "%s/cgroup.kill", cg.v2);
			cg.v2_kill = access(kp, F_OK) == 0;
			/* Controllers for the box need the parent's subtree_control;
			 * that fails where the parent holds processes, and the v1
			 * controllers or rlimits stand in. */
			char sub[PATH_MAX + 32];
			snprintf(sub, sizeof(sub), "%s/cgroup.subtree_control", caps.v2_base);
			if (lim->memory && has_word(caps.v2_controllers, "memory") &&
			    fdio_write_str(AT_FDCWD, sub, "+memory") == 0)
				cg.v2_memory = write_file(cg.v2, "memory.max", "%llu", lim->memory) == 0;
			if (cg.v2_memory)
				write_file(cg.v2, "memory.swap.max", "%llu", 0);
			if (lim->pids && has_word(caps.v2_controllers, "pids") &&
			    fdio_write_str(AT_FDCWD, sub, "+pids") == 0)
				cg.v2_pids = write_file(cg.v2, "pids.max", "%llu", lim->pids) == 0;
			if (lim->cpus_milli && has_word(caps.v2_controllers, "cpu") &&
			    fdio_write_str(AT_FDCWD, sub, "+cpu") == 0) {
				char v[64], path[PATH_MAX + 16];
				snprintf(v, sizeof(v), "%u 100000", lim->cpus_milli * 100);
				snprintf(path, sizeof(path), "%s/cpu.max", cg.v2);
				cg.v2_cpu = fdio_write_str(AT_FDCWD, path, v) == 0;
			}
		}
	}
	if (lim->memory && !cg.v2_memory && caps.mem1_writable) {
		snprintf(cg.mem1, sizeof(cg.mem1), "%s/%s", caps.mem1_base, name);
		if ((mkdir(cg.mem1, 0755) < 0 && errno != EEXIST) ||
		    write_file(cg.mem1, "memory.limit_in_bytes", "%llu", lim->memory) < 0)
			cg.mem1[0] = 0;
		else
			/* Absent without swap accounting; fine either way. */
			write_file(cg.mem1, "memory.memsw.limit_in_bytes", "%llu", lim->memory);
	}
	if (lim->pids && !cg.v2_pids && caps.pids1_writable) {
		snprintf(cg.pids1, sizeof(cg.pids1), "%s/%s", caps.pids1_base, name);
		if ((mkdir(cg.pids1, 0755) < 0 && errno != EEXIST) ||
		    write_file(cg.pids1, "pids.max", "%llu", lim->pids) < 0)
			cg.pids1[0] = 0;
	}
	*ret = cg;
	return 0;
}

int cgroup_attach_v1(const struct cgroup_set *cg, pid_t pid)
{
	int r = 0;
	if (cg->mem1[0] && write_file(cg->mem1, "cgroup.procs", "%llu", (unsigned long long)pid) < 0)
		r = -errno;
	if (cg->pids1[0] && write_file(cg->pids1, "cgroup.procs", "%llu", (unsigned long long)pid) < 0)
		r = -errno;
	return r;
}

int cgroup_attach(const struct cgroup_set *cg, pid_t pid)
{
	int r = 0;
	if (cg->v2[0] && write_file(cg->v2, "cgroup.procs", "%llu", (unsigned long long)pid) < 0)
		r = -errno;
	int r1 = cgroup_attach_v1(cg, pid);
	return r < 0 ? r : r1;
}

void cgroup_held_by(const struct cgroup_set *cg, pid_t pid, struct cgroup_held *h)
{
	bool v2 = cg->v2[0] && cgroup_pid_in(pid, NULL, cgroup_v2_mount(), cg->v2);
	bool mem1 = cg->mem1[0] && cgroup_pid_in(pid, "memory", "/sys/fs/cgroup/memory", cg->mem1);
	bool pids1 = cg->pids1[0] && cgroup_pid_in(pid, "pids", "/sys/fs/cgroup/pids", cg->pids1);
	*h = (struct cgroup_held){
		.memory = (cg->v2_memory && v2) || mem1,
		.pids = (cg->v2_pids && v2) || pids1,
		.cpu = cg->v2_cpu && v2,
		.kill = cg->v2_kill && v2,
	};
}

void cgroup_kill(const struct cgroup_set *cg)
{
	if (cg->v2[0] && cg->v2_kill)
		write_file(cg->v2, "cgroup.kill", "%llu", 1);
}

static void rmdir_tree(const char *path)
{
	/* Child groups first (the guest makes one per call); a group whose
	 * last process is still exiting refuses with EBUSY for a moment. */
	_cleanup_closedir_ DIR *d = opendir(path);
	struct dirent *de;
	while (d && (de = readdir(d))) {
		if (de->d_type != DT_DIR || de->d_name[0] == '.')
			continue;
		char sub[PATH_MAX + 256];
		snprintf(sub, sizeof(sub), "%s/%s", path, de->d_name);
		rmdir_tree(sub);
	}
	int64_t until = now_ms() + 1000;
	while (rmdir(path) < 0 && errno == EBUSY && now_ms() < until)
		usleep(2000);
}

void cgroup_remove(const struct cgroup_set *cg)
{
	if (cg->v2[0])
		rmdir_tree(cg->v2);
	if (cg->mem1[0])
		rmdir_tree(cg->mem1);
	if (cg->pids1[0])
		rmdir_tree(cg->pids1);
}

static uint64_t read_u64(const char *dir, const char *file)
{
	char path[PATH_MAX + 64];
	snprintf(path, sizeof(path), "%s/%s", dir, file);
	_cleanup_free_ char *s = NULL;
	if (fdio_read_file(AT_FDCWD, path, 64, &s, NULL) < 0)
		return 0;
	return strtoull(s, NULL, 10);
}

uint64_t cgroup_memory_current(const struct cgroup_set *cg)
{
	if (cg->v2_memory)
		return read_u64(cg->v2, "memory.current");
	if (cg->mem1[0])
		return read_u64(cg->mem1, "memory.usage_in_bytes");
	return 0;
}

uint64_t cgroup_pids_current(const struct cgroup_set *cg)
{
	if (cg->v2_pids)
		return read_u64(cg->v2, "pids.current");
	if (cg->pids1[0])
		return read_u64(cg->pids1, "pids.current");
	return 0;
}
