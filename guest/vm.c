/* ward-guest as /init of a microVM: mount the kernel's file systems, load
 * the modules the image carries (in the order it lists), and wait for the
 * host's START; then set the box's limits in the VM's own cgroup, build the
 * box's root (vm-root.c: its own disk, the image or the host's /usr, the
 * workspace over virtio-9p), and serve the box protocol on the
 * virtio-serial port named "ward". The port answers ENXIO until the host
 * connects; the host may also go away and come back. */
#include "guest/guest.h"
#include "base/cleanup.h"
#include "base/fdio.h"
#include "base/gitdir.h"
#include "base/timeutil.h"
#include "proto/proto.h"

#include <linux/random.h>
#include <time.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <net/if.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/random.h>
#include <sys/reboot.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#define VM_SHARE_WAIT_MS 5000

void vm_log(const char *fmt, ...)
{
	char msg[512];
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(msg, sizeof(msg) - 1, fmt, ap);
	va_end(ap);
	if (n < 0)
		return;
	n = MIN(n, (int)sizeof(msg) - 2);
	msg[n++] = '\n';
	fdio_write_full(2, "ward-guest: ", 12);
	fdio_write_full(2, msg, (size_t)n);
}

void vm_poweroff(const char *why)
{
	if (why)
		vm_log("%s; powering off", why);
	sync();
	reboot(RB_POWER_OFF);
	_exit(1);
}

static int vm_mount(const char *src, const char *dst, const char *type, unsigned long flags, const char *opts)
{
	mkdir(dst, 0755);
	if (mount(src, dst, type, flags, opts) < 0) {
		vm_log("mount %s on %s: %s", type, dst, strerror(errno));
		return -errno;
	}
	return 0;
}

/* The modules a list of the image's names (in load order). */
void vm_modules(const char *list)
{
	_cleanup_free_ char *order = NULL;
	size_t len;
	if (fdio_read_file(AT_FDCWD, list, 1 << 16, &order, &len) < 0)
		return;
	char *save = NULL;
	for (char *name = strtok_r(order, "\n", &save); name; name = strtok_r(NULL, "\n", &save)) {
		char path[PATH_MAX];
		snprintf(path, sizeof(path), "/ward/modules/%s", name);
		_cleanup_close_ int fd = open(path, O_RDONLY | O_CLOEXEC);
		if (fd < 0 || (syscall(SYS_finit_module, fd, "", 0) < 0 && errno != EEXIST))
			vm_log("module %s: %s", name, strerror(errno));
	}
}

/* A 9p share: its virtio device appears a moment after the module loads. */
int vm_share(const char *tag, const char *dst, unsigned long flags, const char *cache)
{
	char opts[128];
	snprintf(opts, sizeof(opts), "trans=virtio,version=9p2000.L,msize=524288,cache=%s", cache);
	mkdir(dst, 0755);
	int64_t until = now_ms() + VM_SHARE_WAIT_MS;
	for (;;) {
		if (mount(tag, dst, "9p", flags, opts) == 0)
			return 0;
		if (errno != ENOENT || now_ms() > until)
			break;
		usleep(5000);
	}
	vm_log("mount the %s share on %s: %s", tag, dst, strerror(errno));
	return -errno;
}

static void vm_loopback_up(void)
{
	_cleanup_close_ int s = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	struct ifreq ifr = { 0 };
	snprintf(ifr.ifr_name, sizeof(ifr.ifr_name), "lo");
	if (s >= 0 && ioctl(s, SIOCGIFFLAGS, &ifr) == 0) {
		ifr.ifr_flags |= IFF_UP | IFF_RUNNING;
		ioctl(s, SIOCSIFFLAGS, &ifr);
	}
}

/* The VM's own cgroup v2 for the box (its limits come with START); calls
 * get cgroups below it. */
static int vm_cgroup(void)
{
	if (vm_mount("cgroup2", "/sys/fs/cgroup", "cgroup2", MS_NOSUID | MS_NODEV | MS_NOEXEC, NULL) < 0)
		return -1;
	fdio_write_str(AT_FDCWD, "/sys/fs/cgroup/cgroup.subtree_control", "+pids +memory");
	mkdir("/sys/fs/cgroup/box", 0755);
	return open("/sys/fs/cgroup/box", O_DIRECTORY | O_RDONLY | O_CLOEXEC);
}

/* A virtio-serial port by its name ("ward", "ward-net"), from sysfs. */
int vm_dev_fd = -1;

