/* The tar formats image layers come in. Go's archive/tar (docker, skopeo,
 * buildkit) writes ustar and pax; GNU tar (mmdebstrap, docker save of old)
 * writes GNU long names ('L', 'K') and base-256 numbers. */
#include "image/tar.h"
#include "base/cleanup.h"

#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define BLOCK 512

struct hdr {
	char name[100], mode[8], uid[8], gid[8], size[12], mtime[12], chksum[8], type, linkname[100];
	char magic[6], version[2], uname[32], gname[32], devmajor[8], devminor[8], prefix[155], pad[12];
};
_Static_assert(sizeof(struct hdr) == BLOCK, "a tar header is a block");

void image_tar_init(struct image_tar *t, image_tar_read_fn *read, void *ud)
{
	*t = (struct image_tar){ .read = read, .ud = ud };
}

void image_tar_free(struct image_tar *t)
{
	free(t->ent.path);
	free(t->ent.link);
	t->ent.path = t->ent.link = NULL;
}

/* Exactly n bytes: 0, 1 when the archive ends before the first byte, or
 * <0 (-EPIPE: it ends within them). */
static int tar_read_full(struct image_tar *t, void *buf, size_t n, struct err *e)
{
	size_t got = 0;
	while (got < n) {
		ssize_t k = t->read(t->ud, (char *)buf + got, n - got, e);
		if (k < 0)
			return (int)k;
		if (k == 0)
			return got ? err_set(e, -EPIPE, "the archive ends inside a block") : 1;
		got += (size_t)k;
	}
	return 0;
}

static int tar_skip(struct image_tar *t, uint64_t n, struct err *e)
{
	char buf[16384];
	while (n) {
		size_t k = n < sizeof(buf) ? (size_t)n : sizeof(buf);
		int r = tar_read_full(t, buf, k, e);
		if (r)
			return r > 0 ? err_set(e, -EPIPE, "the archive ends inside an entry") : r;
		n -= k;
	}
	return 0;
}

/* An octal field (spaces and NULs around it), or base-256 (GNU: the first
 * byte's high bit set). */
static int tar_num(const char *f, size_t n, uint64_t *ret)
{
	uint64_t v = 0;
	if ((unsigned char)f[0] & 0x80) {
		if ((unsigned char)f[0] == 0xff)
			return -EINVAL;	/* negative */
		v = (unsigned char)f[0] & 0x7f;
		for (size_t i = 1; i < n; i++) {
			if (v >> 55)
				return -ERANGE;
			v = v << 8 | (unsigned char)f[i];
		}
		*ret = v;
		return 0;
	}
	size_t i = 0;
	while (i < n && f[i] == ' ')
		i++;
	size_t digits = 0;
	for (; i < n && f[i] >= '0' && f[i] <= '7'; i++, digits++) {
		if (v >> 60)
			return -ERANGE;
		v = v << 3 | (uint64_t)(f[i] - '0');
	}
	for (; i < n; i++)
		if (f[i] != ' ' && f[i] != 0)
			return -EINVAL;
	*ret = v;
	return 0;
}

static bool tar_zero(const void *p)
{
	const uint64_t *q = p;
	for (size_t i = 0; i < BLOCK / 8; i++)
		if (q[i])
			return false;
	return true;
}

static bool tar_chksum_ok(const struct hdr *h)
{
	uint64_t want;
	if (tar_num(h->chksum, sizeof(h->chksum), &want) < 0)
		return false;
	const unsigned char *u = (const unsigned char *)h;
	const signed char *s = (const signed char *)h;
	int64_t su = 0, ss = 0;
	for (size_t i = 0; i < BLOCK; i++) {
		bool in = i >= offsetof(struct hdr, chksum) && i < offsetof(struct hdr, chksum) + sizeof(h->chksum);
		su += in ? ' ' : u[i];
		ss += in ? ' ' : s[i];
	}
	return (uint64_t)su == want || (uint64_t)ss == want;
}

static char *tar_field(const char *f, size_t n)
{
	return strndup(f, strnlen(f, n));
}

/* pax records: "LEN KEY=VALUE\n" each. */
struct pax {
	char *path, *link;
	bool has_size, has_uid, has_gid, xattrs;
	uint64_t size, uid, gid;
};

static void pax_free(struct pax *p)
{
	free(p->path);
	free(p->link);
	*p = (struct pax){ 0 };
}

