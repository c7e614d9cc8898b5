/* libssl and libcrypto, loaded when first needed rather than linked.
 * Linking them makes every process that maps them relocate their data
 * whether it calls them or not: about 460 kB of anonymous memory in each
 * box's keeper (bench/RESULTS.md's scale rows), which only a box with a
 * secret's TLS termination, a store's S3 signing or a SHA-256 needs. A file
 * that includes this header calls OpenSSL as usual; each call goes through
 * the table that the first call fills (osslso_fns). Its compile needs
 * OpenSSL's headers only; a binary that links libssl or libcrypto itself
 * gets the same library (dlopen finds the one already loaded). */
#pragma once
#include <openssl/crypto.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/pem.h>
#include <openssl/rand.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>

struct err;

/* Every OpenSSL function ward calls. One missing here fails the link of a
 * binary that does not link OpenSSL itself (the keeper and ward do not). */
#define OSSLSO_FNS(X)                                                                                          \
	X(BIO_ctrl) X(BIO_free) X(BIO_new) X(BIO_new_mem_buf) X(BIO_s_mem) X(BN_bin2bn) X(BN_free)              \
	X(BN_to_ASN1_INTEGER) X(CRYPTO_memcmp) X(ERR_clear_error) X(ERR_error_string_n) X(ERR_get_error)        \
	X(EVP_Digest) X(EVP_DigestFinal_ex) X(EVP_DigestInit_ex) X(EVP_DigestUpdate) X(EVP_MD_CTX_free)         \
	X(EVP_MD_CTX_new) X(EVP_PKEY_Q_keygen) X(EVP_PKEY_free) X(EVP_sha256) X(HMAC) X(OPENSSL_cleanse)        \
	X(PEM_read_bio_PrivateKey) X(PEM_read_bio_X509) X(PEM_write_bio_PrivateKey) X(PEM_write_bio_X509)      \
	X(RAND_bytes) X(SSL_CTX_ctrl) X(SSL_CTX_free) X(SSL_CTX_get_cert_store) X(SSL_CTX_get_ex_data)          \
	X(SSL_CTX_load_verify_locations) X(SSL_CTX_new) X(SSL_CTX_sess_set_new_cb)                              \
	X(SSL_CTX_set_default_read_buffer_len) X(SSL_CTX_set_ex_data) X(SSL_CTX_set_num_tickets)                \
	X(SSL_CTX_set_verify) X(SSL_CTX_up_ref) X(SSL_CTX_use_PrivateKey) X(SSL_CTX_use_certificate)            \
	X(SSL_SESSION_dup) X(SSL_SESSION_free) X(SSL_SESSION_is_resumable) X(SSL_accept) X(SSL_connect)         \
	X(SSL_ctrl) X(SSL_free) X(SSL_get_SSL_CTX) X(SSL_get_error) X(SSL_get_ex_data) X(SSL_get_verify_result) \
	X(SSL_has_pending) X(SSL_new) X(SSL_read) X(SSL_set1_host) X(SSL_set_ex_data) X(SSL_set_fd)             \
	X(SSL_set_session) X(SSL_shutdown) X(SSL_write) X(TLS_client_method) X(TLS_server_method)               \
	X(X509V3_EXT_conf) X(X509V3_set_ctx) X(X509_EXTENSION_free) X(X509_NAME_add_entry_by_txt)               \
	X(X509_STORE_add_cert) X(X509_add_ext) X(X509_free) X(X509_get_serialNumber) X(X509_get_subject_name)   \
	X(X509_getm_notAfter) X(X509_getm_notBefore) X(X509_gmtime_adj) X(X509_new) X(X509_set_issuer_name)    \
	X(X509_set_pubkey) X(X509_set_version) X(X509_sign) X(X509_verify_cert_error_string)

struct osslso {
#define OSSLSO_MEMBER(f) __typeof__(&f) f;
	OSSLSO_FNS(OSSLSO_MEMBER)
#undef OSSLSO_MEMBER
};

/* Load libssl.so.3 (and with it libcrypto.so.3), once per process and
 * thread-safe. 0, or an error saying what is missing; the same answer on
 * every later call. A process that confines itself (the proxy: landlock
 * leaves it no library to open) calls this first. */
int osslso_load(struct err *e);
/* The table, loaded on first use. Where OpenSSL cannot be loaded (a broken
 * install: libssl3 is a dependency of ward's package), the process says so
 * in one line on stderr and exits 127, as the dynamic linker would have. */
const struct osslso *osslso_fns(void);

