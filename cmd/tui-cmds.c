/* The terminal session's commands beyond the session itself: !cmd (a
 * command run in the box by the person, shown as a card, journaled and
 * told to the model), @path (a file of the box's workspace attached to
 * the message), Tab completion, /model, /config, the conversation shown
 * on --resume, and what a resumed session keeps (its approval mode, its
 * running totals). */
#include "cmd/tui.h"
#include "base/json.h"
#include "base/cleanup.h"
#include "base/jsonprint.h"
#include "base/timeutil.h"
#include "cmd/mdterm.h"
#include "cmd/term.h"
#include "workspace/layers.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <termios.h>

/* What one @path attaches at most, and a message at most in all. */
#define TUI_ATTACH_MAX (256u << 10)
#define TUI_ATTACH_ALL (1u << 20)
/* What of a !cmd's output the model is told. */
#define TUI_SHELL_TELL (16u << 10)

static const char *const command_names[] = { "/help", "/box", "/jobs", "/diff", "/apply", "/cost", "/status", "/mcp",
					     "/clear", "/compact", "/resume", "/rewind", "/approve", "/model",
					     "/init", "/config", "/retry", "/quit", NULL };

/* --- !cmd */

static void shell_out(const char *p, size_t n, void *ud)
{
	struct turn_event ev = { .type = EV_TOOL_OUTPUT, .text = p, .len = n };
	tui_on_event(ud, &ev);
}

void tui_shell(struct tui *u, const char *cmd)
{
	static unsigned seq;
	char id[64];
	snprintf(id, sizeof(id), "user-%lld-%u", (long long)now_ms(), ++seq);
	cJSON *call = cJSON_CreateObject();
	cJSON_AddStringToObject(call, "id", id);
	cJSON_AddStringToObject(call, "name", "bash");
	cJSON *input = cJSON_AddObjectToObject(call, "input");
	cJSON_AddStringToObject(input, "command", cmd);
	/* Journaled as a call is: its intent before, its result after; by
	 * the person. */
	cJSON *rec = cJSON_CreateObject();
	cJSON_AddStringToObject(rec, "call_id", id);
	cJSON_AddStringToObject(rec, "key", id);
	cJSON_AddStringToObject(rec, "tool", "bash");
	cJSON_AddItemToObject(rec, "input", cJSON_Duplicate(input, true));
	cJSON_AddStringToObject(rec, "by", "user");
	journal_write(&u->s.j, "intent", rec);
	cJSON_Delete(rec);
	struct turn_event ev = { .type = EV_TOOL_CALL, .call = call };
	tui_on_event(u, &ev);
	u->call_running = true;
	u->since = now_ms();
	struct box_call_req rq = { .tool = "bash", .args = input, .key = id, .left_ms = -1, .stream = true };
	cJSON *res = NULL;
	struct err e = { 0 };
	/* A key stops it, as Esc stops a call of the model's. */
	int r = box_call(u->s.box, &rq, shell_out, u, u->in, &res, &e);
	u->call_running = false;
	if (r < 0 || !res) {
		cJSON_Delete(res);
		res = cJSON_CreateObject();
		cJSON_AddStringToObject(res, "outcome", "unknown");
		cJSON_AddStringToObject(res, "text", e.msg[0] ? e.msg : "the box did not answer");
	}
	tcflush(u->in, TCIFLUSH);
	struct turn_event re = { .type = EV_TOOL_RESULT, .call = call, .result = res };
	tui_on_event(u, &re);
	tui_live_clear(u);
	rec = cJSON_Duplicate(res, true);
	cJSON_AddStringToObject(rec, "call_id", id);
	cJSON_AddStringToObject(rec, "by", "user");
	journal_write(&u->s.j, "result", rec);
	cJSON_Delete(rec);
	/* The model is told, as a note of the person's in the conversation. */
	const char *text = json_str(res, "text") ? json_str(res, "text") : "";
	size_t tl = strlen(text);
	struct buf b;
	buf_init(&b, TUI_SHELL_TELL * 2 + 4096);
	buf_printf(&b, "(I ran this command in the box myself: `%s`; outcome %s.)\n", cmd,
		   json_str(res, "outcome") ? json_str(res, "outcome") : "?");
	if (tl > TUI_SHELL_TELL)
		buf_printf(&b, "Its output (the last %u KiB of %zu bytes):\n", TUI_SHELL_TELL >> 10, tl);
	else
		buf_printf(&b, "Its output:\n");
	buf_printf(&b, "```\n%s%s```", tl > TUI_SHELL_TELL ? text + tl - TUI_SHELL_TELL : text,
		   tl && text[tl - 1] != '\n' ? "\n" : "");
	buf_cstr(&b);
	cJSON *m = provider_user_text(b.data ? b.data : "");
	journal_write(&u->s.j, "message", m);
	cJSON_AddItemToArray(u->s.messages, m);
	buf_free(&b);
	cJSON_Delete(call);
	cJSON_Delete(res);
}