static int vm_port_path(const char *want, char *out, size_t n)
{
	DIR *d = opendir("/sys/class/virtio-ports");
	struct dirent *de;
	int r = -ENOENT;
	while (d && (de = readdir(d))) {
		if (de->d_name[0] == '.')
			continue;
		char p[PATH_MAX];
		snprintf(p, sizeof(p), "/sys/class/virtio-ports/%s/name", de->d_name);
		_cleanup_free_ char *name = NULL;
		if (fdio_read_file(AT_FDCWD, p, 256, &name, NULL) < 0)
			continue;
		name[strcspn(name, "\n")] = 0;
		if (!strcmp(name, want)) {
			snprintf(out, n, "%s%s", vm_dev_fd >= 0 ? "" : "/dev/", de->d_name);
			r = 0;
			break;
		}
	}
	if (d)
		closedir(d);
	return r;
}

/* A port opens whether or not the host is connected; until it is, the
 * port polls POLLHUP and what is written to it is lost. So a hello waits
 * for the host: the host that comes back to a machine restored from a
 * hibernate (which went while this guest had its port open, or was
 * opening it again) hears it. */
static void vm_wait_host(int fd)
{
	for (;;) {
		struct pollfd pf = { .fd = fd, .events = POLLIN };
		if (poll(&pf, 1, 0) >= 0 && !(pf.revents & POLLHUP))
			return;
		usleep(5000);
	}
}

int vm_open_port(const char *name)
{
	char path[PATH_MAX];
	for (;;) {
		if (vm_port_path(name, path, sizeof(path)) == 0) {
			int fd = openat(vm_dev_fd >= 0 ? vm_dev_fd : AT_FDCWD, path, O_RDWR | O_CLOEXEC | O_NOCTTY);
			if (fd >= 0) {
				vm_wait_host(fd);
				return fd;
			}
			/* ENXIO: the host side is not connected yet. */
		}
		usleep(5000);
	}
}

int vm_setup(struct guest_cfg *cfg)
{
	vm_mount("proc", "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, NULL);
	vm_mount("sysfs", "/sys", "sysfs", MS_NOSUID | MS_NODEV | MS_NOEXEC, NULL);
	vm_mount("devtmpfs", "/dev", "devtmpfs", MS_NOSUID | MS_NOEXEC, "mode=0755");
	int con = open("/dev/console", O_RDWR | O_CLOEXEC | O_NOCTTY);
	if (con >= 0) {
		dup2(con, 1);
		dup2(con, 2);
		close(con);
	}
	/* With no console before, fd 0 was the console's for a moment. */
	fdio_std_open();
	/* The modules of boot, which bind their devices as they load; then
	 * the block devices' driver, loaded (its cost is the snapshot's) but
	 * bound to the disks only at START (vm-root.c): a snapshot's template
	 * has stand-ins for them. */
	vm_modules("/ward/modules/order");
	fdio_write_str(AT_FDCWD, "/sys/bus/virtio/drivers_autoprobe", "0");
	vm_modules("/ward/modules/start");
	mkdir("/dev/shm", 01777);
	vm_mount("tmpfs", "/dev/shm", "tmpfs", MS_NOSUID | MS_NODEV, "mode=1777,size=10%");
	sethostname("ward", 4);
	vm_loopback_up();
	cfg->cgroup_fd = vm_cgroup();
	cfg->workspace = "/workspace";
	/* Tool commands run as the VM's root (or the image's User), in a user
	 * namespace of each call's that maps the VM's uids one to one: the
	 * VM is the boundary. What root could reach of ward-guest's own (the
	 * VM's cgroups, its disks, the serial console) the box's root does
	 * not have (vm-root.c). */
	cfg->uids = GUEST_VM_UIDS;
	cfg->chan_fd = vm_open_port(VM_PORT_BOX);
	return 0;
}

static void vm_start_box(struct guest_cfg *cfg, const cJSON *start);

/* An argument of START's kept for the box's life. */
static const char *vm_keep(const char *s)
{
	char *p = strdup(s);
	if (!p)
		vm_poweroff("out of memory");
	return p;
}

/* What a START brings every time: fresh entropy for the kernel's RNG and
 * the host's clock (a claim of a pool box, a wake of a saved one, both
 * sides of a fork), and a fork's hostname. */
void vm_fresh(const cJSON *start)
{
	const char *ent = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(start, "entropy"));
	if (ent && strlen(ent) == 64) {
		struct {
			int count, size;
			unsigned char buf[32];
		} e = { 256, 32, { 0 } };
		for (int i = 0; i < 32; i++)
			sscanf(ent + 2 * i, "%2hhx", &e.buf[i]);
		_cleanup_close_ int fd = open("/dev/urandom", O_WRONLY | O_CLOEXEC);
		if (fd < 0 || ioctl(fd, RNDADDENTROPY, &e) < 0 || ioctl(fd, RNDRESEEDCRNG) < 0)
			vm_log("fresh entropy: %s", strerror(errno));
	}
	/* A fork's own name (a box name: letters, digits, '-', '_', '.'),
	 * sent at each of its wakes: a new one is a fork's first, which
	 * makes the box's identity anew. */
	const char *hn = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(start, "hostname"));
	size_t hl = hn ? strlen(hn) : 0;
	char cur[72] = "";
	if (hl && hl <= 64 && strspn(hn, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_.") == hl &&
	    (gethostname(cur, sizeof(cur) - 1) < 0 || strcmp(cur, hn))) {
		if (sethostname(hn, hl) < 0)
			vm_log("the fork's hostname: %s", strerror(errno));
		vm_identity(true);
	}
	const cJSON *t = cJSON_GetObjectItemCaseSensitive(start, "time_ns");
	if (cJSON_IsNumber(t)) {
		int64_t ns = (int64_t)t->valuedouble;
		struct timespec ts = { ns / 1000000000, ns % 1000000000 };
		clock_settime(CLOCK_REALTIME, &ts);
	}
}

