//! The Zenoh bridge's DDS side (linklab-bridge-zenoh): probes/cyclonedds/bridge_dds.c, the
//! one the MQTT bridge uses too, with the probes' types as Cyclone's idlc generates them
//! from probes/idl/linklab_types.idl, linked against Debian's libddsc (Cyclone DDS 0.10).
//! The probe binary does not call it; the linker keeps it out of the probe.

use std::path::PathBuf;
use std::process::Command;

fn main() {
    let here = PathBuf::from(std::env::var("CARGO_MANIFEST_DIR").unwrap());
    let probes = here.parent().unwrap().to_path_buf();
    let out = PathBuf::from(std::env::var("OUT_DIR").unwrap());
    let idl = probes.join("idl/linklab_types.idl");
    let status = Command::new("idlc")
        .args(["-Wno-implicit-extensibility", "-o"]).arg(&out).arg(&idl)
        .status()
        .expect("idlc (Cyclone DDS's IDL compiler, package cyclonedds-tools) is not installed");
    assert!(status.success(), "idlc failed on {}", idl.display());
    cc::Build::new()
        .file(probes.join("cyclonedds/bridge_dds.c"))
        .file(out.join("linklab_types.c"))
        .include(&out)
        .include(probes.join("common"))
        .include(probes.join("cyclonedds"))
        .warnings(false)
        .compile("linklab_bridge_dds");
    println!("cargo:rustc-link-lib=dylib=ddsc");
    for path in ["cyclonedds/bridge_dds.c", "cyclonedds/bridge_dds.h", "idl/linklab_types.idl",
                 "common/message_types.inc"] {
        println!("cargo:rerun-if-changed={}", probes.join(path).display());
    }
}
