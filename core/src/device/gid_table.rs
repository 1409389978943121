//! The driver's own record of the port's RoCE GID table: what
//! [`Device::set_gid`](super::Device::set_gid) programmed, entry by entry.
//!
//! Over VFIO nothing but this driver writes the table (no kernel netdev
//! fills it, and bring-up resets the function), so the record is what the
//! table holds. Address paths are checked against it
//! ([`Device::init2rtr`](super::Device::init2rtr)), GID indices are chosen
//! from it ([`GidTable::best_index`], perftest's rule) and new addresses
//! are placed in it as the kernel places them ([`GidTable::free_pair`]),
//! without trusting a QUERY_ROCE_ADDRESS answer for any of it.

use crate::cmd::ops::{is_ipv4_mapped, RoceAddress, RoceVersion};

/// GID table entries the driver keeps a record of: `set_gid` refuses
/// indices from here on even when the device's table is larger. The
/// kernel's layout uses two entries per address (RoCE v1 and v2) after
/// two default entries, so this holds 31 addresses.
pub const GID_SLOTS: usize = 64;

/// The two entries one address occupies (RoCE v1 and v2), as the kernel's
/// GID cache lays them out.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct GidPair {
    /// The RoCE v1 entry.
    pub v1: u16,
    /// The RoCE v2 entry (what `-x`/`-g` usually names).
    pub v2: u16,
}

/// Programmed entries by index.
#[derive(Clone, Copy, Debug)]
pub(super) struct GidTable {
    slots: [Option<RoceAddress>; GID_SLOTS],
}

impl GidTable {
    /// An empty table (after bring-up).
    pub(super) const fn new() -> Self {
        GidTable {
            slots: [None; GID_SLOTS],
        }
    }

    /// Entry `index`, if programmed.
    pub(super) fn get(&self, index: u16) -> Option<RoceAddress> {
        self.slots.get(index as usize).copied().flatten()
    }

    /// Records entry `index` (`None`: cleared). Indices beyond the record
    /// are refused by the caller before any command.
    pub(super) fn put(&mut self, index: u16, a: Option<RoceAddress>) {
        if let Some(s) = self.slots.get_mut(index as usize) {
            *s = a;
        }
    }

    /// Programmed entries in index order.
    pub(super) fn iter(&self) -> impl Iterator<Item = (u16, RoceAddress)> + '_ {
        self.slots
            .iter()
            .enumerate()
            .filter_map(|(i, s)| s.map(|a| (i as u16, a)))
    }

    /// The index already holding `gid` as `version`, if any.
    pub(super) fn find(&self, gid: &[u8; 16], version: RoceVersion) -> Option<u16> {
        self.iter()
            .find(|(_, a)| a.gid == *gid && a.version == version)
            .map(|(i, _)| i)
    }

    /// The two lowest free indices below `limit` (v1 in the first, v2 in
    /// the second), as the kernel's GID cache fills free entries in index
    /// order for each GID type in turn.
    pub(super) fn free_pair(&self, limit: u16) -> Option<GidPair> {
        let mut free = (0..limit.min(GID_SLOTS as u16)).filter(|&i| self.get(i).is_none());
        Some(GidPair {
            v1: free.next()?,
            v2: free.next()?,
        })
    }

    /// perftest's choice of GID index when `-x` is not given
    /// (`get_best_gid_index` over `compute_gid_score`): the programmed
    /// entry with the highest [`gid_score`], the lowest index among equals.
    pub(super) fn best_index(&self, prefer_ipv6: bool) -> Option<u16> {
        let mut best: Option<(u16, u32)> = None;
        for (i, a) in self.iter() {
            let s = gid_score(&a, prefer_ipv6);
            if best.is_none_or(|(_, b)| s > b) {
                best = Some((i, s));
            }
        }
        best.map(|(i, _)| i)
    }
}

