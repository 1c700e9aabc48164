/*
 * llm-api.c - the two providers' protocols: the OpenAI-compatible Chat
 * Completions API and the Anthropic Messages API; each one's request body,
 * answer, usage and stream events, read strictly (llm.c makes the calls).
 *
 * May use: llm-internal.h (struct llm_call, and llm-outcome.c's verdicts
 * and quotes) and common/; llm.c calls its table llm_apis, llm_parse and
 * llm_error_detail, and nothing here calls into llm.c.
 */
#include "llm.h"
#include "llm-internal.h"
#include "err.h"
#include "http.h"
#include "jsonx.h"
#include "log.h"
#include "sbuf.h"
#include "xalloc.h"
#include <errno.h>
#include <jansson.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* ---- reading JSON: null is absent, anything else unexpected fails the attempt ---- */

/*
 * obj's member key when it has type want; NULL when obj is NULL or the
 * member is absent or null, or when it has another type: then the attempt
 * fails with KERR_PARSE naming path.key.
 */
static json_t *llm_get(struct llm_call *k, json_t *obj, const char *path, const char *key,
		       json_type want)
{
	json_t *v = obj ? json_object_get(obj, key) : NULL;

	if (!v || json_is_null(v))
		return NULL;
	if (json_typeof(v) == want)
		return v;
	llm_outcome(k, LLM_FINAL, KERR_PARSE, "%s.%s: unexpected %s", path, key, jx_type_name(v));
	return NULL;
}

/* Like llm_get for a member that must be there. */
static json_t *llm_need(struct llm_call *k, json_t *obj, const char *path, const char *key,
			json_type want)
{
	json_t *v = llm_get(k, obj, path, key, want);

	if (!v)
		llm_outcome(k, LLM_FINAL, KERR_PARSE, "%s.%s: missing", path, key);
	return v;
}

/* Copies a token count (an integer >= 0) into *out when it is there. */
static void llm_count(struct llm_call *k, json_t *usage, const char *path, const char *key,
		      long *out)
{
	json_t *v = llm_get(k, usage, path, key, JSON_INTEGER);

	if (v && json_integer_value(v) >= 0 && json_integer_value(v) <= LONG_MAX)
		*out = (long)json_integer_value(v);
	else if (v)
		llm_outcome(k, LLM_FINAL, KERR_PARSE, "%s.%s: %lld is not a count", path, key,
			    (long long)json_integer_value(v));
}

static void llm_set_str(char **dst, json_t *v)
{
	if (!v)
		return;
	free(*dst);
	*dst = xstrdup(json_string_value(v));
}

/* Adds a piece of the answer; fails the attempt when it grows too long. */
static void llm_add_text(struct llm_call *k, json_t *v)
{
	size_t len = v ? json_string_length(v) : 0;

	if (!v || k->decided)
		return;
	if (len > k->max_answer - k->text.len)
		llm_outcome(k, LLM_FINAL, KERR_LIMIT, "the answer exceeds %zu bytes",
			    k->max_answer);
	else
		sbuf_add(&k->text, json_string_value(v), len);
}

/* Parses one event's data or a reply body; NULL (the attempt failed) if not a JSON object. */
json_t *llm_parse(struct llm_call *k, const char *what, const char *data, size_t len)
{
	char quote[LLM_QUOTE_MAX + 4];
	json_error_t err;
	json_t *root = json_loadb(data ? data : "", len, 0, &err);

	if (json_is_object(root))
		return root;
	json_decref(root);
	llm_quote(data, len, quote, sizeof(quote));
	llm_outcome(k, LLM_FINAL, KERR_PARSE, "%s is not a JSON object: '%s'", what, quote);
	return NULL;
}

/*
 * Describes an error document ({"error": {"code", "type", "message"}}, as
 * both providers send) into out: " code_or_type: message"; or ": <the
 * body>" when it is not one; or "" when there is no body.
 */
