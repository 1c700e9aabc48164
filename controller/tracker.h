/*
 * tracker.h - a session's tracking issue on GitHub (spec session.github,
 * docs/kctl.md "The session tracking issue"): opened when the session
 * starts, a comment after each round (the round's table, the incumbent,
 * the navigator's decision, the new learnings), the report when the
 * session ends, closed when it is done.
 *
 * Every post is queued in the store first (store_github_post_add) and
 * sent in order by tracker_flush through the GitHub client (github.h);
 * one that GitHub refuses, rate-limits or never answers stays queued and
 * goes after a later round or with a later `kctl resume`.  Nothing here
 * stops or fails the session: problems are warnings.  The token is read
 * from the environment variable the spec names, each time it is needed,
 * and kept nowhere.
 */
#ifndef KCTL_TRACKER_H
#define KCTL_TRACKER_H

struct session;

/* Queues the opening (once per session) and sends what is queued. */
void tracker_start(struct session *s);

/* Queues round's comment and sends what is queued. */
void tracker_round(struct session *s, int round);

/*
 * The session stopped in state ("done", "failed", "paused", "cancelled")
 * for reason: queues a comment with its report (and, when done or
 * cancelled, the closing) and sends what is queued.
 */
void tracker_end(struct session *s, const char *state, const char *reason);

/* Sends the queued posts in order, stopping at the first that fails or
 * must wait. */
void tracker_flush(struct session *s);

/* Give up on a post after this many failed attempts (it is then "dropped"). */
#define TRACKER_MAX_ATTEMPTS 8

#endif
