"""The analytic model of DDS traffic over a lossy link.

Pure functions, one module per idea, each citing its source:

* ``rates``          R_pub (Eq. 1), T_max (Eq. 2)            000_10b8b18b6f5db8a8.txt IV-A
* ``fragmentation``  N_RT, N_IP (paper or real IP count), q   000 IV-C
* ``retransmission`` Delta S_k, X_k, X (Eq. 3), R_DDS (Eq. 4), B_DDS (Eq. 5)   000 IV-C/D
* ``history``        N_HC (Eq. 6), outage burst               000 IV-E
* ``delivery``       best-effort sample delivery vs Table I    000 IV-B
* ``completion``     whether a stream can complete (wire vs link) 000 Eq. 2 with model.wire_traffic
* ``overhead``       RTPS/UDP/IP/overlay bytes, efficiency     001_20e21b052d053958.txt V-A
* ``fanout``         unicast to k subscribers                  002_d18906a16de1bd6a.txt Table III
* ``reassembly``     kernel IP reassembly memory under loss    measured (docs/RESULTS.md)
* ``scenario``       ModelInput -> ModelResult (everything at once)

Units: bytes, bytes per second, Hz, seconds; probabilities in [0, 1].
"""

from linklab.model.scenario import ModelInput, ModelResult, evaluate

__all__ = ["ModelInput", "ModelResult", "evaluate"]
