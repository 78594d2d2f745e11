//! Frames and a buffer pool. A frame's buffer is sized to the frame (rounded up to a
//! CLASS_BYTES multiple), so a queue of frames holds about the bytes it queues: after a
//! flood every buffer was 9 064 B whatever the frame (a 30 s flood of 318k-494k frames
//! took 2.8-4.3 GB). Buffers are recycled per size class, so the forwarding path does
//! not allocate per frame once the classes it uses are warm; the free lists keep at most
//! MAX_FREE_BYTES, so memory goes back after a flood.

/// Buffer sizes are multiples of this: a frame's buffer wastes less than this.
pub const CLASS_BYTES: usize = 128;
/// What the free lists keep at most (bytes of buffers).
const MAX_FREE_BYTES: usize = 16 << 20;

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
    free: Vec<Vec<Vec<u8>>>, // by class: class k holds buffers of k * CLASS_BYTES
    free_bytes: usize,
    scratch: Vec<u8>,
}

#[inline]
fn class_of(len: usize) -> usize {
    len.max(1).div_ceil(CLASS_BYTES)
}

impl Pool {
    /// `max_frame`: the largest frame a read may return (the read buffer's size).
    pub fn new(max_frame: usize) -> Pool {
        let classes = class_of(max_frame) + 1;
        Pool { free: vec![Vec::new(); classes], free_bytes: 0, scratch: vec![0u8; max_frame] }
    }

    /// A buffer for a frame of `len` bytes (its class's size).
    #[inline]
    pub fn get(&mut self, len: usize) -> Vec<u8> {
        let class = class_of(len);
        if class >= self.free.len() {
            self.free.resize(class + 1, Vec::new());
        }
        match self.free[class].pop() {
            Some(buf) => {
                self.free_bytes -= buf.len();
                buf
            }
            None => vec![0u8; class * CLASS_BYTES],
        }
    }

    #[inline]
    pub fn put(&mut self, buf: Vec<u8>) {
        let class = buf.len() / CLASS_BYTES;
        if buf.len() % CLASS_BYTES == 0 && class < self.free.len()
            && self.free_bytes + buf.len() <= MAX_FREE_BYTES
        {
            self.free_bytes += buf.len();
            self.free[class].push(buf);
        }
    }

    #[inline]
    pub fn recycle(&mut self, packet: Packet) {
        self.put(packet.buf);
    }

    /// The frame in `data`, in a buffer of its size.
    #[inline]
    pub fn frame_of(&mut self, data: &[u8]) -> Packet {
        let mut buf = self.get(data.len());
        buf[..data.len()].copy_from_slice(data);
        Packet { buf, len: data.len() }
    }

    pub fn copy_of(&mut self, packet: &Packet) -> Packet {
        self.frame_of(packet.bytes())
    }

    /// Read one frame with `read` into the pool's read buffer; the frame then gets a
    /// buffer of its own size. Ok(None): nothing was waiting.
    #[inline]
    pub fn read_frame(
        &mut self,
        read: impl FnOnce(&mut [u8]) -> std::io::Result<usize>,
    ) -> std::io::Result<Option<Packet>> {
        let mut scratch = std::mem::take(&mut self.scratch);
        let result = read(&mut scratch);
        let frame = match result {
            Ok(0) => Ok(None),
            Ok(n) => Ok(Some(self.frame_of(&scratch[..n]))),
            Err(e) => Err(e),
        };
        self.scratch = scratch;
        frame
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_frame_gets_a_buffer_of_its_size() {
        let mut pool = Pool::new(9064);
        for len in [1, 64, 127, 128, 129, 1514, 9000] {
            let p = pool.read_frame(|b| Ok(len.min(b.len()))).unwrap().unwrap();
            assert_eq!(p.len, len);
            assert!(p.buf.len() >= len && p.buf.len() < len + CLASS_BYTES, "{len}: {}", p.buf.len());
            pool.recycle(p);
        }
    }

    #[test]
    fn the_free_lists_give_back_what_a_flood_left() {
        let mut pool = Pool::new(2048);
        let frames: Vec<Packet> = (0..100_000).map(|_| pool.frame_of(&[0u8; 1000])).collect();
        for p in frames {
            pool.recycle(p);
        }
        assert!(pool.free_bytes <= MAX_FREE_BYTES);
        assert_eq!(pool.get(1000).len(), 1024);
    }
}
