/* The run's MCP servers, and the project file's trust. */
#include "task/mcpconf.h"
#include "base/buf.h"
#include "base/cleanup.h"
#include "base/fdio.h"
#include "base/hash.h"
#include "base/jsonstrict.h"
#include "mcp/mcp.h"
#include "base/state.h"
#include "turn/journal.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define MCPCONF_FILE ".mcp.json"
#define MCPCONF_FILE_MAX (1u << 20)

int mcpconf_add_file(struct mcpconf *c, const char *path, struct err *e)
{
	if (c->nfiles == MCPCONF_FILES_MAX)
		return err_set(e, -E2BIG, "--mcp-config: at most %d files", MCPCONF_FILES_MAX);
	c->files[c->nfiles++] = path;
	return 0;
}

/* Where approvals are remembered: one "SHA256 PATH" line each. */
static int trust_path(char *out, size_t n)
{
	char dir[PATH_MAX - 32];
	struct err e = { 0 };
	if (state_data_dir(dir, sizeof(dir), &e) < 0)
		return -1;
	snprintf(out, n, "%s/mcp-trusted", dir);
	return 0;
}

static bool trusted(const char *path, const char *hex)
{
	char tp[PATH_MAX];
	if (trust_path(tp, sizeof(tp)) < 0)
		return false;
	_cleanup_free_ char *data = NULL;
	size_t len;
	if (fdio_read_file(AT_FDCWD, tp, 4u << 20, &data, &len) < 0)
		return false;
	char want[PATH_MAX + 80];
	snprintf(want, sizeof(want), "%s %s\n", hex, path);
	for (char *p = data; p && p < data + len;) {
		char *nl = memchr(p, '\n', (size_t)(data + len - p));
		size_t l = nl ? (size_t)(nl - p) + 1 : (size_t)(data + len - p);
		if (l == strlen(want) && !memcmp(p, want, l))
			return true;
		p = nl ? nl + 1 : NULL;
	}
	return false;
}

static void trust_remember(const struct mcpconf *c, const char *path, const char *hex)
{
	char tp[PATH_MAX];
	if (trust_path(tp, sizeof(tp)) < 0)
		return;
	int fd = open(tp, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC | O_NOFOLLOW, 0600);
	if (fd < 0) {
		note_say(&c->note, "warning: cannot remember the approval in %s: %s", tp, strerror(errno));
		return;
	}
	char line[PATH_MAX + 80];
	int n = snprintf(line, sizeof(line), "%s %s\n", hex, path);
	/* One write, O_APPEND: two wards approving at once keep both lines. */
	if (fdio_write_full(fd, line, (size_t)n) < 0)
		note_say(&c->note, "warning: cannot remember the approval in %s", tp);
	close(fd);
}

static int load_project(struct mcpconf *c, const char *workspace, mcpconf_ask_fn *ask, void *ud, struct err *e)
{
	char path[PATH_MAX];
	if (!workspace || snprintf(path, sizeof(path), "%s/%s", workspace, MCPCONF_FILE) >= (int)sizeof(path))
		return 0;
	/* A regular file of the workspace's own, not a link out of it. */
	_cleanup_close_ int wsfd = open(workspace, O_PATH | O_DIRECTORY | O_CLOEXEC);
	int fd = wsfd < 0 ? -errno : fdio_open_beneath(wsfd, MCPCONF_FILE);
	if (fd < 0) {
		if (fd == -ELOOP)
			note_say(&c->note, "warning: %s is a symbolic link: not used", path);
		return 0;
	}
	struct stat st;
	_cleanup_free_ char *data = NULL;
	size_t len = 0;
	int r = fstat(fd, &st) < 0 ? -errno : !S_ISREG(st.st_mode) ? -EINVAL : 0;
	if (r == 0)
		r = fdio_read_fd(fd, MCPCONF_FILE_MAX, &data, &len);
	close(fd);
	if (r < 0) {
		note_say(&c->note, "warning: %s: not used: %s", path, r == -EINVAL ? "not a regular file" : strerror(-r));
		return 0;
	}
	char hex[HASH_SHA256_HEX];
	hash_sha256_hex(data, len, hex);

	/* One strict reading (base/jsonstrict.h), as for --mcp-config: the
	 * file a person is asked to trust is the file ward runs. */
	cJSON *j = NULL;
	struct err pe = { 0 };
	if (jsonstrict_parse(data, len, &j, &pe) < 0)
		return err_set(e, pe.code ? pe.code : -EINVAL, "%s: not valid JSON: %s", path, pe.msg);
	const cJSON *servers = cJSON_GetObjectItemCaseSensitive(j, "mcpServers");
	if (!servers) {
		cJSON_Delete(j);
		return err_set(e, -EINVAL, "%s: no \"mcpServers\" object", path);
	}
	_cleanup_free_ struct mcp_config *tmp = calloc(1, sizeof(*tmp));
	r = tmp ? mcp_config_parse(tmp, servers, path, e) : err_set(e, -ENOMEM, "out of memory");
	cJSON_Delete(j);
	if (r < 0)
		return r;
	bool ok = c->trust_project || trusted(path, hex), asked = false;
	if (!ok && ask && tmp->n) {
		ok = ask(ud, path, tmp);
		asked = true;
		if (ok)
			trust_remember(c, path, hex);
	}
	if (!ok) {
		if (tmp->n && !asked)
			note_say(&c->note, "warning: %s: its %zu MCP server%s not started: a project's servers run only once you trust "
				  "the file (approve it once in `ward` at a terminal, or pass --trust-project-mcp)",
				  path, tmp->n, tmp->n == 1 ? " is" : "s are");
		mcp_config_free(tmp);
		return 0;
	}
	return mcp_config_merge(&c->cfg, tmp, e);
}

