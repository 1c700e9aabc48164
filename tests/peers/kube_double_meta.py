"""kube_double_meta.py - object metadata rules shared by every resource.

Holds the apiserver's checks of names (RFC 1123 labels and subdomains),
label keys and values, annotations and resource quantities, with its exact
messages; validate_object_meta for an object's metadata; and the values the
server fills in: timestamps (now_ts) and generateName suffixes (rand5).

Checks add to a kube_double_status.FieldErrors passed in; parse_quantity
answers None where the decoder would refuse.  Uses the standard library only.
"""

import decimal
import random
import re
import time

RAND_CHARS = "bcdfghjklmnpqrstvwxz2456789"  # as the apiserver's generateName

DNS1123_LABEL = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?\Z")
DNS1123_SUBDOMAIN = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*\Z")
QNAME = re.compile(r"([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]\Z")
LABEL_VALUE = re.compile(r"(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?\Z")
ENV_NAME = re.compile(r"[-._a-zA-Z][-._a-zA-Z0-9]*\Z")
QUANTITY = re.compile(r"([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)\Z")
QUANTITY_MSG = ("quantities must match the regular expression "
                "'^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'")
MSG_SUBDOMAIN = ("a lowercase RFC 1123 subdomain must consist of lower case alphanumeric "
                 "characters, '-' or '.', and must start and end with an alphanumeric character "
                 "(e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?"
                 "(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')")
MSG_LABEL = ("a lowercase RFC 1123 label must consist of lower case alphanumeric characters or "
             "'-', and must start and end with an alphanumeric character (e.g. 'my-name',  or "
             "'123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')")
MSG_QNAME = ("name part must consist of alphanumeric characters, '-', '_' or '.', and must "
             "start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or "
             "'123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')")
MSG_LVALUE = ("a valid label must be an empty string or consist of alphanumeric characters, "
              "'-', '_' or '.', and must start and end with an alphanumeric character (e.g. "
              "'MyValue',  or 'my_value',  or '12345', regex used for validation is "
              "'(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')")


def qualified_name_errors(key):
    """Problems of a label/annotation key, as IsQualifiedName words them."""
    errs = []
    parts = key.split("/")
    if len(parts) == 1:
        name = parts[0]
    elif len(parts) == 2:
        prefix, name = parts
        if not prefix:
            errs.append("prefix part must be non-empty")
        elif len(prefix) > 253:
            errs.append("prefix part must be no more than 253 characters")
        elif not DNS1123_SUBDOMAIN.match(prefix):
            errs.append("prefix part " + MSG_SUBDOMAIN)
    else:
        return ["a qualified name " + MSG_QNAME.replace("name part ", "", 1)
                + " with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')"]
    if not name:
        errs.append("name part must be non-empty")
    elif len(name) > 63:
        errs.append("name part must be no more than 63 characters")
    elif not QNAME.match(name):
        errs.append(MSG_QNAME)
    return errs


def label_value_errors(v):
    errs = []
    if len(v) > 63:
        errs.append("must be no more than 63 characters")
    if not LABEL_VALUE.match(v):
        errs.append(MSG_LVALUE)
    return errs


def validate_labels(fe, field, labels):
    if labels is None:
        return
    for k, v in labels.items():
        for e in qualified_name_errors(k):
            fe.invalid(field, k, e)
        if not isinstance(v, str):
            continue
        for e in label_value_errors(v):
            fe.invalid(field, v, e)


def validate_annotations(fe, field, ann):
    if ann is None:
        return
    total = 0
    for k, v in ann.items():
        for e in qualified_name_errors(k.lower()):
            fe.invalid(field, k, e)
        total += len(k) + len(v if isinstance(v, str) else "")
    if total > 256 * 1024:
        fe.items.append(("FieldValueTooLong", field,
                         "Too long: must have at most 262144 bytes"))


SUFFIX = {"": 1, "n": decimal.Decimal("1e-9"), "u": decimal.Decimal("1e-6"),
          "m": decimal.Decimal("1e-3"), "k": 10**3, "M": 10**6, "G": 10**9, "T": 10**12,
          "P": 10**15, "E": 10**18, "Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "Ti": 2**40,
          "Pi": 2**50, "Ei": 2**60}


def parse_quantity(q):
    """A resource.Quantity as a Decimal, or None where the apiserver's decoder
    would refuse it (which it does with 400, before validation)."""
    if isinstance(q, bool):
        return None
    if isinstance(q, (int, float)):
        return decimal.Decimal(str(q))
    if not isinstance(q, str):
        return None
    m = QUANTITY.match(q)
    if not m:
        return None
    num, suf = m.groups()
    try:
        n = decimal.Decimal(num)
    except decimal.InvalidOperation:
        return None
    if num.count(".") > 1:
        return None
    if suf in SUFFIX:
        return n * SUFFIX[suf]
    m2 = re.fullmatch(r"[eE]([-+]?[0-9]+)", suf)
    if m2:
        return n * (decimal.Decimal(10) ** int(m2.group(1)))
    return None


def validate_object_meta(fe, meta, name_len_label=True):
    name = meta.get("name") or ""
    if not name and not meta.get("generateName"):
        fe.required("metadata.name", "name or generateName is required")
    elif name:
        if len(name) > 253:
            fe.invalid("metadata.name", name, "must be no more than 253 characters")
        elif not DNS1123_SUBDOMAIN.match(name):
            fe.invalid("metadata.name", name, MSG_SUBDOMAIN)
    validate_labels(fe, "metadata.labels", meta.get("labels"))
    validate_annotations(fe, "metadata.annotations", meta.get("annotations"))


def now_ts(t=None):
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(t if t is not None else time.time()))


def rand5():
    return "".join(random.choice(RAND_CHARS) for _ in range(5))
