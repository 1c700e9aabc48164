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

void proposal_release(struct proposal *p)
{
	free(p->source);
	free(p->options);
	free(p->parent);
	free(p->rationale);
	json_decref(p->params);
	json_decref(p->tunables);
	memset(p, 0, sizeof(*p));
}

void proposals_free(struct proposal *p, size_t n)
{
	for (size_t i = 0; p && i < n; i++)
		proposal_release(&p[i]);
	free(p);
}
