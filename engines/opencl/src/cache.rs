//! The on-disk half of the program cache: program binaries (`CL_PROGRAM_BINARIES`) stored under
//! a key made of the source text, the build options, the device name, the driver version and the
//! platform version, so a driver update or another device never loads a stale binary.
//!
//! A file holds a magic tag, the lengths of the source and the binary, a checksum of the binary,
//! the source itself and the binary. Loading checks all of them; any mismatch (a corrupt or
//! truncated file, a hash collision) counts as a miss and the program is built from source and
//! stored again. Files are written to a temporary name and renamed, so a crash mid-write leaves
//! no half-written file under the real name.

use crate::device::DeviceInfo;
use std::path::{Path, PathBuf};

const MAGIC: &[u8; 8] = b"VMCLBIN1";

/// FNV-1a over `parts`, each followed by a separator: a hash that is the same in every build
/// and process (unlike `DefaultHasher`), for file names.
pub fn stable_hash(parts: &[&[u8]]) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for p in parts {
        for &b in p.iter().chain(&[0xffu8]) {
            h ^= u64::from(b);
            h = h.wrapping_mul(0x0000_0100_0000_01b3);
        }
    }
    h
}

/// The cache key of `text` built with `options` for `device`.
pub fn key(text: &str, options: &str, device: &DeviceInfo) -> u64 {
    stable_hash(&[
        text.as_bytes(),
        options.as_bytes(),
        device.name.as_bytes(),
        device.driver.as_bytes(),
        device.platform.as_bytes(),
        device.platform_version.as_bytes(),
    ])
}

/// A directory of program binaries.
#[derive(Debug, Clone)]
pub struct DiskCache {
    dir: PathBuf,
}

impl DiskCache {
    /// A cache in `dir` (created when missing).
    pub fn new(dir: &Path) -> std::io::Result<DiskCache> {
        std::fs::create_dir_all(dir)?;
        Ok(DiskCache { dir: dir.to_path_buf() })
    }

    /// The file of `key`.
    pub fn path(&self, key: u64) -> PathBuf {
        self.dir.join(format!("{key:016x}.clbin"))
    }

    /// The stored binary of `text` under `key`, when a whole, matching file is there.
    pub fn load(&self, key: u64, text: &str) -> Option<Vec<u8>> {
        let data = std::fs::read(self.path(key)).ok()?;
        let word = |at: usize| -> Option<u64> { Some(u64::from_le_bytes(data.get(at..at + 8)?.try_into().ok()?)) };
        if data.get(..8)? != MAGIC {
            return None;
        }
        let (src_len, bin_len, sum) = (word(8)? as usize, word(16)? as usize, word(24)?);
        let src_end = 32usize.checked_add(src_len)?;
        let bin = data.get(src_end..src_end.checked_add(bin_len)?)?;
        if data.len() != src_end + bin_len || data.get(32..src_end)? != text.as_bytes() || stable_hash(&[bin]) != sum {
            return None;
        }
        Some(bin.to_vec())
    }

    /// Stores `binary` for `text` under `key`; errors are reported to the caller, who may ignore
    /// them (the cache is an optimisation).
    pub fn store(&self, key: u64, text: &str, binary: &[u8]) -> std::io::Result<()> {
        let mut data = Vec::with_capacity(32 + text.len() + binary.len());
        data.extend_from_slice(MAGIC);
        data.extend_from_slice(&(text.len() as u64).to_le_bytes());
        data.extend_from_slice(&(binary.len() as u64).to_le_bytes());
        data.extend_from_slice(&stable_hash(&[binary]).to_le_bytes());
        data.extend_from_slice(text.as_bytes());
        data.extend_from_slice(binary);
        let path = self.path(key);
        let tmp = path.with_extension(format!("tmp{}", std::process::id()));
        std::fs::write(&tmp, &data)?;
        std::fs::rename(&tmp, &path)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_stored_binary_loads_and_a_damaged_file_does_not() {
        let dir = std::env::temp_dir().join(format!("vm-opencl-cache-unit-{}", std::process::id()));
        let cache = DiskCache::new(&dir).unwrap();
        cache.store(7, "kernel text", b"binary bytes").unwrap();
        assert_eq!(cache.load(7, "kernel text").as_deref(), Some(&b"binary bytes"[..]));
        assert_eq!(cache.load(7, "other text"), None, "a colliding key with another source");
        assert_eq!(cache.load(8, "kernel text"), None);
        let mut data = std::fs::read(cache.path(7)).unwrap();
        let last = data.len() - 1;
        data[last] ^= 1;
        std::fs::write(cache.path(7), &data).unwrap();
        assert_eq!(cache.load(7, "kernel text"), None, "a flipped bit");
        std::fs::write(cache.path(7), &data[..20]).unwrap();
        assert_eq!(cache.load(7, "kernel text"), None, "a truncated file");
        std::fs::remove_dir_all(&dir).unwrap();
        assert_ne!(stable_hash(&[b"ab", b"c"]), stable_hash(&[b"a", b"bc"]));
    }
}