int mcpconf_load(struct mcpconf *c, const cJSON *user, const char *from, const char *workspace, mcpconf_ask_fn *ask,
		 void *ud, struct err *e)
{
	mcp_config_free(&c->cfg);
	if (user && mcp_config_add(&c->cfg, user, from ? from : "config", e) < 0)
		return e->code;
	int r = load_project(c, workspace, ask, ud, e);
	if (r < 0)
		return r;
	for (size_t i = 0; i < c->nfiles; i++)
		if (mcp_config_add_file(&c->cfg, c->files[i], e) < 0)
			return err_wrap(e, "--mcp-config");
	return 0;
}

void mcpconf_free(struct mcpconf *c)
{
	mcp_config_free(&c->cfg);
}

static void note_line(void *ud, const char *line)
{
	const struct mcpconf *c = ud;
	note_say(&c->note, "%s", line);
}

int mcpconf_start(struct mcpconf *c, struct box_conn *box, struct journal *j, struct mcp **ret, struct err *e)
{
	*ret = NULL;
	if (!c->cfg.n)
		return 0;
	struct mcp *m;
	int r = mcp_new(&c->cfg, box, note_line, c, &m, e);
	if (r < 0)
		return r;
	r = mcp_start(m, e);
	if (r < 0) {
		mcp_free(m);
		return r == -ENOMEM ? -EIO : r;
	}
	if (j) {
		cJSON *rec = cJSON_CreateObject();
		cJSON_AddItemToObject(rec, "servers", mcp_status(m));
		journal_write(j, "mcp", rec);
		cJSON_Delete(rec);
	}
	*ret = m;
	return 0;
}

void mcpconf_describe(const cJSON *status, struct buf *out)
{
	if (!cJSON_GetArraySize(status)) {
		buf_printf(out, "No MCP servers (they come from your config file's \"mcpServers\", the workspace's "
			   ".mcp.json once trusted, and --mcp-config).\n");
		return;
	}
	const cJSON *s;
	cJSON_ArrayForEach(s, status) {
		const char *why = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(s, "why"));
		const char *info = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(s, "server"));
		const cJSON *tools = cJSON_GetObjectItemCaseSensitive(s, "tools");
		int restarts = cJSON_GetObjectItemCaseSensitive(s, "restarts")->valueint;
		buf_printf(out, "%s (%s, %s): %s", cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(s, "name")),
			   cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(s, "transport")),
			   cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(s, "source")),
			   cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(s, "state")));
		if (info && *info)
			buf_printf(out, ", %s", info);
		if (restarts)
			buf_printf(out, ", restarted %d time%s", restarts, restarts == 1 ? "" : "s");
		if (why)
			buf_printf(out, "\n  %s", why);
		buf_printf(out, "\n");
		const cJSON *t;
		cJSON_ArrayForEach(t, tools)
			buf_printf(out, "  %s%s\n", cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(t, "name")),
				   cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(t, "readonly")) ? "  (read-only)" : "");
	}
}