/* The calls, by their own names (not in osslso.c, which fills the table). */
#ifndef OSSLSO_TABLE_ONLY
#define BIO_ctrl (osslso_fns()->BIO_ctrl)
#define BIO_free (osslso_fns()->BIO_free)
#define BIO_new (osslso_fns()->BIO_new)
#define BIO_new_mem_buf (osslso_fns()->BIO_new_mem_buf)
#define BIO_s_mem (osslso_fns()->BIO_s_mem)
#define BN_bin2bn (osslso_fns()->BN_bin2bn)
#define BN_free (osslso_fns()->BN_free)
#define BN_to_ASN1_INTEGER (osslso_fns()->BN_to_ASN1_INTEGER)
#define CRYPTO_memcmp (osslso_fns()->CRYPTO_memcmp)
#define ERR_clear_error (osslso_fns()->ERR_clear_error)
#define ERR_error_string_n (osslso_fns()->ERR_error_string_n)
#define ERR_get_error (osslso_fns()->ERR_get_error)
#define EVP_Digest (osslso_fns()->EVP_Digest)
#define EVP_DigestFinal_ex (osslso_fns()->EVP_DigestFinal_ex)
#define EVP_DigestInit_ex (osslso_fns()->EVP_DigestInit_ex)
#define EVP_DigestUpdate (osslso_fns()->EVP_DigestUpdate)
#define EVP_MD_CTX_free (osslso_fns()->EVP_MD_CTX_free)
#define EVP_MD_CTX_new (osslso_fns()->EVP_MD_CTX_new)
#define EVP_PKEY_Q_keygen (osslso_fns()->EVP_PKEY_Q_keygen)
#define EVP_PKEY_free (osslso_fns()->EVP_PKEY_free)
#define EVP_sha256 (osslso_fns()->EVP_sha256)
#define HMAC (osslso_fns()->HMAC)
#define OPENSSL_cleanse (osslso_fns()->OPENSSL_cleanse)
#define PEM_read_bio_PrivateKey (osslso_fns()->PEM_read_bio_PrivateKey)
#define PEM_read_bio_X509 (osslso_fns()->PEM_read_bio_X509)
#define PEM_write_bio_PrivateKey (osslso_fns()->PEM_write_bio_PrivateKey)
#define PEM_write_bio_X509 (osslso_fns()->PEM_write_bio_X509)
#define RAND_bytes (osslso_fns()->RAND_bytes)
#define SSL_CTX_ctrl (osslso_fns()->SSL_CTX_ctrl)
#define SSL_CTX_free (osslso_fns()->SSL_CTX_free)
#define SSL_CTX_get_cert_store (osslso_fns()->SSL_CTX_get_cert_store)
#define SSL_CTX_get_ex_data (osslso_fns()->SSL_CTX_get_ex_data)
#define SSL_CTX_load_verify_locations (osslso_fns()->SSL_CTX_load_verify_locations)
#define SSL_CTX_new (osslso_fns()->SSL_CTX_new)
#define SSL_CTX_sess_set_new_cb (osslso_fns()->SSL_CTX_sess_set_new_cb)
#define SSL_CTX_set_default_read_buffer_len (osslso_fns()->SSL_CTX_set_default_read_buffer_len)
#define SSL_CTX_set_ex_data (osslso_fns()->SSL_CTX_set_ex_data)
#define SSL_CTX_set_num_tickets (osslso_fns()->SSL_CTX_set_num_tickets)
#define SSL_CTX_set_verify (osslso_fns()->SSL_CTX_set_verify)
#define SSL_CTX_up_ref (osslso_fns()->SSL_CTX_up_ref)
#define SSL_CTX_use_PrivateKey (osslso_fns()->SSL_CTX_use_PrivateKey)
#define SSL_CTX_use_certificate (osslso_fns()->SSL_CTX_use_certificate)
#define SSL_SESSION_dup (osslso_fns()->SSL_SESSION_dup)
#define SSL_SESSION_free (osslso_fns()->SSL_SESSION_free)
#define SSL_SESSION_is_resumable (osslso_fns()->SSL_SESSION_is_resumable)
#define SSL_accept (osslso_fns()->SSL_accept)
#define SSL_connect (osslso_fns()->SSL_connect)
#define SSL_ctrl (osslso_fns()->SSL_ctrl)
#define SSL_free (osslso_fns()->SSL_free)
#define SSL_get_SSL_CTX (osslso_fns()->SSL_get_SSL_CTX)
#define SSL_get_error (osslso_fns()->SSL_get_error)
#define SSL_get_ex_data (osslso_fns()->SSL_get_ex_data)
#define SSL_get_verify_result (osslso_fns()->SSL_get_verify_result)
#define SSL_has_pending (osslso_fns()->SSL_has_pending)
#define SSL_new (osslso_fns()->SSL_new)
#define SSL_read (osslso_fns()->SSL_read)
#define SSL_set1_host (osslso_fns()->SSL_set1_host)
#define SSL_set_ex_data (osslso_fns()->SSL_set_ex_data)
#define SSL_set_fd (osslso_fns()->SSL_set_fd)
#define SSL_set_session (osslso_fns()->SSL_set_session)
#define SSL_shutdown (osslso_fns()->SSL_shutdown)
#define SSL_write (osslso_fns()->SSL_write)
#define TLS_client_method (osslso_fns()->TLS_client_method)
#define TLS_server_method (osslso_fns()->TLS_server_method)
#define X509V3_EXT_conf (osslso_fns()->X509V3_EXT_conf)
#define X509V3_set_ctx (osslso_fns()->X509V3_set_ctx)
#define X509_EXTENSION_free (osslso_fns()->X509_EXTENSION_free)
#define X509_NAME_add_entry_by_txt (osslso_fns()->X509_NAME_add_entry_by_txt)
#define X509_STORE_add_cert (osslso_fns()->X509_STORE_add_cert)
#define X509_add_ext (osslso_fns()->X509_add_ext)
#define X509_free (osslso_fns()->X509_free)
#define X509_get_serialNumber (osslso_fns()->X509_get_serialNumber)
#define X509_get_subject_name (osslso_fns()->X509_get_subject_name)
#define X509_getm_notAfter (osslso_fns()->X509_getm_notAfter)
#define X509_getm_notBefore (osslso_fns()->X509_getm_notBefore)
#define X509_gmtime_adj (osslso_fns()->X509_gmtime_adj)
#define X509_new (osslso_fns()->X509_new)
#define X509_set_issuer_name (osslso_fns()->X509_set_issuer_name)
#define X509_set_pubkey (osslso_fns()->X509_set_pubkey)
#define X509_set_version (osslso_fns()->X509_set_version)
#define X509_sign (osslso_fns()->X509_sign)
#define X509_verify_cert_error_string (osslso_fns()->X509_verify_cert_error_string)
#endif
