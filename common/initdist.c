#include "initdist.h"

const char *const initdist_names[INITDIST_NR + 1] = {
	"zero", "const", "uniform", "normal", "int", "iota", NULL,
};

const struct initdist initdists[INITDIST_NR] = {
	[0] = { .key_a = NULL },
	[1] = { .key_a = "value", .a_required = 1 },
	[2] = { .key_a = "lo",
		.key_b = "hi",
		.def_a = -1,
		.def_b = 1,
		.ordered = 1,
		.float_only = 1 },
	[3] = { .key_a = "mean",
		.key_b = "std",
		.def_a = 0,
		.def_b = 1,
		.b_nonneg = 1,
		.float_only = 1 },
	[4] = { .key_a = "lo", .key_b = "hi", .def_a = 0, .def_b = 9, .integral = 1, .ordered = 1 },
	[5] = { .key_a = NULL },
};