/* --- @path */

char *tui_attach(struct tui *u, const char *msg)
{
	struct buf files;
	buf_init(&files, TUI_ATTACH_ALL + 65536);
	size_t used = 0;
	for (const char *p = msg; *p; p++) {
		if (*p != '@' || (p > msg && p[-1] != ' ' && p[-1] != '\n' && p[-1] != '\t'))
			continue;
		size_t n = strcspn(p + 1, " \t\n\"'`,;()");
		while (n && (p[n] == '.' || p[n] == ':' || p[n] == '?' || p[n] == '!'))
			n--;	/* "look at @a.txt." */
		if (!n || n >= PATH_MAX)
			continue;
		char path[PATH_MAX];
		snprintf(path, sizeof(path), "%.*s", (int)n, p + 1);
		char *d = NULL;
		size_t dl = 0;
		int r = tui_file_read(u, path, &d, &dl);
		_cleanup_free_ char *pn = tui_short(path, 200);
		if (r < 0) {
			tui_putf(u, DIM "  @%s: %s; sent as written" UNDIM "\n", pn ? pn : "",
				 r == -ENOENT ? "no such file in the workspace" : r == -EOPNOTSUPP ? "not readable from here (--box, or outside /workspace)"
				 : r == -EFBIG ? "over 1 MiB" : r == -EINVAL ? "not a regular file" : strerror(-r));
			continue;
		}
		size_t keep = MIN(dl, (size_t)TUI_ATTACH_MAX);
		if (used + keep > TUI_ATTACH_ALL)
			keep = used < TUI_ATTACH_ALL ? TUI_ATTACH_ALL - used : 0;
		used += keep;
		size_t lines = 0;
		for (size_t i = 0; i < keep; i++)
			lines += d[i] == '\n';
		buf_printf(&files, "\n\nThe file %s (attached with @%s%s):\n```\n%.*s%s```", path, path,
			   keep < dl ? ", cut" : "", (int)keep, d, keep && d[keep - 1] != '\n' ? "\n" : "");
		if (keep < dl)
			buf_printf(&files, "\n(%zu more bytes of %s not attached)", dl - keep, path);
		tui_putf(u, DIM "  ⎘ attached %s (%zu line%s%s)" UNDIM "\n", pn ? pn : "", lines, lines == 1 ? "" : "s",
			 keep < dl ? ", cut" : "");
		free(d);
	}
	if (!files.len) {
		buf_free(&files);
		return NULL;
	}
	char *out = NULL;
	if (asprintf(&out, "%s%.*s", msg, (int)files.len, files.data) < 0)
		out = NULL;
	buf_free(&files);
	return out;
}

/* --- Tab */

static int add_cand(char ***v, size_t *n, size_t *cap, const char *s)
{
	if (*n + 2 > *cap) {
		size_t c = *cap ? *cap * 2 : 16;
		char **w = realloc(*v, c * sizeof(*w));
		if (!w)
			return -1;
		*v = w;
		*cap = c;
	}
	(*v)[(*n)++] = strdup(s);
	(*v)[*n] = NULL;
	return 0;
}

