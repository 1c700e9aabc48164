/*
 * backend.c - which backend a spec names (the table), and what the
 * backends share: how a reference that ran past its deadline is answered.
 * Uses the batch's limits (pack.h) and the session's services; the
 * backends call it, it calls none of them.
 */
#include "backend.h"
#include "session.h"
#include "services.h"
#include "pack.h"
#include "err.h"
#include "log.h"

#include <stddef.h>

static const struct {
	enum spec_backend kind;
	const struct backend *backend;
} backend_table[] = {
	{ BACKEND_LOCAL, &backend_local },
	{ BACKEND_KUBERNETES, &backend_kubernetes },
};

const struct backend *backend_of(const struct spec *spec)
{
	for (size_t i = 0; i < sizeof(backend_table) / sizeof(backend_table[0]); i++)
		if (backend_table[i].kind == spec->backend)
			return backend_table[i].backend;
	return &backend_local;
}

int backend_reference_slow(struct session *s, int round, int attempt, const char *where,
			   const char *tail, char *msg, size_t n)
{
	double was = session_check_deadline(s, round);

	s->deadline_s = 2 * was;
	log_warn("round %d: the reference ran past its %g s limit%s: the machine is slow, not "
		 "the candidates; %s",
		 round, was, where,
		 attempt + 1 < EVALPOD_ATTEMPTS ? "evaluating again with the deadline doubled"
						: "giving up");
	if (attempt + 1 < EVALPOD_ATTEMPTS)
		log_warn("round %d: compile_timeout_s + run_timeout_s raised to %g s for "
			 "this session",
			 round, s->deadline_s);
	if (session_cancelled(s))
		return kerr_set(msg, n, KERR_CHILD, "cancelled");
	kerr_set(msg, n, KERR_CHILD,
		 "round %d: the reference ran past its %g s limit%s, %d times (the machine is "
		 "slow or the limit too low); go on with a higher limit: kctl resume %s%s --set "
		 "limits.run_timeout_s=%g\n%s",
		 round, was, where, attempt + 1, s->id, s->again ? s->again : "", 2 * was, tail);
	return 1;
}