void llm_error_detail(const char *body, size_t len, char *out, size_t n)
{
	char quote[LLM_QUOTE_MAX + 4];
	json_t *root = body ? json_loadb(body, len, 0, NULL) : NULL;
	json_t *e = json_object_get(root, "error");
	json_t *code = json_object_get(e, "code");
	json_t *type = json_object_get(e, "type");
	json_t *m = json_object_get(e, "message");
	const char *label = json_is_string(code) && *json_string_value(code)
				    ? json_string_value(code)
			    : json_is_string(type) ? json_string_value(type)
						   : "error";

	if (json_is_object(e) && json_is_string(m)) {
		llm_quote(json_string_value(m), json_string_length(m), quote, sizeof(quote));
		snprintf(out, n, " %s: %s", label, quote);
	} else if (len) {
		llm_quote(body, len, quote, sizeof(quote));
		snprintf(out, n, ": %s", quote);
	} else if (n) {
		out[0] = '\0';
	}
	json_decref(root);
}

/* An error reported inside a stream: overloaded and server errors pass, others do not. */
static void llm_stream_error(struct llm_call *k, const char *data, size_t len)
{
	static const char *const passing[] = { "overloaded_error", "api_error", "server_error",
					       "rate_limit_error", "rate_limit_exceeded" };
	char detail[LLM_QUOTE_MAX + 128];
	json_t *root = json_loadb(data, len, 0, NULL);
	json_t *e = json_object_get(root, "error");
	const char *type = json_string_value(json_object_get(e, "type"));
	const char *code = json_string_value(json_object_get(e, "code"));
	enum llm_verdict v = LLM_FINAL;

	for (size_t i = 0; i < LLM_ARRAY_SIZE(passing); i++)
		if ((type && !strcmp(type, passing[i])) || (code && !strcmp(code, passing[i])))
			v = LLM_RETRY;
	llm_error_detail(data, len, detail, sizeof(detail));
	llm_outcome(k, v, KERR_HTTP, "error in the stream:%s", detail);
	json_decref(root);
}

/* ---- OpenAI Chat Completions ---- */

static json_t *llm_message(const char *role, const char *content)
{
	return json_pack("{s:s, s:s}", "role", role, "content", content);
}

/* The options both providers take the same way. */
static void llm_body_common(json_t *root, const struct llm_conf *c, long max_tokens)
{
	json_object_set_new(root, "model", json_string(c->model));
	json_object_set_new(root, "max_tokens", json_integer(max_tokens));
	if (!isnan(c->temperature))
		json_object_set_new(root, "temperature", json_real(c->temperature));
	if (!isnan(c->top_p))
		json_object_set_new(root, "top_p", json_real(c->top_p));
	if (c->stream)
		json_object_set_new(root, "stream", json_true());
}

static json_t *openai_body(const struct llm_conf *c, long max_tokens, const char *system,
			   const char *prompt)
{
	json_t *root = json_object();
	json_t *msgs = json_array();

	llm_body_common(root, c, max_tokens);
	if (system && *system)
		json_array_append_new(msgs, llm_message("system", system));
	json_array_append_new(msgs, llm_message("user", prompt));
	json_object_set_new(root, "messages", msgs);
	if (c->stream)
		json_object_set_new(root, "stream_options", json_pack("{s:b}", "include_usage", 1));
	return root;
}

static void openai_usage(struct llm_call *k, json_t *root)
{
	json_t *usage = llm_get(k, root, "$", "usage", JSON_OBJECT);

	llm_count(k, usage, "$.usage", "prompt_tokens", &k->in_tok);
	llm_count(k, usage, "$.usage", "completion_tokens", &k->out_tok);
	llm_set_str(&k->model, llm_get(k, root, "$", "model", JSON_STRING));
}

