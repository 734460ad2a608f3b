"""How a template reaches CloudFormation: inline up to 51,200 bytes, else through S3 (TemplateURL)."""

from __future__ import annotations

import hashlib
from typing import Any

from clm.stacks.errors import TemplateTooLarge
from clm.stacks.spec import StackSpec

INLINE_LIMIT = 51_200
KEY_PREFIX = "clm/templates/"


def template_argument(s3: Any, spec: StackSpec, template_bucket: str | None) -> dict[str, str]:
    """`{"TemplateBody": ...}`, or `{"TemplateURL": ...}` after uploading a large template to the bucket.

    The key is the SHA-256 of the template, so the same template is stored once and never overwritten
    with something else.
    """
    data = spec.body.encode()
    if len(data) <= INLINE_LIMIT:
        return {"TemplateBody": spec.body}
    if not template_bucket:
        raise TemplateTooLarge(spec.cluster_id, spec.name, len(data), INLINE_LIMIT)
    key = f"{KEY_PREFIX}{hashlib.sha256(data).hexdigest()}.yaml"
    s3.put_object(Bucket=template_bucket, Key=key, Body=data, ContentType="text/yaml")
    return {"TemplateURL": template_url(s3.meta.region_name, template_bucket, key)}


def template_url(region: str, bucket: str, key: str) -> str:
    """The path-style S3 URL CloudFormation reads templates from (as CDK builds it for nested stacks)."""
    suffix = "amazonaws.com.cn" if region.startswith("cn-") else "amazonaws.com"
    return f"https://s3.{region}.{suffix}/{bucket}/{key}"
