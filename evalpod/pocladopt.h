/*
 * pocladopt.h - handing a program compiled by a check worker to the timing
 * worker through PoCL's kernel cache, so that it is not compiled twice.
 *
 * PoCL (CPU) keeps a built program in its cache as
 *   <cache>/<2 letters>/<hash>/program.bc
 *   <cache>/<2 letters>/<hash>/<kernel>/<geometry>/<kernel>.so
 * where the hash covers the preprocessed source, the build options and the
 * device.  A build from source that finds program.bc under its hash skips
 * the front end, and a launch that finds <kernel>.so for its local size
 * skips LLVM; program binaries would carry the same files, but making one
 * costs a compile of every kernel for no particular local size.
 *
 * The directory comes from a worker that ran candidate code, so nothing in
 * it is taken on trust: only regular files with PoCL's names are copied,
 * within a byte limit, never over a directory already there (the
 * reference's, the flush kernel's, another program's), and after the build
 * pocladopt_verify checks that PoCL used the adopted directory for this
 * program's source; if it made another one the adopted directory was not
 * this program's and is removed before anything can run from it.
 */
#ifndef EVALPOD_POCLADOPT_H
#define EVALPOD_POCLADOPT_H

#include <stddef.h>

/* A compiled program adopted from another worker, at most. */
#define POCLADOPT_MAX_BYTES (256u << 20)

/* The program directories ("<bucket>/<hash>") of a PoCL cache. */
struct pocl_progs {
	char **names;
	size_t nr, alloc;
};

/* Lists cache's program directories; an unreadable cache lists none. */
void pocladopt_list(const char *cache, struct pocl_progs *out);

void pocladopt_release(struct pocl_progs *p);

/*
 * Copies the one program directory of the PoCL cache `from` into `cache`
 * (program.bc and every <kernel>/<geometry>/<kernel>.so, at most max_bytes
 * in all).  Returns 0 with *adopted the malloc'd "<bucket>/<hash>", or
 * nonzero with msg saying why nothing was adopted: not exactly one program
 * there, names that are not PoCL's, a directory already in cache, a file
 * that is not a regular file, or a limit.
 */
int pocladopt_copy(const char *from, const char *cache, size_t max_bytes, char **adopted, char *msg,
		   size_t n);

/*
 * Lists cache into *before (for pocladopt_verify), then, when `from`
 * exists, adopts its one program (pocladopt_copy, POCLADOPT_MAX_BYTES).
 * Returns the malloc'd "<bucket>/<hash>" adopted, or NULL: `from` absent
 * (why empty) or refused (why says why).
 */
char *pocladopt_take(const char *from, const char *cache, struct pocl_progs *before, char *why,
		     size_t n);

/*
 * The one program directory of now that before does not list, or NULL
 * when there is none or more than one; *fresh gets their number.
 */
const char *pocladopt_fresh(const struct pocl_progs *before, const struct pocl_progs *now,
			    size_t *fresh);

/*
 * After the program was built from source with the adopted directory in
 * place: returns 0 when no program directory other than adopted appeared
 * in cache since before was listed; else removes the adopted directory and
 * returns nonzero (msg set).
 */
int pocladopt_verify(const char *cache, const struct pocl_progs *before, const char *adopted,
		     char *msg, size_t n);

/*
 * A build's wall time kept beside the program directory dir, in the file
 * dir.ms (the front-end worker's WORK/w/frontend/p/ID.ms): milliseconds as
 * one decimal number and a newline.
 *
 * pocladopt_write_ms writes it (a plain write: it is made before dir
 * appears, and read only after; never through a symbolic link).  Returns 0
 * or KERR_IO with msg naming the file.
 *
 * pocladopt_read_ms reads it.  Its writer compiled candidate code, so the
 * file is read as untrusted (a regular file of one name, 64 bytes at most)
 * and anything but a number from 0 to 10^7 gives -1, as does no file.
 */
int pocladopt_write_ms(const char *dir, double ms, char *msg, size_t n);
double pocladopt_read_ms(const char *dir);

#endif
