//! The bridge's DDS side: probes/cyclonedds/bridge_dds.c (build.rs compiles and links it)
//! through its three C functions. A reader hands each serialized sample to a Rust closure
//! on Cyclone's receive thread; a writer takes serialized samples.

use std::ffi::{c_char, c_int, c_void, CStr, CString};

use crate::options::BridgeOptions;
use crate::types;

#[repr(C)]
struct RawDds {
    _private: [u8; 0],
}

type SampleFn = unsafe extern "C" fn(*mut c_void, *const u8, usize);

extern "C" {
    fn linklab_bridge_dds_open(domain: c_int, interface_addr: *const c_char, peer: *const c_char,
                               dds_type_name: *const c_char, topic: *const c_char,
                               reliable: c_int, depth: c_int, on_sample: Option<SampleFn>,
                               ctx: *mut c_void, error: *mut c_char, error_size: usize)
                               -> *mut RawDds;
    fn linklab_bridge_dds_write(dds: *mut RawDds, cdr: *const u8, size: usize) -> c_int;
    fn linklab_bridge_dds_close(dds: *mut RawDds);
}

pub type Handler = Box<dyn Fn(&[u8]) + Send + Sync>;

/// A DDS reader or writer of the bridge; closed (and its callback done) when dropped.
pub struct Endpoint {
    raw: *mut RawDds,
    _handler: Option<Box<Handler>>, // dropped after raw is closed (Drop, then fields)
}

// SAFETY: bridge_dds.c's endpoint is used from any thread (Cyclone's API is thread-safe);
// the handler is Send + Sync.
unsafe impl Send for Endpoint {}
unsafe impl Sync for Endpoint {}

unsafe extern "C" fn on_sample(ctx: *mut c_void, cdr: *const u8, size: usize) {
    // SAFETY: ctx is the Handler the Endpoint owns until after the reader is deleted
    let handler = unsafe { &*(ctx as *const Handler) };
    handler(unsafe { std::slice::from_raw_parts(cdr, size) });
}

fn c_string(what: &str, value: &str) -> Result<CString, String> {
    CString::new(value).map_err(|_| format!("{what} {value:?} has a NUL byte"))
}

impl Endpoint {
    fn open(o: &BridgeOptions, handler: Option<Box<Handler>>) -> Result<Endpoint, String> {
        let ty = types::lookup(&o.type_name).ok_or_else(|| format!("--type: unknown type {}", o.type_name))?;
        let interface = c_string("--interface", &o.interface)?;
        let peer = c_string("--peer", &o.peer)?;
        let dds_name = c_string("--type", &ty.dds_name)?;
        let topic = c_string("--topic", &o.topic)?;
        let ctx = handler.as_ref().map_or(std::ptr::null_mut(), |h| &**h as *const Handler as *mut c_void);
        let callback: Option<SampleFn> = if handler.is_some() { Some(on_sample) } else { None };
        let mut error = [0 as c_char; 256];
        // SAFETY: every pointer outlives the call; ctx outlives the reader (see _handler)
        let raw = unsafe {
            linklab_bridge_dds_open(o.domain, interface.as_ptr(), peer.as_ptr(), dds_name.as_ptr(),
                                    topic.as_ptr(), c_int::from(o.reliable), o.depth, callback, ctx,
                                    error.as_mut_ptr(), error.len())
        };
        if raw.is_null() {
            // SAFETY: bridge_dds.c writes a NUL-terminated message into error
            return Err(unsafe { CStr::from_ptr(error.as_ptr()) }.to_string_lossy().into_owned());
        }
        Ok(Endpoint { raw, _handler: handler })
    }

    pub fn reader(o: &BridgeOptions, handler: Handler) -> Result<Endpoint, String> {
        Self::open(o, Some(Box::new(handler)))
    }

    pub fn writer(o: &BridgeOptions) -> Result<Endpoint, String> {
        Self::open(o, None)
    }

    /// Writes one serialized sample; true when Cyclone took it.
    pub fn write(&self, cdr: &[u8]) -> bool {
        // SAFETY: raw is open until drop; cdr is valid for the call
        unsafe { linklab_bridge_dds_write(self.raw, cdr.as_ptr(), cdr.len()) == 0 }
    }
}

impl Drop for Endpoint {
    fn drop(&mut self) {
        // SAFETY: raw came from linklab_bridge_dds_open and is closed once
        unsafe { linklab_bridge_dds_close(self.raw) }
    }
}
