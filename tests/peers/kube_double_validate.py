"""kube_double_validate.py - decoding and validating a Job as the apiserver does.

Holds the two gates a Job body passes on create and update: Decoder (the
JSON decoding into batch/v1 types: type errors are 400, unknown fields are
dropped with a warning or refused under fieldValidation=Strict, fields the
server version lacks or gates off are dropped) and validate_job (ValidateJob's
checks that matter here, podFailurePolicy and Indexed Jobs included, as a 422
with field causes), with validate_container for the pod template's containers.

Uses kube_double_status and kube_double_meta.
"""

from kube_double_meta import (DNS1123_LABEL, DNS1123_SUBDOMAIN, ENV_NAME, MSG_LABEL,
                              QUANTITY_MSG, parse_quantity, qualified_name_errors,
                              validate_annotations, validate_labels, validate_object_meta)
from kube_double_status import FieldErrors, bad_request

STD_RESOURCES = {"cpu", "memory", "ephemeral-storage", "storage"}

# Fields of the objects we decode, to tell unknown ones (fieldValidation).
OBJECT_META = {"name", "generateName", "namespace", "selfLink", "uid", "resourceVersion",
               "generation", "creationTimestamp", "deletionTimestamp",
               "deletionGracePeriodSeconds", "labels", "annotations", "ownerReferences",
               "finalizers", "managedFields"}
JOB_SPEC = {"parallelism", "completions", "activeDeadlineSeconds", "backoffLimit", "selector",
            "manualSelector", "template", "ttlSecondsAfterFinished"}
POD_SPEC = {"volumes", "initContainers", "containers", "ephemeralContainers", "restartPolicy",
            "terminationGracePeriodSeconds", "activeDeadlineSeconds", "dnsPolicy",
            "nodeSelector", "serviceAccountName", "serviceAccount",
            "automountServiceAccountToken", "nodeName", "hostNetwork", "hostPID", "hostIPC",
            "shareProcessNamespace", "securityContext", "imagePullSecrets", "hostname",
            "subdomain", "affinity", "schedulerName", "tolerations", "hostAliases",
            "priorityClassName", "priority", "dnsConfig", "readinessGates", "runtimeClassName",
            "enableServiceLinks", "preemptionPolicy", "overhead", "topologySpreadConstraints",
            "setHostnameAsFQDN", "os", "hostUsers", "schedulingGates", "resourceClaims"}
CONTAINER = {"name", "image", "command", "args", "workingDir", "ports", "envFrom", "env",
             "resources", "resizePolicy", "restartPolicy", "volumeMounts", "volumeDevices",
             "livenessProbe", "readinessProbe", "startupProbe", "lifecycle",
             "terminationMessagePath", "terminationMessagePolicy", "imagePullPolicy",
             "securityContext", "stdin", "stdinOnce", "tty"}
# JobSpec fields by (minor version the field appeared, minor version from which
# its feature gate is on by default).  Known but gated off: silently dropped,
# as the apiserver's dropDisabledFields does; unknown: dropped, or refused
# under fieldValidation=Strict (>= 1.25).
GATED_JOB_FIELDS = {
    "ttlSecondsAfterFinished": (12, 21),
    "completionMode": (21, 22),
    "suspend": (21, 22),
    "podFailurePolicy": (25, 26),
    "backoffLimitPerIndex": (28, 29),
    "maxFailedIndexes": (28, 29),
    "podReplacementPolicy": (28, 29),
    "successPolicy": (30, 31),
    "managedBy": (30, 32),
}


