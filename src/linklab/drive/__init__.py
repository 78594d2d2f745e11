"""The closed-loop robot test of seed 004 §3.1.1 / §4.3 (Fig. 7, Fig. 8): a host sends
velocity commands at 10 Hz over a middleware and link to a unicycle robot model that runs
four laps of a square in 96 s; the drift between the first and the last lap shows what
the link and middleware did to the commands.

``kinematics`` is pure (plan, command trace -> trajectory, drift); ``session`` moves the
commands through real probes between two hosts and returns the received-command trace.
"""
