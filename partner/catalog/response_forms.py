"""What the loan fields of a staff delivery hold: the form staff fill, described as JSON Schema.

A staff-worked product's response may carry the loan fields its response data entitlement allows
(`entitlements.data.transaction[].response.fields`, names such as `property` or `appraisal`). The
staff's delivery form draws one typed input per value of those fields, never a JSON box, from a
schema of each field:

- the fields the spec describes (`property`: the subject property's address, purpose and usage)
  have their schema here, `SEED_FIELD_SCHEMAS`, labelled from `partner.platform.loan_labels`;
- the fields it does not describe (it does not say what an `appraisal` holds) take theirs from the
  product's response form (`Product.response_form`), a JSON Schema object whose `properties` name
  the loan fields, which staff admins edit. Its default describes the demo's appraisal: value,
  effective date, condition and comments (`DEFAULT_RESPONSE_FORM`).

A product's form wins over the seed's for the same field. The schemas use a subset of JSON Schema
(draft 2020-12) that a form can draw, checked when the product is saved (`response_form_problems`):
objects (drawn as groups of inputs) holding strings (`format: date` drawn as a date; without
`maxLength`, or one over 200, as a text area), numbers (`format: money` drawn as an amount in US dollars), integers,
booleans and enumerations (`enum`, labelled through `value_label`, or `oneOf` of `const` values each
with its `title`). Each value has a `title` (the label staff read) and may have a `description`
(its help). PostgreSQL keeps a JSON object's keys in an order of its own, so an object may say the
order of its inputs with `x-order` (a list of its property names; an extension keyword, which JSON
Schema allows and validators ignore); properties it does not list follow (`ordered_properties`).
What staff send is checked against the same schema again when they deliver
(`loan_field_problems`), so a form saved in another tab or a hand-made POST cannot send a value the
product's form refuses.

jsonschema (the reference implementation of JSON Schema for Python, already installed for the API's
schema) checks the schemas and the values; the subset rules on top are ours.
"""

import copy

from jsonschema import Draft202012Validator, FormatChecker
from jsonschema.exceptions import SchemaError

from partner.platform.loan_labels import ENUMERATION_FIELDS, PROPERTY_FIELD_LABELS, loan_field_label

SCALAR_TYPES = frozenset({"string", "number", "integer", "boolean"})
FORMATS = {"string": {"date"}, "number": {"money"}}
LONG_TEXT = 200  # a string allowed longer than this is drawn as a text area

# The loan fields the spec describes, as forms: the subject property (loan.property).
_PROPERTY_ENUMERATIONS = {
    "loanPurposeType": [
        "Purchase",
        "Refinance",
        "CashOutRefinance",
        "NoCashOutRefinance",
        "ConstructionOnly",
        "ConstructionToPermanent",
        "Other",
    ],
    "propertyUsageType": ["PrimaryResidence", "SecondHome", "Investment", "Other"],
}
SEED_FIELD_SCHEMAS = {
    "property": {
        "type": "object",
        "title": loan_field_label("property"),
        "description": "Correct or complete the subject property; fields left empty are not sent.",
        "properties": {
            name: (
                {"type": "string", "title": label, "enum": _PROPERTY_ENUMERATIONS[name]}
                if name in ENUMERATION_FIELDS
                else {"type": "string", "title": label, "maxLength": 200}
            )
            for name, label in PROPERTY_FIELD_LABELS.items()
        },
    },
}

