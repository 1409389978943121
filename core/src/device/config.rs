//! Bring-up tunables ([`DeviceConfig`]) and the numbering of the bring-up
//! steps ([`Step`]) a failure names ([ref §7.3, §7.6](crate::reference)).

/// Bring-up tunables ([ref §7.3, §7.6](crate::reference) timeouts).
#[derive(Clone, Copy, Debug)]
pub struct DeviceConfig {
    /// How long to wait for `initializing` to clear (VFIO: 120 s).
    pub init_timeout_us: u64,
    /// Poll interval while initializing (VFIO: 2 ms).
    pub init_poll_us: u32,
    /// Command timeout (VFIO: 60 s).
    pub cmd_timeout_us: u64,
    /// Poll interval while a command runs.
    pub cmd_poll_us: u32,
    /// Create an async EQ for page requests ([ref §7.6](crate::reference) "VFIO after setup").
    pub async_eq: bool,
    /// Host page size (for [`crate::sizing::DeviceCaps::page_size`]).
    pub page_size: u32,
    /// Cache-line size (for doorbell records).
    pub cache_line_size: u32,
    /// Write the HOST_ENDIANNESS register after the boot pages ([ref §7.6](crate::reference)
    /// step 7; the kernel does this for physical functions).
    pub set_host_endianness: bool,
    /// Most pages the driver lends firmware in total (default 65536 = 256 MiB,
    /// the pool's capacity); a larger request fails with `TooManyPages`.
    pub max_fw_pages: u32,
    /// On an Ethernet port with RoCE capability, set the vport's `roce_en`
    /// after INIT_HCA ([ref §7.6](crate::reference); the NIC refuses RDMA QPs otherwise).
    pub enable_roce: bool,
}

impl Default for DeviceConfig {
    fn default() -> Self {
        DeviceConfig {
            init_timeout_us: 120_000_000,
            init_poll_us: 2_000,
            cmd_timeout_us: 60_000_000,
            cmd_poll_us: 1,
            async_eq: true,
            page_size: 4096,
            cache_line_size: 64,
            set_host_endianness: true,
            max_fw_pages: (crate::cmd::pages::MAX_CHUNKS * crate::cmd::pages::CHUNK_PAGES) as u32,
            enable_roce: true,
        }
    }
}

/// The bring-up step that failed ([ref §7.6](crate::reference) numbering).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Step {
    /// 1: wait for firmware initialization.
    WaitFwInit,
    /// 2: command interface setup.
    CmdqSetup,
    /// 4: ENABLE_HCA.
    EnableHca,
    /// 5: ISSI negotiation.
    Issi,
    /// 6: boot pages.
    BootPages,
    /// 7: HOST_ENDIANNESS register.
    HostEndianness,
    /// 8: capabilities.
    HcaCaps,
    /// 9: init pages.
    InitPages,
    /// 10: INIT_HCA.
    InitHca,
    /// After INIT_HCA on Ethernet ports: MODIFY_NIC_VPORT_CONTEXT roce_en.
    EnableRoce,
    /// 12: ALLOC_UAR.
    AllocUar,
    /// 12: async EQ.
    AsyncEq,
}
