//! The driver's own record of the port's RoCE GID table: what
//! [`Device::set_gid`](super::Device::set_gid) programmed, entry by entry.
//!
//! Over VFIO nothing but this driver writes the table (no kernel netdev
//! fills it), so the record is what the table holds as far as this driver
//! instance wrote it: an entry left by an earlier instance that never tore
//! the function down is unknown to it and so never used. An entry whose
//! SET_ROCE_ADDRESS failed is recorded as unknown: neither used by a path
//! nor taken as free. Address paths are checked against it
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

/// The first index an address takes: 0 and 1 hold the port's default
/// (link-local) entries, RoCE v1 and v2, as the kernel reserves them.
pub const FIRST_ADDRESS_GID: u16 = 2;

/// What the driver knows of one entry.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Slot {
    /// Never programmed, or cleared.
    Empty,
    /// Programmed with this address.
    Set(RoceAddress),
    /// A command on it failed: the device may hold anything.
    Unknown,
}

/// Programmed entries by index.
#[derive(Clone, Copy, Debug)]
pub(super) struct GidTable {
    slots: [Slot; GID_SLOTS],
}

impl GidTable {
    /// An empty table (after bring-up).
    pub(super) const fn new() -> Self {
        GidTable {
            slots: [Slot::Empty; GID_SLOTS],
        }
    }

    /// Entry `index`, if programmed.
    pub(super) fn get(&self, index: u16) -> Option<RoceAddress> {
        match self.slots.get(index as usize) {
            Some(Slot::Set(a)) => Some(*a),
            _ => None,
        }
    }

    fn is_free(&self, index: u16) -> bool {
        matches!(self.slots.get(index as usize), Some(Slot::Empty))
    }

    /// Records entry `index` (`None`: cleared). Indices beyond the record
    /// are refused by the caller before any command.
    pub(super) fn put(&mut self, index: u16, a: Option<RoceAddress>) {
        if let Some(s) = self.slots.get_mut(index as usize) {
            *s = a.map_or(Slot::Empty, Slot::Set);
        }
    }

    /// Records that a command on entry `index` failed.
    pub(super) fn forget(&mut self, index: u16) {
        if let Some(s) = self.slots.get_mut(index as usize) {
            *s = Slot::Unknown;
        }
    }

    /// Programmed entries in index order.
    pub(super) fn iter(&self) -> impl Iterator<Item = (u16, RoceAddress)> + '_ {
        self.slots.iter().enumerate().filter_map(|(i, s)| match s {
            Slot::Set(a) => Some((i as u16, *a)),
            _ => None,
        })
    }

    /// The index already holding `gid` as `version`, if any.
    pub(super) fn find(&self, gid: &[u8; 16], version: RoceVersion) -> Option<u16> {
        self.iter()
            .find(|(_, a)| a.gid == *gid && a.version == version)
            .map(|(i, _)| i)
    }

    /// The lowest free index from [`FIRST_ADDRESS_GID`] below `limit`
    /// other than `not`, as the kernel's GID cache fills free entries in
    /// index order.
    pub(super) fn free_index(&self, limit: u16, not: Option<u16>) -> Option<u16> {
        (FIRST_ADDRESS_GID..limit.min(GID_SLOTS as u16))
            .find(|&i| self.is_free(i) && Some(i) != not)
    }

    /// perftest's choice of GID index when `-x` is not given
    /// (`get_best_gid_index` over `compute_gid_score`): the programmed
    /// entry with the highest [`gid_score`], the lowest index among equals.
    pub(super) fn best_index(&self, prefer_ipv6: bool) -> Option<u16> {
        let mut best: Option<(u16, u32)> = None;
        for (i, a) in self.iter() {
            let Some(s) = gid_score(&a, prefer_ipv6) else {
                continue;
            };
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
/// version's rank (v1 1, v2 2). An all-zero GID has no score (`None`:
/// perftest skips the empty entry).
pub fn gid_score(a: &RoceAddress, prefer_ipv6: bool) -> Option<u32> {
    if a.gid == [0; 16] {
        return None;
    }
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
    Some(
        s + match a.version {
            RoceVersion::V1 => 1,
            RoceVersion::V2 => 2,
        },
    )
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
                Some(want),
                "{gid:02x?} {v:?} {ipv6}"
            );
        }
        assert_eq!(
            gid_score(&entry([0; 16], V2), true),
            None,
            "the empty entry"
        );
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
    fn free_indices_skip_the_defaults_and_unknown_entries() {
        let mut t = GidTable::new();
        let e = entry(gid_ipv4_mapped([1, 2, 3, 4]), RoceVersion::V1);
        assert_eq!(t.free_index(8, None), Some(2), "0 and 1 are the defaults'");
        t.put(2, Some(e));
        t.forget(3);
        assert_eq!(
            t.free_index(8, None),
            Some(4),
            "an unknown entry is not free"
        );
        assert_eq!(t.free_index(8, Some(4)), Some(5));
        assert_eq!(t.get(3), None, "an unknown entry is not used");
        assert_eq!(t.free_index(5, Some(4)), None);
        for i in 0..GID_SLOTS as u16 {
            t.put(i, Some(e));
        }
        assert_eq!(t.free_index(u16::MAX, None), None);
        t.put(GID_SLOTS as u16 - 1, None);
        assert_eq!(t.free_index(u16::MAX, None), Some(GID_SLOTS as u16 - 1));
    }
}
