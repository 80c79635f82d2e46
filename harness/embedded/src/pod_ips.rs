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
    /// The reservation released on drop, when this allocator holds one.
    block_file: Option<PathBuf>,
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

    /// Reserves a free `127.B.0.0/16` block in `registry` (one lock file per block holding the
    /// owner's PID) and hands out addresses from it.
    pub fn reserve(registry: &Path) -> std::io::Result<Self> {
        std::fs::create_dir_all(registry)?;
        let pid = std::process::id();
        // Start at a PID-derived block so concurrent starters rarely race for the same file.
        let span = u32::from(BLOCKS.end() - BLOCKS.start()) + 1;
        let offset = pid % span;
        for i in 0..span {
            let block = BLOCKS.start() + ((offset + i) % span) as u8;
            let file = registry.join(block.to_string());
            match std::fs::OpenOptions::new()
                .write(true)
                .create_new(true)
                .open(&file)
            {
                Ok(mut f) => {
                    use std::io::Write;
                    f.write_all(pid.to_string().as_bytes())?;
                    return Ok(Self::in_block(block, file));
                }
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {
                    let owner = std::fs::read_to_string(&file)
                        .ok()
                        .and_then(|s| s.trim().parse::<i32>().ok());
                    // A stale reservation: its owner is gone. Remove it and retry this block
                    // on a later pass (another starter may take it first, which is fine).
                    if let Some(owner) = owner
                        && nix::sys::signal::kill(nix::unistd::Pid::from_raw(owner), None).is_err()
                    {
                        let _ = std::fs::remove_file(&file);
                        if let Ok(mut f) = std::fs::OpenOptions::new()
                            .write(true)
                            .create_new(true)
                            .open(&file)
                        {
                            use std::io::Write;
                            f.write_all(pid.to_string().as_bytes())?;
                            return Ok(Self::in_block(block, file));
                        }
                    }
                }
                Err(e) => return Err(e),
            }
        }
        Err(std::io::Error::other(format!(
            "every pod IP block 127.{}-{}.0.0/16 is reserved in {}; remove stale files there",
            BLOCKS.start(),
            BLOCKS.end(),
            registry.display()
        )))
    }

    fn in_block(block: u8, file: PathBuf) -> Self {
        let first = u32::from(Ipv4Addr::new(127, block, 0, 1));
        Self {
            next: Mutex::new(first),
            first,
            block_file: Some(file),
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
        if let Some(file) = &self.block_file {
            let _ = std::fs::remove_file(file);
        }
    }
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
    fn a_dead_owners_block_is_taken_over() {
        let dir = tempfile::tempdir().unwrap();
        // PID 0x7fff_fff0 does not exist.
        for b in BLOCKS {
            std::fs::write(dir.path().join(b.to_string()), "2147483632").unwrap();
        }
        let ips = PodIps::reserve(dir.path()).unwrap();
        assert_eq!(ips.allocate().octets()[0], 127);
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
