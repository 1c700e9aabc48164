/*
 * workdir.h - evalpod run's work directory: made, owned, and found again
 * when its evalpod was killed.
 *
 * `evalpod run` works in TMPDIR/evalpod-XXXXXX (the batch's sources, the
 * workers' folders, the device's program cache: megabytes).  It removes
 * the folder on its way out, even when interrupted, but a SIGKILL (the
 * OOM killer, kill -9, a killed process group) ends it before it can.
 * So that such folders do not pile up in TMPDIR, each run holds an
 * exclusive lock (flock) on the folder's .lock file for as long as it
 * lives, and every run first removes the folders of this user whose .lock
 * nobody holds: their evalpod is gone.  The lock file appears already
 * locked (made as .lock.new, locked, then renamed), so a live run's
 * folder is never taken for a dead one; a folder with a .lock.new over a
 * minute old that nobody holds, and no .lock, is a run killed in between
 * and is removed too.  A folder kept on purpose (--keep-work) loses its
 * .lock and is left alone, as is any folder with neither file.
 */
#ifndef EVALPOD_WORKDIR_H
#define EVALPOD_WORKDIR_H

#include <stddef.h>

struct workdir {
	char *path; /* TMPDIR/evalpod-XXXXXX (owned), or NULL */
	int lock;   /* the locked .lock's descriptor, or -1 */
};

#define WORKDIR_INIT                                                                               \
	{                                                                                          \
		NULL, -1                                                                           \
	}

/*
 * Removes the work directories in tmp (TMPDIR, or /tmp when NULL or
 * empty) that belong to this user and whose evalpod is gone, naming each
 * removed one at info level.
 */
void workdir_sweep(const char *tmp);

/*
 * Makes a fresh work directory in tmp (as for workdir_sweep) and locks
 * it.  Returns 0, or KERR_IO with msg (size n) saying what failed.
 */
int workdir_make(struct workdir *w, const char *tmp, char *msg, size_t n);

/*
 * Removes the directory, or when keep is set leaves it (unlocked, without
 * its .lock, so that no later sweep takes it), then releases w.
 */
void workdir_release(struct workdir *w, int keep);

#endif
