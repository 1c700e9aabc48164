/*
 * pocladopt.c - adopting a check worker's compiled program into the timing
 * worker's PoCL cache (see pocladopt.h).
 */
#include "pocladopt.h"
#include "err.h"
#include "fileio.h"
#include "xalloc.h"

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define ADOPT_MAX_ENTRIES 4096 /* directory entries looked at in one cache */

/* PoCL's names: a bucket is two capital letters, a hash capital letters. */
static int bucket_name(const char *s)
{
	return isupper((unsigned char)s[0]) && isupper((unsigned char)s[1]) && !s[2];
}

static int hash_name(const char *s)
{
	size_t i;

	for (i = 0; s[i]; i++)
		if (!isupper((unsigned char)s[i]))
			return 0;
	return i >= 8 && i <= 128;
}

/* A kernel's name (an OpenCL C identifier) or a geometry ("4-1-1-goffs0-smallgrid"). */
static int plain_name(const char *s, int geometry)
{
	size_t i;

	for (i = 0; s[i]; i++)
		if (!(isalnum((unsigned char)s[i]) || s[i] == '_' || (geometry && s[i] == '-')))
			return 0;
	return i > 0 && i <= 255;
}

static int is_dir(const char *path)
{
	struct stat st;

	return !lstat(path, &st) && S_ISDIR(st.st_mode);
}

static void progs_add(struct pocl_progs *p, char *name)
{
	if (p->nr == p->alloc) {
		p->alloc = p->alloc ? 2 * p->alloc : 8;
		p->names = xreallocarray(p->names, p->alloc, sizeof(*p->names));
	}
	p->names[p->nr++] = name;
}

/* Calls fn(ctx, name) for the entries of dir but "." and ".."; -1 past *budget. */
static int each_entry(const char *dir, long *budget, int (*fn)(void *ctx, const char *name),
		      void *ctx)
{
	DIR *d = opendir(dir);
	struct dirent *de;
	int rc = 0;

	if (!d)
		return 0;
	while (!rc && (de = readdir(d))) {
		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
			continue;
		rc = --*budget < 0 ? -1 : fn(ctx, de->d_name);
	}
	closedir(d);
	return rc;
}

struct lister {
	const char *cache, *bucket;
	struct pocl_progs *out;
	long budget;
	int strange; /* an entry that is not PoCL's was seen */
};

static int list_hash(void *ctx, const char *name)
{
	struct lister *l = ctx;
	char *path = xasprintf("%s/%s/%s", l->cache, l->bucket, name);

	if (hash_name(name) && is_dir(path))
		progs_add(l->out, xasprintf("%s/%s", l->bucket, name));
	else
		l->strange = 1;
	free(path);
	return 0;
}

static int list_bucket(void *ctx, const char *name)
{
	struct lister *l = ctx;
	char *path = xasprintf("%s/%s", l->cache, name);
	int rc = 0;

	/* PoCL's temporary files lie beside the buckets. */
	if (bucket_name(name) && is_dir(path)) {
		l->bucket = name;
		rc = each_entry(path, &l->budget, list_hash, l);
	}
	free(path);
	return rc;
}

static int list_progs(const char *cache, struct pocl_progs *out, int *strange)
{
	struct lister l = { .cache = cache, .out = out, .budget = ADOPT_MAX_ENTRIES };
	int rc;

	memset(out, 0, sizeof(*out));
	rc = each_entry(cache, &l.budget, list_bucket, &l);
	if (strange)
		*strange = l.strange;
	return rc;
}

void pocladopt_list(const char *cache, struct pocl_progs *out)
{
	list_progs(cache, out, NULL);
}

void pocladopt_release(struct pocl_progs *p)
{
	for (size_t i = 0; i < p->nr; i++)
		free(p->names[i]);
	free(p->names);
	memset(p, 0, sizeof(*p));
}

