/* Who an image's User is: "name", "uid", "name:group", "uid:gid", as an
 * OCI config writes it, looked up in a root's /etc/passwd and
 * /etc/group. */
#pragma once
#include <stddef.h>
#include <sys/types.h>

/* The most of /etc/passwd or /etc/group read (pinned in
 * tests/unit/test-defaults.c). */
#define ACCOUNT_FILE_MAX (4u << 20)

struct account {
	uid_t uid;
	gid_t gid;
	char name[64];		/* the passwd name of uid, or "" */
};

/* spec's account beneath rootfd (a directory: the files are read with
 * RESOLVE_IN_ROOT); spec NULL or "": def (its group the same). A uid
 * with no account has group 0. range > 0: uid and gid below it. 0, or
 * -errno with why (one line, naming spec). */
int account_resolve(int rootfd, const char *spec, uid_t def, unsigned range, struct account *ret, char *why,
		    size_t n);
