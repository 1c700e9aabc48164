#include "fileio.h"
#include "err.h"
#include "sbuf.h"
#include "xalloc.h"

#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static int read_fd(int fd, const char *path, size_t max, char **out, size_t *len, char *msg,
		   size_t n);

int file_read(const char *path, size_t max, char **out, size_t *len, char *msg, size_t n)
{
	int fd, rc;

	*out = NULL;
	if (len)
		*len = 0;
	if (!strcmp(path, "-"))
		return read_fd(STDIN_FILENO, path, max, out, len, msg, n);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return kerr_set(msg, n, KERR_IO, "cannot open '%s': %s", path, strerror(errno));
	rc = read_fd(fd, path, max, out, len, msg, n);
	close(fd);
	return rc;
}

int file_read_untrusted(const char *path, size_t max, char **out, size_t *len, char *msg, size_t n)
{
	struct stat st;
	int fd, rc;

	*out = NULL;
	if (len)
		*len = 0;
	/* O_NONBLOCK: a FIFO planted under the name must not block the reader. */
	fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
	if (fd < 0)
		return kerr_set(msg, n, KERR_IO, "cannot open '%s': %s", path, strerror(errno));
	if (fstat(fd, &st) || !S_ISREG(st.st_mode) || st.st_nlink != 1)
		rc = kerr_set(msg, n, KERR_IO, "'%s' is not a plain file with one name", path);
	else
		rc = read_fd(fd, path, max, out, len, msg, n);
	close(fd);
	return rc;
}

static int read_fd(int fd, const char *path, size_t max, char **out, size_t *len, char *msg,
		   size_t n)
{
	struct sbuf b = SBUF_INIT;
	int rc = 0;
	char chunk[65536];

	for (;;) {
		ssize_t got = read(fd, chunk, sizeof(chunk));

		if (got < 0 && errno == EINTR)
			continue;
		if (got < 0) {
			rc = kerr_set(msg, n, KERR_IO, "cannot read '%s': %s", path,
				      strerror(errno));
			goto out;
		}
		if (got == 0)
			break;
		if (b.len + (size_t)got > max) {
			rc = kerr_set(msg, n, KERR_LIMIT,
				      "'%s' is larger than the limit of %zu bytes", path, max);
			goto out;
		}
		sbuf_add(&b, chunk, (size_t)got);
	}
	sbuf_grow(&b, 0);
	*out = sbuf_detach(&b, len);
out:
	sbuf_release(&b);
	return rc;
}

static int write_all(int fd, const char *p, size_t len)
{
	while (len) {
		ssize_t w = write(fd, p, len);

		if (w < 0 && errno == EINTR)
			continue;
		if (w < 0)
			return -1;
		p += w;
		len -= (size_t)w;
	}
	return 0;
}

int file_mark(const char *path, char *msg, size_t n)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);

	if (fd < 0 && errno != EEXIST)
		return kerr_set(msg, n, KERR_IO, "cannot create '%s': %s", path, strerror(errno));
	if (fd >= 0)
		close(fd);
	return 0;
}

int file_write_atomic(const char *path, const void *data, size_t len, char *msg, size_t n)
{
	char *tmp = xasprintf("%s.tmp.%ld", path, (long)getpid());
	int fd, rc = 0;

	fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0) {
		rc = kerr_set(msg, n, KERR_IO, "cannot create '%s': %s", tmp, strerror(errno));
		goto out;
	}
	if (write_all(fd, data, len) || fsync(fd)) {
		rc = kerr_set(msg, n, KERR_IO, "cannot write '%s': %s", tmp, strerror(errno));
		close(fd);
		unlink(tmp);
		goto out;
	}
	if (close(fd) || rename(tmp, path)) {
		rc = kerr_set(msg, n, KERR_IO, "cannot write '%s': %s", path, strerror(errno));
		unlink(tmp);
	}
out:
	free(tmp);
	return rc;
}

int dir_make(const char *path, char *msg, size_t n)
{
	char *p;
	struct stat st;
	int rc = 0;

	if (!*path) /* the walk below starts at its second byte */
		return kerr_set(msg, n, KERR_IO, "cannot create directory '': the path is empty");
	p = xstrdup(path);

	for (char *s = p + 1;; s++) {
		char c = *s;

		if (c != '/' && c != '\0')
			continue;
		*s = '\0';
		if (mkdir(p, 0755) && errno != EEXIST) {
			rc = kerr_set(msg, n, KERR_IO, "cannot create directory '%s': %s", p,
				      strerror(errno));
			break;
		}
		if (!c && stat(p, &st)) {
			rc = kerr_set(msg, n, KERR_IO, "cannot create directory '%s': %s", p,
				      strerror(errno));
			break;
		}
		if (!c && !S_ISDIR(st.st_mode)) {
			rc = kerr_set(
				msg, n, KERR_IO,
				"cannot create directory '%s': it exists and is not a directory",
				p);
			break;
		}
		*s = c;
		if (!c)
			break;
	}
	free(p);
	return rc;
}

static int remove_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	return remove(path);
}

int dir_remove_tree(const char *path)
{
	if (nftw(path, remove_entry, 16, FTW_DEPTH | FTW_PHYS) && errno != ENOENT)
		return KERR_IO;
	return 0;
}

void stdfds_sanitize(void)
{
	int fd;

	/* each open takes the lowest free descriptor: stop at the first above 2 */
	while ((fd = open("/dev/null", O_RDWR)) >= 0 && fd <= 2)
		;
	if (fd > 2)
		close(fd);
}