static int cand_cmp(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The names in dir (under root) that start with pre. */
static void list_into(const char *root, const char *dir, const char *pre, const char *lead, char ***v, size_t *n,
		      size_t *cap)
{
	/* Beneath root, no symlink followed (as @path reads the file). */
	int rfd = open(root, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (rfd < 0)
		return;
	struct open_how how = { .flags = O_RDONLY | O_DIRECTORY | O_CLOEXEC,
				.resolve = RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS };
	int dfd = (int)syscall(SYS_openat2, rfd, *dir ? dir : ".", &how, sizeof(how));
	close(rfd);
	DIR *d = dfd >= 0 ? fdopendir(dfd) : NULL;
	if (!d) {
		if (dfd >= 0)
			close(dfd);
		return;
	}
	struct dirent *de;
	size_t pl = strlen(pre);
	while ((de = readdir(d)) && *n < 500) {
		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, "..") || strncmp(de->d_name, pre, pl))
			continue;
		if (de->d_name[0] == '.' && pre[0] != '.')
			continue;
		struct stat st;
		if (fstatat(dirfd(d), de->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0 || (S_ISCHR(st.st_mode) && st.st_rdev == 0))
			continue;	/* a whiteout: deleted in the box */
		char c[PATH_MAX * 2];
		snprintf(c, sizeof(c), "%s%s%s%s", lead, dir, de->d_name, S_ISDIR(st.st_mode) ? "/" : "");
		bool dup = false;
		for (size_t i = 0; i < *n && !dup; i++)
			dup = !strcmp((*v)[i], c);
		if (!dup)
			add_cand(v, n, cap, c);
	}
	closedir(d);
}

char **tui_complete(void *ud, const char *word, bool line_start)
{
	struct tui *u = ud;
	char **v = NULL;
	size_t n = 0, cap = 0;
	if (line_start && word[0] == '/') {
		for (size_t i = 0; command_names[i]; i++)
			if (!strncmp(command_names[i], word, strlen(word)))
				add_cand(&v, &n, &cap, command_names[i]);
	} else if (word[0] == '@' && u->ws[0] && u->own_box) {
		const char *p = word + 1;
		const char *slash = strrchr(p, '/');
		char dir[PATH_MAX] = "";
		if (slash)
			snprintf(dir, sizeof(dir), "%.*s", (int)(slash - p + 1), p);
		const char *pre = slash ? slash + 1 : p;
		if (strstr(dir, ".."))
			return NULL;
		if (!u->f.rw) {
			struct layers L = { .lock_fd = -1 };
			struct session_ws sw = tui_changes_at(u);
			if (session_changes_read(&sw, &L, NULL, NULL) > 0) {
				list_into(L.upper, dir, pre, "@", &v, &n, &cap);
				layers_release(&L);
			}
		}
		list_into(u->ws, dir, pre, "@", &v, &n, &cap);
	}
	if (n > 1)
		qsort(v, n, sizeof(*v), cand_cmp);
	return v;
}

/* --- /model, /config */

void tui_cmd_model(struct tui *u, const char *arg)
{
	if (!*arg) {
		tui_putf(u, "Model: %s (%s). /model NAME switches to another of the same provider; the conversation goes on.\n",
			 u->f.cfg.pcfg.model, u->f.provider ? u->f.provider : "anthropic");
		return;
	}
	bool good = strlen(arg) < sizeof(u->model_name);
	for (const char *p = arg; *p && good; p++)
		good = (unsigned char)*p > 0x20 && *p != 0x7f;
	if (!good || !strncmp(arg, "replay:", 7) || !strncmp(u->f.cfg.pcfg.model, "replay:", 7)) {
		_cleanup_free_ char *s = tui_short(arg, 60);
		tui_putf(u, "\"%s\" cannot be switched to here: a model's name, of the provider in force (not a replay "
			 "script, nor from one).\n", s ? s : "");
		return;
	}
	snprintf(u->model_name, sizeof(u->model_name), "%s", arg);
	u->f.cfg.pcfg.model = u->model_name;
	u->priced = price_for(u->model_name, &u->price);
	cJSON *rec = cJSON_CreateObject();
	cJSON_AddStringToObject(rec, "model", u->model_name);
	journal_write(&u->s.j, "model", rec);
	cJSON_Delete(rec);
	_cleanup_free_ char *s = tui_short(arg, 100);
	tui_putf(u, "Model: %s from the next message%s.\n", s ? s : "",
		 u->priced ? "" : " (ward does not know its prices: the cost is not counted)");
}

void tui_cmd_config(struct tui *u)
{
	const struct run_flags *f = &u->f;
	tui_putf(u, "  model          %s\n", f->cfg.pcfg.model);
	tui_putf(u, "  provider       %s\n", f->provider ? f->provider : "anthropic");
	_cleanup_free_ char *url = tui_short(f->cfg.pcfg.base_url ? f->cfg.pcfg.base_url : "(the provider's)", 200);
	tui_putf(u, "  base_url       %s\n", url ? url : "");
	tui_putf(u, "  approve        %s\n", gate_mode_name(f->gate.mode));
	for (int i = 0; i < f->gate.nrules; i++) {
		_cleanup_free_ char *t = tui_short(f->gate.rules[i].tool, 128);
		_cleanup_free_ char *pt = tui_short(f->gate.rules[i].pattern, 256);
		tui_putf(u, "  %-14s %s%s%s\n", f->gate.rules[i].allow ? "allow" : "deny", t ? t : "", pt && *pt ? ":" : "",
			 pt ? pt : "");
	}
	if (f->deadline_ms)
		tui_putf(u, "  deadline       %llds per message\n", (long long)(f->deadline_ms / 1000));
	if (f->cfg.b.max_rounds)
		tui_putf(u, "  max_rounds     %d\n", f->cfg.b.max_rounds);
	if (f->cfg.b.max_calls)
		tui_putf(u, "  max_calls      %d\n", f->cfg.b.max_calls);
	if (f->cfg.b.max_tokens)
		tui_putf(u, "  max_tokens     %lld\n", (long long)f->cfg.b.max_tokens);
	if (f->cfg.b.max_cost > 0)
		tui_putf(u, "  max_cost       $%.2f\n", f->cfg.b.max_cost);
	_cleanup_free_ char *wsn = tui_short(u->ws[0] ? u->ws : "(none)", sizeof(u->ws));
	tui_putf(u, "  workspace      %s (%s)\n", wsn ? wsn : "", f->rw ? "read-write" : "copy-on-write");
	tui_put(u, "`ward config` shows every setting and where it came from (a flag, the environment, a file).\n");
}

/* --- Resuming */

/* The text of a message's text blocks. */
static void msg_text(const cJSON *m, struct buf *out)
{
	const cJSON *c = cJSON_GetObjectItemCaseSensitive(m, "content");
	if (cJSON_IsString(c)) {
		buf_append(out, c->valuestring, strlen(c->valuestring));
		return;
	}
	const cJSON *b;
	cJSON_ArrayForEach(b, c) {
		const char *t = json_str(b, "type");
		if (t && !strcmp(t, "text") && json_str(b, "text")) {
			if (out->len)
				buf_append(out, "\n", 1);
			buf_append(out, json_str(b, "text"), strlen(json_str(b, "text")));
		}
	}
}

static bool is_person(const cJSON *m)
{
	const char *role = json_str(m, "role");
	if (!role || strcmp(role, "user"))
		return false;
	const cJSON *c = cJSON_GetObjectItemCaseSensitive(m, "content");
	if (cJSON_IsString(c))
		return true;
	const cJSON *b;
	cJSON_ArrayForEach(b, c) {
		const char *t = json_str(b, "type");
		if (t && !strcmp(t, "tool_result"))
			return false;
	}
	return true;
}

void tui_show_history(struct tui *u, int exchanges)
{
	const cJSON *msgs = u->s.messages;
	int n = cJSON_GetArraySize(msgs), start = n;
	for (int i = n - 1, seen = 0; i >= 0 && seen < exchanges; i--)
		if (is_person(cJSON_GetArrayItem(msgs, i))) {
			start = i;
			seen++;
		}
	if (start == n)
		return;
	int earlier = 0;
	for (int i = 0; i < start; i++)
		earlier += is_person(cJSON_GetArrayItem(msgs, i));
	int cols = tui_cols() - 1;
	if (earlier)
		tui_putf(u, DIM "… %d earlier message%s" UNDIM "\n", earlier, earlier == 1 ? "" : "s");
	for (int i = start; i < n;) {
		struct buf t;
		buf_init(&t, TUI_MSG_MAX);
		msg_text(cJSON_GetArrayItem(msgs, i), &t);
		buf_cstr(&t);
		_cleanup_free_ char *first = tui_fit(t.data ? t.data : "", cols - 2);
		tui_putf(u, BOLD "› " RESET "%s\n", first ? first : "");
		buf_free(&t);
		/* The model's answer to it: its calls counted, its last text. */
		int calls = 0;
		struct buf last;
		buf_init(&last, TUI_MSG_MAX);
		for (i++; i < n && !is_person(cJSON_GetArrayItem(msgs, i)); i++) {
			const cJSON *m = cJSON_GetArrayItem(msgs, i);
			const char *role = json_str(m, "role");
			if (!role || strcmp(role, "assistant"))
				continue;
			const cJSON *b;
			cJSON_ArrayForEach(b, cJSON_GetObjectItemCaseSensitive(m, "content")) {
				const char *ty = json_str(b, "type");
				calls += ty && !strcmp(ty, "tool_use");
			}
			struct buf mt;
			buf_init(&mt, TUI_MSG_MAX);
			msg_text(m, &mt);
			if (mt.len) {
				last.len = 0;
				buf_append(&last, mt.data, mt.len);
			}
			buf_free(&mt);
		}
		if (calls)
			tui_putf(u, DIM "  ● %d call%s" UNDIM "\n", calls, calls == 1 ? "" : "s");
		if (last.len) {
			struct buf r;
			buf_init(&r, 1u << 22);
			mdterm_render(last.data, last.len, cols, 0, &r);
			buf_cstr(&r);
			/* Collapsed: its first rows. */
			int rows = 0;
			const char *p = r.data ? r.data : "";
			while (*p && rows < 6) {
				size_t l = strcspn(p, "\n");
				fwrite(p, 1, l, stdout);
				tui_put(u, "\n");
				p += l + (p[l] == '\n');
				rows++;
			}
			if (*p) {
				size_t more = 0;
				for (; *p; p++)
					more += *p == '\n';
				tui_putf(u, DIM "  … %zu more row%s" UNDIM "\n", more, more == 1 ? "" : "s");
			}
			buf_free(&r);
		}
		buf_free(&last);
	}
	tui_put(u, DIM "── resumed here ──" UNDIM "\n");
}

static int64_t num(const cJSON *o, const char *k)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, k);
	return cJSON_IsNumber(v) ? (int64_t)v->valuedouble : 0;
}

