/*
 * llm-internal.h - what the files of the model client share, in layers
 * that call only downwards:
 *
 *   llm.c          the call: attempts, retries, server-sent event framing
 *                  (the top; nothing calls back into it)
 *   llm-api.c      each provider's request body, answer and stream events
 *   llm-outcome.c  an attempt's verdict and message, server text quoted
 *                  (the bottom)
 */
#ifndef KCTL_LLM_INTERNAL_H
#define KCTL_LLM_INTERNAL_H

#include <jansson.h>
#include <stddef.h>

#include "llm.h"
#include "sbuf.h"

#define LLM_DEFAULT_MAX_TOKENS   4096L
#define LLM_DEFAULT_TIMEOUT_MS   600000L
#define LLM_DEFAULT_ATTEMPTS     5
#define LLM_DEFAULT_BACKOFF_MS   1000L
#define LLM_BACKOFF_MAX_MS       60000L
#define LLM_DEFAULT_RETRY_CAP_MS 120000L
#define LLM_DEFAULT_MAX_ANSWER   ((size_t)1 << 20)
#define LLM_ESCAPE_FACTOR        6                  /* "\u001f": 6 bytes of JSON for 1 */
#define LLM_BODY_SLACK           ((size_t)64 << 10) /* the JSON around an answer */
#define LLM_QUOTE_MAX            300                /* bytes of server text in a message */
#define LLM_WHY_MAX              1024
#define LLM_SCRUB_MIN            4 /* shorter keys are not scrubbed from messages */
#define LLM_MAX_HEADERS          6
#define ANTHROPIC_VERSION        "2023-06-01"

#define LLM_ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))

/* What an attempt came to. */
enum llm_verdict {
	LLM_DONE,  /* an answer */
	LLM_RETRY, /* a passing failure: try again */
	LLM_FINAL, /* a failure that another try would repeat */
};

struct llm_call;

/* A provider's protocol. */
struct llm_api {
	const char *name;
	const char *base_url;
	const char *path;
	const char *terminator; /* how its stream ends, for messages */
	json_t *(*body)(const struct llm_conf *c, long max_tokens, const char *system,
			const char *prompt);
	const char *auth_prefix;       /* the key's header line, up to the key */
	const char *const *fixed_hdrs; /* the other header lines */
	void (*answer)(struct llm_call *k, json_t *root);
	void (*event)(struct llm_call *k, const char *name, const char *data, size_t len);
};

/* One llm_complete: its settings and the latest attempt's state. */
struct llm_call {
	const struct llm_conf *conf;
	const struct llm_api *api;
	char *url;
	char *body;
	char *auth; /* the key's header line, wiped before it is freed */
	const char *hdrs[LLM_MAX_HEADERS + 1];
	long timeout_ms;
	int max_attempts;
	long backoff_ms;
	long retry_cap_ms;
	size_t max_answer;
	size_t max_body; /* a reply body, or one line or event of a stream */

	struct sbuf text;
	long in_tok, out_tok;
	char *finish, *model;
	int done; /* the stream's terminator arrived */

	struct sbuf ev_name; /* the server-sent event being read */
	struct sbuf ev_data;
	int ev_has_data;

	int decided; /* verdict and why are set; a stream stops */
	enum llm_verdict verdict;
	int rc;
	int timed_out;
	long retry_after_ms; /* -1: the server named no delay */
	char why[LLM_WHY_MAX];
};

/* The providers' protocols, indexed by enum llm_provider (llm-api.c). */
#define LLM_NAPIS 2
extern const struct llm_api llm_apis[LLM_NAPIS];

/* A body or event's JSON; NULL (the attempt's verdict set) when malformed (llm-api.c). */
json_t *llm_parse(struct llm_call *k, const char *what, const char *data, size_t len);
/*
 * One line of a server-sent event stream, without its line end: a blank
 * line hands the event to the provider's reader.  Returns nonzero when the
 * attempt is decided and the stream should stop (llm.c; not static so that
 * tests/fuzz/fuzz-llm.c can feed it).
 */
int llm__sse_line(void *arg, const char *line, size_t len);
/* The server's error type and message from an error body, for messages (llm-api.c). */
void llm_error_detail(const char *body, size_t len, char *out, size_t n);
/* At most LLM_QUOTE_MAX bytes of a server's text, quoted, on one line (llm-outcome.c). */
void llm_quote(const char *text, size_t len, char *out, size_t n);
/*
 * Decides the attempt: verdict, error code and why (one line, the key
 * scrubbed); the first decision stands.  Returns 1 (llm-outcome.c).
 */
__attribute__((format(printf, 4, 5))) int llm_outcome(struct llm_call *k, enum llm_verdict v,
						      int rc, const char *fmt, ...);

#endif
