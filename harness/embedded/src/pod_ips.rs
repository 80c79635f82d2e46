//! Pod IPs: each pod gets its own loopback address, never reused within a run.
//!
//! There is no network namespace: the loopback interface answers all of 127.0.0.0/8, so a
//! program that binds its pod IP can share a port number with every other pod. Several
//! embedded clusters may run on one host at once (parallel tests, two rehearsals), so each
//! cluster first reserves a host-wide /16 block `127.B.0.0` with a lock file; two clusters never
//! hand out the same address, and a block whose owner process died is taken over.

use std::net::Ipv4Addr;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

/// Block numbers a cluster may reserve (`127.B.0.0/16`); 127.0.0.0/16 is left to the host.
const BLOCKS: std::ops::RangeInclusive<u8> = 16..=250;

/// The third octet where a block's Service range (`127.B.192.0/18`) begins; pods get the
/// addresses below it.
pub const SERVICE_OCTET: u8 = 192;

/// Hands out 127.x.y.z addresses in order, skipping .0 and .255 in the last octet and the
/// block's Service range.
#[derive(Debug)]
pub struct PodIps {
    next: Mutex<u32>,
    /// The first address handed out (where allocation starts over past the pod range).
    first: u32,
    /// The reservation (lock file and its locked handle), released on drop, when this
    /// allocator holds one.
    block_file: Option<(PathBuf, std::fs::File)>,
}

impl PodIps {
    /// Starts at `first`, without a host-wide reservation (for a caller that owns the range).
    /// A `first` inside the block's Service range starts at the block's first pod address
    /// instead (allocation would otherwise never find a pod address).
    pub fn new(first: Ipv4Addr) -> Self {
        let [a, block, third, _] = first.octets();
        let first = if a == 127 && third >= SERVICE_OCTET {
            Ipv4Addr::new(127, block, 0, 1)
        } else {
            first
        };
        Self {
            next: Mutex::new(u32::from(first)),
            first: u32::from(first),
            block_file: None,
        }
    }

    /// Reserves a free `127.B.0.0/16` block in `registry` (one lock file per block, held under
    /// an exclusive `flock` for the allocator's lifetime) and hands out addresses from it.
    ///
    /// The kernel drops the lock when its owner exits, however it exits, so a block whose
    /// owner died (SIGKILL, a nextest timeout) is free again with no stale-owner guesswork, and
    /// two starters can never both take it over.
    pub fn reserve(registry: &Path) -> std::io::Result<Self> {
        std::fs::create_dir_all(registry)?;
        let pid = std::process::id();
        // Start at a PID-derived block so concurrent starters rarely contend for the same file.
        let span = u32::from(BLOCKS.end() - BLOCKS.start()) + 1;
        let offset = pid % span;
        for i in 0..span {
            let block = BLOCKS.start() + ((offset + i) % span) as u8;
            let path = registry.join(block.to_string());
            if let Some(lock) = try_lock_block(&path)? {
                return Ok(Self::in_block(block, path, lock));
            }
        }
        Err(std::io::Error::other(format!(
            "every pod IP block 127.{}-{}.0.0/16 is held by a running process (lock files in {}); stop some embedded clusters",
            BLOCKS.start(),
            BLOCKS.end(),
            registry.display()
        )))
    }

    fn in_block(block: u8, path: PathBuf, lock: std::fs::File) -> Self {
        let first = u32::from(Ipv4Addr::new(127, block, 0, 1));
        Self {
            next: Mutex::new(first),
            first,
            block_file: Some((path, lock)),
        }
    }

    /// The block's Service range, `127.B.192.0/18` (B of the first pod address): cluster IPs
    /// and the node's DNS server live there, never a pod.
    pub fn service_range(&self) -> rehearsal_apiserver::ServiceRange {
        let block = Ipv4Addr::from(self.first).octets()[1];
        rehearsal_apiserver::ServiceRange {
            base: Ipv4Addr::new(127, block, SERVICE_OCTET, 0),
            prefix: 18,
        }
    }

    /// The next unused address.
    pub fn allocate(&self) -> Ipv4Addr {
        let mut next = self.next.lock().unwrap_or_else(|e| e.into_inner());
        loop {
            let candidate = *next;
            *next = next.wrapping_add(1);
            let [a, _, third, last] = Ipv4Addr::from(candidate).octets();
            if a == 127 && third < SERVICE_OCTET && last != 0 && last != 255 {
                return Ipv4Addr::from(candidate);
            }
            if a != 127 || third >= SERVICE_OCTET {
                // Past the pod range: start over at the block's first address.
                *next = self.first;
            }
        }
    }
}

