//! The initialization segment at BAR0 offset 0 ([ref §7.1, §7.2](crate::reference)).

use super::Bar0;

/// `fw_rev` register. [ref §7.1](crate::reference).
pub const FW_REV: usize = 0x000;
/// `cmdif_rev_fw_sub` register. [ref §7.1](crate::reference).
pub const CMDIF_REV_FW_SUB: usize = 0x004;
/// `cmdq_addr_h` register. [ref §7.1](crate::reference).
pub const CMDQ_ADDR_H: usize = 0x010;
/// `cmdq_addr_l_sz` register. [ref §7.1](crate::reference).
pub const CMDQ_ADDR_L_SZ: usize = 0x014;
/// `cmd_dbell` register. [ref §7.1](crate::reference).
pub const CMD_DBELL: usize = 0x018;
/// `initializing` register (bit 31). [ref §7.1](crate::reference).
pub const INITIALIZING: usize = 0x1fc;
/// Health buffer `fw_ver`. [ref §7.1](crate::reference).
pub const HEALTH_FW_VER: usize = 0x230;
/// Health buffer `rfr` (bit 31). [ref §7.1](crate::reference).
pub const HEALTH_RFR: usize = 0x238;
/// Health buffer word holding `irisc_index` (byte 0x23c), `synd` (0x23d),
/// `ext_synd` (0x23e). [ref §7.1](crate::reference).
pub const HEALTH_SYND_WORD: usize = 0x23c;
/// `health_counter` register. [ref §7.1](crate::reference).
pub const HEALTH_COUNTER: usize = 0x1010;
/// Command-interface revision this driver speaks. [ref §7.2](crate::reference).
pub const CMDIF_REV: u16 = 5;

/// Bit 31 of `initializing`: firmware still initializing. [ref §7.1](crate::reference).
pub const INITIALIZING_BIT: u32 = 1 << 31;
/// Bit 31 of the health buffer's `rfr` word. [ref §7.1](crate::reference).
pub const HEALTH_RFR_BIT: u32 = 1 << 31;
/// The changing low 24 bits of `health_counter`. [ref §7.1](crate::reference).
pub const HEALTH_COUNTER_MASK: u32 = 0x00ff_ffff;
/// The page-aligned address bits of `cmdq_addr_l_sz` (31:12). [ref §7.1](crate::reference).
pub const CMDQ_ADDR_L_MASK: u32 = !0xfff;

/// The `fw_rev` word: minor in 31:16, major in 15:0. [ref §7.1](crate::reference).
pub const fn fw_rev_word(major: u16, minor: u16) -> u32 {
    (minor as u32) << 16 | major as u32
}

/// The `cmdif_rev_fw_sub` word: command-interface revision in 31:16,
/// firmware sub-minor in 15:0. [ref §7.1](crate::reference).
pub const fn cmdif_rev_fw_sub_word(cmdif_rev: u16, subminor: u16) -> u32 {
    (cmdif_rev as u32) << 16 | subminor as u32
}

/// The `cmdq_addr_l_sz` word: address bits 31:12, `nic_interface` 10:8,
/// `log_cmdq_size` 7:4, `log_cmdq_stride` 3:0. [ref §7.1](crate::reference).
pub const fn cmdq_addr_l_sz_word(addr_l: u32, nic_ifc: u8, log_sz: u8, log_stride: u8) -> u32 {
    (addr_l & CMDQ_ADDR_L_MASK)
        | ((nic_ifc as u32 & 7) << 8)
        | ((log_sz as u32 & 0xf) << 4)
        | (log_stride as u32 & 0xf)
}

/// The `nic_interface` field (bits 10:8) of a `cmdq_addr_l_sz` word.
pub const fn nic_ifc_bits(cmdq_addr_l_sz: u32) -> u8 {
    ((cmdq_addr_l_sz >> 8) & 7) as u8
}

