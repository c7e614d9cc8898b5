/* ward box fork: a second box that goes on from another's state. The
 * parent's keeper gives its options and freezes the parent while this
 * connection lasts (a vm's saves its running machine first); the fork is
 * created with them (and fork_of), its keeper copying the parent's layers
 * (or taking its saved machine) before its guest starts; then the
 * connection goes and the parent thaws (keeper-fork.c). */
#include "sandbox/box.h"
#include "sandbox/box-conn-int.h"
#include "base/timeutil.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int box_fork(const char *parent, const char *name, pid_t owner, char *ret_name, size_t n, cJSON **ret,
	     struct err *e)
{
	int64_t t0 = now_ms();
	struct box_conn *c;
	int r = box_connect(parent, &c, e);
	if (r < 0)
		return r;
	cJSON *j = NULL;
	/* A vm's keeper answers once its machine is saved: as long as a
	 * hibernate. */
	r = box_request_ok(c, PROTO_FORK, NULL, BOX_HIBERNATE_TIMEOUT_MS, &j, e);
	if (r < 0) {
		box_disconnect(c);
		return r;
	}
	struct box_opts o;
	r = box_opts_from_json(cJSON_GetObjectItemCaseSensitive(j, "opts"), &o, e);
	const char *backend = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(j, "backend"));
	bool frozen = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(j, "frozen"));
	if (r >= 0 && !backend)
		r = err_set(e, -EPROTO, "box %s did not say its backend", parent);
	if (r < 0) {
		cJSON_Delete(j);
		box_disconnect(c);
		return r;
	}
	/* The parent's options but its name, owner, ports and pool: the
	 * fork's own. Its backend is the one the parent runs on ("auto"
	 * decided already). What is swapped in is put back for the release. */
	struct box_opts saved = o;
	o.name = name;
	o.backend = backend;
	o.owner = owner;
	o.fork_of = parent;
	o.pool = false;
	o.keep_layers = false;
	o.publish = NULL;
	o.npublish = 0;
	r = box_create(&o, ret_name, n, e);
	box_disconnect(c);	/* the parent thaws */
	o.name = saved.name;
	o.backend = saved.backend;
	o.fork_of = saved.fork_of;
	o.publish = saved.publish;
	o.npublish = saved.npublish;
	box_opts_release(&o);
	cJSON_Delete(j);
	if (r < 0)
		return r;
	cJSON *out = cJSON_CreateObject();
	cJSON_AddStringToObject(out, "name", ret_name);
	cJSON_AddStringToObject(out, "from", parent);
	cJSON_AddNumberToObject(out, "ms", (double)(now_ms() - t0));
	cJSON_AddBoolToObject(out, "frozen", frozen);
	/* What the fork's keeper copied. */
	cJSON *info = NULL;
	if (box_connect(ret_name, &c, NULL) == 0) {
		box_info(c, &info, NULL);
		box_disconnect(c);
	}
	const cJSON *f = cJSON_GetObjectItemCaseSensitive(info, "forked_from");
	const char *keys[] = { "entries", "files", "bytes_copied", "skipped", "state_bytes", "disk_bytes", "parent_paused_ms" };
	for (size_t i = 0; i < sizeof(keys) / sizeof(keys[0]); i++) {
		const cJSON *v = cJSON_GetObjectItemCaseSensitive(f, keys[i]);
		cJSON_AddNumberToObject(out, keys[i], cJSON_IsNumber(v) ? v->valuedouble : 0);
	}
	const char *pr = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(f, "processes"));
	cJSON_AddStringToObject(out, "processes", pr ? pr : "not carried");
	const char *how = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(f, "copied"));
	cJSON_AddStringToObject(out, "copied", how ? how : "files");
	const cJSON *ms = cJSON_GetObjectItemCaseSensitive(f, "ms");
	cJSON_AddNumberToObject(out, "copy_ms", cJSON_IsNumber(ms) ? ms->valuedouble : 0);
	cJSON_Delete(info);
	*ret = out;
	return 0;
}
