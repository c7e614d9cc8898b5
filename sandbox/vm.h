/* The vm backend (vm.c; vm-int.h is what its files share): a box is a
 * jailed QEMU microvm with ward-guest as its /init. */
#pragma once
#include <stdbool.h>

#include "base/err.h"

struct box_backend;
/* Its operations (backend.h). */
extern const struct box_backend vm_backend;
/* Whether the vm backend can run here (QEMU, mkfs.ext4, a kernel): 0, or
 * -errno with e saying what is missing. */
int vm_available(struct err *e);
/* Whether KVM works here (probed once). */
bool vm_kvm_usable(void);
