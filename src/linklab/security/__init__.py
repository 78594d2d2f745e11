"""DDS-Security keystores (like ``ros2 security create_keystore`` / ``create_enclave``) and
the middleware settings that use them: Fast DDS and Cyclone DDS with PKI-DH + Permissions
+ AES-GCM-GMAC, MQTT over TLS, Zenoh over TLS (seed 004 §5.2 / Table 4; seed 002 §II-B
and §III-C)."""