static void openai_answer(struct llm_call *k, json_t *root)
{
	json_t *choices = llm_need(k, root, "$", "choices", JSON_ARRAY);
	json_t *c0 = json_array_get(choices, 0);
	json_t *m;

	if (choices && !json_is_object(c0)) {
		llm_outcome(k, LLM_FINAL, KERR_PARSE, "$.choices[0]: missing or not an object");
		return;
	}
	m = llm_need(k, c0, "$.choices[0]", "message", JSON_OBJECT);
	llm_add_text(k, llm_get(k, m, "$.choices[0].message", "content", JSON_STRING));
	llm_set_str(&k->finish, llm_get(k, c0, "$.choices[0]", "finish_reason", JSON_STRING));
	openai_usage(k, root);
}

/* One chunk: a piece of the answer, the finish reason, the usage; or "[DONE]". */
static void openai_event(struct llm_call *k, const char *name, const char *data, size_t len)
{
	json_t *root, *choices, *c0, *delta;

	if (k->done)
		return;
	if (len == 6 && !memcmp(data, "[DONE]", 6)) {
		k->done = 1;
		return;
	}
	root = llm_parse(k, "a stream chunk", data, len);
	if (!root)
		return;
	if (json_is_object(json_object_get(root, "error"))) {
		llm_stream_error(k, data, len);
		json_decref(root);
		return;
	}
	choices = llm_get(k, root, "$", "choices", JSON_ARRAY);
	c0 = json_array_get(choices, 0);
	if (c0 && !json_is_object(c0))
		llm_outcome(k, LLM_FINAL, KERR_PARSE, "$.choices[0]: not an object");
	delta = llm_get(k, c0, "$.choices[0]", "delta", JSON_OBJECT);
	llm_add_text(k, llm_get(k, delta, "$.choices[0].delta", "content", JSON_STRING));
	llm_set_str(&k->finish, llm_get(k, c0, "$.choices[0]", "finish_reason", JSON_STRING));
	openai_usage(k, root);
	json_decref(root);
}

/* ---- Anthropic Messages ---- */

static json_t *anthropic_body(const struct llm_conf *c, long max_tokens, const char *system,
			      const char *prompt)
{
	json_t *root = json_object();
	json_t *msgs = json_array();

	llm_body_common(root, c, max_tokens);
	if (system && *system)
		json_object_set_new(root, "system", json_string(system));
	json_array_append_new(msgs, llm_message("user", prompt));
	json_object_set_new(root, "messages", msgs);
	return root;
}

static void anthropic_usage(struct llm_call *k, json_t *obj, const char *path)
{
	json_t *usage = llm_get(k, obj, path, "usage", JSON_OBJECT);

	llm_count(k, usage, "usage", "input_tokens", &k->in_tok);
	llm_count(k, usage, "usage", "output_tokens", &k->out_tok);
}

static void anthropic_answer(struct llm_call *k, json_t *root)
{
	json_t *content = llm_need(k, root, "$", "content", JSON_ARRAY);
	json_t *block;
	size_t i;

	json_array_foreach (content, i, block) {
		json_t *type = llm_need(k, block, "$.content[]", "type", JSON_STRING);

		/* thinking and tool_use blocks are not the answer */
		if (type && !strcmp(json_string_value(type), "text"))
			llm_add_text(k, llm_need(k, block, "$.content[]", "text", JSON_STRING));
	}
	llm_set_str(&k->finish, llm_get(k, root, "$", "stop_reason", JSON_STRING));
	llm_set_str(&k->model, llm_get(k, root, "$", "model", JSON_STRING));
	anthropic_usage(k, root, "$");
}

static void anthropic_message_start(struct llm_call *k, json_t *root)
{
	json_t *m = llm_need(k, root, "message_start", "message", JSON_OBJECT);

	llm_set_str(&k->model, llm_get(k, m, "message_start.message", "model", JSON_STRING));
	anthropic_usage(k, m, "message_start.message");
}

