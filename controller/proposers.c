/*
 * proposers.c - which proposer a spec names: the tuner alone, or a model
 * mixed with the tuner (mix.c).
 */
#include "propose.h"
#include "err.h"

#include <string.h>

static const struct {
	enum spec_proposer kind;
	const char *name;
	int (*open)(struct proposer *p, const struct spec *s, char *msg, size_t n);
} proposer_table[] = {
	{ PROPOSER_TUNE, "tune", tune_open },
	{ PROPOSER_LLM, "llm", mix_open },
	{ PROPOSER_COMMAND, "command", mix_open },
};

int proposer_open(struct proposer *p, const struct spec *s, char *msg, size_t n)
{
	memset(p, 0, sizeof(*p));
	for (size_t i = 0; i < sizeof(proposer_table) / sizeof(proposer_table[0]); i++) {
		if (proposer_table[i].kind != s->proposer)
			continue;
		return proposer_table[i].open(p, s, msg, n);
	}
	return kerr_set(msg, n, KERR_UNSUPPORTED, "unknown proposer %d", (int)s->proposer);
}
