/*
 * spec-proposer.c - the spec's proposer section: the tuner, a language
 * model (proposer.llm), an external command (proposer.command), how they
 * share a round (proposer.mix), and the model's budgets and replay.
 * docs/spec.md#proposer is the manual.
 *
 * May use: spec-internal.h (the field tables of spec-read.c), llm, http and
 * common/.  spec.c calls read_proposer(), proposer_defaults() and
 * proposer_release().
 */
#include "spec-internal.h"
#include "llm-provider.h"
#include "http.h"
#include "err.h"
#include "jsonx.h"
#include "xalloc.h"

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

static const char *const proposer_names[] = { "tune", "llm", "command", NULL };
static const char *const provider_names[] = { "openai", "anthropic", NULL };

static const struct field proposer_fields[] = {
	FENUM("kind", 0, proposer_names),
	FINT("seed", 0, INT64_MAX),
	FCUSTOM("llm", 0),
	FCUSTOM("command", 0),
	FCUSTOM("mix", 0),
	FINT("directions", 1, 16),
	FINT("answer_retries", 0, 10),
	FINT("max_prompt_bytes", 4096, 4 << 20),
	FBOOL("reflect"),
	FINT("max_tokens", 0, INT64_MAX),
	FNUM("max_cost", 0, 1e9),
	FPATH("replay", 0),
};

/* The keys only a model proposer reads. */
static const char *const model_keys[] = { "llm",        "command",        "mix",
					  "directions", "answer_retries", "max_prompt_bytes",
					  "reflect",    "max_tokens",     "max_cost",
					  "replay" };

static const struct field llm_fields[] = {
	FENUM("provider", 1, provider_names),
	FTEXT("model", 1, R_MARKER),
	FTEXT("base_url", 0, R_MARKER),
	FCUSTOM("api_key_env", 0),
	FCUSTOM("api_key", 0),
	FPATH("ca_file", 0),
	FBOOL("stream"),
	FNUM("temperature", 0, 2),
	FNUM("top_p", 0, 1),
	FINT("max_output_tokens", 1, 1 << 20),
	FINT("timeout_s", 1, 86400),
	FINT("attempts", 1, 20),
	FCUSTOM("price", 0),
};

static const struct field price_fields[] = {
	FNUM("input_per_mtok", 0, 1e6),
	FNUM("output_per_mtok", 0, 1e6),
};

static const struct field command_fields[] = {
	FCUSTOM("run", 1),
	FINT("timeout_s", 1, 86400),
	FCUSTOM("env", 0),
};

static const struct field mix_fields[] = {
	FNUM("model", 0, 1000),
	FNUM("tune", 0, 1000),
};

void proposer_defaults(struct spec *s)
{
	struct spec_model *m = &s->m;

	m->provider = LLM_OPENAI;
	m->stream = 1;
	m->temperature = m->top_p = NAN;
	m->max_output_tokens = 8192;
	m->timeout_s = 600;
	m->attempts = 5;
	m->price_in = m->price_out = NAN;
	m->command_timeout_s = 600;
	m->directions = 4;
	m->answer_retries = 2;
	m->max_prompt_bytes = 60000;
	m->weight_model = NAN;
	m->weight_tune = NAN;
}

static void strv_free(char **v)
{
	for (size_t i = 0; v && v[i]; i++)
		free(v[i]);
	free(v);
}

void proposer_release(struct spec *s)
{
	struct spec_model *m = &s->m;

	free(m->model);
	free(m->base_url);
	free(m->api_key_env);
	free(m->ca_file);
	free(m->replay);
	strv_free(m->argv);
	strv_free(m->pass_env);
}

static int is_env_name(const char *t)
{
	if (!*t || strlen(t) > 128 || (*t >= '0' && *t <= '9'))
		return 0;
	for (; *t; t++)
		if (!((*t >= 'a' && *t <= 'z') || (*t >= 'A' && *t <= 'Z') ||
		      (*t >= '0' && *t <= '9') || *t == '_'))
			return 0;
	return 1;
}

/* A list of 1..hi strings into a NULL-terminated vector; names: each an
 * environment variable's name. */
static int read_strings(struct ld *ld, const yaml_node_t *nd, const char *path, size_t hi,
			int names, char ***out)
{
	size_t k = yamlx_list_size(nd);
	char ipath[YAMLX_PATH_LEN];
	int rc = yamlx_need_list(&ld->y, nd, path, 1, hi);
	char **v;

	if (rc)
		return rc;
	v = xcalloc(k + 1, sizeof(*v));
	for (size_t i = 0; i < k && !rc; i++) {
		const yaml_node_t *it = yamlx_list_item(&ld->y, nd, i);
		const char *t = NULL;

		yamlx_path_idx(ipath, path, i);
		rc = yamlx_get_text(&ld->y, it, ipath, &t);
		if (!rc && !*t)
			rc = yamlx_fail(&ld->y, it, KERR_INVALID, ipath, "the string is empty");
		if (!rc && names && !is_env_name(t))
			rc = yamlx_fail(&ld->y, it, KERR_INVALID, ipath,
					"'%s' is not an environment variable's name", t);
		if (!rc)
			v[i] = xstrdup(t);
	}
	if (rc) {
		strv_free(v);
		return rc;
	}
	*out = v;
	return 0;
}