static void anthropic_block_start(struct llm_call *k, json_t *root)
{
	json_t *b = llm_need(k, root, "content_block_start", "content_block", JSON_OBJECT);
	json_t *type = llm_need(k, b, "content_block_start.content_block", "type", JSON_STRING);

	if (type && !strcmp(json_string_value(type), "text"))
		llm_add_text(
			k, llm_get(k, b, "content_block_start.content_block", "text", JSON_STRING));
}

static void anthropic_block_delta(struct llm_call *k, json_t *root)
{
	json_t *d = llm_need(k, root, "content_block_delta", "delta", JSON_OBJECT);
	json_t *type = llm_need(k, d, "content_block_delta.delta", "type", JSON_STRING);

	/* input_json_delta, thinking_delta and signature_delta are not the answer */
	if (type && !strcmp(json_string_value(type), "text_delta"))
		llm_add_text(k, llm_need(k, d, "content_block_delta.delta", "text", JSON_STRING));
}

static void anthropic_message_delta(struct llm_call *k, json_t *root)
{
	json_t *d = llm_need(k, root, "message_delta", "delta", JSON_OBJECT);

	llm_set_str(&k->finish, llm_get(k, d, "message_delta.delta", "stop_reason", JSON_STRING));
	anthropic_usage(k, root, "message_delta");
}

static void anthropic_message_stop(struct llm_call *k, json_t *root)
{
	(void)root;
	k->done = 1;
}

/* The events that matter; others (ping, content_block_stop, new ones) are skipped. */
static const struct {
	const char *name;
	void (*fn)(struct llm_call *k, json_t *root);
} anthropic_events[] = {
	{ "message_start", anthropic_message_start },
	{ "content_block_start", anthropic_block_start },
	{ "content_block_delta", anthropic_block_delta },
	{ "message_delta", anthropic_message_delta },
	{ "message_stop", anthropic_message_stop },
};

static void anthropic_event(struct llm_call *k, const char *name, const char *data, size_t len)
{
	json_t *root, *type;

	if (k->done)
		return;
	if (!strcmp(name, "error")) {
		llm_stream_error(k, data, len);
		return;
	}
	root = llm_parse(k, "a stream event", data, len);
	if (!root)
		return;
	type = llm_need(k, root, name, "type", JSON_STRING);
	if (type && strcmp(json_string_value(type), name))
		llm_outcome(k, LLM_FINAL, KERR_PARSE, "event %s carries type '%s'", name,
			    json_string_value(type));
	for (size_t i = 0; i < LLM_ARRAY_SIZE(anthropic_events) && !k->decided; i++)
		if (!strcmp(name, anthropic_events[i].name))
			anthropic_events[i].fn(k, root);
	json_decref(root);
}

static const char *const openai_hdrs[] = { "Content-Type: application/json", NULL };
static const char *const anthropic_hdrs[] = { "content-type: application/json",
					      "anthropic-version: " ANTHROPIC_VERSION, NULL };

const struct llm_api llm_apis[LLM_NAPIS] = {
	[LLM_OPENAI] = {
		.name = "openai",
		.base_url = "https://api.openai.com/v1",
		.path = "/chat/completions",
		.terminator = "data: [DONE]",
		.body = openai_body,
		.auth_prefix = "Authorization: Bearer ",
		.fixed_hdrs = openai_hdrs,
		.answer = openai_answer,
		.event = openai_event,
	},
	[LLM_ANTHROPIC] = {
		.name = "anthropic",
		.base_url = "https://api.anthropic.com/v1",
		.path = "/messages",
		.terminator = "message_stop",
		.body = anthropic_body,
		.auth_prefix = "x-api-key: ",
		.fixed_hdrs = anthropic_hdrs,
		.answer = anthropic_answer,
		.event = anthropic_event,
	},
};

const char *llm_provider_name(enum llm_provider p)
{
	return (size_t)p < LLM_ARRAY_SIZE(llm_apis) ? llm_apis[p].name : "unknown";
}
