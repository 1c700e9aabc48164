/*
 * model-internal.h - what the model proposer's files share: model.c (the
 * requests, the answers, reflection) builds on exchange.c (one exchange:
 * asked, answered, recorded; budgets).
 */
#ifndef KCTL_MODEL_INTERNAL_H
#define KCTL_MODEL_INTERNAL_H

#include <jansson.h>
#include <stddef.h>

#include "llm.h"
#include "propose.h"

/* Largest answer file a replay reads. */
#define REPLAY_ANSWER_MAX (4u << 20)

enum ask { ASK_LLM, ASK_COMMAND, ASK_REPLAY };

struct model {
	const struct spec *sp;
	enum ask how;
	struct llm_conf llm;
	char *key; /* the API key: only ever handed to llm_complete */
	struct llmcmd_conf cmd;
	char *label; /* "openai gpt-4o", "command 'x -p'", "replay DIR" */
	int round;   /* the round seq counts in */
	int seq;     /* the last exchange's number in that round */
};

/* Hex SHA-256 of a, a NUL byte, then b. */
void model_sha256_hex(const char *a, const char *b, char out[65]);

/*
 * Exchange number seq of ctx's round: the answer recorded for this very
 * prompt when there is one, else a new answer (asked, or replayed),
 * recorded (rounds/rNNN/llm/ and the store, committed) before it is
 * returned.  context goes to a command; meta into the record.  *answer is
 * malloc'd.  A spent budget is KERR_LIMIT with "budget is spent" in msg.
 */
int model_exchange(struct model *m, const struct propose_ctx *ctx, int seq, const char *purpose,
		   const char *prompt, json_t *context, json_t *meta, char **answer, char *msg,
		   size_t n);

/* Adds what the answer of exchange seq came to (outcomes, errors) to its record. */
void model_record_outcome(struct session *s, int round, int seq, json_t *outcomes,
			  const char *errors);

/* The meta of exchange seq of round r of the replayed session (new), or NULL. */
json_t *model_replay_meta(struct model *m, int round, int seq);

#endif
