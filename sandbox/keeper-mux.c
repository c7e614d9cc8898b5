/* A VM's network port (proto/netmux.h), served by its keeper: the streams
 * the guest opens are egress, each carried to the box's egress proxy as a
 * client of its host socket (the proxy decides what it may reach and
 * counts it, as for any client); the streams the keeper opens are the
 * box's published ports (keeper-port.c). The guest cannot open a stream
 * that reaches anything else: an OPEN that names a port, or one in the
 * host's id space, is refused. Every frame is the guest's, hostile: the
 * mux bounds the streams (NETMUX_MAX_STREAMS) and each one's buffer (its
 * window), and a frame that breaks the protocol ends the port for the
 * rest of this instance of the box. */
#include "sandbox/keeper-int.h"
#include "base/fdio.h"
#include "proto/netmux.h"

#include <errno.h>
#include <unistd.h>

static struct netmux *mux;

static int keeper_mux_on_open(void *ud, const uint8_t *what, size_t n, int *ret_fd)
{
	if (n || !egress_running(&K.eg))
		return -ECONNREFUSED;
	int fd = fdio_unix_connect(K.eg.host_path, true);
	if (fd < 0)
		return fd;
	*ret_fd = fd;
	return 0;
}

int keeper_mux_up(struct err *e)
{
	if (!K.inst.net_mux || K.inst.net_fd < 0)
		return 0;
	int r = netmux_new(K.loop, K.inst.net_fd, NETMUX_SIDE_HOST, keeper_mux_on_open, NULL, &mux);
	if (r < 0)
		return err_setc(e, r, "cannot serve the VM's network port");
	K.inst.net_fd = -1;	/* the mux's */
	return 0;
}

void keeper_mux_down(void)
{
	netmux_free(mux);
	mux = NULL;
}

struct netmux *keeper_mux(void)
{
	return mux && !netmux_dead(mux) ? mux : NULL;
}
