/* libcurl, loaded when it is first needed rather than linked: linking it
 * loads its thirty-odd libraries (TLS, LDAP, Kerberos, ...) into every ward
 * command, about 7 ms of start-up on each `ward box` call. A file that
 * includes this header calls curl_* as usual; the calls go through the
 * table that curlso_load fills. Its compile needs libcurl's headers only. */
#pragma once
#define CURL_DISABLE_TYPECHECK
#include <curl/curl.h>
#include <time.h>

struct curlso {
	CURLcode (*global_init)(long);
	CURLM *(*multi_init)(void);
	CURLMcode (*multi_setopt)(CURLM *, CURLMoption, ...);
	CURLMcode (*multi_assign)(CURLM *, curl_socket_t, void *);
	CURLMcode (*multi_socket_action)(CURLM *, curl_socket_t, int, int *);
	CURLMsg *(*multi_info_read)(CURLM *, int *);
	CURLMcode (*multi_add_handle)(CURLM *, CURL *);
	CURLMcode (*multi_remove_handle)(CURLM *, CURL *);
	CURLMcode (*multi_cleanup)(CURLM *);
	CURL *(*easy_init)(void);
	CURLcode (*easy_setopt)(CURL *, CURLoption, ...);
	CURLcode (*easy_getinfo)(CURL *, CURLINFO, ...);
	CURLcode (*easy_perform)(CURL *);
	void (*easy_cleanup)(CURL *);
	const char *(*easy_strerror)(CURLcode);
	struct curl_slist *(*slist_append)(struct curl_slist *, const char *);
	void (*slist_free_all)(struct curl_slist *);
	time_t (*getdate)(const char *, const time_t *);
};
extern struct curlso curlso;

/* Load libcurl.so.4 and run curl_global_init, once per process (not
 * thread-safe: call it before starting threads that use curl). 0, or
 * -ENOENT (libcurl is not installed), -ENOSYS (a function is missing: too
 * old a libcurl), -EIO (curl_global_init failed); the same answer on every
 * later call. */
int curlso_load(void);

#undef curl_easy_setopt
#undef curl_easy_getinfo
#undef curl_multi_setopt
#define curl_global_init (curlso.global_init)
#define curl_multi_init (curlso.multi_init)
#define curl_multi_setopt (curlso.multi_setopt)
#define curl_multi_assign (curlso.multi_assign)
#define curl_multi_socket_action (curlso.multi_socket_action)
#define curl_multi_info_read (curlso.multi_info_read)
#define curl_multi_add_handle (curlso.multi_add_handle)
#define curl_multi_remove_handle (curlso.multi_remove_handle)
#define curl_multi_cleanup (curlso.multi_cleanup)
#define curl_easy_init (curlso.easy_init)
#define curl_easy_setopt (curlso.easy_setopt)
#define curl_easy_getinfo (curlso.easy_getinfo)
#define curl_easy_perform (curlso.easy_perform)
#define curl_easy_cleanup (curlso.easy_cleanup)
#define curl_easy_strerror (curlso.easy_strerror)
#define curl_slist_append (curlso.slist_append)
#define curl_slist_free_all (curlso.slist_free_all)
#define curl_getdate (curlso.getdate)
