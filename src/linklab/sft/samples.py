"""Message instances for tests and the benchmark: random fills and the paper's cases."""

from __future__ import annotations

import random
from typing import Any

import numpy as np

from linklab.sft.schema import NUMPY_DTYPE, FieldSpec, Schema, schema, synthetic_type

_INT_RANGE = {
    "int8": (-128, 127), "uint8": (0, 255), "byte": (-128, 127), "char": (0, 127),
    "int16": (-(2**15), 2**15 - 1), "uint16": (0, 2**16 - 1),
    "int32": (-(2**31), 2**31 - 1), "uint32": (0, 2**32 - 1),
    "int64": (-(2**63), 2**63 - 1), "uint64": (0, 2**64 - 1),
}


def random_message(sch: Schema, rng: random.Random, max_len: int = 4) -> Any:
    """Every field filled at random; sequences get 0..max_len elements (so empty ones too)."""
    return sch.cls(**{spec.name: _random_value(spec, rng, max_len) for spec in sch.fields})


def _random_primitive(element: str, rng: random.Random) -> Any:
    if element == "bool":
        return rng.random() < 0.5
    if element.startswith("float"):
        value = rng.uniform(-1e3, 1e3)
        return float(np.float32(value)) if element == "float32" else value
    lo, hi = _INT_RANGE[element]
    return rng.randint(lo, hi)


def _random_string(rng: random.Random) -> str:
    return "".join(rng.choice("abcxyz_/0é") for _ in range(rng.randint(0, 9)))


def _random_elements(element: Any, count: int, rng: random.Random, max_len: int) -> Any:
    if isinstance(element, Schema):
        return [random_message(element, rng, max_len) for _ in range(count)]
    if element == "string":
        return [_random_string(rng) for _ in range(count)]
    return np.array([_random_primitive(element, rng) for _ in range(count)],
                    dtype=NUMPY_DTYPE[element])


def _random_value(spec: FieldSpec, rng: random.Random, max_len: int) -> Any:
    if spec.kind == "base":
        return _random_primitive(spec.element, rng)
    if spec.kind == "string":
        return _random_string(rng)
    if spec.kind == "struct":
        return random_message(spec.element, rng, max_len)
    count = spec.length if spec.kind == "array" else rng.randint(0, max_len)
    return _random_elements(spec.element, count, rng, max_len)


# --- the paper's workloads -------------------------------------------------------------


def _header(store_cls: Any, frame: str) -> Any:
    time_cls = schema("builtin_interfaces/msg/Time").cls
    return store_cls(stamp=time_cls(sec=1, nanosec=2), frame_id=frame)


def header(frame: str = "base_link") -> Any:
    return _header(schema("std_msgs/msg/Header").cls, frame)


def synthetic_message(fields: int, field_size: int, rng: random.Random) -> Any:
    """Paper 003 §V-A: ``fields`` fields of ``field_size`` bytes each (uint8 arrays)."""
    sch = schema(synthetic_type(fields, field_size))
    return sch.cls(**{f"f{i}": np.frombuffer(rng.randbytes(field_size), dtype=np.uint8).copy()
                      for i in range(fields)})


def laser_scan(beams: int = 360) -> Any:
    """A 2-D LiDAR scan (the nav2_amcl input, §V-D): ranges and intensities of ``beams``."""
    cls = schema("sensor_msgs/msg/LaserScan").cls
    angles = np.linspace(0, 2 * np.pi, beams, dtype=np.float32)
    return cls(header=header("laser"), angle_min=0.0, angle_max=float(2 * np.pi),
               angle_increment=float(2 * np.pi / beams), time_increment=0.0001,
               scan_time=0.1, range_min=0.12, range_max=12.0,
               ranges=(2 + np.sin(angles)).astype(np.float32),
               intensities=np.full(beams, 47.0, dtype=np.float32))


def battery_state() -> Any:
    """sensor_msgs/BatteryState as a small robot reports it (simple_charging_dock, §V-D)."""
    cls = schema("sensor_msgs/msg/BatteryState").cls
    return cls(header=header("battery"), voltage=24.1, temperature=31.5, current=-1.7,
               charge=8.2, capacity=10.0, design_capacity=10.4, percentage=0.82,
               power_supply_status=2, power_supply_health=1, power_supply_technology=3,
               present=True, cell_voltage=np.full(6, 4.02, dtype=np.float32),
               cell_temperature=np.full(6, 31.0, dtype=np.float32),
               location="base", serial_number="BAT-000123")


def occupancy_grid(width: int = 64, height: int = 64) -> Any:
    """nav_msgs/OccupancyGrid (map_saver reads every field, §V-D)."""
    grid = schema("nav_msgs/msg/OccupancyGrid")
    meta_cls = schema("nav_msgs/msg/MapMetaData").cls
    pose = schema("geometry_msgs/msg/Pose")
    point_cls = schema("geometry_msgs/msg/Point").cls
    quat_cls = schema("geometry_msgs/msg/Quaternion").cls
    time_cls = schema("builtin_interfaces/msg/Time").cls
    info = meta_cls(map_load_time=time_cls(sec=1, nanosec=0), resolution=0.05, width=width,
                    height=height, origin=pose.cls(position=point_cls(x=-1.0, y=-1.0, z=0.0),
                                                   orientation=quat_cls(x=0.0, y=0.0, z=0.0,
                                                                        w=1.0)))
    cells = np.where(np.arange(width * height) % 7 == 0, 100, 0).astype(np.int8)
    return grid.cls(header=header("map"), info=info, data=cells)


def point_cloud(points: int = 1024) -> Any:
    """sensor_msgs/PointCloud2 with x, y, z, intensity float32 (16 B/point; §IV-E, >16 kB)."""
    cls = schema("sensor_msgs/msg/PointCloud2").cls
    field_cls = schema("sensor_msgs/msg/PointField").cls
    fields = [field_cls(name=name, offset=4 * i, datatype=7, count=1)
              for i, name in enumerate(("x", "y", "z", "intensity"))]
    data = np.frombuffer(np.linspace(0, 1, points * 4, dtype=np.float32).tobytes(),
                         dtype=np.uint8).copy()
    return cls(header=header("lidar"), height=1, width=points, fields=fields,
               is_bigendian=False, point_step=16, row_step=16 * points, data=data,
               is_dense=True)
