/* The loopback relay to a proxy the caller dials (http_opts.dial): curl
 * connects to the relay's listener from a socket bound here (so its port
 * is known), and the relay carries that connection's bytes to and from the
 * dialed one. (libcurl 7.88 connects every socket it is given,
 * CURL_SOCKOPT_ALREADY_CONNECTED notwithstanding.) A connection from any
 * other port is closed: no other process can borrow the way. */
#pragma once

#include <stddef.h>

struct loop;
struct relay;

int relay_new(struct relay **ret, struct loop *l);
void relay_free(struct relay *r);

/* The listener's port on 127.0.0.1, listening from the first call on:
 * >0, or <0 (-errno). */
int relay_port(struct relay *r);

/* A socket for curl to connect to the relay from, bound to a port of its
 * own, which the relay will pair with far (the dialed connection, owned
 * from here on): the socket, or <0 with why in msg. */
int relay_expect(struct relay *r, int far, char *msg, size_t n);

/* curl is done with fd: one the relay never took takes far with it. */
void relay_forget(struct relay *r, int fd);
