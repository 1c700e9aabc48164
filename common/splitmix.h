/*
 * splitmix.h - the splitmix64 generator, header only: small, fast and fully
 * specified, so every seeded draw in kctl and evalpod is reproducible
 * across builds and machines.  Any state, 0 included, is a good state.
 */
#ifndef KCTL_SPLITMIX_H
#define KCTL_SPLITMIX_H

#include <stdint.h>

#define SPLITMIX_GOLDEN 0x9e3779b97f4a7c15ull

/* The finaliser: every input bit reaches every output bit. */
static inline uint64_t splitmix_mix(uint64_t z)
{
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

/* The next draw of the stream whose state is *s. */
static inline uint64_t splitmix_next(uint64_t *s)
{
	return splitmix_mix(*s += SPLITMIX_GOLDEN);
}

#endif