class Decoder:
    """Decodes a Job the way the apiserver does: type errors are 400,
    unknown fields are dropped (with a warning) or refused (Strict), fields
    the version lacks or gates off are dropped."""

    def __init__(self, minor, strictness):
        self.minor = minor
        self.strict = strictness  # "Ignore", "Warn" or "Strict"
        self.unknown = []

    def fail(self, msg):
        raise bad_request('Job in version "v1" cannot be handled as a Job: ' + msg)

    def typ(self, obj, key, kind, path, go):
        v = obj.get(key)
        if v is None:
            return
        ok = {"int": lambda x: isinstance(x, int) and not isinstance(x, bool),
              "bool": lambda x: isinstance(x, bool),
              "str": lambda x: isinstance(x, str),
              "map": lambda x: isinstance(x, dict),
              "list": lambda x: isinstance(x, list)}[kind](v)
        if not ok:
            jt = {bool: "bool", int: "number", float: "number", str: "string", list: "array",
                  dict: "object"}.get(type(v), "value")
            self.fail("json: cannot unmarshal %s into Go struct field %s of type %s"
                      % (jt, go, {"int": "int32", "bool": "bool", "str": "string",
                                  "map": "map[string]string" if key in ("labels", "annotations")
                                  else "struct", "list": "[]"}[kind]))

    def prune(self, obj, known, path):
        if not isinstance(obj, dict):
            return
        for k in list(obj):
            if k not in known:
                self.unknown.append(path + k)
                del obj[k]

    def decode_meta(self, meta, path, go):
        if meta is None:
            return
        if not isinstance(meta, dict):
            self.fail("json: cannot unmarshal into Go struct field %s of type v1.ObjectMeta" % go)
        self.prune(meta, OBJECT_META, path)
        for k in ("labels", "annotations"):
            self.typ(meta, k, "map", path, go + "." + k)
            for kk, vv in (meta.get(k) or {}).items():
                if not isinstance(vv, str):
                    self.fail("json: cannot unmarshal %s into Go struct field %s.%s of type string"
                              % ("number" if isinstance(vv, (int, float)) else "value",
                                 go, k))
        self.typ(meta, "name", "str", path, go + ".name")
        self.typ(meta, "generateName", "str", path, go + ".generateName")
        self.typ(meta, "namespace", "str", path, go + ".namespace")

    def decode_job(self, job):
        if not isinstance(job, dict):
            self.fail("json: cannot unmarshal into Go value of type batch.Job")
        self.prune(job, {"apiVersion", "kind", "metadata", "spec", "status"}, "")
        self.decode_meta(job.get("metadata"), "metadata.", "Job.metadata")
        spec = job.get("spec")
        if spec is None:
            return
        if not isinstance(spec, dict):
            self.fail("json: cannot unmarshal into Go struct field Job.spec of type v1.JobSpec")
        for k in list(spec):
            if k in JOB_SPEC:
                continue
            if k in GATED_JOB_FIELDS:
                known, enabled = GATED_JOB_FIELDS[k]
                if self.minor < known:
                    self.unknown.append("spec." + k)
                    del spec[k]
                elif self.minor < enabled:
                    del spec[k]
                continue
            self.unknown.append("spec." + k)
            del spec[k]
        if self.minor < 21:
            spec.pop("ttlSecondsAfterFinished", None)
        for k in ("parallelism", "completions", "activeDeadlineSeconds", "backoffLimit",
                  "ttlSecondsAfterFinished", "backoffLimitPerIndex", "maxFailedIndexes"):
            self.typ(spec, k, "int", "spec.", "JobSpec.spec." + k)
        for k in ("suspend", "manualSelector"):
            self.typ(spec, k, "bool", "spec.", "JobSpec.spec." + k)
        for k in ("completionMode", "podReplacementPolicy", "managedBy"):
            self.typ(spec, k, "str", "spec.", "JobSpec.spec." + k)
        self.typ(spec, "podFailurePolicy", "map", "spec.", "JobSpec.spec.podFailurePolicy")
        tpl = spec.get("template")
        if tpl is None:
            return
        self.typ(spec, "template", "map", "spec.", "JobSpec.spec.template")
        self.prune(tpl, {"metadata", "spec"}, "spec.template.")
        self.decode_meta(tpl.get("metadata"), "spec.template.metadata.",
                         "PodTemplateSpec.spec.template.metadata")
        ps = tpl.get("spec")
        if ps is None:
            return
        self.typ(tpl, "spec", "map", "spec.template.", "PodTemplateSpec.spec.template.spec")
        self.prune(ps, POD_SPEC, "spec.template.spec.")
        self.typ(ps, "restartPolicy", "str", "", "PodSpec.spec.template.spec.restartPolicy")
        for lk in ("containers", "initContainers"):
            self.typ(ps, lk, "list", "", "PodSpec.spec.template.spec." + lk)
            for i, c in enumerate(ps.get(lk) or []):
                p = "spec.template.spec.%s[%d]." % (lk, i)
                if not isinstance(c, dict):
                    self.fail("json: cannot unmarshal into Go struct field PodSpec.spec.template"
                              ".spec.%s of type core.Container" % lk)
                self.prune(c, CONTAINER, p)
                go = "Container.spec.template.spec.%s." % lk
                for k in ("name", "image", "workingDir", "imagePullPolicy"):
                    self.typ(c, k, "str", p, go + k)
                for k in ("command", "args", "env"):
                    self.typ(c, k, "list", p, go + k)
                    if k != "env":
                        for a in c.get(k) or []:
                            if not isinstance(a, str):
                                self.fail("json: cannot unmarshal number into Go struct field "
                                          "%s%s of type string" % (go, k))
                res = c.get("resources")
                if isinstance(res, dict):
                    for rk in ("limits", "requests"):
                        for name, q in (res.get(rk) or {}).items():
                            if parse_quantity(q) is None:
                                self.fail(QUANTITY_MSG)

    def finish(self):
        """Returns the warnings to send; raises for Strict."""
        if not self.unknown or self.minor < 25 or self.strict == "Ignore":
            return []
        msgs = ['unknown field "%s"' % u for u in self.unknown]
        if self.strict == "Strict":
            raise bad_request("strict decoding error: " + ", ".join(msgs))
        return msgs


