/* The DDS side of linklab's bridges (bridge_dds.h). */
#include "bridge_dds.h"

#include <dds/dds.h>
#include <dds/ddsi/ddsi_serdata.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "linklab_types.h"
#include "message_types.inc"

struct linklab_bridge_dds {
  dds_entity_t domain, participant, endpoint;
  const struct ddsi_sertype* sertype; /* a writer's: what its serialized samples carry */
  linklab_bridge_sample_fn on_sample;
  void* ctx;
  unsigned char* buf;
  size_t buf_size;
};

/* ---- the probes' types, by their DDS name ------------------------------------------ */
#define ARRAY_DESC(N) &performance_test_msgs_msg_dds__##N##__desc,
static const dds_topic_descriptor_t* const kDescriptors[] = {
    &linklab_msgs_msg_dds__Bytes__desc,          &sensor_msgs_msg_dds__Image__desc,
    &sensor_msgs_msg_dds__PointCloud2__desc,     &std_msgs_msg_dds__String__desc,
    &std_msgs_msg_dds__UInt8MultiArray__desc,    LINKLAB_ARRAY_TYPES(ARRAY_DESC)
    LINKLAB_POINTCLOUD_TYPES(ARRAY_DESC)};

static const dds_topic_descriptor_t* descriptor(const char* dds_type_name) {
  for (size_t i = 0; i < sizeof kDescriptors / sizeof kDescriptors[0]; ++i)
    if (strcmp(kDescriptors[i]->m_typename, dds_type_name) == 0) return kDescriptors[i];
  return NULL;
}

static int fail(char* error, size_t size, const char* what, dds_return_t rc) {
  snprintf(error, size, "%s (%s)", what, rc ? dds_strretcode(rc) : "unknown type");
  return 0;
}

/* ---- a reader's samples, serialized --------------------------------------------------- */
static void on_data_available(dds_entity_t reader, void* arg) {
  struct linklab_bridge_dds* dds = arg;
  struct ddsi_serdata* sd = NULL;
  dds_sample_info_t info;
  while (dds_takecdr(reader, &sd, 1, &info, DDS_ANY_STATE) == 1) {
    if (info.valid_data) {
      size_t size = ddsi_serdata_size(sd);
      if (size > dds->buf_size) {
        unsigned char* grown = realloc(dds->buf, size);
        if (!grown) {
          ddsi_serdata_unref(sd);
          continue;
        }
        dds->buf = grown;
        dds->buf_size = size;
      }
      ddsi_serdata_to_ser(sd, 0, size, dds->buf);
      dds->on_sample(dds->ctx, dds->buf, size);
    }
    ddsi_serdata_unref(sd);
  }
}

/* The sertype a writer's serialized samples must carry. Cyclone 0.10 has no public getter:
 * one sample of the type is written and taken back on a topic of this participant only
 * (Cyclone keeps one sertype per type and domain: the writer's topic has the same). */
static int writer_sertype(struct linklab_bridge_dds* dds, const dds_topic_descriptor_t* desc,
                          char* error, size_t error_size) {
  char name[64];
  snprintf(name, sizeof name, "linklab_bridge_type_%d", (int)getpid());
  dds_entity_t own = dds_create_topic(dds->participant, desc, name, NULL, NULL);
  dds_entity_t rd = own < 0 ? own : dds_create_reader(dds->participant, own, NULL, NULL);
  dds_entity_t wr = rd < 0 ? rd : dds_create_writer(dds->participant, own, NULL, NULL);
  if (wr < 0) return fail(error, error_size, "Cyclone DDS could not create the type topic", wr);
  void* sample = calloc(1, desc->m_size);
  struct ddsi_serdata* sd = NULL;
  dds_sample_info_t info;
  if (sample && dds_write(wr, sample) == DDS_RETCODE_OK &&
      dds_takecdr(rd, &sd, 1, &info, DDS_ANY_STATE) == 1) {
    dds->sertype = ddsi_sertype_ref(sd->type);
    ddsi_serdata_unref(sd);
  }
  free(sample);
  dds_delete(own);  /* and its reader and writer */
  if (!dds->sertype) snprintf(error, error_size, "Cyclone DDS gave no serialized sample of %s", desc->m_typename);
  return dds->sertype != NULL;
}