impl Drop for PodIps {
    fn drop(&mut self) {
        // Unlinked while still locked: a starter that opened the old file then finds, after
        // locking it, that the path names another file (or none) and moves on.
        if let Some((path, lock)) = self.block_file.take() {
            let _ = std::fs::remove_file(&path);
            drop(lock);
        }
    }
}

/// Locks the block file at `path` (created if missing): `Some(handle)` holding the lock when
/// it is free and still the file the path names, `None` when another allocator holds it.
fn try_lock_block(path: &Path) -> std::io::Result<Option<std::fs::File>> {
    use std::os::unix::fs::MetadataExt;
    let file = std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(false)
        .open(path)?;
    match file.try_lock() {
        Ok(()) => {}
        Err(std::fs::TryLockError::WouldBlock) => return Ok(None),
        Err(std::fs::TryLockError::Error(e)) => return Err(e),
    }
    // The previous holder may have unlinked the file between our open and our lock.
    let locked = file.metadata()?;
    match std::fs::metadata(path) {
        Ok(now) if now.ino() == locked.ino() && now.dev() == locked.dev() => {}
        _ => return Ok(None),
    }
    // The holder's PID, for a person looking at the registry.
    use std::io::Write;
    file.set_len(0)?;
    (&file).write_all(std::process::id().to_string().as_bytes())?;
    Ok(Some(file))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn concurrent_reservations_get_distinct_blocks_and_release_them() {
        let dir = tempfile::tempdir().unwrap();
        let a = PodIps::reserve(dir.path()).unwrap();
        let b = PodIps::reserve(dir.path()).unwrap();
        let (ia, ib) = (a.allocate(), b.allocate());
        assert_ne!(
            ia.octets()[1],
            ib.octets()[1],
            "{ia} and {ib} share a block"
        );
        drop(a);
        drop(b);
        assert_eq!(
            std::fs::read_dir(dir.path()).unwrap().count(),
            0,
            "reservations left behind"
        );
    }

    #[test]
    fn a_block_left_by_a_dead_owner_is_free_and_a_held_one_is_skipped() {
        let dir = tempfile::tempdir().unwrap();
        // Files of owners that are gone (no lock held on them): every block is free.
        for b in BLOCKS {
            std::fs::write(dir.path().join(b.to_string()), "2147483632").unwrap();
        }
        let ips = PodIps::reserve(dir.path()).unwrap();
        let block = ips.allocate().octets()[1];
        // A second allocator while the first holds its lock gets another block, and the
        // holder's PID is in the file.
        let other = PodIps::reserve(dir.path()).unwrap();
        assert_ne!(other.allocate().octets()[1], block);
        let held = std::fs::read_to_string(dir.path().join(block.to_string())).unwrap();
        assert_eq!(held, std::process::id().to_string());
    }

    #[test]
    fn a_lock_on_a_file_unlinked_by_its_previous_holder_is_not_a_reservation() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("20");
        // Opened (not yet locked) by a starter; then the holder releases: unlink, unlock.
        let stale = std::fs::OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(false)
            .open(&path)
            .unwrap();
        std::fs::remove_file(&path).unwrap();
        stale.try_lock().unwrap();
        // The path now names a fresh file nobody holds: locking it succeeds, and the handle
        // on the unlinked file never counted.
        assert!(try_lock_block(&path).unwrap().is_some());
    }

    #[test]
    fn a_first_address_inside_the_service_range_starts_below_it() {
        let ips = PodIps::new(Ipv4Addr::new(127, 33, 200, 1));
        assert_eq!(ips.allocate(), Ipv4Addr::new(127, 33, 0, 1));
        assert_eq!(ips.service_range().base, Ipv4Addr::new(127, 33, 192, 0));
    }

    #[test]
    fn pods_never_get_an_address_of_the_service_range() {
        let ips = PodIps::new(Ipv4Addr::new(127, 30, SERVICE_OCTET - 1, 253));
        let got: Vec<Ipv4Addr> = (0..3).map(|_| ips.allocate()).collect();
        assert_eq!(got[2], Ipv4Addr::new(127, 30, SERVICE_OCTET - 1, 253));
        let range = ips.service_range();
        assert_eq!(range.base, Ipv4Addr::new(127, 30, SERVICE_OCTET, 0));
        assert!(got.iter().all(|ip| !range.contains(*ip)), "{got:?}");
    }

    #[test]
    fn addresses_are_unique_and_skip_network_and_broadcast() {
        let ips = PodIps::new(Ipv4Addr::new(127, 0, 10, 253));
        let got: Vec<Ipv4Addr> = (0..3).map(|_| ips.allocate()).collect();
        assert_eq!(
            got,
            vec![
                Ipv4Addr::new(127, 0, 10, 253),
                Ipv4Addr::new(127, 0, 10, 254),
                Ipv4Addr::new(127, 0, 11, 1)
            ]
        );
    }
}
