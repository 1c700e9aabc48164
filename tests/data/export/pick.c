/*
 * pick.c - a host program of kctl export's C header (ctest cli/kctl_export).
 *
 *   pick KERNEL DEVICE DTYPE VALUE...
 *
 * KERNEL, DEVICE and DTYPE are given in hex (every byte two digits), so
 * that hostile texts pass through argv unchanged.  Prints what
 * kctl_tuned_lookup() picked, one line each, texts in hex:
 *   how N (-1 unknown, 0 exact, 1 nearest, 2 default)
 *   entry HEX-BUCKET HEX-SESSION HEX-VARIANT   (or "entry -")
 *   param HEX-NAME VALUE                         (one per parameter)
 *   options HEX
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tuned.h"

static char *unhex(const char *h)
{
	size_t n = strlen(h) / 2, i;
	char *s = malloc(n + 1);

	if (!s)
		exit(3);
	for (i = 0; i < n; i++) {
		unsigned v = 0;

		if (sscanf(h + 2 * i, "%2x", &v) != 1)
			exit(3);
		s[i] = (char)v;
	}
	s[n] = '\0';
	return s;
}

static void hex(const char *s)
{
	if (!*s)
		fputs("-", stdout);
	for (; *s; s++)
		printf("%02x", (unsigned char)*s);
}

int main(int argc, char **argv)
{
	struct kctl_tuned_pick p;
	long long v[64];
	size_t n = 0, i;
	char *kernel, *device, *dtype;
	int how;

	if (argc < 4)
		return 2;
	kernel = unhex(argv[1]);
	device = unhex(argv[2]);
	dtype = unhex(argv[3]);
	for (i = 4; i < (size_t)argc && n < 64; i++)
		v[n++] = strtoll(argv[i], NULL, 10);
	memset(&p, 0, sizeof(p));
	how = kctl_tuned_lookup(kernel, device, dtype, v, n, &p);
	printf("how %d\n", how);
	if (p.entry) {
		fputs("entry ", stdout);
		hex(p.entry->bucket);
		fputs(" ", stdout);
		hex(p.entry->session);
		fputs(" ", stdout);
		hex(p.entry->variant);
		fputs("\n", stdout);
	} else {
		fputs("entry -\n", stdout);
	}
	for (i = 0; i < p.nparams; i++) {
		fputs("param ", stdout);
		hex(p.params[i].name);
		printf(" %lld\n", p.params[i].value);
	}
	fputs("options ", stdout);
	hex(p.build_options ? p.build_options : "");
	fputs("\n", stdout);
	free(kernel);
	free(device);
	free(dtype);
	return 0;
}