def validate_container(fe, c, path, names):
    name = c.get("name")
    if not name:
        fe.required(path + ".name")
    else:
        if not DNS1123_LABEL.match(name) or len(name) > 63:
            fe.invalid(path + ".name", name,
                       MSG_LABEL if DNS1123_LABEL.match(name) is None
                       else "must be no more than 63 characters")
        if name in names:
            fe.duplicate(path + ".name", name)
        names.add(name)
    img = c.get("image")
    if not isinstance(img, str) or not img.strip():
        fe.required(path + ".image")
    for i, e in enumerate(c.get("env") or []):
        if not isinstance(e, dict) or not e.get("name"):
            fe.required("%s.env[%d].name" % (path, i))
        elif not ENV_NAME.match(e["name"]):
            fe.invalid("%s.env[%d].name" % (path, i), e["name"],
                       "a valid environment variable name must consist of alphabetic characters,"
                       " digits, '_', '-', or '.', and must not start with a digit (e.g. "
                       "'my.env-name',  or 'MY_ENV.NAME',  or 'MyEnvName1', regex used for "
                       "validation is '[-._a-zA-Z][-._a-zA-Z0-9]*')")
    ipp = c.get("imagePullPolicy")
    if ipp is not None and ipp not in ("Always", "IfNotPresent", "Never"):
        fe.not_supported(path + ".imagePullPolicy", ipp, ["Always", "IfNotPresent", "Never"])
    res = c.get("resources") or {}
    parsed = {}
    for rk in ("limits", "requests"):
        for rname, q in (res.get(rk) or {}).items():
            f = "%s.resources.%s[%s]" % (path, rk, rname)
            if rname not in STD_RESOURCES and not rname.startswith("hugepages-") \
                    and "/" not in rname:
                fe.invalid(f, rname, "must be a standard resource type or fully qualified")
                continue
            if "/" in rname:
                for e in qualified_name_errors(rname):
                    fe.invalid(f, rname, e)
            v = parse_quantity(q)
            if v is None:
                continue
            if v < 0:
                fe.invalid(f, q, "must be greater than or equal to 0")
            elif "/" in rname and not rname.startswith("kubernetes.io/") \
                    and v != v.to_integral_value():
                fe.invalid(f, q, "must be an integer")
            parsed[(rk, rname)] = (v, q)
    for (rk, rname), (v, q) in parsed.items():
        if rk != "requests":
            continue
        lim = parsed.get(("limits", rname))
        f = "%s.resources.requests[%s]" % (path, rname)
        if lim is not None and v > lim[0]:
            fe.invalid(f, q, "must be less than or equal to %s limit of %s" % (rname, lim[1]))
        elif lim is not None and "/" in rname and not rname.startswith("kubernetes.io/") \
                and v != lim[0]:
            fe.invalid(f, q, "must be equal to %s limit of %s" % (rname, lim[1]))
        elif lim is None and "/" in rname and not rname.startswith("kubernetes.io/"):
            fe.forbidden("%s.resources.limits" % path,
                         "Limit must be set for non overcommitable resources")


