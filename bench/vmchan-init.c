/* The floor of a vm box's channel: an init (rdinit=/vmchan, beside
 * ward's own initrd, whose modules it loads) that streams bytes over a
 * virtio-serial port named "raw", with nothing of ward's on either side.
 * vmchan=bulk:N writes N MiB; vmchan=in:N reads N MiB, then writes one
 * byte; vmchan=rtt:N echoes N single bytes. vmchan=netin:N:PORT and
 * vmchan=netrtt:N:PORT do the same two over TCP through a virtio-net
 * device instead (its modules under /netmod, 10.0.2.15 the guest's
 * address, 10.0.2.2:PORT the host's listener): what a virtio-net path
 * would give the proxy. Then it powers the machine off. Built static by
 * bench/run; bench/vmchan.py is the host's side. */
#define _GNU_SOURCE
#include <dirent.h>
#include <fcntl.h>
#include <net/if.h>
#include <netinet/in.h>
#include <arpa/inet.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/socket.h>
#include <sys/reboot.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

static void load_modules(const char *list)
{
	FILE *f = fopen(list, "r");
	char name[256];
	while (f && fgets(name, sizeof(name), f)) {
		name[strcspn(name, "\n")] = 0;
		char path[400];
		snprintf(path, sizeof(path), "/ward/modules/%s", name);
		int fd = open(path, O_RDONLY | O_CLOEXEC);
		if (fd >= 0)
			syscall(SYS_finit_module, fd, "", 0);
		if (fd >= 0)
			close(fd);
	}
	if (f)
		fclose(f);
}

/* /dev/vportXpY of the port named want, or -1 after 20 s. */
static int open_port(const char *want)
{
	for (int tries = 0; tries < 2000; tries++) {
		DIR *d = opendir("/sys/class/virtio-ports");
		struct dirent *de;
		while (d && (de = readdir(d))) {
			char p[300], name[64] = "";
			snprintf(p, sizeof(p), "/sys/class/virtio-ports/%s/name", de->d_name);
			FILE *f = fopen(p, "r");
			if (f && fgets(name, sizeof(name), f) && !strncmp(name, want, strlen(want))) {
				fclose(f);
				snprintf(p, sizeof(p), "/dev/%s", de->d_name);
				closedir(d);
				return open(p, O_RDWR | O_CLOEXEC);
			}
			if (f)
				fclose(f);
		}
		if (d)
			closedir(d);
		usleep(10000);
	}
	return -1;
}

/* eth0 up as 10.0.2.15/24, then a TCP connection to 10.0.2.2:port, or
 * -1 after 20 s. */
static int net_connect(int port)
{
	const char *mods[] = { "/netmod/failover.ko", "/netmod/net_failover.ko", "/netmod/virtio_net.ko" };
	for (size_t i = 0; i < sizeof(mods) / sizeof(mods[0]); i++) {
		int fd = open(mods[i], O_RDONLY | O_CLOEXEC);
		if (fd >= 0) {
			syscall(SYS_finit_module, fd, "", 0);
			close(fd);
		}
	}
	int s = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	struct ifreq ifr;
	int up = 0;
	for (int tries = 0; tries < 2000 && !up; tries++) {
		memset(&ifr, 0, sizeof(ifr));
		strcpy(ifr.ifr_name, "eth0");
		struct sockaddr_in *a = (struct sockaddr_in *)&ifr.ifr_addr;
		a->sin_family = AF_INET;
		inet_pton(AF_INET, "10.0.2.15", &a->sin_addr);
		if (ioctl(s, SIOCSIFADDR, &ifr) < 0) {
			usleep(10000);
			continue;
		}
		inet_pton(AF_INET, "255.255.255.0", &a->sin_addr);
		ioctl(s, SIOCSIFNETMASK, &ifr);
		ioctl(s, SIOCGIFFLAGS, &ifr);
		ifr.ifr_flags |= IFF_UP | IFF_RUNNING;
		up = ioctl(s, SIOCSIFFLAGS, &ifr) == 0;
	}
	close(s);
	if (!up)
		return -1;
	for (int tries = 0; tries < 2000; tries++) {
		int c = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
		struct sockaddr_in to = { .sin_family = AF_INET, .sin_port = htons((uint16_t)port) };
		inet_pton(AF_INET, "10.0.2.2", &to.sin_addr);
		if (connect(c, (struct sockaddr *)&to, sizeof(to)) == 0) {
			int one = 1;
			setsockopt(c, IPPROTO_TCP, 1 /* TCP_NODELAY */, &one, sizeof(one));
			return c;
		}
		close(c);
		usleep(10000);
	}
	return -1;
}

static int write_all(int fd, const char *b, size_t n)
{
	while (n) {
		ssize_t w = write(fd, b, n);
		if (w <= 0)
			return -1;
		b += w;
		n -= (size_t)w;
	}
	return 0;
}

int main(void)
{
	mount("proc", "/proc", "proc", 0, NULL);
	mount("sysfs", "/sys", "sysfs", 0, NULL);
	mount("devtmpfs", "/dev", "devtmpfs", 0, NULL);
	load_modules("/ward/modules/order");
	char cmd[1024] = "";
	FILE *f = fopen("/proc/cmdline", "r");
	if (f) {
		if (!fgets(cmd, sizeof(cmd), f))
			cmd[0] = 0;
		fclose(f);
	}
	const char *arg = strstr(cmd, "vmchan=");
	int net = arg && !strncmp(arg + 7, "net", 3);
	int fd = -1;
	if (net) {
		const char *p = strchr(arg, ':') ? strchr(strchr(arg, ':') + 1, ':') : NULL;
		fd = p ? net_connect(atoi(p + 1)) : -1;
		arg += 3; /* netin, netrtt: the same as in, rtt below */
	} else {
		fd = open_port("raw");
	}
	if (arg && fd >= 0) {
		long n = strtol(strchr(arg, ':') ? strchr(arg, ':') + 1 : "0", NULL, 10);
		if (!strncmp(arg + 7, "bulk", 4)) {
			static char buf[1 << 16];
			memset(buf, 'x', sizeof(buf));
			for (long i = 0; i < n * 16; i++)
				if (write_all(fd, buf, sizeof(buf)) < 0)
					break;
		} else if (!strncmp(arg + 7, "in", 2)) {
			static char buf[1 << 16];
			long left = n << 20;
			while (left > 0) {
				ssize_t r = read(fd, buf, sizeof(buf));
				if (r <= 0)
					break;
				left -= r;
			}
			write_all(fd, "k", 1);
		} else {
			char c;
			for (long i = 0; i < n && read(fd, &c, 1) == 1; i++)
				if (write_all(fd, &c, 1) < 0)
					break;
		}
		if (!net)
			fsync(fd);
		/* The host reads the last bytes before the machine goes. */
		struct timespec ts = { 1, 0 };
		nanosleep(&ts, NULL);
	}
	reboot(RB_POWER_OFF);
	return 0;
}