/// The `log_cmdq_size` (bits 7:4) and `log_cmdq_stride` (bits 3:0) fields
/// of a `cmdq_addr_l_sz` word: the inverse of [`cmdq_addr_l_sz_word`]'s
/// low byte.
pub const fn cmdq_log_bits(cmdq_addr_l_sz: u32) -> (u8, u8) {
    (
        ((cmdq_addr_l_sz >> 4) & 0xf) as u8,
        (cmdq_addr_l_sz & 0xf) as u8,
    )
}

/// NIC interface state (`cmdq_addr_l_sz` bits 10:8). [ref §7.1](crate::reference).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum NicIfcState {
    /// 0: full driver (normal operation).
    FullDriver,
    /// 1: disabled.
    Disabled,
    /// 7: software reset.
    SwReset,
    /// Any other value.
    Other(u8),
}

impl NicIfcState {
    /// Decodes the 3-bit field. [ref §7.1](crate::reference).
    pub const fn from_bits(v: u8) -> Self {
        match v & 7 {
            0 => NicIfcState::FullDriver,
            1 => NicIfcState::Disabled,
            7 => NicIfcState::SwReset,
            o => NicIfcState::Other(o),
        }
    }
}

/// Firmware version `major.minor.subminor` ([ref §7.1](crate::reference)).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct FwVersion {
    /// Major (`fw_rev` bits 15:0).
    pub major: u16,
    /// Minor (`fw_rev` bits 31:16).
    pub minor: u16,
    /// Sub-minor (`cmdif_rev_fw_sub` bits 15:0).
    pub subminor: u16,
}

impl core::fmt::Display for FwVersion {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        write!(f, "{}.{}.{:04}", self.major, self.minor, self.subminor)
    }
}

/// Command queue geometry read from `cmdq_addr_l_sz` ([ref §7.1, §7.2](crate::reference)).
///
/// The fields are public so hosts and tests can build one, but nothing
/// trusts them unchecked: [`CmdqGeometry::check`] is applied by
/// [`InitSeg::validate`] and again by
/// [`CmdQueue::new`](super::queue::CmdQueue::new).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CmdqGeometry {
    /// log2 number of slots (bits 7:4).
    pub log_sz: u8,
    /// log2 slot stride in bytes (bits 3:0).
    pub log_stride: u8,
}

/// Most command slots (`1 << log_cmdq_size` ≤ 32; [ref §7.2](crate::reference) step 2).
pub const MAX_LOG_CMDQ_SIZE: u8 = 5;
/// Fewest command slots this driver runs with: a regular slot and a
/// separate page slot ([ref §7.2](crate::reference) step 4), so `log_cmdq_size` ≥ 1.
pub const MIN_LOG_CMDQ_SIZE: u8 = 1;
/// Smallest slot stride: one 64-byte command entry ([ref §7.3](crate::reference)).
pub const MIN_LOG_CMDQ_STRIDE: u8 = 6;
/// The whole queue fits one 4 KiB page: `log_sz + log_stride ≤ 12`
/// ([ref §7.2](crate::reference) step 2).
pub const MAX_LOG_CMDQ_BYTES: u8 = 12;

impl CmdqGeometry {
    /// Checks the geometry the driver is about to lay out ([ref §7.2](crate::reference),
    /// §7.3): at least two slots (regular + pages; with one, both would
    /// share an entry), at most 32, a stride of at least one 64-byte entry
    /// (smaller strides overlap entries) and `slots × stride` within the
    /// 4 KiB queue page (larger would put entries outside it).
    pub const fn check(&self) -> Result<(), InitSegError> {
        if self.log_sz > MAX_LOG_CMDQ_SIZE {
            return Err(InitSegError::TooManySlots {
                log_sz: self.log_sz,
            });
        }
        if self.log_sz < MIN_LOG_CMDQ_SIZE {
            return Err(InitSegError::TooFewSlots {
                log_sz: self.log_sz,
            });
        }
        // Both are small here (log_sz ≤ 5), but add in u16 anyway: the
        // fields are public and may hold anything.
        if self.log_sz as u16 + self.log_stride as u16 > MAX_LOG_CMDQ_BYTES as u16 {
            return Err(InitSegError::QueueTooLarge {
                log_sz: self.log_sz,
                log_stride: self.log_stride,
            });
        }
        if self.log_stride < MIN_LOG_CMDQ_STRIDE {
            return Err(InitSegError::StrideTooSmall {
                log_stride: self.log_stride,
            });
        }
        Ok(())
    }
    /// Number of slots (`1 << log_sz`, at most 32 whatever the field holds).
    pub const fn slots(&self) -> u8 {
        let l = if self.log_sz > MAX_LOG_CMDQ_SIZE {
            MAX_LOG_CMDQ_SIZE
        } else {
            self.log_sz
        };
        1u8 << l
    }
}