# The demo's appraisal (the seed does not say what loan.appraisal holds): what an appraisal report
# concludes. Condition ratings C1-C6 are the Uniform Appraisal Dataset's.
DEFAULT_RESPONSE_FORM = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "type": "object",
    "properties": {
        "appraisal": {
            "type": "object",
            "title": "Appraisal",
            "description": "What the appraisal report concludes.",
            "properties": {
                "appraisedValue": {
                    "type": "number",
                    "format": "money",
                    "minimum": 0,
                    "title": "Appraised value",
                    "description": "The market value the report concludes, in US dollars.",
                },
                "effectiveDate": {
                    "type": "string",
                    "format": "date",
                    "title": "Effective date",
                    "description": "The date the value is given for (usually the inspection's).",
                },
                "condition": {
                    "type": "string",
                    "title": "Condition",
                    "description": "The property's overall condition rating, as in the report.",
                    "oneOf": [
                        {"const": "C1", "title": "C1: new, never occupied"},
                        {"const": "C2", "title": "C2: no deferred maintenance, little wear"},
                        {"const": "C3", "title": "C3: well maintained, normal wear"},
                        {"const": "C4", "title": "C4: minor deferred maintenance"},
                        {"const": "C5", "title": "C5: obvious deferred maintenance"},
                        {"const": "C6", "title": "C6: substantial damage"},
                    ],
                },
                "comments": {
                    "type": "string",
                    "title": "Comments",
                    "description": "What the lender should know beyond the figures.",
                    "maxLength": 2000,
                },
            },
            "required": ["appraisedValue", "effectiveDate"],
            "x-order": ["appraisedValue", "effectiveDate", "condition", "comments"],
        }
    },
}


def default_response_form() -> dict:
    """A new product's response form (the model field's default): the demo appraisal's."""
    return copy.deepcopy(DEFAULT_RESPONSE_FORM)


# Checking a form ---------------------------------------------------------------------------------


def _value_problems(schema, where: str) -> list[str]:
    """What a form cannot draw in one value's schema (`where` names it for the message)."""
    if not isinstance(schema, dict):
        return [f"{where} must be an object."]
    if not isinstance(schema.get("title"), str) or not schema["title"].strip():
        return [f"{where} needs a title: the label staff read."]
    kind = schema.get("type")
    if kind == "object":
        properties = schema.get("properties")
        if not isinstance(properties, dict) or not properties:
            return [f"{where} is an object without properties: name what it holds."]
        problems = []
        order = schema.get("x-order", [])
        if not isinstance(order, list) or not set(order) <= set(properties):
            problems.append(f"{where}: x-order must list names of its properties only.")
        for name, child in properties.items():
            problems += _value_problems(child, f"{where}.{name}")
        return problems
    if kind not in SCALAR_TYPES:
        return [f"{where} has type {kind!r}: a form draws objects, strings, numbers, integers and booleans."]
    if "format" in schema and schema["format"] not in FORMATS.get(kind, set()):
        allowed = ", ".join(sorted(FORMATS.get(kind, set()))) or "none"
        return [f"{where} has format {schema['format']!r}; a {kind} may have: {allowed}."]
    if "oneOf" in schema:
        choices = schema["oneOf"]
        if not isinstance(choices, list) or not all(
            isinstance(choice, dict) and "const" in choice and isinstance(choice.get("title"), str)
            for choice in choices
        ):
            return [f"{where}: each choice of oneOf needs a const (the value sent) and a title (what staff read)."]
    return []


def response_form_problems(form) -> list[str]:
    """Why `form` cannot be a product's response form (empty: it can). A valid JSON Schema whose
    `properties` each describe one loan field in the subset a form draws (module docstring)."""
    if form in (None, {}):
        return []
    if not isinstance(form, dict):
        return ["The response form must be a JSON Schema object."]
    try:
        Draft202012Validator.check_schema(form)
    except SchemaError as error:
        where = "/".join(str(part) for part in error.path) or "the form"
        return [f"Not a valid JSON Schema at {where}: {error.message}"]
    if form.get("type") != "object" or not isinstance(form.get("properties"), dict):
        return ['The response form must be {"type": "object", "properties": {<loan field>: {...}}}.']
    problems = []
    for name, schema in form["properties"].items():
        if not isinstance(schema, dict) or schema.get("type") != "object":
            problems.append(f"loan.{name} must be described as an object (its values as its properties).")
        else:
            problems += _value_problems(schema, f"loan.{name}")
    return problems


# Using a form ------------------------------------------------------------------------------------


