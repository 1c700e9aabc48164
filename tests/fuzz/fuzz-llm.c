/*
 * fuzz-llm.c - what kctl reads from a model provider's server
 * (controller/llm*.c): a whole reply body (llm_parse, then the provider's
 * answer reader) or a stream of server-sent events (llm__sse_line, which
 * frames the events and hands them to the provider's event reader), and
 * the error document of a failed request (llm_error_detail).
 *
 * Byte 0 picks: bit 0 the provider (OpenAI, Anthropic), bit 1 a stream or
 * a body, bit 2 a small answer limit (64 bytes) or 1 MiB.  The rest is the
 * server's bytes; a stream is cut into lines at LF, a CR before it dropped,
 * as http.c hands them over.
 *
 * Beside memory errors, two promises are checked, and a broken one
 * aborts: the text kept never exceeds the answer limit, and the attempt's
 * message never contains the API key (a server may echo it).
 */
#include "fuzz.h"
#include "llm-internal.h"

#include <stdlib.h>
#include <string.h>

#define FUZZ_KEY "sk-fuzz-0123456789abcdef"

/* Feeds the stream's lines to the framing until it stops, then ends the last event. */
static void fuzz_stream(struct llm_call *k, const char *p, size_t len)
{
	const char *end = p + len;

	while (p < end) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		size_t n = (size_t)((nl ? nl : end) - p);

		if (n && p[n - 1] == '\r')
			n--;
		if (llm__sse_line(k, p, n))
			return;
		p = nl ? nl + 1 : end;
	}
	llm__sse_line(k, "", 0);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct llm_conf conf = { .model = "m", .api_key = FUZZ_KEY };
	struct llm_call k;
	const char *p = (const char *)data + 1;
	size_t len = size ? size - 1 : 0;
	char detail[LLM_QUOTE_MAX + 128];

	if (!size)
		return 0;
	conf.provider = (data[0] & 1) ? LLM_ANTHROPIC : LLM_OPENAI;
	memset(&k, 0, sizeof(k));
	k.conf = &conf;
	k.api = &llm_apis[conf.provider];
	k.max_answer = (data[0] & 4) ? 64 : LLM_DEFAULT_MAX_ANSWER;
	k.max_body = LLM_DEFAULT_MAX_ANSWER * LLM_ESCAPE_FACTOR + LLM_BODY_SLACK;
	k.in_tok = k.out_tok = -1;
	k.retry_after_ms = -1;
	if (data[0] & 2) {
		fuzz_stream(&k, p, len);
	} else {
		json_t *root = llm_parse(&k, "the reply", p, len);

		if (root)
			k.api->answer(&k, root);
		json_decref(root);
	}
	llm_error_detail(p, len, detail, sizeof(detail));
	if (k.text.len > k.max_answer || strstr(k.why, FUZZ_KEY))
		abort();
	free(k.finish);
	free(k.model);
	sbuf_release(&k.text);
	sbuf_release(&k.ev_name);
	sbuf_release(&k.ev_data);
	return 0;
}