static int pax_dec(const char *v, size_t n, uint64_t *ret)
{
	uint64_t x = 0;
	if (!n)
		return -EINVAL;
	for (size_t i = 0; i < n; i++) {
		if (v[i] < '0' || v[i] > '9' || x > (UINT64_MAX - 9) / 10)
			return -EINVAL;
		x = x * 10 + (uint64_t)(v[i] - '0');
	}
	*ret = x;
	return 0;
}

static int pax_parse(const char *b, size_t n, struct pax *p, struct err *e)
{
	size_t off = 0;
	while (off < n) {
		if (b[off] == 0)
			break;	/* padding */
		size_t len = 0, i = off;
		while (i < n && b[i] >= '0' && b[i] <= '9' && len < n)
			len = len * 10 + (size_t)(b[i++] - '0');
		if (i >= n || b[i] != ' ' || len < 5 || len > n - off || b[off + len - 1] != '\n')
			return err_set(e, -EINVAL, "a pax header record is malformed");
		const char *k = b + i + 1, *end = b + off + len - 1;
		const char *eq = memchr(k, '=', (size_t)(end - k));
		if (!eq)
			return err_set(e, -EINVAL, "a pax header record has no '='");
		size_t kl = (size_t)(eq - k), vl = (size_t)(end - eq - 1);
		const char *v = eq + 1;
#define KEY(s) (kl == sizeof(s) - 1 && !memcmp(k, s, kl))
		if (KEY("path") || KEY("linkpath")) {
			if (memchr(v, 0, vl))
				return err_set(e, -EINVAL, "a pax path holds a NUL");
			char **dst = KEY("path") ? &p->path : &p->link;
			free(*dst);
			if (!(*dst = strndup(v, vl)))
				return err_set(e, -ENOMEM, "out of memory");
		} else if (KEY("size") || KEY("uid") || KEY("gid")) {
			uint64_t x;
			if (pax_dec(v, vl, &x) < 0)
				return err_set(e, -EINVAL, "a pax %.*s is not a number", (int)kl, k);
			if (KEY("size"))
				p->size = x, p->has_size = true;
			else if (KEY("uid"))
				p->uid = x, p->has_uid = true;
			else
				p->gid = x, p->has_gid = true;
		} else if (kl > 11 && !memcmp(k, "GNU.sparse.", 11)) {
			return err_set(e, -EOPNOTSUPP, "a GNU sparse file (not supported)");
		} else if ((kl > 12 && !memcmp(k, "SCHILY.xattr.", 13)) || (kl > 16 && !memcmp(k, "LIBARCHIVE.xattr.", 17))) {
			p->xattrs = true;
		}
#undef KEY
		off += len;
	}
	return 0;
}

/* A pax header's or a long name's content, whole. */
static int tar_meta(struct image_tar *t, uint64_t size, char **ret, struct err *e)
{
	if (size > IMAGE_TAR_META_MAX)
		return err_set(e, -EFBIG, "a pax header or long name of %llu bytes (at most %u)", (unsigned long long)size,
			       IMAGE_TAR_META_MAX);
	char *b = malloc((size_t)size + 1);
	if (!b)
		return err_set(e, -ENOMEM, "out of memory");
	int r = tar_read_full(t, b, (size_t)size, e);
	if (r == 0)
		r = tar_skip(t, (BLOCK - size % BLOCK) % BLOCK, e);
	if (r) {
		free(b);
		return r > 0 ? err_set(e, -EPIPE, "the archive ends inside a header") : r;
	}
	b[size] = 0;
	*ret = b;
	return 0;
}