/// Why the initialization segment was rejected ([ref §7.1, §7.2](crate::reference)).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum InitSegError {
    /// `fw_rev` reads all-ones: the PCI link is down or BAR0 is not mapped.
    LinkDown,
    /// Command-interface revision is not 5.
    CmdifRev {
        /// Revision found.
        found: u16,
    },
    /// More than 32 command slots.
    TooManySlots {
        /// log2 slots found.
        log_sz: u8,
    },
    /// Fewer than two command slots: the regular and the page slot would
    /// be the same entry.
    TooFewSlots {
        /// log2 slots found.
        log_sz: u8,
    },
    /// The queue does not fit one 4 KiB page (`log_sz + log_stride > 12`).
    QueueTooLarge {
        /// log2 slots.
        log_sz: u8,
        /// log2 stride.
        log_stride: u8,
    },
    /// The slot stride is smaller than a 64-byte command entry.
    StrideTooSmall {
        /// log2 stride.
        log_stride: u8,
    },
    /// `initializing` stayed set past the timeout.
    InitTimeout {
        /// Microseconds waited.
        waited_us: u64,
    },
    /// Health check: firmware reports a fatal state.
    Fatal(HealthProblem),
}

/// A fatal health condition ([ref §7.1](crate::reference) health checks).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum HealthProblem {
    /// `fw_ver` in the health buffer reads 0xffffffff: PCI link down.
    LinkDown,
    /// NIC interface is DISABLED or SW_RESET.
    NicInterface(NicIfcState),
    /// `rfr` set with a nonzero syndrome.
    Syndrome {
        /// Health syndrome (0x1 FW error, 0x7 IRISC, …).
        synd: u8,
        /// Extended syndrome.
        ext_synd: u16,
    },
    /// `health_counter` did not change over the polls.
    CounterStuck {
        /// Counter value seen.
        counter: u32,
    },
}

impl core::fmt::Display for HealthProblem {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match *self {
            HealthProblem::LinkDown => f.write_str("health buffer reads all-ones (PCI link down)"),
            HealthProblem::NicInterface(s) => write!(f, "NIC interface is {s:?}"),
            HealthProblem::Syndrome { synd, ext_synd } => write!(
                f,
                "firmware health syndrome 0x{synd:x} (extended 0x{ext_synd:x})"
            ),
            HealthProblem::CounterStuck { counter } => {
                write!(f, "health counter stuck at {counter}")
            }
        }
    }
}

impl core::fmt::Display for InitSegError {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match *self {
            InitSegError::LinkDown => {
                f.write_str("fw_rev reads all-ones (PCI link down or BAR0 not mapped)")
            }
            InitSegError::CmdifRev { found } => {
                write!(f, "command interface revision {found}, expected 5")
            }
            InitSegError::TooManySlots { log_sz } => {
                write!(f, "2^{log_sz} command slots, at most 32 are supported")
            }
            InitSegError::TooFewSlots { log_sz } => {
                write!(f, "2^{log_sz} command slots, at least 2 are needed")
            }
            InitSegError::QueueTooLarge { log_sz, log_stride } => write!(
                f,
                "2^{log_sz} slots of 2^{log_stride} bytes do not fit one 4 KiB page"
            ),
            InitSegError::StrideTooSmall { log_stride } => write!(
                f,
                "command slot stride 2^{log_stride} is smaller than a 64-byte entry"
            ),
            InitSegError::InitTimeout { waited_us } => {
                write!(f, "firmware still initializing after {waited_us} us")
            }
            InitSegError::Fatal(p) => write!(f, "firmware health: {p}"),
        }
    }
}