def ordered_properties(schema: dict) -> list[tuple[str, dict]]:
    """An object's (name, schema) pairs in the order its inputs are drawn: `x-order` first, then the rest."""
    properties = schema.get("properties") or {}
    order = [name for name in schema.get("x-order") or [] if name in properties]
    return [(name, properties[name]) for name in order] + [
        (name, child) for name, child in properties.items() if name not in order
    ]


def loan_field_schemas(response_form, allowed: list[str] | None) -> dict[str, dict | None]:
    """The schema of each loan field a delivery may carry, in order: the product's form first, then
    the seed's; None for an allowed field nothing describes. `allowed` None (the product names no
    fields): every field a schema describes. Each is closed (`closed`): a key its form does not
    describe is refused, never sent to the service."""
    own = response_form.get("properties", {}) if isinstance(response_form, dict) else {}
    known = {**SEED_FIELD_SCHEMAS, **own}
    names = list(known) if allowed is None else allowed
    return {name: closed(known[name]) if isinstance(known.get(name), dict) else None for name in names}


def closed(schema: dict) -> dict:
    """A copy of `schema` in which every object that names its properties allows no other key
    (`additionalProperties: false`, unless it says otherwise): what a form does not describe, a
    delivery may not carry (a hand-made POST, the API) into the lender's loan data."""
    schema = copy.deepcopy(schema)
    stack = [schema]
    while stack:
        node = stack.pop()
        if not isinstance(node, dict):
            continue
        if node.get("type") == "object" and isinstance(node.get("properties"), dict):
            node.setdefault("additionalProperties", False)
        stack += [value for value in node.values() if isinstance(value, dict)]
        stack += [item for value in node.values() if isinstance(value, list) for item in value]
    return schema


_TYPE_WORDS = {"string": "text", "number": "a number", "integer": "a whole number", "boolean": "yes or no"}


def _in_words(error) -> str:
    """A JSON Schema error in the words of a person filling the form."""
    rule, value = error.validator, error.validator_value
    if rule in ("oneOf", "enum", "const"):
        if rule == "oneOf":
            value = [choice.get("const") for choice in value if isinstance(choice, dict) and "const" in choice]
        choices = ", ".join(str(choice) for choice in (value if isinstance(value, list) else [value]))
        return (
            f"{error.instance!r} is not one of its choices ({choices})."
            if choices
            else f"{error.instance!r} is not one of its choices."
        )
    if rule == "format" and value == "date":
        return f"{error.instance!r} is not a date (YYYY-MM-DD)."
    if rule == "minimum":
        return f"must be at least {value}."
    if rule == "maximum":
        return f"must be at most {value}."
    if rule == "maxLength":
        return f"is longer than {value} characters."
    if rule == "type":
        return f"must be {_TYPE_WORDS.get(value, value)}."
    if rule == "additionalProperties" and isinstance(error.instance, dict):
        described = (error.schema.get("properties") or {}) if isinstance(error.schema, dict) else {}
        unknown = ", ".join(sorted(repr(key) for key in error.instance if key not in described))
        return f"holds {unknown}, which its form does not describe."
    return error.message


def loan_field_problems(name: str, schema: dict, value) -> list[str]:
    """What is wrong with `value` for loan field `name` under its `schema`, in the form's labels."""
    validator = Draft202012Validator(schema, format_checker=FormatChecker())
    problems = []
    for error in sorted(validator.iter_errors(value), key=lambda error: [str(part) for part in error.path]):
        path = list(error.path)
        if error.validator == "required":  # name each missing value by its title
            missing = [key for key in error.validator_value if key not in (error.instance or {})]
            problems += [f"{_label_at(schema, [*path, key])}: enter a value." for key in missing]
            continue
        problems.append(f"{_label_at(schema, path) or loan_field_label(name)}: {_in_words(error)}")
    return list(dict.fromkeys(problems))


def _label_at(schema: dict, path: list) -> str:
    titles = [schema.get("title", "")]
    for part in path:
        schema = (schema.get("properties") or {}).get(part, {}) if isinstance(schema, dict) else {}
        titles.append(schema.get("title", str(part)) if isinstance(schema, dict) else str(part))
    return ", ".join(title for title in titles if title)
