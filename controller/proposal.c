/*
 * proposal.c - what every proposer shares: closing one, freeing proposals.
 */
#include "propose.h"

#include <stdlib.h>
#include <string.h>

void proposer_close(struct proposer *p)
{
	if (!p)
		return;
	if (p->release)
		p->release(p);
	memset(p, 0, sizeof(*p));
}

void proposals_free(struct proposal *p, size_t n)
{
	for (size_t i = 0; p && i < n; i++) {
		free(p[i].source);
		free(p[i].options);
		free(p[i].parent);
		free(p[i].rationale);
		json_decref(p[i].params);
		json_decref(p[i].tunables);
	}
	free(p);
}