/* Copies one regular file, creating the destination (which must not exist). */
static int copy_file(const char *from, const char *to, size_t *left, char *msg, size_t n)
{
	char *data = NULL;
	size_t len = 0, off = 0;
	int fd, rc;

	if ((rc = file_read_untrusted(from, *left, &data, &len, msg, n)))
		return rc;
	*left -= len;
	fd = open(to, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600);
	if (fd < 0) {
		free(data);
		return kerr_set(msg, n, KERR_IO, "cannot create '%s': %s", to, strerror(errno));
	}
	while (off < len) {
		ssize_t put = write(fd, data + off, len - off);

		if (put < 0 && errno == EINTR)
			continue;
		if (put <= 0) {
			rc = kerr_set(msg, n, KERR_IO, "cannot write '%s': %s", to,
				      put < 0 ? strerror(errno) : "short write");
			break;
		}
		off += (size_t)put;
	}
	if (close(fd) && !rc)
		rc = kerr_set(msg, n, KERR_IO, "cannot write '%s': %s", to, strerror(errno));
	free(data);
	return rc;
}

struct copier {
	const char *from, *to; /* the program directories */
	const char *kernel;    /* while walking a kernel's geometries */
	size_t left;           /* bytes still allowed */
	long budget;
	char *msg;
	size_t n;
};

static int copy_geometry(void *ctx, const char *name)
{
	struct copier *c = ctx;
	char *src, *dst;
	int rc;

	if (!plain_name(name, 1))
		return kerr_set(c->msg, c->n, KERR_INVALID, "'%s/%s/%s' is not a PoCL geometry",
				c->from, c->kernel, name);
	dst = xasprintf("%s/%s/%s", c->to, c->kernel, name);
	if (mkdir(dst, 0700)) {
		rc = kerr_set(c->msg, c->n, KERR_IO, "cannot create '%s': %s", dst,
			      strerror(errno));
		free(dst);
		return rc;
	}
	free(dst);
	src = xasprintf("%s/%s/%s/%s.so", c->from, c->kernel, name, c->kernel);
	dst = xasprintf("%s/%s/%s/%s.so", c->to, c->kernel, name, c->kernel);
	/* A geometry whose compile did not finish has no .so: PoCL compiles it again. */
	rc = access(src, F_OK) ? 0 : copy_file(src, dst, &c->left, c->msg, c->n);
	free(src);
	free(dst);
	return rc;
}

static int copy_entry(void *ctx, const char *name)
{
	struct copier *c = ctx;
	char *src = xasprintf("%s/%s", c->from, name), *dst = xasprintf("%s/%s", c->to, name);
	int rc = 0;

	if (!strcmp(name, "program.bc")) {
		rc = copy_file(src, dst, &c->left, c->msg, c->n);
	} else if (is_dir(src)) {
		if (!plain_name(name, 0))
			rc = kerr_set(c->msg, c->n, KERR_INVALID, "'%s' is not a PoCL kernel", src);
		else if (mkdir(dst, 0700))
			rc = kerr_set(c->msg, c->n, KERR_IO, "cannot create '%s': %s", dst,
				      strerror(errno));
		else {
			c->kernel = name;
			rc = each_entry(src, &c->budget, copy_geometry, c);
		}
	}
	/* Other files (PoCL's build log, its access stamp) are not needed. */
	free(src);
	free(dst);
	return rc;
}

