"""Governance and permissions documents (OMG DDS-Security 1.1, §9.4.1.2 and §9.4.1.3),
shaped like the ones SROS 2 generates, as pure functions returning XML text.

Seed 002 §III-C: authentication (PKI, ECDSA + ECDH), access control (per-topic
permissions), cryptography (AES-GCM with GMAC). The governance below turns all three on
for every topic: unauthenticated participants are refused, discovery, liveliness,
metadata and data are encrypted, RTPS messages are signed.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from xml.sax.saxutils import escape

XSI = "http://www.w3.org/2001/XMLSchema-instance"
GOVERNANCE_XSD = "http://www.omg.org/spec/DDS-SECURITY/20170901/omg_shared_ca_governance.xsd"
PERMISSIONS_XSD = "http://www.omg.org/spec/DDS-SECURITY/20170901/omg_shared_ca_permissions.xsd"


@dataclass(frozen=True)
class DomainRange:
    min_id: int = 0
    max_id: int = 230  # ROS 2 / DDS domain ids in use; SROS 2 uses the same default range

    def xml(self, indent: str) -> str:
        return (f"{indent}<domains>\n{indent}  <id_range>\n"
                f"{indent}    <min>{self.min_id}</min>\n{indent}    <max>{self.max_id}</max>\n"
                f"{indent}  </id_range>\n{indent}</domains>")


def governance_xml(domains: DomainRange = DomainRange(), protection: str = "ENCRYPT") -> str:
    """Governance: join access control on, every topic access-controlled and protected."""
    if protection not in ("NONE", "SIGN", "ENCRYPT"):
        raise ValueError(f"protection must be NONE, SIGN or ENCRYPT, got {protection!r}")
    return f"""<?xml version="1.0" encoding="UTF-8"?>
<dds xmlns:xsi="{XSI}" xsi:noNamespaceSchemaLocation="{GOVERNANCE_XSD}">
  <domain_access_rules>
    <domain_rule>
{domains.xml("      ")}
      <allow_unauthenticated_participants>false</allow_unauthenticated_participants>
      <enable_join_access_control>true</enable_join_access_control>
      <discovery_protection_kind>{protection}</discovery_protection_kind>
      <liveliness_protection_kind>{protection}</liveliness_protection_kind>
      <rtps_protection_kind>SIGN</rtps_protection_kind>
      <topic_access_rules>
        <topic_rule>
          <topic_expression>*</topic_expression>
          <enable_discovery_protection>true</enable_discovery_protection>
          <enable_liveliness_protection>true</enable_liveliness_protection>
          <enable_read_access_control>true</enable_read_access_control>
          <enable_write_access_control>true</enable_write_access_control>
          <metadata_protection_kind>{protection}</metadata_protection_kind>
          <data_protection_kind>{protection}</data_protection_kind>
        </topic_rule>
      </topic_access_rules>
    </domain_rule>
  </domain_access_rules>
</dds>
"""


def permissions_xml(subject_name: str, grant_name: str, not_before: datetime,
                    not_after: datetime, domains: DomainRange = DomainRange(),
                    publish: tuple[str, ...] = ("*",),
                    subscribe: tuple[str, ...] = ("*",)) -> str:
    """Permissions for one participant: allow the listed topics (DDS names, e.g.
    ``rt/chatter``; ``*`` = all), deny everything else. ``subject_name`` must equal the
    identity certificate's subject (e.g. ``CN=/linklab/robot``)."""

    def topics(names: tuple[str, ...]) -> str:
        return "\n".join(f"              <topic>{escape(name)}</topic>" for name in names)

    return f"""<?xml version="1.0" encoding="UTF-8"?>
<dds xmlns:xsi="{XSI}" xsi:noNamespaceSchemaLocation="{PERMISSIONS_XSD}">
  <permissions>
    <grant name="{escape(grant_name)}">
      <subject_name>{escape(subject_name)}</subject_name>
      <validity>
        <not_before>{not_before.strftime("%Y-%m-%dT%H:%M:%S")}</not_before>
        <not_after>{not_after.strftime("%Y-%m-%dT%H:%M:%S")}</not_after>
      </validity>
      <allow_rule>
{domains.xml("        ")}
        <publish>
          <topics>
{topics(publish)}
          </topics>
        </publish>
        <subscribe>
          <topics>
{topics(subscribe)}
          </topics>
        </subscribe>
      </allow_rule>
      <default>DENY</default>
    </grant>
  </permissions>
</dds>
"""
