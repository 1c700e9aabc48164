"""kube_double_select.py - label and field selectors of list, watch and
deletecollection.

parse_label_selector and parse_field_selector turn the query parameters into
requirements (a 400 BadRequest for what the apiserver refuses, with its
message); labels_match and fields_match test an object against them.  FIELDS
is the table of the field selectors each resource supports.

Uses kube_double_status and kube_double_meta.
"""

import json
import re

from kube_double_meta import label_value_errors, qualified_name_errors
from kube_double_status import bad_request


def split_top(s):
    parts, depth, cur = [], 0, ""
    for ch in s:
        if ch == "(":
            depth += 1
        elif ch == ")":
            depth -= 1
        if ch == "," and depth == 0:
            parts.append(cur)
            cur = ""
        else:
            cur += ch
    parts.append(cur)
    return parts


def parse_label_selector(s):
    """Returns [(key, op, values)]; 400 for what labels.Parse refuses."""
    reqs = []
    if not s or not s.strip():
        return reqs
    for part in split_top(s):
        p = part.strip()
        if not p:
            raise bad_request("unable to parse requirement: found ',', expected: identifier")
        m = re.fullmatch(r"(!?)\s*([A-Za-z0-9./_-]+)", p)
        if m:
            key, op, vals = m.group(2), "!" if m.group(1) else "exists", []
        else:
            m = re.fullmatch(r"([A-Za-z0-9./_-]+)\s*(==|!=|=)\s*([A-Za-z0-9._-]*)", p)
            if m:
                key, op, vals = m.group(1), m.group(2), [m.group(3)]
                if op == "==":
                    op = "="
            else:
                m = re.fullmatch(r"([A-Za-z0-9./_-]+)\s+(in|notin)\s*\(([^()]*)\)", p)
                if not m:
                    raise bad_request("unable to parse requirement: invalid label selector: %s"
                                      % json.dumps(p))
                key, op = m.group(1), m.group(2)
                vals = [v.strip() for v in m.group(3).split(",")]
                if vals == [""]:
                    raise bad_request("unable to parse requirement: for 'in', 'notin' "
                                      "operators, values set can't be empty")
        errs = qualified_name_errors(key)
        if errs:
            raise bad_request("unable to parse requirement: values[0][%s]: Invalid value: %s: %s"
                              % (key, json.dumps(key), errs[0]))
        for v in vals:
            e = label_value_errors(v)
            if e:
                raise bad_request("unable to parse requirement: values[0][%s]: Invalid value: "
                                  "%s: %s" % (key, json.dumps(v), e[0]))
        reqs.append((key, op, vals))
    return reqs


def labels_match(reqs, labels):
    labels = labels or {}
    for key, op, vals in reqs:
        has = key in labels
        v = labels.get(key)
        if op == "exists" and not has:
            return False
        if op == "!" and has:
            return False
        if op == "=" and v != vals[0]:
            return False
        if op == "!=" and has and v == vals[0]:
            return False
        if op == "in" and (not has or v not in vals):
            return False
        if op == "notin" and has and v in vals:
            return False
    return True


FIELDS = {
    "jobs": {"metadata.name": lambda o: o["metadata"]["name"],
             "metadata.namespace": lambda o: o["metadata"]["namespace"],
             "status.successful": lambda o: str(o.get("status", {}).get("succeeded", 0))},
    "pods": {"metadata.name": lambda o: o["metadata"]["name"],
             "metadata.namespace": lambda o: o["metadata"]["namespace"],
             "status.phase": lambda o: o.get("status", {}).get("phase", ""),
             "spec.nodeName": lambda o: o["spec"].get("nodeName", ""),
             "spec.restartPolicy": lambda o: o["spec"].get("restartPolicy", ""),
             "spec.schedulerName": lambda o: o["spec"].get("schedulerName", ""),
             "spec.serviceAccountName": lambda o: o["spec"].get("serviceAccountName", ""),
             "status.podIP": lambda o: o.get("status", {}).get("podIP", ""),
             "status.nominatedNodeName": lambda o: ""},
}


def parse_field_selector(s, res):
    reqs = []
    if not s or not s.strip():
        return reqs
    for part in s.split(","):
        m = re.fullmatch(r"\s*([A-Za-z0-9._-]+)\s*(==|!=|=)\s*([^,]*?)\s*", part)
        if not m:
            raise bad_request("invalid selector: '%s'; can't understand '%s'" % (s, part))
        key, op, val = m.groups()
        if key not in FIELDS[res]:
            raise bad_request('"%s" is not a known field selector: only "%s"'
                              % (key, '", "'.join(sorted(FIELDS[res]))))
        reqs.append((FIELDS[res][key], "!=" if op == "!=" else "=", val))
    return reqs


def fields_match(reqs, obj):
    for get, op, val in reqs:
        if (get(obj) == val) != (op == "="):
            return False
    return True
