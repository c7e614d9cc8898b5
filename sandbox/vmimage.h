/* The vm backend's image, made from the host's own Debian kernel: an
 * uncompressed vmlinux (a PVH boot skips decompression) and an initramfs
 * holding ward-guest as /init, its shared libraries, the modules it loads
 * itself (virtio-mmio, virtio-console, 9p over virtio) and a minimal /etc.
 * Both are cached under $XDG_CACHE_HOME/ward/images and rebuilt only when
 * their inputs (the kernel, ward-guest, the host's /etc files) change. */
#pragma once
#include <limits.h>
#include <stdbool.h>
#include <stddef.h>

#include "base/err.h"

struct vm_image {
	char kernel[PATH_MAX];	/* vmlinux */
	char initrd[PATH_MAX];	/* initramfs.cpio */
	char kver[128];
};

/* The newest /boot/vmlinuz-* and its modules, or an error that says what
 * to install. */
int vmimage_kernel(char *vmlinuz, size_t n, char *kver, size_t kn, struct err *e);
/* Images and snapshots kept in the cache, newest first. */
#define VMIMAGE_KEEP 4
/* Remove all but the newest keep files matching pattern, and beside each
 * removed one the files with the same stem and these suffixes. */
void vmimage_prune(const char *pattern, size_t keep, const char *const *suffixes);
/* Build (or find in the cache) the image for this ward-guest. */
int vmimage_get(const char *guest_path, bool force, struct vm_image *out, struct err *e);
