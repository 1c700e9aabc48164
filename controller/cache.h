/*
 * cache.h - the result cache: evalpod's result documents kept by a key that
 * names everything that decides them, shared by every session and state
 * database of a user (docs/kctl.md, "The result cache").
 *
 * The key is the SHA-256 of the canonical JSON of its inputs (cache_key):
 * the device fingerprints and evalpod's version, the batch's problem part
 * and the program; what goes into the inputs is cache-use.c's business.
 * This module only stores and checks: it never decides what may be cached.
 *
 * The store is one SQLite file of its own (not the state database), in WAL
 * mode with a busy timeout, so several kctl processes may read and write it
 * at once.  Each entry carries its key, the key's inputs, the result, where
 * it came from (origin) and when, and a checksum over all of them; an entry
 * whose checksum or key does not match what it holds is reported by
 * cache_get as a miss with a warning naming the key and the file, never
 * returned.
 *
 * Errors: 0 or a negative KERR_* with msg naming the file and SQLite's
 * reason.  The cache is an optimisation: callers warn and go on.
 */
#ifndef KCTL_CACHE_H
#define KCTL_CACHE_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

#define CACHE_VERSION    1              /* PRAGMA user_version of cache.db */
#define CACHE_BUSY_MS    30000          /* a writer waits this long for another's lock */
#define CACHE_KEY_FORMAT "kctl.cache/1" /* "format" of every key's inputs */

struct cache;

/*
 * Where the cache lives: $KCTL_CACHE_DIR/cache.db, else
 * $XDG_CACHE_HOME/kctl/cache.db, else $HOME/.cache/kctl/cache.db (empty
 * variables count as unset).  A new string.
 */
char *cache_default_path(void);

/*
 * Opens (creating it and its folder, mode 0700, when missing) the cache at
 * path.  *out is freed with cache_close.  A file from a newer kctl, or one
 * that is not a cache, is refused (KERR_INVALID).
 */
int cache_open(const char *path, struct cache **out, char *msg, size_t n);
/*
 * Opens the cache at path to read only (cache_stats): it creates nothing,
 * changes nothing and takes no write lock, so it answers while a session
 * writes.  KERR_NOTFOUND when there is no file; a file that is not a cache
 * of this version, or is from a newer kctl, is refused (KERR_INVALID).
 */
int cache_open_ro(const char *path, struct cache **out, char *msg, size_t n);
/* Closes c; NULL does nothing. */
void cache_close(struct cache *c);
/* The file c was opened from (borrowed). */
const char *cache_file(const struct cache *c);

/*
 * The canonical text of v: objects' keys sorted by their bytes, no
 * whitespace, non-ASCII as \uXXXX escapes, reals with 17 significant
 * digits (jansson's JSON_SORT_KEYS | JSON_COMPACT | JSON_ENSURE_ASCII).
 * A new string.
 */
char *cache_canonical(const json_t *v);
/* The key of inputs: the SHA-256 of cache_canonical(inputs), 64 hex digits. */
void cache_key(const json_t *inputs, char out[65]);

/*
 * Looks key up.  Returns 1 with *entry a new object {key, inputs, result,
 * origin, created (Unix seconds)}; 0 when there is none, when it is older
 * than max_age_days (<= 0: no expiry), or when it fails its checks (warned:
 * "cache: entry KEY in 'FILE' ...; ignored"); negative on a database error.
 */
int cache_get(struct cache *c, const char *key, double max_age_days, json_t **entry, char *msg,
	      size_t n);

/*
 * Stores result under key (replacing what was there: a later evaluation,
 * or an entry that failed its check), with its inputs (whose key must be
 * key: KERR_INVALID otherwise) and origin (an object: session, batch,
 * variant...).  One short transaction.
 */
int cache_put(struct cache *c, const char *key, const json_t *inputs, const json_t *result,
	      const json_t *origin, char *msg, size_t n);

/*
 * An entry in its portable form, as it travels through object storage: a
 * new object {key, inputs, result, origin, created, checksum}, the checksum
 * computed as in the file (over the canonical texts of inputs, result and
 * origin, with the key).
 */
json_t *cache_entry_doc(const char *key, const json_t *inputs, const json_t *result,
			const json_t *origin, double created);
/*
 * Why doc is not a sound entry for key (the checksum, the key, the inputs
 * or a part missing), or NULL when it is.  A static string.
 */
const char *cache_entry_fault(const json_t *doc, const char *key);

/* {file, entries, bytes (the file and its WAL), oldest, newest (Unix seconds or null)}. */
int cache_stats(struct cache *c, json_t **out, char *msg, size_t n);

/*
 * Removes the entries older than days (days < 0: every entry); *removed
 * gets how many went.
 */
int cache_prune(struct cache *c, double days, int64_t *removed, char *msg, size_t n);

#endif