/* A random UUID (version 4) as the kernel writes its boot id. */
static int vm_uuid(char out[37])
{
	unsigned char u[16];
	if (getrandom(u, sizeof(u), 0) != (ssize_t)sizeof(u))
		return -EIO;
	u[6] = (u[6] & 0x0f) | 0x40;
	u[8] = (u[8] & 0x3f) | 0x80;
	snprintf(out, 37, "%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x", u[0], u[1], u[2], u[3],
		 u[4], u[5], u[6], u[7], u[8], u[9], u[10], u[11], u[12], u[13], u[14], u[15]);
	return 0;
}

void vm_identity(bool fresh)
{
	char id[37], line[40];
	if (!fresh && access(VM_BOOT_ID, F_OK) == 0)
		return;
	if (vm_uuid(id) < 0) {
		vm_log("the box's boot id: no random bytes");
		return;
	}
	int n = snprintf(line, sizeof(line), "%s\n", id);
	/* In the box's /run, 0700: the tool user does not read it there
	 * (calls see it at /proc/sys/kernel/random/boot_id, read-only).
	 * Written in place, always 37 bytes: the calls and jobs running at a
	 * fork have it bound already, and read the new one. */
	int r = mkdir("/run/ward-guest", 0700) < 0 && errno != EEXIST ? -errno : 0;
	_cleanup_close_ int bfd = r < 0 ? -1 : open(VM_BOOT_ID, O_WRONLY | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0444);
	if (r >= 0 && (bfd < 0 || pwrite(bfd, line, (size_t)n, 0) != n))
		r = -errno;
	if (r < 0)
		vm_log("the box's boot id: %s", strerror(-r));
	if (!fresh)
		return;
	/* The image's machine id, where it has one (systemd's format: 32 hex
	 * digits and a newline), is the box's own copy: a fork's is new. */
	char old[64];
	_cleanup_close_ int fd = open("/etc/machine-id", O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	ssize_t k = fd >= 0 ? read(fd, old, sizeof(old)) : -1;
	if (k != 33 || old[32] != '\n')
		return;
	char mid[34];
	for (int i = 0, j = 0; id[i]; i++)
		if (id[i] != '-')
			mid[j++] = id[i];
	mid[32] = '\n';
	r = fdio_write_atomic("/etc/machine-id", mid, 33, 0444);
	if (r < 0)
		vm_log("the fork's machine id: %s", strerror(-r));
}

/* What START says of the image's config (the host checked it and found
 * the User's ids in the image): the User ("uid:gid"), the Env and where
 * calls start. */
static void vm_start_image(struct guest_cfg *cfg, const cJSON *start)
{
	const char *v = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(start, "user"));
	if (v && *v)
		cfg->user = vm_keep(v);
	v = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(start, "ca_bundle"));
	if (v && *v)
		cfg->ca_bundle = vm_keep(v);
	v = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(start, "cwd"));
	if (v && v[0] == '/')
		cfg->workspace = vm_keep(v);
	const cJSON *e;
	cJSON_ArrayForEach(e, cJSON_GetObjectItemCaseSensitive(start, "env"))
		if (cJSON_IsString(e) && strchr(e->valuestring, '=') && e->valuestring[0] != '=' &&
		    cfg->nenv < GUEST_ENV_MAX)
			cfg->env[cfg->nenv++] = vm_keep(e->valuestring);
}

/* Booted: say so and wait for the host's START (a snapshot of the VM is
 * taken while it waits, so everything from here on is per box). START
 * brings fresh entropy (two boxes restored from one snapshot must not
 * share RNG state), the wall-clock time, and the box's limits; then the
 * box's root is built. */