static int read_llm(struct ld *ld, const yaml_node_t *nd, const char *path)
{
	struct spec_model *m = &ld->s->m;
	char kpath[YAMLX_PATH_LEN];
	const yaml_node_t *v;
	json_t *o = NULL, *p = NULL;
	int rc = yamlx_need_map(&ld->y, nd, path, 0, YAMLX_MAX_MAP_KEYS);

	if (!rc)
		rc = fld_known(ld, nd, path, llm_fields, ARRAY_SIZE(llm_fields));
	/* a key written into the spec would travel with it: refused before anything */
	if (!rc && (v = yamlx_map_get(&ld->y, nd, "api_key"))) {
		yamlx_path_key(kpath, path, "api_key");
		rc = yamlx_fail(&ld->y, v, KERR_INVALID, kpath,
				"an API key does not belong in the spec: put it in an environment "
				"variable and name that variable with api_key_env");
	}
	if (!rc && (v = yamlx_map_get(&ld->y, nd, "api_key_env"))) {
		const char *t = NULL;

		yamlx_path_key(kpath, path, "api_key_env");
		rc = yamlx_get_text(&ld->y, v, kpath, &t);
		if (!rc && !is_env_name(t))
			rc = yamlx_fail(&ld->y, v, KERR_INVALID, kpath,
					"expected the name of the environment variable that holds "
					"the key (e.g. OPENAI_API_KEY), not the key itself");
		if (!rc)
			m->api_key_env = xstrdup(t);
	}
	o = json_object();
	if (!rc)
		rc = fld_read(ld, nd, path, llm_fields, ARRAY_SIZE(llm_fields), o);
	if (!rc && (v = yamlx_map_get(&ld->y, nd, "price"))) {
		yamlx_path_key(kpath, path, "price");
		rc = fld_load(ld, v, kpath, price_fields, ARRAY_SIZE(price_fields), &p);
		if (!rc) {
			m->price_in = fld_num(p, "input_per_mtok", 0);
			m->price_out = fld_num(p, "output_per_mtok", 0);
		}
	}
	if (!rc && (v = yamlx_map_get(&ld->y, nd, "base_url")) &&
	    !http_is_url(json_string_value(json_object_get(o, "base_url")))) {
		yamlx_path_key(kpath, path, "base_url");
		rc = yamlx_fail(&ld->y, v, KERR_INVALID, kpath,
				"expected an http:// or https:// URL, e.g. "
				"http://localhost:8000/v1");
	}
	if (!rc) {
		m->provider = fld_enum(o, "provider", provider_names, LLM_OPENAI);
		fld_text(o, "model", &m->model);
		fld_text(o, "base_url", &m->base_url);
		fld_text(o, "ca_file", &m->ca_file);
		m->stream = json_object_get(o, "stream")
				    ? json_is_true(json_object_get(o, "stream"))
				    : m->stream;
		m->temperature = fld_num(o, "temperature", m->temperature);
		m->top_p = fld_num(o, "top_p", m->top_p);
		m->max_output_tokens = (long)fld_int(o, "max_output_tokens", m->max_output_tokens);
		m->timeout_s = (int)fld_int(o, "timeout_s", m->timeout_s);
		m->attempts = (int)fld_int(o, "attempts", m->attempts);
	}
	json_decref(p);
	json_decref(o);
	return rc;
}

static int read_command(struct ld *ld, const yaml_node_t *nd, const char *path)
{
	struct spec_model *m = &ld->s->m;
	char kpath[YAMLX_PATH_LEN];
	const yaml_node_t *v;
	json_t *o = NULL;
	int rc = fld_load(ld, nd, path, command_fields, ARRAY_SIZE(command_fields), &o);

	if (!rc) {
		v = yamlx_map_get(&ld->y, nd, "run");
		yamlx_path_key(kpath, path, "run");
		rc = read_strings(ld, v, kpath, 256, 0, &m->argv);
	}
	if (!rc && (v = yamlx_map_get(&ld->y, nd, "env"))) {
		yamlx_path_key(kpath, path, "env");
		rc = read_strings(ld, v, kpath, 64, 1, &m->pass_env);
	}
	if (!rc)
		m->command_timeout_s = (int)fld_int(o, "timeout_s", m->command_timeout_s);
	json_decref(o);
	return rc;
}

static int read_mix(struct ld *ld, const yaml_node_t *nd, const char *path)
{
	struct spec_model *m = &ld->s->m;
	json_t *o = NULL;
	int rc = fld_load(ld, nd, path, mix_fields, ARRAY_SIZE(mix_fields), &o);

	if (!rc) {
		m->weight_model = fld_num(o, "model", 0);
		m->weight_tune = fld_num(o, "tune", 0);
		if (m->weight_model <= 0)
			rc = yamlx_fail(&ld->y, nd, KERR_INVALID, path,
					"the model's weight must be above 0 (kind '%s')",
					proposer_names[ld->s->proposer]);
	}
	json_decref(o);
	return rc;
}

