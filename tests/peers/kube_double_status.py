"""kube_double_status.py - Kubernetes Status errors for the API double.

Holds what a failed request answers: the Status body (status_obj), the
ApiError exception that carries one up to the request handler, which sends it,
the usual shapes of it (NotFound, AlreadyExists, Conflict, BadRequest), and
FieldErrors, a collected field.ErrorList that becomes a 422 Invalid with its
causes.  Go's %q is go_q.

Uses the standard library only; every other kube_double_*.py module may use it.
"""

import json


def status_obj(code, reason, message, details=None):
    d = {"kind": "Status", "apiVersion": "v1", "metadata": {},
         "status": "Failure", "message": message, "reason": reason}
    if details is not None:
        d["details"] = details
    d["code"] = code
    return d


class ApiError(Exception):
    def __init__(self, code, reason, message, details=None, headers=None):
        super().__init__(message)
        self.code = code
        self.body = status_obj(code, reason, message, details)
        self.headers = headers or {}


def gr(resource, group):
    return resource + "." + group if group else resource


def not_found(resource, group, name):
    d = {"name": name}
    if group:
        d["group"] = group
    d["kind"] = resource
    return ApiError(404, "NotFound", '%s "%s" not found' % (gr(resource, group), name), d)


def already_exists(resource, group, name):
    d = {"name": name}
    if group:
        d["group"] = group
    d["kind"] = resource
    return ApiError(409, "AlreadyExists",
                    '%s "%s" already exists' % (gr(resource, group), name), d)


def conflict(resource, group, name, msg):
    d = {"name": name}
    if group:
        d["group"] = group
    d["kind"] = resource
    return ApiError(409, "Conflict", 'Operation cannot be fulfilled on %s "%s": %s'
                    % (gr(resource, group), name, msg), d)


def bad_request(msg):
    return ApiError(400, "BadRequest", msg)


def go_q(v):
    """A value as Go's field errors print it (%q for strings)."""
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, str):
        return json.dumps(v)
    if v is None:
        return "null"
    if isinstance(v, (int, float)):
        return str(v)
    return json.dumps(v, separators=(",", ":"))


class FieldErrors:
    """k8s.io/apimachinery/pkg/util/validation/field errors, collected."""

    def __init__(self):
        self.items = []  # (reason, field, body)

    def required(self, field, detail=""):
        self.items.append(("FieldValueRequired", field,
                           "Required value" + (": " + detail if detail else "")))

    def invalid(self, field, value, detail=""):
        self.items.append(("FieldValueInvalid", field, "Invalid value: " + go_q(value)
                           + (": " + detail if detail else "")))

    def not_supported(self, field, value, supported):
        self.items.append(("FieldValueNotSupported", field, "Unsupported value: %s: "
                           "supported values: %s" % (go_q(value),
                                                     ", ".join(json.dumps(s) for s in supported))))

    def duplicate(self, field, value):
        self.items.append(("FieldValueDuplicate", field, "Duplicate value: " + go_q(value)))

    def forbidden(self, field, detail):
        self.items.append(("FieldValueForbidden", field, "Forbidden: " + detail))

    def too_many(self, field, n, limit):
        self.items.append(("FieldValueTooMany", field,
                           "Too many: %d: must have at most %d items" % (n, limit)))

    def raise_if_any(self, kind, group, name):
        if not self.items:
            return
        texts = ["%s: %s" % (f, b) for _, f, b in self.items]
        text = texts[0] if len(texts) == 1 else "[" + ", ".join(texts) + "]"
        details = {"name": name, "group": group, "kind": kind,
                   "causes": [{"reason": r, "message": b, "field": f} for r, f, b in self.items]}
        raise ApiError(422, "Invalid", '%s.%s "%s" is invalid: %s' % (kind, group, name, text),
                       details)
