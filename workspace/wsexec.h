/* Files outside a git directory that the user's tools run, or take the
 * programs they run from, without being asked: direnv entering a
 * directory, an editor opening a folder, git at a commit, a package
 * manager at any command. A box that writes one gets code run on the host
 * the next time the user works in the tree, so the diff names each one it
 * changed (flagged, not refused: they are ordinary project files too).
 * The table, with why each is there, is in wsexec.c: the one list.
 * Changes in git directories (base/gitdir.h says what one is) are marked
 * here too: never applied unless the user asks (wsdiff.h). */
#pragma once
#include "workspace/wsdiff.h"

/* Why the tree's file at rel (a path relative to the workspace) runs
 * code on the host: a phrase, or NULL when it is not one of them. */
const char *wsexec_why(const char *rel);
/* Mark each change of c (read from the roots lroot, the tree, and uroot,
 * the box's layer): git, when it is in a git directory (base/gitdir.h: a
 * path through one's name, a directory of the box's view at or above it
 * that git takes for a repository, or the deletion of a directory that
 * holds one); runs, for a file added or changed that is in the table. */
void wsexec_mark(int lroot, int uroot, struct ws_changes *c);
