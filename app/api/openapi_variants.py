"""Publish "exactly one of these groups of fields" as one plain object schema per group.

A request model such as `LabelCreate` takes its items by row position (`items`) or by id
(`item_ids`), never both; pydantic publishes that as a top-level `oneOf` of `required` / `not`
clauses (app/api/schemas/annotations.py), which is exact but which client generators
(openapi-python-client among them) cannot turn into a model: they skip the schema and type the
body as `Any`. Here each such schema becomes one object schema per group (`LabelCreateByItems`,
`LabelCreateByItemIds`, ...), each with the group's fields required and no other group's fields,
and every reference to it becomes the list of its variants. A body with two groups' fields
matches two variants, so `oneOf` still refuses it, as the server does.
"""

from typing import Any

REF = "#/components/schemas/"


def _is_group_clause(clause: Any) -> bool:
    return isinstance(clause, dict) and set(clause) == {"required", "not"}


def _suffix(group: list[str]) -> str:
    """`By` + the group's first field, CamelCase, a pair's `_a` dropped: ByItems, ByItemIds."""
    first = group[0].removesuffix("_a")
    return "By" + "".join(part.capitalize() for part in first.split("_"))


def _variants(name: str, schema: dict[str, Any]) -> dict[str, dict[str, Any]]:
    groups = [list(clause["required"]) for clause in schema["oneOf"]]
    grouped = {field for group in groups for field in group}
    variants = {}
    for group in groups:
        variant = {k: v for k, v in schema.items() if k not in ("oneOf", "title")}
        variant["title"] = f"{name}{_suffix(group)}"
        variant["properties"] = {
            field: spec
            for field, spec in schema["properties"].items()
            if field in group or field not in grouped
        }
        variant["required"] = [*schema.get("required", []), *group]
        variants[variant["title"]] = variant
    return variants


def _variant_refs(option: Any, replaced: dict[str, list[str]]) -> list[dict[str, str]] | None:
    ref = option.get("$ref", "") if isinstance(option, dict) else ""
    names = replaced.get(ref.removeprefix(REF)) if ref.startswith(REF) else None
    return [{"$ref": REF + n} for n in names] if names else None


def _replace_refs(node: Any, replaced: dict[str, list[str]]) -> Any:
    """Every `oneOf` / `anyOf` listing a replaced schema lists its variants instead; a
    discriminator mapping that named it goes (`kind` alone no longer picks one schema); any
    other reference to it becomes a `oneOf` of its variants."""
    if isinstance(node, list):
        return [_replace_refs(item, replaced) for item in node]
    if not isinstance(node, dict):
        return node
    variants = _variant_refs(node, replaced)
    if variants is not None:
        return {"oneOf": variants}
    node = dict(node)
    for key in ("oneOf", "anyOf"):
        if key not in node:
            continue
        listed: list[Any] = []
        for option in node[key]:
            listed.extend(_variant_refs(option, replaced) or [option])
        if len(listed) != len(node[key]):
            node[key] = listed
            node.pop("discriminator", None)
    return {key: _replace_refs(value, replaced) for key, value in node.items()}


def split_exclusive_groups(schema: dict[str, Any]) -> None:
    """Rewrite the document in place (see the module's docstring)."""
    components: dict[str, Any] = schema["components"]["schemas"]
    replaced: dict[str, list[str]] = {}
    for name, component in list(components.items()):
        clauses = component.get("oneOf")
        if component.get("type") != "object" or not clauses:
            continue
        if not all(_is_group_clause(clause) for clause in clauses):
            continue
        variants = _variants(name, component)
        del components[name]
        components.update(variants)
        replaced[name] = list(variants)
    if replaced:
        schema["paths"] = _replace_refs(schema["paths"], replaced)
        for name, component in list(components.items()):
            components[name] = _replace_refs(component, replaced)
