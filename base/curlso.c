#include "base/curlso.h"
#include "base/cleanup.h"

#include <dlfcn.h>
#include <errno.h>
#include <stddef.h>
#include <string.h>

struct curlso curlso;

int curlso_load(void)
{
	static int loaded;
	if (loaded)
		return loaded < 0 ? loaded : 0;
	void *h = dlopen("libcurl.so.4", RTLD_NOW | RTLD_LOCAL);
	if (!h)
		return loaded = -ENOENT;
	static const struct {
		const char *name;
		size_t off;
	} syms[] = {
#define SYM(f, n) { n, offsetof(struct curlso, f) }
		SYM(global_init, "curl_global_init"), SYM(multi_init, "curl_multi_init"),
		SYM(multi_setopt, "curl_multi_setopt"), SYM(multi_assign, "curl_multi_assign"),
		SYM(multi_socket_action, "curl_multi_socket_action"), SYM(multi_info_read, "curl_multi_info_read"),
		SYM(multi_add_handle, "curl_multi_add_handle"), SYM(multi_remove_handle, "curl_multi_remove_handle"),
		SYM(multi_cleanup, "curl_multi_cleanup"), SYM(easy_init, "curl_easy_init"),
		SYM(easy_setopt, "curl_easy_setopt"), SYM(easy_getinfo, "curl_easy_getinfo"),
		SYM(easy_perform, "curl_easy_perform"),
		SYM(easy_cleanup, "curl_easy_cleanup"), SYM(easy_strerror, "curl_easy_strerror"),
		SYM(slist_append, "curl_slist_append"), SYM(slist_free_all, "curl_slist_free_all"),
		SYM(getdate, "curl_getdate"),
#undef SYM
	};
	for (size_t i = 0; i < ARRAY_SIZE(syms); i++) {
		void *f = dlsym(h, syms[i].name);
		if (!f)
			return loaded = -ENOSYS;
		memcpy((char *)&curlso + syms[i].off, &f, sizeof(f));
	}
	if (curlso.global_init(CURL_GLOBAL_DEFAULT) != 0)
		return loaded = -EIO;
	loaded = 1;
	return 0;
}
