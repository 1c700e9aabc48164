/*
 * llm-provider.h - the language-model APIs kctl speaks.  The spec names
 * one (proposer.model.provider, spec-proposer.c) and the client speaks it
 * (llm.h), so the name lives below both.
 */
#ifndef KCTL_LLM_PROVIDER_H
#define KCTL_LLM_PROVIDER_H

enum llm_provider {
	LLM_OPENAI,    /* POST {base_url}/chat/completions */
	LLM_ANTHROPIC, /* POST {base_url}/messages */
};

#endif