int vm_wait_start(struct guest_cfg *cfg)
{
	uint8_t hello[8];
	proto_hello_payload(hello);
	if (proto_send(cfg->chan_fd, PROTO_HELLO, PROTO_F_READY, 0, hello, sizeof(hello)) < 0)
		return -EPIPE;
	struct proto_reader rd;
	proto_reader_init(&rd);
	cJSON *start = NULL;
	bool prepared = false;
again:
	while (!start) {
		struct frame f;
		int r = proto_reader_next(&rd, &f);
		if (r == -EAGAIN) {
			r = proto_reader_fill(&rd, cfg->chan_fd);
			if (r == 0 || (r < 0 && r != -EAGAIN && r != -EINTR)) {
				proto_reader_free(&rd);
				return -EPIPE;
			}
			continue;
		}
		if (r < 0) {
			proto_reader_free(&rd);
			return r;
		}
		if (f.type == PROTO_START)
			start = cJSON_ParseWithLength((const char *)f.payload, f.len);
	}
	/* A pool box: the shares and limits now ({"prepare":true}), the
	 * entropy and the clock when a create takes it (a second START). */
	if (!prepared && cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(start, "prepare"))) {
		vm_start_box(cfg, start);
		prepared = true;
		cJSON_Delete(start);
		start = NULL;
		/* Prepared: the host lists the box as ready only now. An event of
		 * its own, not a READY hello, which says the channel reopened. */
		if (proto_send(cfg->chan_fd, PROTO_EVENT, 0, 0, PROTO_PREPARED_EVENT, strlen(PROTO_PREPARED_EVENT)) < 0) {
			proto_reader_free(&rd);
			return -EPIPE;
		}
		goto again;
	}
	proto_reader_free(&rd);
	vm_fresh(start);
	if (!prepared)
		vm_start_box(cfg, start);
	cJSON_Delete(start);
	return 0;
}

/* What START says of the box: its limits, proxy port and root; then the
 * root is built and switched to. */
static void vm_start_box(struct guest_cfg *cfg, const cJSON *start)
{
	char v[32];
	const cJSON *x;
	/* Through the VM's cgroup held by its descriptor: the box's own
	 * /sys/fs/cgroup is read-only. */
	if ((x = cJSON_GetObjectItemCaseSensitive(start, "pids")) && cJSON_IsNumber(x) && cfg->cgroup_fd >= 0) {
		snprintf(v, sizeof(v), "%.0f", x->valuedouble);
		fdio_write_str(cfg->cgroup_fd, "pids.max", v);
	}
	if ((x = cJSON_GetObjectItemCaseSensitive(start, "mem")) && cJSON_IsNumber(x) && cfg->cgroup_fd >= 0) {
		snprintf(v, sizeof(v), "%.0f", x->valuedouble);
		fdio_write_str(cfg->cgroup_fd, "memory.max", v);
	}
	if ((x = cJSON_GetObjectItemCaseSensitive(start, "proxy_port")) && cJSON_IsNumber(x) && x->valuedouble > 0 &&
	    x->valuedouble < 65536)
		cfg->proxy_port = (int)x->valuedouble;
	/* Built once: a START that comes again (the host's channel reopened
	 * after a pool's first) finds the root in place. */
	if (cfg->root_sync_fd >= 0)
		return;
	vm_start_image(cfg, start);
	const char *what;
	const char *root = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(start, "root"));
	/* A host of before ws_share: the workspace share, as then; "ws":
	 * "block" is the workspace's image (sandbox/vm-ws.c). */
	const cJSON *ws = cJSON_GetObjectItemCaseSensitive(start, "ws_share");
	const char *wsk = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(start, "ws"));
	enum vm_ws wsm = wsk && !strcmp(wsk, "block") ? VM_WS_BLOCK : cJSON_IsFalse(ws) ? VM_WS_NONE : VM_WS_SHARE;
	bool seed = wsm == VM_WS_BLOCK && cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(start, "ws_seed"));
	int r = vm_root_build(root && !strcmp(root, "image"), wsm, seed, cfg, &what);
	if (r < 0) {
		vm_log("the box's root: %s: %s", what, strerror(-r));
		vm_poweroff("the box's root could not be built");
	}
	/* Every git directory of the workspace read-only (base/gitdir.h),
	 * before any call: tool commands (never CAP_SYS_ADMIN, and no mount
	 * of ward-guest's namespace is theirs) cannot undo it. */
	if (!cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(start, "git_rw"))) {
		struct gitdir_walk w = { 0 };
		char bad[PATH_MAX];
		r = gitdir_ro("/workspace", &w, bad, sizeof(bad));
		if (r < 0) {
			vm_log("make %s read-only: %s", bad, strerror(-r));
			vm_poweroff("the workspace's git directories could not be made read-only");
		}
		if (w.cut)
			vm_log("the walk for git directories stopped at its bound (%d entries, %d levels)",
			       GITDIR_WALK_ENTRIES, GITDIR_WALK_DEPTH);
	}
}