static int open_domain(struct linklab_bridge_dds* dds, int domain, const char* interface_addr,
                       const char* peer, char* error, size_t error_size) {
  char config[512];
  snprintf(config, sizeof config,
           "<CycloneDDS><Domain id=\"any\"><General><Interfaces><NetworkInterface address=\"%s\"/>"
           "</Interfaces><AllowMulticast>false</AllowMulticast></General><Discovery>"
           "<ParticipantIndex>auto</ParticipantIndex><Peers><Peer address=\"%s\"/></Peers>"
           "</Discovery></Domain></CycloneDDS>",
           interface_addr, peer);
  dds->domain = dds_create_domain((dds_domainid_t)domain, config);
  if (dds->domain < 0) return fail(error, error_size, "Cyclone DDS rejected the configuration", dds->domain);
  dds->participant = dds_create_participant((dds_domainid_t)domain, NULL, NULL);
  if (dds->participant < 0)
    return fail(error, error_size, "Cyclone DDS could not create the participant", dds->participant);
  return 1;
}

static dds_qos_t* endpoint_qos(int reliable, int depth) {
  dds_qos_t* q = dds_create_qos();
  dds_qset_reliability(q, reliable ? DDS_RELIABILITY_RELIABLE : DDS_RELIABILITY_BEST_EFFORT, DDS_MSECS(100));
  if (depth == 0) dds_qset_history(q, DDS_HISTORY_KEEP_ALL, 0);
  else dds_qset_history(q, DDS_HISTORY_KEEP_LAST, depth);
  dds_qset_durability(q, DDS_DURABILITY_VOLATILE);
  return q;
}

struct linklab_bridge_dds* linklab_bridge_dds_open(
    int domain, const char* interface_addr, const char* peer, const char* dds_type_name,
    const char* topic, int reliable, int depth, linklab_bridge_sample_fn on_sample,
    void* ctx, char* error, size_t error_size) {
  const dds_topic_descriptor_t* desc = descriptor(dds_type_name);
  struct linklab_bridge_dds* dds = calloc(1, sizeof *dds);
  if (!desc || !dds) {
    snprintf(error, error_size, "no DDS type %s", dds_type_name);
    free(dds);
    return NULL;
  }
  dds->on_sample = on_sample;
  dds->ctx = ctx;
  char name[256];
  snprintf(name, sizeof name, "rt/%s", topic);
  dds_entity_t t = 0;
  int ok = open_domain(dds, domain, interface_addr, peer, error, error_size);
  if (ok) {
    t = dds_create_topic(dds->participant, desc, name, NULL, NULL);
    if (t < 0) ok = fail(error, error_size, "Cyclone DDS could not create the topic", t);
  }
  if (ok) {
    dds_qos_t* q = endpoint_qos(reliable, depth);
    dds_listener_t* l = on_sample ? dds_create_listener(dds) : NULL;
    if (l) dds_lset_data_available(l, on_data_available);
    dds->endpoint = on_sample ? dds_create_reader(dds->participant, t, q, l)
                              : dds_create_writer(dds->participant, t, q, NULL);
    if (l) dds_delete_listener(l);
    dds_delete_qos(q);
    if (dds->endpoint < 0) ok = fail(error, error_size, "Cyclone DDS could not create the bridge's endpoint", dds->endpoint);
  }
  if (ok && !on_sample) ok = writer_sertype(dds, desc, error, error_size);
  if (!ok) {
    linklab_bridge_dds_close(dds);
    return NULL;
  }
  return dds;
}

int linklab_bridge_dds_write(struct linklab_bridge_dds* dds, const unsigned char* cdr, size_t size) {
  ddsrt_iovec_t iov;
  iov.iov_base = (void*)cdr;
  iov.iov_len = (ddsrt_iov_len_t)size;
  struct ddsi_serdata* sd = ddsi_serdata_from_ser_iov(dds->sertype, SDK_DATA, 1, &iov, size);
  if (!sd) return -1;
  return dds_writecdr(dds->endpoint, sd) == DDS_RETCODE_OK ? 0 : -1;  /* takes sd */
}

void linklab_bridge_dds_close(struct linklab_bridge_dds* dds) {
  if (!dds) return;
  if (dds->endpoint > 0) dds_delete(dds->endpoint);  /* waits for a listener call */
  if (dds->sertype) ddsi_sertype_unref((struct ddsi_sertype*)dds->sertype);
  if (dds->participant > 0) dds_delete(dds->participant);
  if (dds->domain > 0) dds_delete(dds->domain);
  free(dds->buf);
  free(dds);
}
