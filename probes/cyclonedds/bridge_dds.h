/* The DDS side of linklab's bridges (seed 004 §3.1: DDS within a host, Zenoh or MQTT
 * between hosts): one Cyclone DDS reader or writer on this host's domain that hands out
 * or takes in serialized samples (the CDR RTPS carries, encapsulation header included),
 * never decoding them. C, so the MQTT bridge (bridge_mqtt.cpp) and the Zenoh bridge
 * (probes/zenoh, Rust) share it. */
#ifndef LINKLAB_BRIDGE_DDS_H
#define LINKLAB_BRIDGE_DDS_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Called on Cyclone's receive thread with each sample a reader takes. */
typedef void (*linklab_bridge_sample_fn)(void* ctx, const unsigned char* cdr, size_t size);

struct linklab_bridge_dds;

/* A reader (on_sample given) or a writer (on_sample NULL) on topic rt/<topic> of type
 * dds_type_name (probes/common/message_types.inc), RELIABLE or BEST_EFFORT, KEEP_LAST
 * depth (0: KEEP_ALL), VOLATILE, in domain `domain` restricted to `interface_addr` with
 * `peer` its only (unicast) peer, as the Cyclone probe's --interface/--peer do. NULL and
 * a one-line `error` when Cyclone refuses. */
struct linklab_bridge_dds* linklab_bridge_dds_open(
    int domain, const char* interface_addr, const char* peer, const char* dds_type_name,
    const char* topic, int reliable, int depth, linklab_bridge_sample_fn on_sample,
    void* ctx, char* error, size_t error_size);

/* Writes one serialized sample (a writer's); 0 when Cyclone took it. */
int linklab_bridge_dds_write(struct linklab_bridge_dds* dds, const unsigned char* cdr,
                             size_t size);

/* Deletes the endpoint, its participant and domain (waits for a callback in progress). */
void linklab_bridge_dds_close(struct linklab_bridge_dds* dds);

#ifdef __cplusplus
}
#endif

#endif
