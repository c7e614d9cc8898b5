/* The workspace changes as a git patch: "diff --git" blocks with git's
 * extended headers (new file / deleted file / old mode / new mode, full
 * object ids on the index line), text hunks from diff(1), and binary
 * content as "GIT binary patch" literal hunks (zlib, base85), so that
 * `git apply` of it to the tree gives what ws_apply gives. Nothing is
 * read through a symlink (workspace/wsfs.h). What a git patch cannot say is
 * named on "note:" lines at the top, which git apply and patch(1) skip:
 *  - a setuid or setgid bit (ward applies none either);
 *  - a mode other than 0644 and 0755 (git has only 100644 and 100755; git
 *    apply makes 0644 or 0755 under umask 022);
 *  - a directory with no files: git apply makes a file's directories and
 *    removes the directories it empties, nothing else. Each directory
 *    where the result differs from the box's tree is named as a
 *    "after git apply: mkdir DIR" or "after git apply: rmdir DIR" note
 *    (mkdirs parents first, rmdirs children first).
 * Hard links are separate files in a patch. */
#pragma once
#include <stdio.h>

#include "base/err.h"
#include "workspace/wsdiff.h"

/* A file whose content, either side, is larger than this is not put in a
 * patch: the patch is refused (-EFBIG), never written without it. */
#define WS_PATCH_FILE_MAX (64 << 20)

/* The whole patch, or an error naming what it cannot hold: -EFBIG (a
 * file over the bound), -EINVAL (a FIFO, socket or device on either
 * side), -EPIPE (no message) when out's reader has gone. out then holds
 * an incomplete patch: the caller discards it. */
int ws_patch(const char *lower, const char *upper, const struct ws_changes *c, FILE *out, struct err *e);
