/*
 * workdir.c - evalpod run's work directory (workdir.h).
 *
 * May use: common/.
 */
#include "workdir.h"
#include "err.h"
#include "fileio.h"
#include "log.h"
#include "xalloc.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define WORK_PREFIX "evalpod-"
#define LOCK_NAME   ".lock"
#define LOCK_NEW    ".lock.new"
/*
 * A run renames its .lock.new to .lock microseconds after making it: one
 * older than this, with nobody holding it, is a run killed in between.
 */
#define LOCK_NEW_GRACE_S 60

static const char *tmp_dir(const char *tmp)
{
	return tmp && *tmp ? tmp : "/tmp";
}

/* Whether name is what mkdtemp makes of WORK_PREFIX "XXXXXX". */
static int is_work_name(const char *name)
{
	static const char alnum[] = "abcdefghijklmnopqrstuvwxyz"
				    "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";
	size_t pre = strlen(WORK_PREFIX);

	return !strncmp(name, WORK_PREFIX, pre) && strlen(name + pre) == 6 &&
	       strspn(name + pre, alnum) == 6;
}

/*
 * Locks the file lock in the work directory wfd if nobody holds it and it
 * is still there under that name (not unlinked or renamed by its run, or
 * by another sweep, after this one opened it), and, when min_age is not 0,
 * was last changed at least min_age seconds ago: returns the locked
 * descriptor, or -1.
 */
static int take_lock(int wfd, const char *lock, time_t min_age)
{
	struct stat st, held;
	int fd = openat(wfd, lock, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);

	/* the age first: a young one's run may be about to lock it */
	if (fd >= 0 &&
	    (fstat(fd, &held) || (min_age && time(NULL) - held.st_mtime < min_age) ||
	     flock(fd, LOCK_EX | LOCK_NB) || fstatat(wfd, lock, &st, AT_SYMLINK_NOFOLLOW) ||
	     held.st_dev != st.st_dev || held.st_ino != st.st_ino)) {
		close(fd);
		fd = -1;
	}
	return fd;
}

/*
 * Takes the lock of the work directory name in the folder dfd (dir), if it
 * is this user's and its run is gone: returns the locked descriptor, or -1.
 * Its run is gone when nobody holds its .lock, or, where it has none yet,
 * its .lock.new is older than LOCK_NEW_GRACE_S and nobody holds it.  A
 * folder with neither (kept by --keep-work, or not evalpod's) is left.
 */
static int take_dead(int dfd, const char *name)
{
	struct stat st;
	int wfd, fd;

	if (fstatat(dfd, name, &st, AT_SYMLINK_NOFOLLOW) || !S_ISDIR(st.st_mode) ||
	    st.st_uid != geteuid())
		return -1;
	wfd = openat(dfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (wfd < 0)
		return -1;
	fd = take_lock(wfd, LOCK_NAME, 0);
	if (fd < 0 && fstatat(wfd, LOCK_NAME, &st, AT_SYMLINK_NOFOLLOW) && errno == ENOENT)
		fd = take_lock(wfd, LOCK_NEW, LOCK_NEW_GRACE_S);
	close(wfd);
	return fd;
}

void workdir_sweep(const char *tmp)
{
	const char *dir = tmp_dir(tmp);
	DIR *d = opendir(dir);
	struct dirent *e;

	if (!d)
		return;
	while ((e = readdir(d))) {
		char *path;
		int fd;

		if (!is_work_name(e->d_name) || (fd = take_dead(dirfd(d), e->d_name)) < 0)
			continue;
		path = xasprintf("%s/%s", dir, e->d_name);
		if (!dir_remove_tree(path))
			log_info("removed the work directory of an evalpod that was killed: %s",
				 path);
		free(path);
		close(fd);
	}
	closedir(d);
}

int workdir_make(struct workdir *w, const char *tmp, char *msg, size_t n)
{
	char *next, *lock;
	int rc = 0;

	w->lock = -1;
	w->path = xasprintf("%s/" WORK_PREFIX "XXXXXX", tmp_dir(tmp));
	if (!mkdtemp(w->path)) {
		rc = kerr_set(msg, n, KERR_IO, "cannot create a work directory '%s': %s", w->path,
			      strerror(errno));
		free(w->path);
		w->path = NULL;
		return rc;
	}
	/* locked before it has its name: a sweep never sees it unlocked */
	next = xasprintf("%s/" LOCK_NEW, w->path);
	lock = xasprintf("%s/" LOCK_NAME, w->path);
	w->lock = open(next, O_RDONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (w->lock < 0 || flock(w->lock, LOCK_EX | LOCK_NB) || rename(next, lock))
		rc = kerr_set(msg, n, KERR_IO, "cannot lock the work directory '%s': %s", w->path,
			      strerror(errno));
	free(next);
	free(lock);
	return rc;
}

void workdir_release(struct workdir *w, int keep)
{
	if (w->path && keep) {
		char *lock = xasprintf("%s/" LOCK_NAME, w->path);

		unlink(lock);
		free(lock);
		log_warn("work directory kept: %s", w->path);
	} else if (w->path) {
		dir_remove_tree(w->path);
	}
	if (w->lock >= 0)
		close(w->lock);
	free(w->path);
	w->path = NULL;
	w->lock = -1;
}
