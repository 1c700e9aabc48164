/*
 * fileio.h - whole-file reads with limits, atomic writes, directories.
 */
#ifndef KCTL_FILEIO_H
#define KCTL_FILEIO_H

#include <stddef.h>

/*
 * Reads path (or stdin when path is "-") into a malloc'd NUL-terminated
 * buffer (*out, caller frees) of *len bytes.  Fails with KERR_LIMIT when
 * the file is larger than max bytes, KERR_IO otherwise; msg names the path.
 */
int file_read(const char *path, size_t max, char **out, size_t *len, char *msg, size_t n);

/*
 * file_read for a file another, untrusted process wrote: refuses a
 * symbolic link, anything but a regular file (a FIFO would block), and a
 * file with more than one name (a hard link to something else).
 */
int file_read_untrusted(const char *path, size_t max, char **out, size_t *len, char *msg, size_t n);

/*
 * Writes data to path through a temporary file in the same directory,
 * fsync and rename, so readers see the old or the new contents, never a
 * torn file.  Returns 0 or KERR_IO with msg naming the path and errno.
 */
int file_write_atomic(const char *path, const void *data, size_t len, char *msg, size_t n);

/*
 * Creates path as an empty file, a marker whose presence is what counts, in
 * a directory another process may write to: O_EXCL, so no link planted
 * there is followed.  One already there counts as made.  Returns 0 or
 * KERR_IO with msg naming the path and errno.
 */
int file_mark(const char *path, char *msg, size_t n);

/* mkdir -p; mode 0755.  Returns 0, or KERR_IO (msg set) also when path
 * exists and is not a directory. */
int dir_make(const char *path, char *msg, size_t n);

/* rm -rf of a directory tree we created.  Returns 0 or KERR_IO. */
int dir_remove_tree(const char *path);

/*
 * Opens /dev/null on whichever of descriptors 0, 1 and 2 are closed, so
 * that no file the program opens later takes their place (a program run
 * with ">&-" would otherwise print into its own database or reports).
 * Called first thing in main.
 */
void stdfds_sanitize(void);

#endif
