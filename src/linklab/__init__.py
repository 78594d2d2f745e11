"""linklab: measure, reproduce, understand and fix ROS 2 traffic over real networks."""

__version__ = "0.1.0"
