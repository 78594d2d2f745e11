"""Selective field transmission (paper 003) on standard middleware.

Receivers declare (``fields=[...]``) or record (``record=True``) the fields they use;
publishers serialize only those, once per distinct mask, and send each variant only
to the readers holding that mask — over Cyclone DDS (a partition per mask) or Zenoh
(a key expression per mask) — on the standard ROS 2 topic and type names.
"""

from linklab.sft.api import Publisher, SampleInfo, Subscriber
from linklab.sft.masks import FieldMask, mask_except, mask_for_paths
from linklab.sft.recording import FieldNotTransmitted, missing, unwrap
from linklab.sft.schema import schema
from linklab.sft.transport import TransportConfig

__all__ = [
    "FieldMask",
    "FieldNotTransmitted",
    "Publisher",
    "SampleInfo",
    "Subscriber",
    "TransportConfig",
    "mask_except",
    "mask_for_paths",
    "missing",
    "schema",
    "unwrap",
]
