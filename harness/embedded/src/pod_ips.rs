//! Pod IPs: each pod gets its own loopback address, never reused within a run.
//!
//! There is no network namespace: the loopback interface answers all of 127.0.0.0/8, so a
//! program that binds its pod IP can share a port number with every other pod.

use std::net::Ipv4Addr;
use std::sync::Mutex;

/// Hands out 127.x.y.z addresses in order, skipping .0 and .255 in the last octet.
#[derive(Debug)]
pub struct PodIps {
    next: Mutex<u32>,
}

impl PodIps {
    /// Starts at `first` (the default configuration starts at 127.0.10.1).
    pub fn new(first: Ipv4Addr) -> Self {
        Self {
            next: Mutex::new(u32::from(first)),
        }
    }

    /// The next unused address.
    pub fn allocate(&self) -> Ipv4Addr {
        let mut next = self.next.lock().unwrap_or_else(|e| e.into_inner());
        loop {
            let candidate = *next;
            *next = next.wrapping_add(1);
            let last = candidate & 0xff;
            if last != 0 && last != 255 && candidate >> 24 == 127 {
                return Ipv4Addr::from(candidate);
            }
            if candidate >> 24 != 127 {
                // Wrapped past 127.255.255.254: start over low in the block.
                *next = u32::from(Ipv4Addr::new(127, 0, 10, 1));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