/* The settings only a model proposer reads, checked against its kind. */
static int read_model(struct ld *ld, const yaml_node_t *nd, const char *path, json_t *o)
{
	struct spec *s = ld->s;
	struct spec_model *m = &s->m;
	char kpath[YAMLX_PATH_LEN];
	const yaml_node_t *llm = yamlx_map_get(&ld->y, nd, "llm");
	const yaml_node_t *cmd = yamlx_map_get(&ld->y, nd, "command");
	const yaml_node_t *mix = yamlx_map_get(&ld->y, nd, "mix");
	int rc = 0;

	m->directions = (int)fld_int(o, "directions", m->directions);
	m->answer_retries = (int)fld_int(o, "answer_retries", m->answer_retries);
	m->max_prompt_bytes = (long)fld_int(o, "max_prompt_bytes", m->max_prompt_bytes);
	m->reflect = json_is_true(json_object_get(o, "reflect"));
	m->max_tokens = fld_int(o, "max_tokens", 0);
	m->max_cost = fld_num(o, "max_cost", 0);
	fld_text(o, "replay", &m->replay);
	if (llm) {
		yamlx_path_key(kpath, path, "llm");
		rc = s->proposer == PROPOSER_LLM
			     ? read_llm(ld, llm, kpath)
			     : yamlx_fail(&ld->y, llm, KERR_INVALID, kpath,
					  "settings for kind 'llm', but the kind is 'command'");
	} else if (s->proposer == PROPOSER_LLM && !m->replay) {
		rc = yamlx_fail(&ld->y, nd, KERR_PARSE, path,
				"kind 'llm' needs an 'llm' map (provider, model...)");
	}
	if (!rc && cmd) {
		yamlx_path_key(kpath, path, "command");
		rc = s->proposer == PROPOSER_COMMAND
			     ? read_command(ld, cmd, kpath)
			     : yamlx_fail(&ld->y, cmd, KERR_INVALID, kpath,
					  "settings for kind 'command', but the kind is 'llm'");
	} else if (!rc && s->proposer == PROPOSER_COMMAND && !m->replay) {
		rc = yamlx_fail(&ld->y, nd, KERR_PARSE, path,
				"kind 'command' needs a 'command' map (run: [program, args...])");
	}
	if (!rc && mix) {
		yamlx_path_key(kpath, path, "mix");
		rc = read_mix(ld, mix, kpath);
	} else if (!rc) {
		/* by default the model writes structure and the tuner (the spec's
		 * tunables, and those the model declares) gets a quarter */
		m->weight_model = 3;
		m->weight_tune = 1;
	}
	if (!rc && m->max_cost > 0 && isnan(m->price_in))
		rc = yamlx_fail(&ld->y, nd, KERR_INVALID, path,
				"max_cost needs a price table (llm.price) to count the cost");
	return rc;
}

int read_proposer(struct ld *ld, const yaml_node_t *nd, const char *path)
{
	struct spec *s = ld->s;
	json_t *o = json_object(), *conf = NULL;
	int rc = yamlx_need_map(&ld->y, nd, path, 0, YAMLX_MAX_MAP_KEYS);

	if (!rc)
		rc = fld_known(ld, nd, path, proposer_fields, ARRAY_SIZE(proposer_fields));
	if (!rc)
		rc = fld_read(ld, nd, path, proposer_fields, ARRAY_SIZE(proposer_fields), o);
	if (!rc) {
		s->proposer = fld_enum(o, "kind", proposer_names, PROPOSER_TUNE);
		s->seed = (uint64_t)fld_int(o, "seed", (int64_t)s->seed);
	}
	for (size_t i = 0; !rc && s->proposer == PROPOSER_TUNE && i < ARRAY_SIZE(model_keys); i++) {
		const yaml_node_t *v = yamlx_map_get(&ld->y, nd, model_keys[i]);
		char kpath[YAMLX_PATH_LEN];

		yamlx_path_key(kpath, path, model_keys[i]);
		if (v)
			rc = yamlx_fail(&ld->y, v, KERR_INVALID, kpath,
					"a setting of the model proposers, but the kind is 'tune' "
					"(set kind: llm or kind: command)");
	}
	if (!rc && s->proposer != PROPOSER_TUNE)
		rc = read_model(ld, nd, path, o);
	if (!rc)
		rc = yamlx_to_json(&ld->y, nd, path, &conf);
	if (!rc) {
		json_object_set_new(conf, "kind", json_string(proposer_names[s->proposer]));
		json_object_set_new(conf, "seed", json_integer((json_int_t)s->seed));
		json_decref(s->proposer_conf);
		s->proposer_conf = conf;
		conf = NULL;
	}
	json_decref(conf);
	json_decref(o);
	return rc;
}