int image_tar_next(struct image_tar *t, const struct image_tar_entry **ret, struct err *e)
{
	int r = tar_skip(t, t->left + t->pad, e);
	if (r)
		return r;
	t->left = t->pad = 0;
	image_tar_free(t);
	struct pax pax = { 0 };
	char *longname = NULL, *longlink = NULL;
	struct hdr h;
	for (;;) {
		r = tar_read_full(t, &h, BLOCK, e);
		if (r)
			goto out;	/* 1: the end without its zero blocks, or an error */
		if (tar_zero(&h)) {
			r = 1;	/* the end (a second zero block is not waited for) */
			goto out;
		}
		if (!tar_chksum_ok(&h)) {
			r = err_set(e, -EINVAL, "a header's checksum is wrong (not a tar archive, or a damaged one)");
			goto out;
		}
		t->entries++;
		uint64_t size;
		if (tar_num(h.size, sizeof(h.size), &size) < 0) {
			r = err_set(e, -EINVAL, "a header's size is not a number");
			goto out;
		}
		char *meta = NULL;
		if (h.type == 'x' || h.type == 'g' || h.type == 'L' || h.type == 'K') {
			if ((r = tar_meta(t, size, &meta, e)) < 0)
				goto out;
		}
		if (h.type == 'x') {
			r = pax_parse(meta, (size_t)size, &pax, e);
			free(meta);
			if (r < 0)
				goto out;
			continue;
		}
		if (h.type == 'g') {
			/* Global records: a comment (git archive's), nothing an
			 * entry takes. */
			free(meta);
			continue;
		}
		if (h.type == 'L' || h.type == 'K') {
			char **dst = h.type == 'L' ? &longname : &longlink;
			free(*dst);
			*dst = meta;
			continue;
		}
		struct image_tar_entry *en = &t->ent;
		char type = h.type == 0 || h.type == '7' ? '0' : h.type;
		if (type < '0' || type > '6') {
			r = err_set(e, -EOPNOTSUPP, "entry type '%c' (%s) is not supported", type >= ' ' && type < 0x7f ? type : '?',
				    type == 'S' ? "a GNU sparse file" : type == 'M' || type == 'V' ? "a multi-volume archive"
								   : "not a file, link or directory");
			goto out;
		}
		uint64_t mode, uid, gid, maj = 0, min = 0;
		if (tar_num(h.mode, sizeof(h.mode), &mode) < 0 || tar_num(h.uid, sizeof(h.uid), &uid) < 0 ||
		    tar_num(h.gid, sizeof(h.gid), &gid) < 0 ||
		    ((type == '3' || type == '4') &&
		     (tar_num(h.devmajor, sizeof(h.devmajor), &maj) < 0 || tar_num(h.devminor, sizeof(h.devminor), &min) < 0))) {
			r = err_set(e, -EINVAL, "a header's number is malformed");
			goto out;
		}
		*en = (struct image_tar_entry){
			.type = (enum image_tar_type)type, .mode = (uint32_t)(mode & 07777),
			.uid = pax.has_uid ? pax.uid : uid, .gid = pax.has_gid ? pax.gid : gid,
			.size = pax.has_size ? pax.size : size, .devmajor = (uint32_t)maj, .devminor = (uint32_t)min,
			.xattrs = pax.xattrs,
		};
		if (pax.path)
			en->path = TAKE_PTR(pax.path);
		else if (longname)
			en->path = TAKE_PTR(longname);
		else if (!memcmp(h.magic, "ustar\0", 6) && h.prefix[0]) {
			char *p = tar_field(h.prefix, sizeof(h.prefix)), *n = tar_field(h.name, sizeof(h.name));
			if (p && n && asprintf(&en->path, "%s/%s", p, n) < 0)
				en->path = NULL;
			free(p);
			free(n);
		} else {
			en->path = tar_field(h.name, sizeof(h.name));
		}
		if (pax.link)
			en->link = TAKE_PTR(pax.link);
		else if (longlink)
			en->link = TAKE_PTR(longlink);
		else
			en->link = tar_field(h.linkname, sizeof(h.linkname));
		if (!en->path || !en->link) {
			r = err_set(e, -ENOMEM, "out of memory");
			goto out;
		}
		/* Only a regular file has content; a hard link's or a
		 * directory's size is for nothing (and is not read). */
		if (type != '0')
			en->size = 0;
		t->left = en->size;
		t->pad = (BLOCK - en->size % BLOCK) % BLOCK;
		*ret = en;
		r = 0;
		break;
	}
out:
	pax_free(&pax);
	free(longname);
	free(longlink);
	if (r < 0 && t->entries == 0 && r != -ENOMEM && r != -EFBIG) {
		/* The first header is where a file that is no archive shows. */
		char m[sizeof(e->msg)];
		snprintf(m, sizeof(m), "%s", e->msg);
		return err_set(e, r, "not a tar archive (%s)", m);
	}
	if (r == 1)
		return 0;
	return r < 0 ? r : 1;
}

ssize_t image_tar_data(struct image_tar *t, void *buf, size_t n, struct err *e)
{
	if (!t->left)
		return 0;
	if (n > t->left)
		n = (size_t)t->left;
	ssize_t k = t->read(t->ud, buf, n, e);
	if (k < 0)
		return k;
	if (k == 0)
		return err_set(e, -EPIPE, "the archive ends inside an entry");
	t->left -= (uint64_t)k;
	return k;
}