/// Score of an entry by perftest's rule (`perftest_communication.c`
/// `compute_gid_score`): 100 when its address family is the one asked
/// for (IPv4-mapped unless `prefer_ipv6`), 10 when it is not link-local
/// (`fe80::/10`, or `169.254.0.0/16` for IPv4-mapped GIDs), plus its RoCE
/// version's rank (v1 1, v2 2). An all-zero GID scores nothing (perftest
/// skips it; the record never holds one).
pub fn gid_score(a: &RoceAddress, prefer_ipv6: bool) -> u32 {
    let v4 = is_ipv4_mapped(&a.gid);
    let mut s = 0;
    if v4 != prefer_ipv6 {
        s += 100;
    }
    let link_local = if v4 {
        a.gid[12] == 169 && a.gid[13] == 254
    } else {
        a.gid[0] == 0xfe && a.gid[1] & 0xc0 == 0x80
    };
    if !link_local {
        s += 10;
    }
    s + match a.version {
        RoceVersion::V1 => 1,
        RoceVersion::V2 => 2,
    }
}

#[cfg(test)]
mod tests {
    //! perftest's `compute_gid_score` / `get_best_gid_index` and the
    //! kernel's free-entry order, case by case.
    use super::*;
    use crate::cmd::ops::gid_ipv4_mapped;

    fn entry(gid: [u8; 16], version: RoceVersion) -> RoceAddress {
        RoceAddress {
            gid,
            mac: [2, 0, 0, 0, 0, 1],
            vlan: None,
            version,
        }
    }

    fn v6(first: [u8; 2]) -> [u8; 16] {
        let mut g = [0u8; 16];
        g[..2].copy_from_slice(&first);
        g[15] = 1;
        g
    }

    #[test]
    fn scores_follow_perftest() {
        use RoceVersion::{V1, V2};
        let cases: [([u8; 16], RoceVersion, bool, u32); 10] = [
            (gid_ipv4_mapped([10, 0, 0, 1]), V2, false, 112),
            (gid_ipv4_mapped([10, 0, 0, 1]), V1, false, 111),
            (gid_ipv4_mapped([169, 254, 3, 4]), V2, false, 102),
            (gid_ipv4_mapped([169, 253, 3, 4]), V2, false, 112),
            (gid_ipv4_mapped([10, 0, 0, 1]), V2, true, 12),
            (v6([0xfe, 0x80]), V2, false, 2),
            (v6([0xfe, 0xbf]), V2, true, 102), // fe80::/10 ends at febf
            (v6([0xfe, 0xc0]), V2, true, 112),
            (v6([0x20, 0x01]), V1, true, 111),
            (v6([0x20, 0x01]), V2, false, 12),
        ];
        for (gid, v, ipv6, want) in cases {
            assert_eq!(
                gid_score(&entry(gid, v), ipv6),
                want,
                "{gid:02x?} {v:?} {ipv6}"
            );
        }
    }

    #[test]
    fn best_index_takes_the_lowest_among_equals_and_skips_empty_entries() {
        let mut t = GidTable::new();
        assert_eq!(t.best_index(false), None);
        let g = gid_ipv4_mapped([10, 0, 0, 1]);
        t.put(9, Some(entry(g, RoceVersion::V2)));
        t.put(5, Some(entry(g, RoceVersion::V2)));
        t.put(1, Some(entry(v6([0xfe, 0x80]), RoceVersion::V2)));
        assert_eq!(t.best_index(false), Some(5));
        assert_eq!(t.best_index(true), Some(1));
        t.put(5, None);
        assert_eq!(t.best_index(false), Some(9));
    }

    #[test]
    fn free_pairs_fill_holes_in_index_order_within_the_limit() {
        let mut t = GidTable::new();
        let e = entry(gid_ipv4_mapped([1, 2, 3, 4]), RoceVersion::V1);
        t.put(0, Some(e));
        t.put(2, Some(e));
        assert_eq!(t.free_pair(8), Some(GidPair { v1: 1, v2: 3 }));
        assert_eq!(t.free_pair(3), None, "one free entry below 3");
        for i in 0..GID_SLOTS as u16 {
            t.put(i, Some(e));
        }
        t.put(GID_SLOTS as u16 - 1, None);
        assert_eq!(t.free_pair(u16::MAX), None);
    }
}
