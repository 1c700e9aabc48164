/*
 * store-github.c - the queue of what a session posts to its GitHub
 * tracking issue (store.h): posts wait here, in order, until tracker.c
 * has sent them, so that GitHub being down, rate-limited or refusing
 * never loses one and never holds up a round.
 */
#include "store-internal.h"
#include "err.h"

#include <string.h>

int64_t store_github_post_add(struct store *st, const char *id, const char *kind, int round,
			      const char *title, const char *body, char *msg, size_t n)
{
	int64_t seq = 0, rnd = round;
	int rc = sq_query_int(
		st, &seq, "SELECT COALESCE(MAX(seq), 0) + 1 FROM github_posts WHERE session = ?1",
		"t", id);

	if (rc == 1)
		rc = 0;
	if (!rc)
		rc = sq_db_write(
			st, "no such session",
			"INSERT INTO github_posts (session, seq, kind, round, title, body, "
			"state, created, updated) SELECT ?1, ?2, ?3, ?4, ?5, ?6, 'pending', " NOW
			", " NOW " FROM sessions WHERE id = ?1",
			"tItntt", id, seq, kind, round >= 0 ? &rnd : NULL, title, body);
	return rc ? sq_fail(st, rc, msg, n, "queueing a GitHub %s of session '%s'", kind, id) : seq;
}

json_t *store_github_pending(struct store *st, const char *id)
{
	return sq_query_rows(
		st, NULL,
		"SELECT seq, kind, round, title, body, attempts, error, comment "
		"FROM github_posts WHERE session = ?1 AND state = 'pending' ORDER BY seq",
		"t", id);
}

int store_github_post_set(struct store *st, const char *id, int64_t seq, const char *state,
			  const char *error, int64_t issue, int64_t comment, char *msg, size_t n)
{
	/* "pending": one more attempt; "failed": it stays pending, as many attempts;
	 * "later": it stays pending, the attempt not counted (GitHub took nothing) */
	int step = !strcmp(state, "pending") ? 1 : !strcmp(state, "later") ? -1 : 0;
	const char *to = step || !strcmp(state, "failed") ? "pending" : state;
	int rc = sq_db_write(st, "no such post",
			     "UPDATE github_posts SET state = ?3, error = ?4, "
			     "attempts = MAX(attempts + ?5, 0), issue = COALESCE(?6, issue), "
			     "comment = COALESCE(?7, comment), updated = " NOW
			     " WHERE session = ?1 AND seq = ?2",
			     "tIttinn", id, seq, to, error, step, issue ? &issue : NULL,
			     comment ? &comment : NULL);

	return rc ? sq_fail(st, rc, msg, n, "recording GitHub post %lld of session '%s'",
			    (long long)seq, id)
		  : 0;
}

int64_t store_github_issue(struct store *st, const char *id)
{
	int64_t num = 0;
	int rc = sq_query_int(st, &num,
			      "SELECT COALESCE(MAX(issue), 0) FROM github_posts WHERE session = ?1 "
			      "AND kind = 'open' AND state = 'sent'",
			      "t", id);

	return rc < 0 ? rc : num;
}

int64_t store_github_queued(struct store *st, const char *id, const char *kind, int round)
{
	int64_t num = 0;
	int rc = sq_query_int(st, &num,
			      "SELECT COUNT(*) FROM github_posts WHERE session = ?1 AND kind = ?2 "
			      "AND COALESCE(round, -1) = ?3",
			      "tti", id, kind, round);

	return rc < 0 ? rc : num;
}
