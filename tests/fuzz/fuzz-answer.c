/*
 * fuzz-answer.c - what kctl does with a model's answer (controller/answer*.c,
 * controller/mutate.c), the one input a proposer writes in full: the answer
 * is parsed (answer_parse), every direction is applied to a parent source
 * (answer_apply), the result is checked against the parent's blocks
 * (blocks_verify), and each TUNABLE the direction declares is read and
 * set as the tuner would (answer_get_define, answer_set_define).
 *
 * Input: the answer, then optionally a line "%%%%" and the parent source,
 * so that mutations reach the parent's markers and #defines too; without
 * that line the parent is a small two-block kernel.
 */
#include "answer.h"
#include "fuzz.h"
#include "mutate.h"

#include <stdlib.h>
#include <string.h>

#define FUZZ_START "EVOLVE-BLOCK-START"
#define FUZZ_END   "EVOLVE-BLOCK-END"
#define FUZZ_SPLIT "\n%%%%\n"

static const char fuzz_parent[] = "// a kernel with two blocks\n"
				  "// " FUZZ_START " consts\n"
				  "#define TM 4\n"
				  "#define VN 8 // vector width\n"
				  "// " FUZZ_END "\n"
				  "__kernel void k(__global float *y)\n"
				  "{\n"
				  "// " FUZZ_START " body\n"
				  "\ty[get_global_id(0)] = TM * VN;\n"
				  "// " FUZZ_END "\n"
				  "}\n";

/* Applies direction d to parent and exercises what the tuner does with the result. */
static void fuzz_direction(const struct direction *d, const char *parent, const struct blocks *bl)
{
	char msg[512];
	char *src = answer_apply(d, parent, FUZZ_START, FUZZ_END, msg, sizeof(msg));

	if (!src)
		return;
	if (bl)
		blocks_verify(parent, bl, src, FUZZ_START, FUZZ_END, msg, sizeof(msg));
	for (size_t i = 0; i < d->ntunables; i++) {
		const struct answer_tunable *t = &d->tunables[i];
		int64_t now;

		answer_get_define(src, FUZZ_START, FUZZ_END, t->name, &now);
		for (size_t j = 0; j < t->nvalues; j++) {
			char *s2 = answer_set_define(src, FUZZ_START, FUZZ_END, t->name,
						     t->values[j], msg, sizeof(msg));

			free(s2);
		}
	}
	free(src);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *text = malloc(size + 1), *split;
	const char *parent = fuzz_parent;
	struct answer a = { 0 };
	struct blocks bl = { 0 };
	char msg[512];
	int have_blocks;

	if (!text)
		abort();
	memcpy(text, data, size);
	text[size] = '\0';
	/* A NUL ends the text, as it ends what kctl reads from a model. */
	if ((split = strstr(text, FUZZ_SPLIT))) {
		*split = '\0';
		parent = split + strlen(FUZZ_SPLIT);
	}
	have_blocks = !blocks_find(parent, FUZZ_START, FUZZ_END, &bl, msg, sizeof(msg));
	if (!answer_parse(text, 8, &a, msg, sizeof(msg)))
		for (size_t i = 0; i < a.n; i++)
			fuzz_direction(&a.d[i], parent, have_blocks ? &bl : NULL);
	answer_release(&a);
	blocks_release(&bl);
	free(text);
	return 0;
}
