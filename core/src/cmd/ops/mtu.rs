//! MTU arithmetic: the InfiniBand MTU enum and the RoCE MTU of an
//! Ethernet port's netdev or hardware MTU.

/// An InfiniBand MTU, `enum ib_mtu` / `ibv_mtu` (1 = 256 … 5 = 4096; the
/// qpc.mtu encoding of [ref §7.11](crate::reference)).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
#[repr(u8)]
#[allow(clippy::exhaustive_enums)] // closed by IBTA: the MTU code has exactly these five values
pub enum IbMtu {
    /// 256 bytes (1).
    Mtu256 = 1,
    /// 512 bytes (2).
    Mtu512 = 2,
    /// 1024 bytes (3).
    Mtu1024 = 3,
    /// 2048 bytes (4).
    Mtu2048 = 4,
    /// 4096 bytes (5).
    Mtu4096 = 5,
}

impl IbMtu {
    /// Every IB MTU, smallest first.
    pub const ALL: [IbMtu; 5] = [
        IbMtu::Mtu256,
        IbMtu::Mtu512,
        IbMtu::Mtu1024,
        IbMtu::Mtu2048,
        IbMtu::Mtu4096,
    ];

    /// The enum value (1 … 5), as `ibv_devinfo` prints it in parentheses.
    pub const fn code(self) -> u8 {
        self as u8
    }

    /// The MTU in bytes: `256 << (code − 1)`.
    pub const fn bytes(self) -> u32 {
        256 << (self as u8 - 1)
    }

    /// The IB MTU of exactly `bytes` bytes, `None` for any other size (as
    /// linux `mlx5_mtu_to_ib_mtu` in `drivers/infiniband/hw/mlx5/main.c`
    /// treats an IB port's PMTU value).
    pub const fn from_bytes(bytes: u32) -> Option<IbMtu> {
        match bytes {
            256 => Some(IbMtu::Mtu256),
            512 => Some(IbMtu::Mtu512),
            1024 => Some(IbMtu::Mtu1024),
            2048 => Some(IbMtu::Mtu2048),
            4096 => Some(IbMtu::Mtu4096),
            _ => None,
        }
    }

    /// The IB MTU of code `c` (1 … 5), `None` otherwise.
    pub const fn from_code(c: u8) -> Option<IbMtu> {
        match c {
            1 => Some(IbMtu::Mtu256),
            2 => Some(IbMtu::Mtu512),
            3 => Some(IbMtu::Mtu1024),
            4 => Some(IbMtu::Mtu2048),
            5 => Some(IbMtu::Mtu4096),
            _ => None,
        }
    }

    /// The largest IB MTU not above `bytes` (capped at 4096), `None` below
    /// 256.
    pub const fn at_most(bytes: u32) -> Option<IbMtu> {
        if bytes >= 4096 {
            Some(IbMtu::Mtu4096)
        } else if bytes >= 2048 {
            Some(IbMtu::Mtu2048)
        } else if bytes >= 1024 {
            Some(IbMtu::Mtu1024)
        } else if bytes >= 512 {
            Some(IbMtu::Mtu512)
        } else if bytes >= 256 {
            Some(IbMtu::Mtu256)
        } else {
            None
        }
    }
}

/// Bytes an Ethernet port's hardware MTU (what PMTU reports) adds to the
/// netdev MTU: ETH_HLEN 14 + VLAN_HLEN 4 + ETH_FCS_LEN 4 (linux mlx5e
/// `MLX5E_SW2HW_MTU`).
pub const ETH_HW_MTU_OVERHEAD: u32 = 14 + 4 + 4;

/// RoCE headers a RoCE MTU must leave room for inside the netdev MTU:
/// GRH 40 + UDP 8 + BTH 12 + XRC extension 4 + AtomicETH 28 + ICRC 4
/// (linux `include/rdma/ib_addr.h` iboe_get_mtu).
pub const ROCE_HEADERS: u32 = 40 + 8 + 12 + 4 + 28 + 4;

/// The RoCE MTU of a netdev MTU: the largest IB MTU not above
/// `netdev_mtu − 96` ([`ROCE_HEADERS`]), at most 4096; `None` when not even
/// 256 bytes fit (the rule of linux iboe_get_mtu, which mlx5_ib uses for a
/// RoCE port's active MTU).
pub const fn roce_mtu(netdev_mtu: u32) -> Option<IbMtu> {
    IbMtu::at_most(netdev_mtu.saturating_sub(ROCE_HEADERS))
}

/// The RoCE MTU of an Ethernet port whose PMTU reports hardware MTU
/// `hw_mtu`: [`roce_mtu`] of `hw_mtu − 22` ([`ETH_HW_MTU_OVERHEAD`]).
pub const fn roce_mtu_of_hw_mtu(hw_mtu: u32) -> Option<IbMtu> {
    if hw_mtu < ETH_HW_MTU_OVERHEAD {
        return None;
    }
    roce_mtu(hw_mtu - ETH_HW_MTU_OVERHEAD)
}
