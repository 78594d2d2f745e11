//! Frames and a buffer pool: buffers are allocated once and recycled, so the
//! forwarding path does not allocate per packet.

pub struct Packet {
    pub buf: Vec<u8>,
    pub len: usize,
}

impl Packet {
    #[inline]
    pub fn bytes(&self) -> &[u8] {
        &self.buf[..self.len]
    }
}

pub struct Pool {
    free: Vec<Vec<u8>>,
    buf_size: usize,
    max_free: usize,
}

impl Pool {
    pub fn new(buf_size: usize) -> Pool {
        let mut pool = Pool { free: Vec::new(), buf_size, max_free: 1 << 16 };
        for _ in 0..512 {
            pool.free.push(vec![0u8; buf_size]);
        }
        pool
    }

    #[inline]
    pub fn get(&mut self) -> Vec<u8> {
        self.free.pop().unwrap_or_else(|| vec![0u8; self.buf_size])
    }

    #[inline]
    pub fn put(&mut self, buf: Vec<u8>) {
        if self.free.len() < self.max_free {
            self.free.push(buf);
        }
    }

    #[inline]
    pub fn recycle(&mut self, packet: Packet) {
        self.put(packet.buf);
    }

    pub fn copy_of(&mut self, packet: &Packet) -> Packet {
        let mut buf = self.get();
        buf[..packet.len].copy_from_slice(packet.bytes());
        Packet { buf, len: packet.len }
    }
}
