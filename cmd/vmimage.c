/* ward vm-image: the vm backend's own image (kernel and initramfs), built
 * from the host's own kernel and cached; vm boxes build it on first use
 * too. (A box's root image is `ward image`'s: cmd/image.c.) */
#include "cmd/cmd.h"
#include "cmd/flagtab.h"
#include "sandbox/box.h"
#include "sandbox/vmimage.h"

#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

static int vmimage_run(int argc, char **argv)
{
	bool force = false;
	if (argc < 2 || strcmp(argv[1], "build")) {
		bool help = argc >= 2 && (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h"));
		flags_help(help ? stdout : stderr, &flagtab_vm_image_build);
		return help ? 0 : EXIT_USAGE;
	}
	struct flags_getopt g;
	flags_getopt_init(&g, &flagtab_vm_image_build);
	optind = 1;
	opterr = 0;
	int c;
	while ((c = getopt_long(argc - 1, argv + 1, g.shorts, g.opts, NULL)) != -1) {
		if (c == 'h') {
			flags_help(stdout, &flagtab_vm_image_build);
			return 0;
		}
		if (c != 'f')
			return cmd_bad_flag("vm-image build", c, argv + 1);
		force = true;
	}
	if (optind != argc - 1) {
		cmd_error("vm-image build takes no arguments; usage: %s", flagtab_vm_image_build.synopsis);
		return EXIT_USAGE;
	}
	struct err e = { 0 };
	struct vm_image img;
	if (vmimage_get(cmd_guest_path(), force, &img, &e) < 0) {
		cmd_error("%s", e.msg);
		return EXIT_FAIL;
	}
	struct stat k, i;
	stat(img.kernel, &k);
	stat(img.initrd, &i);
	printf("kernel %s (%s, %.1f MB)\ninitrd %s (%.1f MB)\n", img.kernel, img.kver, (double)k.st_size / 1e6,
	       img.initrd, (double)i.st_size / 1e6);
	return 0;
}

const struct command cmd_vm_image = {
	.name = "vm-image", .args = "build [--force]", .summary = "build the vm backend's kernel and initramfs (cached)",
	.run = vmimage_run,
};