void tui_resume_state(struct tui *u, bool mode_given)
{
	FILE *f = fopen(u->s.j.path, "re");
	if (!f)
		return;
	char *line = NULL;
	size_t cap = 0;
	struct usage last = { 0 };
	bool have = false;
	char mode[16] = "";
	while (getline(&line, &cap, f) > 0) {
		/* Only the records that say what to keep. */
		if (!strstr(line, "\"type\":\"stop\"") && !strstr(line, "\"type\":\"mode\"") && !strstr(line, "\"type\":\"model\""))
			continue;
		cJSON *r = cJSON_Parse(line);
		const char *t = json_str(r, "type");
		if (t && !strcmp(t, "stop")) {
			const cJSON *us = cJSON_GetObjectItemCaseSensitive(r, "usage");
			last = (struct usage){ .input = num(us, "input_tokens"), .output = num(us, "output_tokens"),
					       .cache_read = num(us, "cache_read_tokens"),
					       .cache_write = num(us, "cache_write_tokens") };
			have = true;
		} else if (t && !strcmp(t, "mode") && json_str(r, "mode")) {
			snprintf(mode, sizeof(mode), "%s", json_str(r, "mode"));
		}
		cJSON_Delete(r);
	}
	free(line);
	fclose(f);
	/* The totals go on from where the session was; its stop records
	 * carry them on. */
	if (have) {
		u->s.usage = last;
		u->usage = last;
	}
	enum gate_mode m;
	/* The mode the person last chose, unless a flag says otherwise now. */
	if (mode[0] && !mode_given && gate_mode_parse(mode, &m) == 0)
		u->f.gate.mode = m;
}

void tui_journal_mode(struct tui *u)
{
	cJSON *rec = cJSON_CreateObject();
	cJSON_AddStringToObject(rec, "mode", gate_mode_name(u->f.gate.mode));
	journal_write(&u->s.j, "mode", rec);
	cJSON_Delete(rec);
}
