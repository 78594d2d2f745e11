"""Manifests checked offline against a Kubernetes version's OpenAPI schemas
(kubernetes-validate ships them: strict, so an unknown field is an error)."""

from __future__ import annotations

import re
from typing import Any

from linklab.errors import UsageError

DEFAULT_VERSION = "1.33.0"


def normalise_version(text: str) -> str:
    match = re.fullmatch(r"v?(\d+)\.(\d+)(?:\.\d+)?(?:[-+].*)?", text.strip())
    if not match:
        raise UsageError(f"{text!r} is not a Kubernetes version (e.g. 1.33)",
                         argument="--kube-version")
    return f"{match[1]}.{match[2]}.0"


def validate_objects(objects: list[dict[str, Any]], version: str = DEFAULT_VERSION) -> str:
    """Raise UsageError naming the object and the schema's complaint; returns the schema
    version used."""
    import kubernetes_validate as KV

    wanted = normalise_version(version)
    for obj in objects:
        what = f"{obj.get('kind')}/{(obj.get('metadata') or {}).get('name')}"
        try:
            KV.validate(obj, wanted, strict=True)
        except KV.SchemaNotFoundError:
            raise UsageError(f"no offline schema for Kubernetes {wanted} in "
                             "kubernetes-validate (it ships 1.x versions it knows)",
                             argument="--kube-version") from None
        except KV.ValidationError as error:
            path = ".".join(str(p) for p in error.path) or "(top)"
            raise UsageError(f"{what} does not validate against Kubernetes {wanted}: "
                             f"{path}: {error.message}", argument="manifest") from None
    return wanted
