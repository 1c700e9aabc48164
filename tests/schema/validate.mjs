#!/usr/bin/env node
// validate.mjs - checks rendered Kubernetes manifests against the OpenAPI
// schemas of the kubernetes-models package (and Kueue objects against the
// hand-written schemas of kueue-v1beta1.schema.mjs).
//
//   node tests/schema/validate.mjs FILE...
//
// Each FILE is YAML (several documents allowed) or JSON (one object, or a
// List / array of objects).  Every document is looked up by apiVersion and
// kind and validated; prints "ok FILE#i KIND NAME" for each valid one, the
// errors of the others, and exits 1 if any failed (2 on usage or read
// errors).  Exits 77 when tests/schema/node_modules is missing: install it
// with "npm ci --prefix tests/schema".
import { existsSync, readFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const here = dirname(fileURLToPath(import.meta.url));
if (!existsSync(join(here, "node_modules", "kubernetes-models")) ||
    !existsSync(join(here, "node_modules", "js-yaml"))) {
  console.error("validate.mjs: tests/schema/node_modules is missing; run: npm ci --prefix tests/schema");
  process.exit(77);
}
const yaml = (await import("js-yaml")).default;
const Ajv = (await import("ajv")).default;
const { schemas: kueueSchemas } = await import("./kueue-v1beta1.schema.mjs");

const files = process.argv.slice(2);
if (files.length === 0) {
  console.error("usage: node tests/schema/validate.mjs FILE...");
  process.exit(2);
}

const ajv = new Ajv({ allErrors: true, strict: false });
const kueue = {};
for (const [kind, schema] of Object.entries(kueueSchemas)) kueue[kind] = ajv.compile(schema);

function errorsOf(list) {
  return (list || []).map((e) => `${e.instancePath || "/"} ${e.message}` +
    (e.params && e.params.additionalProperty ? ` (${e.params.additionalProperty})` : "") +
    (e.params && e.params.allowedValues ? ` (${e.params.allowedValues.join(", ")})` : ""));
}

// apiVersion "batch/v1" -> "kubernetes-models/batch/v1/Job"; "v1" -> ".../v1/Pod"
async function modelFor(apiVersion, kind) {
  if (!/^[a-z0-9.-]+(\/[a-z0-9]+)?$/.test(apiVersion) || !/^[A-Za-z0-9]+$/.test(kind)) return null;
  try {
    const mod = await import(`kubernetes-models/${apiVersion}/${kind}`);
    return mod[kind] || null;
  } catch (e) {
    if (e && (e.code === "ERR_PACKAGE_PATH_NOT_EXPORTED" || e.code === "ERR_MODULE_NOT_FOUND")) return null;
    throw e;
  }
}

async function check(doc) {
  if (doc === null || typeof doc !== "object" || Array.isArray(doc)) return ["document is not an object"];
  const { apiVersion, kind } = doc;
  if (typeof apiVersion !== "string" || typeof kind !== "string") return ["apiVersion and kind are required"];
  if (apiVersion === "kueue.x-k8s.io/v1beta1") {
    const v = kueue[kind];
    if (!v) return [`no schema for ${apiVersion} ${kind}`];
    return v(doc) ? [] : errorsOf(v.errors);
  }
  const Model = await modelFor(apiVersion, kind);
  if (!Model) return [`no model for ${apiVersion} ${kind} in kubernetes-models`];
  try {
    new Model(doc).validate();
    return [];
  } catch (e) {
    if (e && Array.isArray(e.errors)) return errorsOf(e.errors);
    return [String(e && e.message ? e.message : e)];
  }
}

function documents(file, text) {
  if (/\.json$/i.test(file)) {
    const v = JSON.parse(text);
    if (Array.isArray(v)) return v;
    if (v && typeof v.kind === "string" && v.kind.endsWith("List") && Array.isArray(v.items)) return v.items;
    return [v];
  }
  return yaml.loadAll(text).filter((d) => d !== null && d !== undefined);
}

let failed = 0;
let status = 0;
for (const file of files) {
  let docs;
  try {
    docs = documents(file, readFileSync(file, "utf8"));
  } catch (e) {
    console.log(`FAIL ${file}: ${e.message}`);
    status = 2;
    continue;
  }
  if (docs.length === 0) {
    console.log(`FAIL ${file}: no documents`);
    failed++;
  }
  for (let i = 0; i < docs.length; i++) {
    const d = docs[i];
    const errs = await check(d);
    const label = `${file}#${i} ${d && d.kind} ${(d && d.metadata && d.metadata.name) || "-"}`;
    if (errs.length === 0) {
      console.log(`ok ${label}`);
    } else {
      failed++;
      console.log(`FAIL ${label}`);
      for (const e of errs) console.log(`  ${e}`);
    }
  }
}
process.exit(failed ? 1 : status);
