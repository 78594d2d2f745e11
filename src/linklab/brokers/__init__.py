"""Brokers and routers linklab starts on a host: mosquitto (MQTT) and a zenoh router.

Each runs inside a host's network namespace, is stopped by the handle that started it,
and reports the CPU time its process used (seed 004 Table 3 counts the broker/router).
"""

from linklab.brokers.mosquitto import MosquittoConfig, render_mosquitto_conf, start_mosquitto
from linklab.brokers.process import BrokerProcess, CpuUsage
from linklab.brokers.zenoh_router import ZenohRouterConfig, render_router_config, start_zenoh_router

__all__ = [
    "BrokerProcess", "CpuUsage", "MosquittoConfig", "ZenohRouterConfig",
    "render_mosquitto_conf", "render_router_config", "start_mosquitto", "start_zenoh_router",
]
