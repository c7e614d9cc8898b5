/* Which backend a box runs on. Each is behind backend.h's interface in
 * files of its own: ns.c (and nsroot.c), vm.c (and vm-*.c). */
#include "sandbox/backend.h"
#include "sandbox/ns.h"
#include "sandbox/vm.h"

#include <string.h>

const struct box_backend *backend_find(const char *name)
{
	if (!name || !strcmp(name, "ns"))
		return &ns_backend;
	if (!strcmp(name, "vm"))
		return &vm_backend;
	if (!strcmp(name, "auto")) {
		/* A microVM where the machine has KVM; under TCG a VM is seconds
		 * to boot, so auto means ns there. */
		struct err e = { 0 };
		return vm_kvm_usable() && vm_available(&e) == 0 ? &vm_backend : &ns_backend;
	}
	return NULL;
}