def validate_job(job, minor):
    """The checks of ValidateJob that matter here; raises a 422 ApiError."""
    fe = FieldErrors()
    meta = job["metadata"]
    spec = job.get("spec") or {}
    validate_object_meta(fe, meta)
    name = meta.get("name") or ""
    tpl = spec.get("template") or {}
    tmeta = tpl.get("metadata") or {}
    ps = tpl.get("spec") or {}
    for k in ("parallelism", "completions", "backoffLimit", "activeDeadlineSeconds",
              "ttlSecondsAfterFinished", "backoffLimitPerIndex", "maxFailedIndexes"):
        v = spec.get(k)
        if v is not None and v < 0:
            fe.invalid("spec." + k, v, "must be greater than or equal to 0")
    mode = spec.get("completionMode")
    if mode is not None and mode not in ("NonIndexed", "Indexed"):
        fe.not_supported("spec.completionMode", mode, ["NonIndexed", "Indexed"])
    if mode == "Indexed":
        if spec.get("completions") is None:
            fe.required("spec.completions", "when completion mode is Indexed")
        elif spec["completions"] > 100000:
            fe.invalid("spec.completions", spec["completions"],
                       "must be less than or equal to 100000 when completion mode is Indexed")
        if (spec.get("parallelism") or 0) > 100000:
            fe.invalid("spec.parallelism", spec["parallelism"],
                       "must be less than or equal to 100000 when completion mode is Indexed")
    if spec.get("backoffLimitPerIndex") is not None and mode != "Indexed":
        fe.invalid("spec.backoffLimitPerIndex", spec["backoffLimitPerIndex"],
                   "requires indexed completion mode")
    if spec.get("maxFailedIndexes") is not None and spec.get("backoffLimitPerIndex") is None:
        fe.required("spec.backoffLimitPerIndex", "when maxFailedIndexes is specified")
    rp = ps.get("restartPolicy", "Always")
    pfp = spec.get("podFailurePolicy")
    if pfp is not None:
        if rp != "Never":
            fe.invalid("spec.template.spec.restartPolicy", rp,
                       'only "Never" is supported when podFailurePolicy is specified')
        rules = pfp.get("rules")
        if rules is None:
            fe.required("spec.podFailurePolicy.rules")
            rules = []
        if len(rules) > 20:
            fe.too_many("spec.podFailurePolicy.rules", len(rules), 20)
        actions = ["Count", "FailJob", "Ignore"] + (["FailIndex"] if minor >= 28 else [])
        for i, r in enumerate(rules[:20]):
            p = "spec.podFailurePolicy.rules[%d]" % i
            act = r.get("action")
            if not act:
                fe.required(p + ".action")
            elif act not in actions:
                fe.not_supported(p + ".action", act, sorted(actions))
            elif act == "FailIndex" and spec.get("backoffLimitPerIndex") is None:
                fe.invalid(p + ".action", act, "requires the backoffLimitPerIndex to be set")
            oec, opc = r.get("onExitCodes"), r.get("onPodConditions")
            if oec is None and opc is None:
                fe.invalid(p, "", "specifying one of OnExitCodes and OnPodConditions is required")
            elif oec is not None and opc is not None:
                fe.invalid(p, "", "specifying both OnExitCodes and OnPodConditions is not supported")
            if oec is not None:
                op = oec.get("operator")
                if op not in ("In", "NotIn"):
                    fe.not_supported(p + ".onExitCodes.operator", op or "", ["In", "NotIn"])
                vals = oec.get("values") or []
                if not vals:
                    fe.required(p + ".onExitCodes.values")
                if len(vals) > 255:
                    fe.too_many(p + ".onExitCodes.values", len(vals), 255)
                prev = None
                for j, v in enumerate(vals):
                    vp = "%s.onExitCodes.values[%d]" % (p, j)
                    if op == "In" and v == 0:
                        fe.invalid(vp, v, "must not be 0 for the In operator")
                    if prev is not None and v == prev:
                        fe.duplicate(vp, v)
                    elif prev is not None and v < prev:
                        fe.invalid(vp, v, "must be ordered")
                    prev = v
            for j, pat in enumerate(opc or []):
                pp = "%s.onPodConditions[%d]" % (p, j)
                if not pat.get("type"):
                    fe.required(pp + ".type")
                st = pat.get("status", "True")
                if st not in ("True", "False", "Unknown"):
                    fe.not_supported(pp + ".status", st, ["False", "True", "Unknown"])
    if rp not in ("OnFailure", "Never"):
        fe.not_supported("spec.template.spec.restartPolicy", rp, ["OnFailure", "Never"])
    validate_labels(fe, "spec.template.metadata.labels", tmeta.get("labels"))
    validate_annotations(fe, "spec.template.metadata.annotations", tmeta.get("annotations"))
    conts = ps.get("containers")
    names = set()
    if not conts:
        fe.required("spec.template.spec.containers")
    for i, c in enumerate(conts or []):
        validate_container(fe, c, "spec.template.spec.containers[%d]" % i, names)
    for i, c in enumerate(ps.get("initContainers") or []):
        validate_container(fe, c, "spec.template.spec.initContainers[%d]" % i, names)
    if name and DNS1123_SUBDOMAIN.match(name) and len(name) > 63:
        # The generated job-name label carries the name: a label value.
        fe.invalid("spec.template.labels", name, "must be no more than 63 characters")
    sel = spec.get("selector")
    if spec.get("manualSelector") and not sel:
        fe.required("spec.selector")
    fe.raise_if_any("Job", "batch", name)
