"""``linklab k8s``: the bench's scenarios on a real Kubernetes cluster (paper 001 §IV).

Each cell becomes Pods placed per its deployment ``flow`` (placement.py), the DDS/Zenoh
profile becomes a ConfigMap (manifests.py), the probes run under a small supervisor in
the linklab probe image (podrun.py) that hands their records back through the pod log
(collect.py), and the cell's row is computed by the bench's own code (cluster_bed.py plugs into
bench.runner's Environment/Bed seam). Everything created carries the run's labels and
is deleted by them (cluster.py).
"""