int pocladopt_copy(const char *from, const char *cache, size_t max_bytes, char **adopted, char *msg,
		   size_t n)
{
	struct pocl_progs progs;
	struct copier c = { .left = max_bytes, .budget = ADOPT_MAX_ENTRIES, .msg = msg, .n = n };
	char *src = NULL, *dst = NULL, *bucket = NULL;
	int strange = 0, rc;

	*adopted = NULL;
	if (list_progs(from, &progs, &strange) || strange || progs.nr != 1) {
		rc = kerr_set(msg, n, KERR_INVALID,
			      "'%s' does not hold exactly one PoCL program (%zu%s)", from, progs.nr,
			      strange ? ", and entries that are not PoCL's" : "");
		goto out;
	}
	src = xasprintf("%s/%s", from, progs.names[0]);
	dst = xasprintf("%s/%s", cache, progs.names[0]);
	bucket = xstrndup(dst, strlen(cache) + 3);
	if (!access(dst, F_OK)) {
		rc = kerr_set(msg, n, KERR_INVALID, "'%s' is in the cache already", dst);
		goto out;
	}
	if ((mkdir(bucket, 0700) && errno != EEXIST) || mkdir(dst, 0700)) {
		rc = kerr_set(msg, n, KERR_IO, "cannot create '%s': %s", dst, strerror(errno));
		goto out;
	}
	c.from = src;
	c.to = dst;
	rc = each_entry(src, &c.budget, copy_entry, &c);
	if (c.budget < 0)
		rc = kerr_set(msg, n, KERR_LIMIT, "more than %d entries under '%s'",
			      ADOPT_MAX_ENTRIES, src);
	if (rc)
		dir_remove_tree(dst);
	else
		*adopted = xstrdup(progs.names[0]);
out:
	pocladopt_release(&progs);
	free(bucket);
	free(src);
	free(dst);
	return rc;
}

static int listed(const struct pocl_progs *p, const char *name)
{
	for (size_t i = 0; i < p->nr; i++)
		if (!strcmp(p->names[i], name))
			return 1;
	return 0;
}

char *pocladopt_take(const char *from, const char *cache, struct pocl_progs *before, char *why,
		     size_t n)
{
	char *adopted = NULL;

	*why = '\0';
	pocladopt_list(cache, before);
	if (!access(from, F_OK))
		pocladopt_copy(from, cache, POCLADOPT_MAX_BYTES, &adopted, why, n);
	return adopted;
}

const char *pocladopt_fresh(const struct pocl_progs *before, const struct pocl_progs *now,
			    size_t *fresh)
{
	const char *made = NULL;

	*fresh = 0;
	for (size_t i = 0; i < now->nr; i++)
		if (!listed(before, now->names[i])) {
			made = now->names[i];
			++*fresh;
		}
	return *fresh == 1 ? made : NULL;
}

int pocladopt_verify(const char *cache, const struct pocl_progs *before, const char *adopted,
		     char *msg, size_t n)
{
	struct pocl_progs now;
	const char *other = NULL;
	int rc = 0;

	pocladopt_list(cache, &now);
	for (size_t i = 0; i < now.nr && !other; i++)
		if (strcmp(now.names[i], adopted) && !listed(before, now.names[i]))
			other = now.names[i];
	if (other) {
		char *dir = xasprintf("%s/%s", cache, adopted);

		rc = kerr_set(msg, n, KERR_INVALID,
			      "the compiled program handed over as %s is not the one its source "
			      "builds (%s): it was removed and the program compiled again",
			      adopted, other);
		dir_remove_tree(dir);
		free(dir);
	}
	pocladopt_release(&now);
	return rc;
}

int pocladopt_write_ms(const char *dir, double ms, char *msg, size_t n)
{
	char *path = xasprintf("%s.ms", dir), text[32];
	int len = snprintf(text, sizeof(text), "%.3f\n", ms), rc = 0;
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0644);

	if (fd < 0 || write(fd, text, (size_t)len) != len)
		rc = kerr_set(msg, n, KERR_IO, "cannot write '%s': %s", path, strerror(errno));
	if (fd >= 0 && close(fd) && !rc)
		rc = kerr_set(msg, n, KERR_IO, "cannot write '%s': %s", path, strerror(errno));
	free(path);
	return rc;
}

double pocladopt_read_ms(const char *dir)
{
	char *path = xasprintf("%s.ms", dir), *text = NULL, *end, why[512];
	double ms = -1;

	if (!file_read_untrusted(path, 64, &text, NULL, why, sizeof(why))) {
		double v = strtod(text, &end);

		if (end != text && (!strcmp(end, "\n") || !*end) && v >= 0 && v <= 1e7)
			ms = v;
	}
	free(text);
	free(path);
	return ms;
}
