/*
 * llm.h - asking a language model: the OpenAI-compatible Chat Completions
 * API and the Anthropic Messages API over libcurl, streamed (SSE) or not
 * (llm.c); and running an external proposer command (llmcmd.c).
 *
 * One call is one exchange: a system text and one user prompt in, the
 * assistant's text out, with the token counts the server reported.  What
 * fails in passing (429 with Retry-After, 5xx, a timeout, a connection or
 * a stream dropped before its end) is retried with exponential backoff and
 * jitter; a 4xx other than 429 is final and its error body is quoted in
 * msg ("anthropic: HTTP 400 invalid_request_error: max_tokens: ...").
 *
 * The API key is the value of an environment variable the caller read; it
 * goes into the Authorization (OpenAI) or x-api-key (Anthropic) header and
 * nowhere else: never into msg, logs or the reply.
 */
#ifndef KCTL_LLM_H
#define KCTL_LLM_H

#include <stddef.h>

#include "llm-provider.h"

struct llm_conf {
	enum llm_provider provider;
	const char *model;    /* required */
	const char *base_url; /* NULL: https://api.openai.com/v1 or https://api.anthropic.com/v1 */
	const char *api_key;  /* the key itself; NULL or "" sends none (local servers) */
	const char *ca_file;  /* NULL: the system store */
	int stream;           /* ask for server-sent events */
	double temperature;   /* NAN: not sent */
	double top_p;         /* NAN: not sent */
	long max_output_tokens; /* required by Anthropic; 0: 4096 */
	long timeout_ms;        /* one attempt, whole request; 0: 600000 */
	int max_attempts;       /* 0: 5 */
	long backoff_ms; /* first retry delay; 0: 1000 (doubles, with jitter, capped at 60 s) */
	long retry_after_cap_ms; /* longest Retry-After honoured; 0: 120000 */
	size_t max_answer_bytes; /* longer answers fail with KERR_LIMIT; 0: 1 MiB */
};

struct llm_reply {
	char *text;         /* the assistant's text (malloc'd, NUL-terminated) */
	long input_tokens;  /* as the server reported; -1 when it did not */
	long output_tokens; /* likewise */
	char *finish; /* finish_reason / stop_reason, e.g. "stop", "length", "end_turn", "max_tokens"; may be NULL */
	char *model;  /* the model the server says answered; may be NULL */
	int attempts; /* requests made, retries included */
	double ms;    /* wall time of the whole call, retries included */
};

/*
 * Asks once (with retries as above).  Returns 0 with *r filled, or
 * KERR_HTTP (final HTTP error or retries exhausted; msg says which, with
 * the status and the server's error message), KERR_TIMEOUT (every attempt
 * timed out), KERR_LIMIT (answer over max_answer_bytes), KERR_PARSE (a
 * body or event that does not follow the protocol; msg quotes it),
 * KERR_INVALID (bad conf).  r is released with llm_reply_release in every
 * case.
 */
int llm_complete(const struct llm_conf *c, const char *system, const char *prompt,
		 struct llm_reply *r, char *msg, size_t n);
void llm_reply_release(struct llm_reply *r);

/* "openai" or "anthropic". */
const char *llm_provider_name(enum llm_provider p);

/* --- the command proposer (llmcmd.c) ------------------------------------- */

struct llmcmd_conf {
	const char *const *argv;     /* NULL-terminated; argv[0] found on PATH; an element
				    "{context}" is replaced by the context file's path */
	const char *label;           /* how messages name it, e.g. "proposer command 'claude -p'" */
	long timeout_ms;             /* 0: 600000 */
	const char *const *pass_env; /* NULL-terminated names passed on besides PATH, HOME,
					USER, LOGNAME, LANG, LC_*, TZ, TMPDIR, TERM; may be NULL */
	size_t max_output;           /* stdout limit; 0: 1 MiB */
	const char *workdir;         /* its working directory; NULL: kctl's */
};

struct llmcmd_out {
	char *out; /* stdout (malloc'd, NUL-terminated) */
	size_t len;
	char *err;  /* the last 4 KiB of stderr (malloc'd, "" when none) */
	int status; /* exit status; -1 when killed */
	double ms;
};

/*
 * Runs the command with prompt on its stdin, the context file's path in
 * $KCTL_CONTEXT (and for "{context}"), its own process group, and only the
 * environment above (so no key reaches it unless pass_env names it).
 * Returns 0 when it exited 0 (stderr output, if any, is in o->err and is
 * logged as a warning naming the command); KERR_TIMEOUT (the group is
 * killed), KERR_CHILD (non-zero exit or a signal; msg has the label, the
 * status and the end of stderr), KERR_LIMIT (stdout over max_output),
 * KERR_NOTFOUND (cannot run argv[0]).  o is released with
 * llmcmd_out_release in every case.
 */
int llmcmd_run(const struct llmcmd_conf *c, const char *prompt, const char *context_path,
	       struct llmcmd_out *o, char *msg, size_t n);
void llmcmd_out_release(struct llmcmd_out *o);

#endif
