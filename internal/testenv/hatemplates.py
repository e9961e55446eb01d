"""Renders a Home Assistant command_line or RESTful sensor's templates over
one scan's value (a command's stdout, a resource's body), with Jinja2 as Home
Assistant does, in both orders its releases have used
(homeassistant/components/command_line/sensor.py,
homeassistant/components/rest/sensor.py and
homeassistant/helpers/trigger_template_entity.py):

- "value_first": value_template is rendered over the value, then availability
  over value_template's output (value is that output, value_json that output
  parsed as JSON when it parses), not strict; the entity is unavailable only
  when availability renders False. (The RESTful sensor's older releases
  rendered availability over the body itself: "availability_first" gives
  that.)
- "availability_first" (the current source): availability is rendered first
  over the value (value is the value, value_json the value parsed), strict
  (an undefined name is an error, which Home Assistant logs and takes as
  available), its result read as a boolean; value_template and the JSON
  attributes only when it is true.

A sensor without an availability template is available.

Reads {"stdout": str or null, "value_template", "availability",
"json_attributes": [...], "order"} as JSON on stdin (stdout: the value, null
when the command failed); writes {"available", "state", "attributes",
"errors", "warnings"} as JSON on stdout. errors are what Home Assistant logs
as an ERROR, warnings as a WARNING. internal/testenv/hatemplates.go runs it.
"""

import ast
import json
import logging
import sys

import jinja2
from jinja2.sandbox import ImmutableSandboxedEnvironment

warnings = []
errors = []


class Collect(logging.Handler):
    def emit(self, record):
        warnings.append(record.getMessage())


log = logging.getLogger("template")
log.addHandler(Collect())
log.propagate = False

# Home Assistant's environment: sandboxed, undefined names logged as a
# warning when not strict, refused when strict.
loose = ImmutableSandboxedEnvironment(undefined=jinja2.make_logging_undefined(log, jinja2.Undefined))
strict = ImmutableSandboxedEnvironment(undefined=jinja2.StrictUndefined)


def variables(value):
    v = {"value": value}
    try:
        v["value_json"] = json.loads(value)
    except (TypeError, ValueError):
        pass
    return v


def parse_result(s):
    """Home Assistant's parse_result: a rendered literal becomes its value."""
    try:
        r = ast.literal_eval(s)
    except (ValueError, SyntaxError, MemoryError, TypeError):
        return s
    return r if isinstance(r, (bool, int, float, type(None))) else s


def as_boolean(r):
    """Home Assistant's result_as_boolean (config_validation.boolean)."""
    if isinstance(r, bool):
        return r
    if isinstance(r, (int, float)):
        return r != 0
    if isinstance(r, str):
        return r.lower().strip() in ("1", "true", "yes", "on", "enable")
    return False


def render_value(template, vs):
    try:
        return loose.from_string(template).render(vs).strip()
    except jinja2.TemplateError as e:
        errors.append("value_template: %s" % e)  # logged at debug; the value is None
        return None


def attributes(stdout, keys):
    try:
        d = json.loads(stdout)
    except (TypeError, ValueError):
        return {}
    return {k: d[k] for k in keys if isinstance(d, dict) and k in d}


def main():
    q = json.load(sys.stdin)
    stdout, order = q["stdout"], q["order"]
    keys = q.get("json_attributes") or []
    vt = q.get("value_template") or "{{ value }}"  # none: the state is the value
    out = {"available": True, "state": None, "attributes": {}}
    if not q.get("availability"):
        out["state"] = render_value(vt, variables(stdout)) if stdout is not None else None
        out["attributes"] = attributes(stdout, keys)
    elif order == "value_first":
        value = render_value(vt, variables(stdout)) if stdout is not None else None
        try:
            rendered = parse_result(loose.from_string(q["availability"]).render(variables(value)))
            out["available"] = rendered is not False
        except jinja2.TemplateError as e:
            errors.append("availability: %s" % e)
        out["state"] = value
        out["attributes"] = attributes(stdout, keys)
    elif order == "availability_first":
        try:
            rendered = parse_result(strict.from_string(q["availability"]).render(variables(stdout)))
            out["available"] = as_boolean(rendered)
        except jinja2.TemplateError as e:
            errors.append("availability: %s" % e)
            out["available"] = True
        if out["available"]:
            out["attributes"] = attributes(stdout, keys)
            if stdout is not None:
                out["state"] = render_value(vt, variables(stdout))
    else:
        sys.exit("unknown order %r" % order)
    out["errors"], out["warnings"] = errors, warnings
    json.dump(out, sys.stdout)


main()