impl core::error::Error for InitSegError {}

/// A read view of the initialization segment.
pub struct InitSeg<'a, B: Bar0>(pub &'a B);

/// Names the view only: formatting never reads the device's registers.
impl<B: Bar0> core::fmt::Debug for InitSeg<'_, B> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("InitSeg").finish_non_exhaustive()
    }
}

impl<B: Bar0> InitSeg<'_, B> {
    /// Firmware version ([ref §7.1](crate::reference) `fw_rev`, `cmdif_rev_fw_sub`).
    pub fn fw_version(&self) -> FwVersion {
        let r = self.0.read32(FW_REV);
        let s = self.0.read32(CMDIF_REV_FW_SUB);
        FwVersion {
            major: r as u16,
            minor: (r >> 16) as u16,
            subminor: s as u16,
        }
    }
    /// Command-interface revision (bits 31:16 of 0x004; must be 5).
    pub fn cmdif_rev(&self) -> u16 {
        (self.0.read32(CMDIF_REV_FW_SUB) >> 16) as u16
    }
    /// Command queue geometry (low byte of 0x014).
    pub fn cmdq_geometry(&self) -> CmdqGeometry {
        let (log_sz, log_stride) = cmdq_log_bits(self.0.read32(CMDQ_ADDR_L_SZ));
        CmdqGeometry { log_sz, log_stride }
    }
    /// NIC interface state (bits 10:8 of 0x014).
    pub fn nic_interface(&self) -> NicIfcState {
        NicIfcState::from_bits(nic_ifc_bits(self.0.read32(CMDQ_ADDR_L_SZ)))
    }
    /// Firmware is still initializing (bit 31 of 0x1fc).
    pub fn initializing(&self) -> bool {
        self.0.read32(INITIALIZING) & INITIALIZING_BIT != 0
    }
    /// Health counter (0x1010; low 24 bits keep changing while alive).
    pub fn health_counter(&self) -> u32 {
        self.0.read32(HEALTH_COUNTER)
    }
    /// Health syndrome and extended syndrome if `rfr` is set ([ref §7.1](crate::reference)).
    pub fn health_syndrome(&self) -> Option<(u8, u16)> {
        let rfr = self.0.read32(HEALTH_RFR) & HEALTH_RFR_BIT != 0;
        let w = self.0.read32(HEALTH_SYND_WORD);
        let synd = (w >> 16) as u8;
        if rfr && synd != 0 {
            Some((synd, w as u16))
        } else {
            None
        }
    }
    /// One health check (everything but the counter, which needs several
    /// polls; see [`InitSeg::counter_alive`]). [ref §7.1](crate::reference).
    pub fn check_health(&self) -> Result<(), HealthProblem> {
        if self.0.read32(HEALTH_FW_VER) == 0xffff_ffff {
            return Err(HealthProblem::LinkDown);
        }
        if let s @ (NicIfcState::Disabled | NicIfcState::SwReset) = self.nic_interface() {
            return Err(HealthProblem::NicInterface(s));
        }
        if let Some((synd, ext_synd)) = self.health_syndrome() {
            return Err(HealthProblem::Syndrome { synd, ext_synd });
        }
        Ok(())
    }
    /// Compares the low 24 bits of the health counter with an earlier read.
    pub fn counter_alive(&self, earlier: u32) -> bool {
        (self.health_counter() ^ earlier) & HEALTH_COUNTER_MASK != 0
    }
    /// Validates revision and geometry ([ref §7.2](crate::reference) steps 1–2).
    pub fn validate(&self) -> Result<CmdqGeometry, InitSegError> {
        if self.0.read32(FW_REV) == 0xffff_ffff {
            return Err(InitSegError::LinkDown);
        }
        let rev = self.cmdif_rev();
        if rev != CMDIF_REV {
            return Err(InitSegError::CmdifRev { found: rev });
        }
        // One read of the register: the geometry checked is the geometry
        // returned (a device changing it between reads cannot slip past).
        let g = self.cmdq_geometry();
        g.check()?;
        Ok(g)
    }
}
